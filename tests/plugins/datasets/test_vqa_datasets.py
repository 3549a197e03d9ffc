"""The VQA datasets: the pathoargus question table (JSONL, Parquet, field map, every documented bad
input naming its row, patient- and WSI-disjoint splits, the answer-position audit), the synthetic
miniature's questions and planted evidence, and wsi-vqa on the real WSI-VQA file."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pathkit_core.contracts import PathkitError


def _row(qid, patient, split, answer=0, **extra):
    return {"id": qid, "patient_id": patient, "split": split, "question": "Which lesion is present?",
            "choices": ["adenocarcinoma", "lymphoma", "melanoma", "sarcoma"], "answer": answer, "capability": "CSI",
            "candidate_sets": [[f"features/{patient}_a.safetensors", f"features/{patient}_b.safetensors"]], **extra}


def _rows():
    rows = [_row("q1", "P1", "train", 0), _row("q2", "P1", "train", "B"), _row("q3", "P2", "val", 2),
            _row("q4", "P3", "bench", 3, capability="GR")]
    for k, condition in enumerate(("set1", "set2", "set3", "absent")):
        rows.append({**_row(f"e{k}", "P4", "train", k), "capability": "ESG", "group": "g1", "condition": condition,
                     "question": "Which candidate set contains melanoma?",
                     "choices": ["Set 1", "Set 2", "Set 3", "None of the sets"],
                     "candidate_sets": [["features/P4_a.safetensors"], ["features/D1_a.safetensors"],
                                        ["features/D2_a.safetensors"]]})
    return rows


def _write(root, rows, name="questions.jsonl"):
    root.mkdir(parents=True, exist_ok=True)
    if name.endswith(".parquet"):
        import polars as pl

        # a list column of choices, the sets as JSON text and answers as text: what a release may hold
        pl.DataFrame([{**r, "candidate_sets": json.dumps(r["candidate_sets"]), "answer": str(r["answer"])}
                      for r in rows]).write_parquet(root / name)
    else:
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _open(root, **options):
    from pathkit_datasets.pathoargus import PathoArgus

    dataset = PathoArgus(root, **options)
    dataset.validate()
    return dataset


def test_question_table_becomes_cases(tmp_path):
    dataset = _open(_write(tmp_path / "pa", _rows()))
    assert {k: len(v) for k, v in dataset.splits().items()} == {"train": 6, "val": 1, "test": 1}  # bench -> test
    q2 = next(c for c in dataset.cases("train") if c.case_id == "q2")
    assert q2.target == 1 and q2.patient_id == "P1" and q2.features[0].name == "P1_a.safetensors"
    assert q2.features[0].parent == tmp_path / "pa" / "features"
    e1 = next(c for c in dataset.cases("train") if c.case_id == "e1")
    assert e1.meta["candidate_sets"][1] == ["features/D1_a.safetensors"] and e1.meta["condition"] == "set2"
    audit = dataset.answer_position_audit()
    assert audit["train"]["all"] == {"A": 2, "B": 2, "C": 1, "D": 1, "imbalance": 1, "questions": 6}
    assert audit["train"]["ESG"]["imbalance"] == 0 and audit["test"]["GR"]["D"] == 1
    assert dataset.split_facts()["answer_positions"] == audit


def test_parquet_and_field_map(tmp_path):
    renamed = [{("q_text" if k == "question" else "opts" if k == "choices" else k): v for k, v in r.items()}
               for r in _rows()]
    root = _write(tmp_path / "pq", renamed, "questions.parquet")
    with pytest.raises(PathkitError, match="no question or choices column"):
        _open(root)
    dataset = _open(root, field_map={"question": "q_text", "choices": "opts"})
    assert next(dataset.cases("val")).meta["question"] == "Which lesion is present?"
    with pytest.raises(PathkitError, match="unknown field"):
        _open(root, field_map={"questions": "q_text"})


@pytest.mark.parametrize(("change", "message"), [
    ({"choices": ["adenocarcinoma"]},
     r"questions.jsonl, line 3 \(question q3\): meta\['choices'\] must list at least two"),
    ({"choices": ["a", "b", "A"]}, r"line 3 \(question q3\): duplicate choices"),
    ({"answer": 4}, r"line 3 \(question q3\): answer 4 is out of range for 4 choices"),
    ({"answer": "E"}, r"line 3 \(question q3\): answer 'E' is not a 0-based choice index"),
    ({"candidate_sets": [["features/x.safetensors"], []]}, r"line 3 \(question q3\): candidate set 2 names no slide"),
    ({"candidate_sets": []}, r"line 3 \(question q3\): candidate_sets must list"),
    ({"candidate_sets": [["features/x.safetensors", "slides/x.svs"]]}, "mixes slide files and feature files"),
    ({"evidence": {"regions": [{"slide": 5, "box": [0, 0, 1, 1]}]}}, "slide ordinal 0..1"),
    ({"patient_id": ""}, r"line 3 \(question q3\): no patient_id"),
    ({"id": "q1"}, r"duplicate question id.*q1 \(line 1, line 3\)"),
])
def test_bad_rows_are_errors_naming_the_row(tmp_path, change, message):
    rows = _rows()
    rows[2] = {**rows[2], **change}
    with pytest.raises(PathkitError, match=message):
        _open(_write(tmp_path / "bad", rows))


def test_group_members_must_agree(tmp_path):
    rows = _rows()
    rows[6] = {**rows[6], "question": "Which candidate set contains lymphoma?"}
    with pytest.raises(PathkitError, match=r"group 'g1': line 7 \(question e2\) and line 5 \(question e0\) differ in "
                                           r"their question"):
        _open(_write(tmp_path / "grp", rows))


def test_splits_are_patient_and_slide_disjoint(tmp_path):
    rows = _rows()
    rows[1] = {**rows[1], "split": "val"}  # patient P1 in train and val
    with pytest.raises(PathkitError, match="P1"):
        _open(_write(tmp_path / "leak", rows))
    rows = _rows()
    rows[2] = {**rows[2], "candidate_sets": [["features/P1_a.safetensors"]]}  # P1's slide in a val question
    with pytest.raises(PathkitError, match=r"WSI leakage\): P1_a.safetensors \(train and val\)"):
        _open(_write(tmp_path / "wsi", rows))


def test_vqa_audit_command(cli, tmp_path):
    root = _write(tmp_path / "cli", _rows())
    result = cli("vqa", "audit", "--dataset", "pathoargus", "--dataset-root", root, "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["audit"]["val"]["all"]["C"] == 1 and out["questions"] == {"train": 6, "val": 1, "test": 1}
    # each option's support: right / offered (the two CSI rows answer adenocarcinoma and lymphoma, the
    # quartet each of its four choices once), best supported first
    train = out["options"]["train"]
    assert [(r["option"], r["offered"], r["correct"]) for r in train["all"]] == [
        ("adenocarcinoma", 2, 1), ("lymphoma", 2, 1), ("none of the sets", 4, 1), ("set 1", 4, 1), ("set 2", 4, 1),
        ("set 3", 4, 1), ("melanoma", 2, 0), ("sarcoma", 2, 0)]
    assert train["ESG"][0] == {"option": "none of the sets", "offered": 4, "correct": 1, "support": 0.25}
    assert [r["support"] for r in train["CSI"]] == [0.5, 0.5, 0.0, 0.0]
    table = cli("vqa", "audit", "--dataset", "pathoargus", "--dataset-root", root, "--top", "1")
    assert table.exit_code == 0 and "answer options of pathoargus" in table.stdout and "adenocarcinoma" in table.stdout
    assert _open(root).split_facts()["answer_options"]["test"]["GR"][0]["option"] == "sarcoma"


# --------------------------------------------------------------------------- the synthetic miniature


def _planned(counts=(8, 4, 4)):
    import random

    from pathkit_datasets import _pathoargus_synthetic as syn

    rng = random.Random(0)
    cases, serial = {}, 0
    for split, n in zip(("train", "val", "test"), counts, strict=True):
        cases[split] = []
        for k in range(n):
            serial += 1
            cases[split].append(syn._plan_case(f"SYN-{serial:04d}", k % len(syn.LESIONS), rng))
    return cases, syn.plan_questions(cases, rng)


def test_synthetic_questions_and_planted_evidence():
    cases, rows = _planned()
    by_id = {c["case"]: c for split in cases.values() for c in split}
    assert Counter(r["capability"] for r in rows) == {"GR": 16, "CSI": 16, "ESG": 64}
    for split in ("train", "val", "test"):
        for cap in ("GR", "CSI", "ESG"):
            positions = Counter(r["answer"] for r in rows if r["split"] == split and r["capability"] == cap)
            assert max(positions.values()) - min(positions.values()) <= 1, (split, cap, positions)
    for row in rows:
        case = by_id[row["patient_id"]]
        flat = [s for members in row["candidate_sets"] for s in members]
        if row["capability"] == "ESG":
            assert len(row["candidate_sets"]) == 3 and all(len(m) == 2 for m in row["candidate_sets"])
            right = row["choices"][row["answer"]]
            if row["condition"] == "absent":
                assert right == "None of the sets" and row["evidence"] == {"sets": [0, 1, 2]}
                assert case["slides"]["bx"] not in flat
                continue
            assert right == f"Set {row['condition'][-1]}"
        region = row["evidence"]["regions"][0]
        expected = case["slides"]["gr"] if row["capability"] == "GR" else case["slides"]["bx"]
        assert flat[region["slide"]] == expected  # the evidence region lies on the slide showing the lesion
        lesion = row["question"].split("contains ")[-1].rstrip("?") if row["capability"] == "ESG" else \
            row["choices"][row["answer"]]
        from pathkit_datasets._pathoargus_synthetic import LESIONS

        assert lesion == LESIONS[case["lesion"]][0]
    # ESG donors carry another lesion, from the same split
    for row in (r for r in rows if r["capability"] == "ESG"):
        target = by_id[row["patient_id"]]
        for members in row["candidate_sets"]:
            owner = by_id[members[0].split("/")[-1].split("_")[0]]
            assert owner is target or owner["lesion"] != target["lesion"]
            assert owner in cases[row["split"]]


def test_every_synthetic_lesion_survives_the_tissue_mask(tmp_path):
    from pathkit_datasets import _pathoargus_synthetic as syn

    from pathkit_core.wsi.tiling import TilingParams, tile_slides

    paths = []
    for lesion in range(len(syn.LESIONS)):
        path = tmp_path / f"gr{lesion}.tiff"
        syn._slide_job({"path": str(path), "kind": "gr", "site": lesion % 3, "lesion": lesion, "focus": [0, 0],
                        "seed": lesion})
        paths.append(path)
    tiled = tile_slides(paths, tmp_path / "tiles", TilingParams(target_mpp=syn.MPP, tile_px=syn.TILE_PX), workers=1)
    # the lesion covers most of the GR slide: were it taken for glass or pen, about 20 tiles would remain
    assert [r.n_tiles for r in tiled] == [61] * len(syn.LESIONS)


def test_demo_counts_are_checked():
    from pathkit_datasets._pathoargus_synthetic import parse_counts

    assert parse_counts("48,10,16") == (48, 10, 16)
    for bad in ("48,10", "48,3,16", "a,b,c"):
        with pytest.raises(PathkitError, match="demo_cases"):
            parse_counts(bad)


# --------------------------------------------------------------------------- wsi-vqa


def _wsi_vqa(root, questions, **options):
    from pathkit_datasets.wsi_vqa import WsiVQA

    dataset = WsiVQA(root, questions=str(questions), **options)
    dataset.validate()
    return dataset


def test_wsi_vqa_reads_the_real_file(realdata, tmp_path):
    dataset = _wsi_vqa(tmp_path, realdata / "vqa" / "WsiVQA_test.json")
    cases = list(dataset.cases("test"))
    assert len(cases) == 390 and list(dataset.splits()) == ["test"]
    assert Counter(len(c.meta["choices"]) for c in cases) == {4: 388, 2: 2}
    excluded = dataset.excluded_cases()
    assert len(excluded) == 345 and all("open question" in why for why in excluded.values())
    audit = dataset.answer_position_audit()["test"]["all"]
    assert (audit["A"], audit["B"], audit["C"], audit["D"]) == (107, 151, 86, 46)
    # the majority-position baseline (B) is right on 151 / 390 = 38.7%
    assert round(100 * audit["B"] / 390, 1) == 38.7
    first = cases[0]
    assert first.case_id == "TCGA-LD-A74U-q0000" and first.meta["choices"][first.target] == "invasive lobular carcinoma"


def test_wsi_vqa_answers_match_exactly_then_normalised_else_error(tmp_path):
    rows = [{"Id": "TCGA-AA-0001", "Question": "grade?", "Choice": ["Grade 1", "Grade 2"], "Answer": "  grade 2 "},
            {"Id": "TCGA-AA-0001", "Question": "open?", "Answer": "free text"},
            {"Id": "TCGA-AA-0002", "Question": "site?", "Choice": ["breast", "lung"], "Answer": "lung"}]
    (tmp_path / "q.json").write_text(json.dumps(rows))
    slides = tmp_path / "slides"
    slides.mkdir()
    (slides / "TCGA-AA-0001-01Z-00-DX1.abc.svs").write_bytes(b"")
    (slides / "TCGA-AA-0001-01Z-00-DX2.def.svs").write_bytes(b"")
    dataset = _wsi_vqa(tmp_path, tmp_path / "q.json")
    cases = {c.case_id: c for c in dataset.cases("test")}
    assert cases["TCGA-AA-0001-q0000"].target == 1 and cases["TCGA-AA-0002-q0002"].target == 1
    assert [s.name for s in cases["TCGA-AA-0001-q0000"].slides] == ["TCGA-AA-0001-01Z-00-DX1.abc.svs",
                                                                    "TCGA-AA-0001-01Z-00-DX2.def.svs"]
    assert cases["TCGA-AA-0002-q0002"].slides == ()  # no slide: the run lists it and stops unless --skip-missing
    assert dataset.excluded_cases() == {"TCGA-AA-0001-q0001": "open question (no choices): excluded from "
                                                              "closed-set scoring"}
    rows.append({"Id": "TCGA-AA-0003", "Question": "size?", "Choice": ["1 cm", "2 cm"], "Answer": "3 cm"})
    rows.append({"Id": "TCGA-AA-0004", "Question": "size?", "Choice": ["1 cm", "2 cm"], "Answer": "2cm"})
    (tmp_path / "q.json").write_text(json.dumps(rows))
    with pytest.raises(PathkitError, match=r"2 closed question\(s\) whose answer matches no choice.*item 3 "
                                           r"\(TCGA-AA-0003-q0003\): answer '3 cm'.*item 4"):
        _wsi_vqa(tmp_path, tmp_path / "q.json")
