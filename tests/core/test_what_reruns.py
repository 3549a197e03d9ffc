"""What changes what reruns: for each input a run rests on, exactly the stages that read it are
redone, and an unchanged rerun redoes nothing (docs/user-guide.md, "What reruns when").

Observed from the files each stage writes: tile manifests and feature files in the workspace's
stores, the run folder's last checkpoint (training), predictions and metrics.json (scoring)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from pathkit_core.contracts import Case, Dataset, DatasetOption
from pathkit_core.sources import note_read
from pathkit_tasks import TASK_SLIDE_CLASSIFICATION
from tests.core._toy import ComponentPlugin
from tests.core.test_run_identity import Accuracy, Head, _weighted_encoder

ROWS = [("s0", "pale", "train"), ("s1", "dark", "train"), ("s2", "pale", "train"), ("s3", "dark", "train"),
        ("s4", "pale", "val"), ("s5", "dark", "val"), ("s6", "pale", "test"), ("s7", "dark", "test")]


class Cohort(Dataset):
    """Slides listed in `cohort.csv` (slide,label,split[,mpp]); option `tag` reaches every case."""

    name = "rr-cohort"
    task = TASK_SLIDE_CLASSIFICATION
    default_metrics = ("id-accuracy",)
    option_table = (DatasetOption("tag", "str", "a", "a value every case carries"),)

    def class_names(self):
        return ("pale", "dark")

    def _rows(self):
        path = self.root / "cohort.csv"
        note_read(path)
        with path.open(newline="") as fh:
            return list(csv.DictReader(fh))

    def splits(self):
        parts = {"train": [], "val": [], "test": []}
        for row in self._rows():
            parts[row["split"]].append(row["slide"])
        return parts

    def cases(self, split):
        for row in self._rows():
            if row["split"] == split:
                meta = {"tag": self.options["tag"], **({"mpp": float(row["mpp"])} if row.get("mpp") else {})}
                yield Case(row["slide"], row["slide"], target=row["label"],
                           slides=(self.root / f"{row['slide']}.tiff",), meta=meta)


def write_table(root: Path, rows=ROWS, mpp: dict | None = None, note: str = "") -> None:
    with (root / "cohort.csv").open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["slide", "label", "split", "mpp", "note"])
        for slide, label, split in rows:
            out.writerow([slide, label, split, (mpp or {}).get(slide, ""), note])


def write_slide(path: Path, seed: int, dark: bool) -> None:
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    colour = (120, 60, 140) if dark else (230, 170, 210)
    write_synthetic_slide(path, width=512, height=512, mpp=1.0, seed=seed,
                          tissue=[Blob(0.5, 0.5, 0.45, 0.45, colour=colour)])


@pytest.fixture
def cohort(tmp_path):
    root = tmp_path / "cohort"
    root.mkdir()
    for i in range(len(ROWS)):
        write_slide(root / f"s{i}.tiff", i, bool(i % 2))
    write_table(root)
    return root


@pytest.fixture
def weights(tmp_path):
    """Two tiny-vit checkpoints of the exact architecture with different random weights."""
    import torch
    from safetensors.torch import save_file

    out = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = _weighted_encoder()().build_backbone("cpu")
        path = tmp_path / f"weights{seed}.safetensors"
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
        out.append(path)
    return out


def _stamps(files) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in files if p.is_file()}


class Runner:
    """Runs the cell and says which stages did work since the last run."""

    def __init__(self, workdir: Path, root: Path, weights: Path) -> None:
        self.workdir, self.root, self.weights = workdir, root, weights
        self.before: dict[str, dict[str, int]] = {}
        self.logs: list[str] = []

    def _observed(self, run_dir: Path) -> dict[str, dict[str, int]]:
        return {"tile": _stamps(self.workdir.glob("tiles/*/*.parquet")),
                "extract": _stamps(self.workdir.glob("features*/*/*.safetensors")),
                "fit": _stamps([run_dir / "checkpoints" / "last.safetensors"]),
                "predict": _stamps([run_dir / "predictions.jsonl"]),
                "score": _stamps([run_dir / "metrics.json"])}

    def run(self, **spec):
        from pathkit_core.run import RunSpec, run_pipeline

        self.logs = []
        values = {"dataset": "rr-cohort", "encoder": "weighted-tiny", "generator": "id-head",
                  "workdir": self.workdir, "dataset_root": self.root, "weights": self.weights, "cpu": True, **spec}
        result = run_pipeline(RunSpec.from_mapping(values), log=lambda line: self.logs.append(str(line)))
        now = self._observed(result.run_dir)
        # every file seen so far, across run folders: a folder revisited counts only what changed
        redone = {stage for stage, files in now.items()
                  if any(self.before.get(stage, {}).get(p) != t for p, t in files.items())}
        for stage, files in now.items():
            self.before.setdefault(stage, {}).update(files)
        self.run_dir = result.run_dir
        return redone, result

    @property
    def log(self) -> str:
        return "\n".join(self.logs)


EVERYTHING = {"tile", "extract", "fit", "predict", "score"}
AFTER_DATA = {"fit", "predict", "score"}


def test_each_input_reruns_exactly_the_stages_that_read_it(fresh_registry, cohort, weights, tmp_path,
                                                            monkeypatch, capsys):
    registry = fresh_registry({"rr": ComponentPlugin(Cohort, _weighted_encoder(), Head, Accuracy)})
    monkeypatch.setattr(Head, "default_train", dict(Head.default_train))
    r = Runner(tmp_path / "ws", cohort, weights[0])

    assert r.run()[0] == EVERYTHING
    assert r.run()[0] == set()  # unchanged: everything reused
    first = r.run_dir

    # a label of a training case (the table changes): retrain and rescore, tiles and features kept
    rows = [("s0", "dark", "train"), *ROWS[1:]]
    write_table(cohort, rows)
    assert r.run()[0] == AFTER_DATA
    assert r.run_dir != first  # a cohort of other content never shares a run folder
    write_table(cohort)
    assert r.run()[0] == set()  # back to the first table: its run is still there, untouched

    # any other content of a table the dataset read
    write_table(cohort, note="re-exported")
    assert r.run()[0] == AFTER_DATA
    write_table(cohort)
    r.run()

    # the split: a validation case and a test case swap parts
    write_table(cohort, [*ROWS[:5], ("s5", "dark", "test"), ("s6", "pale", "val"), ROWS[7]])
    assert r.run()[0] == AFTER_DATA
    write_table(cohort)
    r.run()

    # a dataset option
    assert r.run(dataset_options={"tag": "b"})[0] == AFTER_DATA
    assert r.run()[0] == set()

    # a slide replaced by other content: that slide is tiled and extracted again, the rest kept
    tiles_before = dict(r.before["tile"])
    shutil.copy(cohort / "s2.tiff", tmp_path / "s0-original.tiff")
    write_slide(cohort / "s0.tiff", 100, False)
    redone, _ = r.run()
    assert redone == EVERYTHING
    changed = {Path(p).stem for p, t in r.before["tile"].items() if tiles_before.get(p) != t}
    assert changed == {"s0"}

    # the slide's resolution stated in the table: re-tiled at the new mpp, never scored on old features
    write_table(cohort, mpp={"s1": 0.5})
    redone, _ = r.run()
    assert redone == EVERYTHING
    from pathkit_core.wsi.manifest import read_manifest_meta

    assert read_manifest_meta(next(r.workdir.glob("tiles/*/s1.parquet")))["mpp"] == 0.5
    write_table(cohort)
    r.run()

    # the encoder's weights: extracted again (tiles kept), retrained, rescored
    r.weights = weights[1]
    assert r.run()[0] == {"extract", *AFTER_DATA}

    # hyperparameters the user gives, and a plugin's own defaults (the resolved settings)
    assert r.run(train={"lr": 0.05})[0] == AFTER_DATA
    assert r.run()[0] == set()
    capsys.readouterr()
    Head.default_train["lr"] = 0.02
    assert r.run()[0] == AFTER_DATA
    # same run folder, other fit key: the old checkpoint is not resumed, and the line says why
    said = capsys.readouterr().out
    assert "not resuming" in said and "training from scratch" in said

    # plugin code: a version bump (what a reinstalled distribution shows) retrains from scratch
    registry.records["rr"].version = "9.9"
    assert r.run()[0] == AFTER_DATA
    assert "not resuming" in capsys.readouterr().out

    # metric options: rescored only
    assert r.run(metric_options={"id-accuracy": {"note": 1}})[0] == {"score"}
    assert r.run(metric_options={"id-accuracy": {"note": 1}})[0] == set()


def test_two_cohorts_in_one_workspace_keep_both_results(fresh_registry, cohort, weights, tmp_path):
    fresh_registry({"rr": ComponentPlugin(Cohort, _weighted_encoder(), Head, Accuracy)})
    r = Runner(tmp_path / "ws", cohort, weights[0])
    r.run()
    first = r.run_dir
    saved = (first / "metrics.json").read_bytes()
    # another folder: same slide names, every label inverted
    other = tmp_path / "other"
    shutil.copytree(cohort, other)
    flip = {"pale": "dark", "dark": "pale"}
    write_table(other, [(s, flip[label], split) for s, label, split in ROWS])
    r.root = other
    redone, result = r.run()
    assert result.run_dir != first and "fit" in redone
    assert (first / "metrics.json").read_bytes() == saved
    import json

    # each folder's results name the data they rest on
    assert json.loads((result.run_dir / "metrics.json").read_text())["dataset_root"] == str(other)
    assert json.loads(saved)["dataset_root"] == str(cohort)


def test_a_dataset_that_does_not_open_leaves_no_run_folder(fresh_registry, tmp_path, weights):
    from pathkit_core.contracts import PathkitError

    fresh_registry({"rr": ComponentPlugin(Cohort, _weighted_encoder(), Head, Accuracy)})
    empty = tmp_path / "empty"
    empty.mkdir()
    r = Runner(tmp_path / "ws", empty, weights[0])
    with pytest.raises((PathkitError, FileNotFoundError)):
        r.run()
    assert not (tmp_path / "ws" / "runs").exists()
