"""Report datasets: REG 2025 with the published split, HistAI and TCGA PathText layouts, bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from pathkit_datasets.demo_reports import DEMO_CLASSES, split_counts
from pathkit_datasets.histai import HistAI, assemble_report
from pathkit_datasets.reg2025 import REG2025, patient_of, published_split
from pathkit_datasets.tcga_pathtext import TCGAPathText, choose_diagnostic_slide

from pathkit_core.contracts import PathkitError
from pathkit_sdk.splits import load_or_draw_split, patient_disjoint_split, target_counts

PUBLISHED = published_split()
REPORT_A = "Stomach, endoscopic biopsy;\n  Tubular adenoma with low grade dysplasia"
REPORT_B = "Lung, biopsy;\n  Adenocarcinoma "


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- REG 2025


def test_published_split_has_the_paper_sizes_and_no_overlap():
    assert {k: len(v) for k, v in PUBLISHED.items()} == {"train": 5924, "val": 740, "test": 741}
    ids = [c for part in PUBLISHED.values() for c in part]
    assert len(ids) == len(set(ids)) == 7405
    assert all(c.startswith("PIT_") and not c.endswith(".tiff") for c in ids)


def test_published_split_equals_pathbench_file(realdata):
    source = json.loads((realdata / "reports" / "reg2025_pathbench_splits.json").read_text())
    assert PUBLISHED == {part: [r["id"] for r in source[part]] for part in ("train", "val", "test")}


def reg_folder(root: Path, ids_reports: list[tuple[str, object]], *, slides: bool = True) -> Path:
    write_json(root / "train.json", [{"id": f"{i}.tiff", "report": r} for i, r in ids_reports])
    if slides:
        for i, _ in ids_reports:
            touch(root / f"{i}.tiff")
    return root


def test_reg2025_reads_the_release_with_the_published_split(tmp_path):
    chosen = PUBLISHED["train"][:3] + PUBLISHED["val"][:2] + PUBLISHED["test"][:2]
    records = [(c, REPORT_A if n % 2 else REPORT_B) for n, c in enumerate(chosen)]
    records += [("PIT_99_00001_01", REPORT_A),  # not in the published split
                (PUBLISHED["train"][3], "   "),  # empty report
                (PUBLISHED["train"][4], "bad \udc80 text")]  # not UTF-8 encodable
    root = reg_folder(tmp_path / "reg", records)
    ds = REG2025(root)
    ds.validate()
    assert ds.splits() == {"train": chosen[:3], "val": chosen[3:5], "test": chosen[5:7]}
    case = next(ds.cases("val"))
    assert case.target == dict(records)[case.case_id]  # REG text is kept exactly, line break included
    assert case.slides == (root / f"{case.case_id}.tiff",) and case.features == ()
    assert case.patient_id == patient_of(case.case_id)
    excluded = ds.excluded_cases()
    assert excluded["PIT_99_00001_01"] == "not in the PathReportEval split"
    assert excluded[PUBLISHED["train"][3]].startswith("report is empty")
    assert "not valid UTF-8" in excluded[PUBLISHED["train"][4]]
    assert ds.split_facts()["source"] == "published" and "PathReportEval" in ds.split_facts()["description"]
    assert "mpp" not in case.meta
    assert next(REG2025(root, mpp=0.5).cases("val")).meta["mpp"] == 0.5  # REG TIFFs lack a real resolution


def test_reg2025_prefers_precomputed_features(tmp_path):
    chosen = [PUBLISHED["train"][0], PUBLISHED["val"][0], PUBLISHED["test"][0]]
    root = reg_folder(tmp_path / "reg", [(c, REPORT_A) for c in chosen], slides=False)
    for c in chosen:
        touch(root / "features" / f"{c}.safetensors")
    case = next(REG2025(root).cases("train"))
    assert case.features == (root / "features" / f"{chosen[0]}.safetensors",) and case.slides == ()


def test_reg2025_falls_back_to_a_seeded_split_on_a_subset(tmp_path, caplog):
    chosen = PUBLISHED["train"][:20]
    root = reg_folder(tmp_path / "reg", [(c, REPORT_A) for c in chosen])
    work = tmp_path / "work"
    ds = REG2025(root, workdir=str(work))
    ds.validate()
    parts = ds.splits()
    assert sorted(len(v) for v in parts.values()) == [2, 2, 16]
    assert "drawing a seeded patient-disjoint 80/10/10 split" in caplog.text
    assert "drawn by pathkit (no split given)" in caplog.text
    # drawn splits live in the workspace, never in the user's dataset folder
    # one file per cohort: its name carries a digest of the cases it splits
    (saved,) = (work / "splits" / "reg2025").glob("reg2025-random-seed0-cases*.csv")
    assert REG2025(root, workdir=str(work)).splits() == parts
    assert not (root / "pathkit-splits").exists() and sorted(p.name for p in root.iterdir()) == sorted(
        [f"{c}.tiff" for c in chosen] + ["train.json"])
    facts = ds.split_facts()
    assert facts["source"] == "drawn" and facts["file"] == str(saved) and facts["counts"]["train"] == 16
    assert REG2025(root).splits() == parts  # without a workspace the seeded draw is repeated, not written
    with pytest.raises(PathkitError, match="the val, test split"):
        REG2025(root, split="pathreporteval").validate()
    # patients (id without the slide number) never straddle two parts
    assert patient_of("PIT_01_09851_02") == "PIT_01_09851"


@pytest.mark.parametrize(("setup", "message"), [
    (lambda r: r.mkdir(), "no report JSON"),
    (lambda r: (write_json(r / "a.json", []), write_json(r / "b.json", [])), "several JSON files"),
    (lambda r: write_json(r / "train.json", {"cases": 1}), "expected a JSON list"),
    (lambda r: write_json(r / "train.json", [{"id": "x"}]), "record 0 is not an object"),
    (lambda r: write_json(r / "train.json", [{"id": "PIT_01_00003_01", "report": "a"}]), "has a slide"),
    (lambda r: (r.mkdir(), (r / "train.json").write_bytes(b'[{"id": "x", "report": "caf\xe9"}]')),
     "not UTF-8 text: byte 27"),
    (lambda r: (r.mkdir(), (r / "train.json").write_text('[{"id": 1,}]')), "not valid JSON.*line 1"),
    (lambda r: write_json(r / "train.json", [{"id": "PIT_01_00003_01.tiff", "report": "a"},
                                             {"id": "PIT_01_00003_01", "report": "b"}]), "appears twice"),
])
def test_reg2025_layout_errors_name_the_problem(tmp_path, setup, message):
    root = tmp_path / "reg"
    setup(root)
    with pytest.raises(PathkitError, match=message):
        REG2025(root).validate()


def test_dataset_root_errors(tmp_path):
    with pytest.raises(PathkitError, match="needs --dataset-root"):
        REG2025(None).validate()
    with pytest.raises(PathkitError, match="is not a folder.*expected layout"):
        REG2025(tmp_path / "missing").validate()
    with pytest.raises(PathkitError, match="no option"):
        REG2025(tmp_path, shuffle=True)


# --------------------------------------------------------------------------- splits


def test_patient_disjoint_split_meets_the_paper_counts():
    histai = {f"c{i}": f"c{i}" for i in range(12476)}
    parts = patient_disjoint_split(histai, (1248 / 12476, 1248 / 12476), seed=0)
    assert [len(parts[p]) for p in ("train", "val", "test")] == [9980, 1248, 1248]
    assert target_counts(8843, (884 / 8843, 885 / 8843)) == (7074, 884, 885)
    # multi-case patients stay together; the draw is reproducible
    grouped = {f"c{i}": f"p{i // 3}" for i in range(300)}
    parts = patient_disjoint_split(grouped, (0.1, 0.1), seed=3)
    assert parts == patient_disjoint_split(dict(reversed(list(grouped.items()))), (0.1, 0.1), seed=3)
    owner = {grouped[c]: p for p, ids in parts.items() for c in ids}
    assert all(owner[grouped[c]] == p for p, ids in parts.items() for c in ids)


def test_saved_split_is_reused_and_checked(tmp_path):
    cohort = {f"c{i}": f"p{i}" for i in range(50)}
    path = tmp_path / "split.csv"
    first = load_or_draw_split(path, cohort, fractions=(0.1, 0.1), seed=0).parts
    rows = list(csv.DictReader(path.open()))
    assert {r["split"] for r in rows} == {"train", "val", "test"} and len(rows) == 50
    assert load_or_draw_split(path, cohort, fractions=(0.5, 0.1), seed=9).parts == first  # the file wins
    with pytest.raises(PathkitError, match="does not match the dataset"):
        load_or_draw_split(path, {**cohort, "new": "pnew"}, fractions=(0.1, 0.1), seed=0)
    path.write_text("patient_id,case_id,split\np1,c1,train\np1,c2,test\n")
    with pytest.raises(PathkitError, match=r"1 patient\(s\) in two parts .*'p1' \(train and test\)"):
        load_or_draw_split(path, {"c1": "p1", "c2": "p1"}, fractions=(0.1, 0.1), seed=0)


# --------------------------------------------------------------------------- HistAI


def histai_record(n: int, **fields) -> dict:
    record = {"case_mapping": f"histai/HISTAI-skin-b2/case_{n:05d}", "diagnosis": "Benign skin neoplasms",
              "conclusion": "Intradermal melanocytic nevus", "micro_protocol":
              "Intradermal melanocytic nevus of the skin, 3 x 2 mm", "age": 37, "gender": "f", "icd10": "D22"}
    record.update(fields)
    return record


def test_histai_report_assembly_rule():
    record = histai_record(1, micro_protocol="  Nevus   cells in the dermis ", conclusion="Nevus cells in the dermis.",
                           diagnosis="")
    assert assemble_report(record, ("micro_protocol", "conclusion", "diagnosis")) == "Nevus cells in the dermis."
    assert assemble_report(histai_record(1), ("conclusion", "diagnosis")) == \
        "Intradermal melanocytic nevus. Benign skin neoplasms."


def test_histai_reads_metadata_links_repeated_slide_names_and_saves_its_split(tmp_path):
    root = tmp_path / "histai"
    records = [histai_record(n, patient_id=f"P{n // 2}") for n in range(20)]
    records.append(histai_record(99, micro_protocol="", conclusion=None, diagnosis=" "))  # no report
    write_json(root / "metadata.json", records)
    for n in range(20):
        touch(root / "HISTAI-skin-b2" / f"case_{n:05d}" / "slide_HE_1.tiff")
        touch(root / "HISTAI-skin-b2" / f"case_{n:05d}" / "slide_IHC_2.tiff")
    work = tmp_path / "work"
    ds = HistAI(root, workdir=str(work))
    ds.validate()
    parts = ds.splits()
    assert sum(len(v) for v in parts.values()) == 20 and all(parts.values())
    patients = {p: {c.patient_id for c in ds.cases(p)} for p in parts}
    assert not (patients["train"] & patients["val"]) and not (patients["train"] & patients["test"])
    case = next(ds.cases("train"))
    assert case.target == ("intradermal melanocytic nevus of the skin 3 x 2 mm . intradermal melanocytic nevus . "
                           "benign skin neoplasms .")
    assert case.meta["raw_report"].startswith("Intradermal melanocytic nevus of the skin, 3 x 2 mm.")
    names = {s.name for c in (x for p in parts for x in ds.cases(p)) for s in c.slides}
    assert len(names) == 40 and f"{case.case_id}__slide_HE_1.tiff" in names  # unique link names
    assert all(s.is_symlink() and s.resolve().name.startswith("slide_") for s in case.slides)
    assert ds.excluded_cases() == {"HISTAI-skin-b2_case_00099": "report is empty (fields micro_protocol, "
                                                                "conclusion, diagnosis)"}
    assert len(list((work / "splits" / "histai").glob("histai-seed0-cases*.csv"))) == 1
    assert not (root / "pathkit-splits").exists()
    he_only = HistAI(root, stains="HE", workdir=str(work))
    assert all(len(c.slides) == 1 for c in he_only.cases("train"))
    write_json(root / "metadata.json", [{"diagnosis": "x"}])
    with pytest.raises(PathkitError, match="record 0 has no case_mapping"):
        HistAI(root).validate()


# --------------------------------------------------------------------------- TCGA PathText


def test_tcga_picks_one_diagnostic_slide_per_patient(tmp_path):
    root = tmp_path / "tcga"
    captions = [{"id": f"TCGA-A2-A{n:03d}", "caption": f"Invasive ductal carcinoma, grade {n % 3 + 1}. "
                 "Tumor size 2.5 cm. Margins negative."} for n in range(10)]
    captions.append({"id": "TCGA-ZZ-FROZ", "caption": "Frozen section only."})
    write_json(root / "PathText.json", captions)
    for n in range(10):
        touch(root / "BRCA" / f"TCGA-A2-A{n:03d}-01Z-00-DX2.BBBB.svs")
        touch(root / "BRCA" / f"TCGA-A2-A{n:03d}-01Z-00-DX1.AAAA.svs")
        touch(root / "BRCA" / f"TCGA-A2-A{n:03d}-01A-01-TS1.CCCC.svs")
    touch(root / "BRCA" / "TCGA-ZZ-FROZ-01A-01-TS1.DDDD.svs")
    touch(root / "features" / "TCGA-A2-A003-01Z-00-DX1.AAAA.safetensors")
    ds = TCGAPathText(root)
    ds.validate()
    cases = {c.case_id: c for p in ("train", "val", "test") for c in ds.cases(p)}
    assert len(cases) == 10 and ds.excluded_cases()["TCGA-ZZ-FROZ"].startswith("no diagnostic (DX) slide")
    assert cases["TCGA-A2-A001"].slides == (root / "BRCA" / "TCGA-A2-A001-01Z-00-DX1.AAAA.svs",)
    assert cases["TCGA-A2-A003"].features == (root / "features" / "TCGA-A2-A003-01Z-00-DX1.AAAA.safetensors",)
    assert cases["TCGA-A2-A001"].target == "invasive ductal carcinoma grade 2 . tumor size 2.5 cm . margins negative ."
    assert choose_diagnostic_slide([Path("TCGA-A2-A001-11A-01-TS1.x.svs")]) is None
    assert choose_diagnostic_slide([Path("TCGA-A2-A001-06Z-00-DX1.b.svs"), Path("TCGA-A2-A001-01Z-00-DX1.c.svs")]) \
        == Path("TCGA-A2-A001-01Z-00-DX1.c.svs")
    write_json(root / "PathText.json", [{"id": "not-a-barcode", "caption": "x"}])
    with pytest.raises(PathkitError, match="not a TCGA patient barcode"):
        TCGAPathText(root).validate()


# --------------------------------------------------------------------------- demo


def test_demo_split_is_stratified_and_reports_are_real_reg_strings():
    assert split_counts(10) == (6, 2, 2) and split_counts(3) == (1, 1, 1)
    assert len(DEMO_CLASSES) == 6
    assert len({organ for _, organ, _ in DEMO_CLASSES}) == 3
