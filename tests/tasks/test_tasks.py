"""Tasks as components: the built-in task types, a third-party task, typed targets and predictions,
generators that need no fit, case meta reaching the model, and the errors a plugin author meets."""

from __future__ import annotations

import json

import pytest

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, Dataset, Generator, Metric, MetricResult, PathkitError, Task, TileSpec
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA, TASK_SLIDE_CLASSIFICATION
from pathkit_tasks.vqa.selection import Selection, Selector
from tests.core import _toy
from tests.core._toy import ComponentPlugin, ToyAccuracy, write_toy_features

BUILTIN = {"report", "slide-classification", "patch-classification", "segmentation", "multiple-choice-vqa",
           "survival", "ordinal", "retrieval", "few-shot", "zero-shot"}
N_TILES, DIM = 6, 4


def test_the_builtin_tasks_register_through_the_hook(fresh_registry, cli):
    registry = fresh_registry()
    assert set(registry.names("task")) == BUILTIN
    # they come in through the same door as a plugin's: a plugin record of the core's own
    owner = registry.owner_of("task", "report")
    assert owner.name == "task-report" and owner.distribution == "pathkit"
    assert owner.module == "pathkit_tasks.report"
    listed = json.loads(cli("list", "tasks", "--json").stdout)
    assert {t["name"] for t in listed} == BUILTIN
    info = json.loads(cli("info", "slide-classification", "--json").stdout)[0]
    assert info["kind"] == "task" and "class name" in info["target_format"]
    assert info["baselines"] == ["majority-class", "class-prior"] and "probabilities" in info["prediction_format"]


def test_installed_example_plugin_adds_a_task_type(cli, installed_registry):
    listed = json.loads(cli("list", "tasks", "--json").stdout)
    info = json.loads(cli("info", "slide-regression", "--json").stdout)[0]
    tasks = {t["name"]: t for t in listed}
    assert BUILTIN | {"slide-regression"} <= set(tasks)
    assert tasks["slide-regression"]["distribution"] == "pathkit-example-plugin"
    assert info["datasets"] == ["demo-purity", "purity-table"] and info["generators"] == ["mean-pool-regressor"]
    assert info["metrics"] == ["regression"]


def test_unknown_task_lists_the_registered_ones(fresh_registry):
    class Orphan(Dataset):
        name = "orphan"
        task = "slide-regression"  # no plugin registers this task here

    class P:
        @hookimpl
        def register_datasets(self, register):
            register(Orphan)

    registry = fresh_registry({"p": P()})
    record = registry.records["p"]
    assert record.status == "error" and "unknown task(s) ['slide-regression']" in record.error
    assert ("registered tasks: few-shot, multiple-choice-vqa, ordinal, patch-classification, report, retrieval"
            in record.error)
    assert "orphan" not in registry.names("dataset")


# --------------------------------------------------------------------------- a toy cohort on feature files


class Toy(Dataset):
    """Precomputed features; the class is the sign of feature 0. Options shape the bad inputs."""

    name = "toy"
    task = TASK_SLIDE_CLASSIFICATION
    default_metrics = ("toy-accuracy",)

    def class_names(self):
        return ("neg", "pos")

    def splits(self):
        ids = [f"c{i:02d}" for i in range(16)]
        if self.options.get("test_only"):
            return {"test": ids[12:]}
        return {"train": ids[:8], "val": ids[8:12], "test": ids[12:]}

    def cases(self, split):
        for cid in self.splits()[split]:
            label = ("neg", "pos")[int(cid[1:]) % 2]
            if self.options.get("bad_target") and cid in ("c01", "c13"):
                label = 1  # an index where a class name is expected
            yield Case(case_id=cid, patient_id=cid, target=label, features=(self.root / f"{cid}.safetensors",),
                       meta={"site": f"site-{int(cid[1:]) % 3}"})


class Precomputed(_toy.Precomputed):
    embed_dim = DIM


class Nearest(Generator):
    """A no-fit generator: the nearest training mean feature, and a record of what it saw."""

    name = "nearest"
    tasks = (TASK_SLIDE_CLASSIFICATION,)
    needs_fit = False
    seen: list = []

    def build(self, spec):
        import torch

        train = [(item["features"].mean(0), item["target"]) for item in spec.train_items]
        Nearest.seen.append({"n_train": len(train), "classes": spec.class_names,
                             "meta": [dict(i["meta"]) for i in spec.train_items]})

        class Model(torch.nn.Module):
            def collate(self, items):
                return items

            def predict(self, batch):
                out = []
                for item in batch:
                    if self.bad:
                        out.append({"probabilities": [0.9, 0.9]})
                        continue
                    x = item["features"].mean(0)
                    label = min(train, key=lambda t: float((t[0] - x).norm()))[1] if train else 0
                    out.append(int(label))
                return out

            def export_state(self):
                return {}

        model = Model()
        model.bad = bool(spec.hparams.get("bad"))
        return model

    default_hparams = {"bad": False}


def toy_plugin():
    return ComponentPlugin(Toy, Precomputed, Nearest, ToyAccuracy)


@pytest.fixture
def toy_root(tmp_path):
    return write_toy_features(tmp_path / "toy", 16, N_TILES, DIM, "c")


def _run(cli, toy_root, tmp_path, *extra):
    return cli("run", "-d", "toy", "-e", "precomputed", "-g", "nearest", "--dataset-root", toy_root,
               "--workdir", tmp_path / "ws", "--cpu", *extra)


def test_a_generator_without_fit_goes_straight_to_prediction(fresh_registry, cli, toy_root, tmp_path):
    fresh_registry({"toy": toy_plugin()})
    Nearest.seen.clear()
    result = _run(cli, toy_root, tmp_path)
    assert result.exit_code == 0, result.stderr
    assert "needs no training" in result.stdout
    run_dir = next((tmp_path / "ws" / "runs" / "toy" / "precomputed" / "nearest").iterdir())
    assert not (run_dir / "checkpoints").exists()
    # the train split reached the model, with every case's meta and the dataset's class order
    seen = Nearest.seen[-1]
    assert seen["n_train"] == 8 and seen["classes"] == ("neg", "pos")
    assert seen["meta"][0] == {"site": "site-0"}
    predictions = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    # predictions carry the class name as well as the index
    assert predictions[0] == {"id": "c12", "prediction": {"label": 0, "class": "neg"}}
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["metrics"]["toy-accuracy"]["accuracy"] == 1.0
    assert set(metrics["baselines"]) == {"majority-class", "class-prior"}
    # the task's run facts reach the metrics
    assert ToyAccuracy.context["class_names"] == ["neg", "pos"]
    assert "fit" not in json.loads((run_dir / "stages.json").read_text())
    again = _run(cli, toy_root, tmp_path)
    assert again.exit_code == 0 and "this cell is finished" in again.stdout


def test_a_test_only_dataset_is_enough_for_a_generator_without_fit(fresh_registry, cli, toy_root, tmp_path):
    fresh_registry({"toy": toy_plugin()})
    result = _run(cli, toy_root, tmp_path, "-o", "test_only=true")
    assert result.exit_code == 0, result.stderr
    metrics = json.loads(next((tmp_path / "ws" / "runs").rglob("metrics.json")).read_text())
    assert metrics["n_test_cases"] == 4 and metrics["baselines"] == {}  # no training cases: no baseline


def test_targets_of_the_wrong_form_are_refused_before_any_work(fresh_registry, cli, toy_root, tmp_path):
    fresh_registry({"toy": toy_plugin()})
    result = _run(cli, toy_root, tmp_path, "-o", "bad_target=true")
    assert result.exit_code == 2
    message = result.stderr.replace("\n", "")
    assert "does not fit task 'slide-classification'" in message
    assert "c01 (train): target 1 is not one of the class names ['neg', 'pos']" in message and "c13 (test)" in message
    assert "Expected targets: a class name" in message
    # stopped at the dataset stage: no run folder is made for data that does not open
    assert not (tmp_path / "ws" / "runs").exists()


def test_predictions_that_do_not_fit_the_task_are_an_error(fresh_registry, cli, toy_root, tmp_path):
    fresh_registry({"toy": toy_plugin()})
    result = _run(cli, toy_root, tmp_path, "--config", _config(tmp_path, "[hparams]\nbad = true\n"))
    assert result.exit_code == 2
    message = result.stderr.replace("\n", "")
    assert "made predictions that do not fit task 'slide-classification'" in message
    assert "c12: probabilities sum to 1.8000, not 1" in message


def _config(tmp_path, text):
    path = tmp_path / "extra.toml"
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- a third-party task, inline


class Counting(Task):
    """A task a third party adds: the number of tiles of a slide, predicted as a number."""

    name = "tile-count"
    target_format = "a non-negative integer"
    prediction_format = "a number"
    baselines = ("zero",)

    def check_target(self, case, dataset):
        return None if isinstance(case.target, int) and case.target >= 0 else "not a count"

    def baseline_predictions(self, name, train_targets, test_cases, dataset):
        return {c.case_id: 0 for c in test_cases}

    def run_summary(self, predictions, references):
        return {"mean_prediction": sum(predictions.values()) / len(predictions)}


class CountCohort(Toy):
    name = "count-cohort"
    task = "tile-count"
    default_metrics = ("abs-error",)

    def cases(self, split):
        for case in super().cases(split):
            yield Case(case.case_id, case.patient_id, target=N_TILES, features=case.features, meta=case.meta)


class Counter(Generator):
    name = "counter"
    tasks = ("tile-count",)
    needs_fit = False

    def build(self, spec):
        import torch

        class Model(torch.nn.Module):
            def collate(self, items):
                return items

            def predict(self, batch):
                return [len(item["features"]) for item in batch]

        return Model()


class AbsError(Metric):
    name = "abs-error"
    tasks = ("tile-count",)
    lower_is_better = ("error",)

    def compute(self, predictions, references, *, ids=None, context=None):
        errors = [abs(p - r) for p, r in zip(predictions, references, strict=True)]
        return MetricResult({"error": sum(errors) / len(errors)})


def test_a_third_party_task_runs_with_no_change_to_the_core(fresh_registry, cli, toy_root, tmp_path):
    # the task plugin is registered after the plugins that use it: tasks are collected first
    registry = fresh_registry({"toy": toy_plugin(), "count": ComponentPlugin(Counting, CountCohort, Counter, AbsError)})
    assert "tile-count" in registry.names("task") and registry.records["count"].status == "ok"
    result = cli("run", "-d", "count-cohort", "-e", "precomputed", "-g", "counter", "--dataset-root", toy_root,
                 "--workdir", tmp_path / "ws", "--cpu")
    assert result.exit_code == 0, result.stderr
    metrics = json.loads(next((tmp_path / "ws" / "runs").rglob("metrics.json")).read_text())
    assert metrics["metrics"]["abs-error"]["error"] == 0.0
    assert metrics["baselines"]["zero"]["abs-error"]["error"] == N_TILES
    assert metrics["mean_prediction"] == N_TILES
    assert AbsError.direction("error") == "lower" and AbsError.direction("other") == "higher"


# --------------------------------------------------------------------------- the built-in task protocols


class _Classes(Dataset):
    name = "classes"
    task = TASK_SLIDE_CLASSIFICATION

    def class_names(self):
        return ("MSS", "MSI")


def test_classification_prediction_forms():
    from pathkit_tasks.classification.task import SlideClassificationTask

    task, ds, case = SlideClassificationTask(), _Classes(), Case("c", "p", target="MSI")
    assert task.model_target(case, ds) == 1 and task.reference(case, ds) == 1
    assert task.output({"probabilities": [0.2, 0.8]}, case, ds) == {"label": 1, "class": "MSI",
                                                                   "probabilities": [0.2, 0.8]}
    assert task.output(0, case, ds) == {"label": 0, "class": "MSS"}
    assert task.output("MSI", case, ds) == {"label": 1, "class": "MSI"}
    for bad, why in (({"probabilities": [0.5]}, "1 probabilities for 2 classes"), (True, "not a class index"),
                     ({"probabilities": [0.5, float("nan")]}, "not all in [0, 1]"), ("MSX", "is not one of"),
                     ({"score": 1}, 'needs "probabilities" or "label"'), (2, "not a class index 0..1")):
        assert why in task.check_prediction(bad, case, ds)
    assert "not one of the class names" in task.check_target(Case("c", "p", target=1), ds)
    prior = task.baseline_predictions("class-prior", [0, 1, 1, 1], [case], ds)
    assert prior == {"c": {"label": 1, "class": "MSI", "probabilities": [0.25, 0.75]}}
    majority = task.baseline_predictions("majority-class", [0, 1, 1, 1], [case], ds)
    assert majority["c"]["probabilities"] == [0.0, 1.0]


def test_vqa_answer_forms_and_majority_position():
    from pathkit_tasks.vqa.task import MultipleChoiceVQATask

    task = MultipleChoiceVQATask()
    meta = {"question": "Which grade?", "choices": ["G1", "G2", "G3", "G4"], "capability": "GR", "group": "q1"}
    case = Case("q", "p", target=2, meta=meta)
    assert task.check_target(case, None) is None
    assert task.reference(case, None) == {"answer": 2, "n_choices": 4, "capability": "GR", "group": "q1"}
    assert task.output("C", case, None) == {"answer": 2, "letter": "C"}
    assert task.output({"answer": None, "parse_failed": True}, case, None) == {"answer": None, "letter": None,
                                                                               "parse_failed": True}
    assert "not a choice index 0..3" in task.check_prediction(7, case, None)
    for bad_meta, why in (({"question": "q", "choices": ["a"]}, "at least two"),
                          ({"question": "q", "choices": ["a", "A "]}, "duplicate"),
                          ({"choices": ["a", "b"]}, "question")):
        assert why in task.check_target(Case("q", "p", target=0, meta=bad_meta), None)
    two = Case("t", "p", target=0, meta={"question": "q", "choices": ["yes", "no"]})
    out = task.baseline_predictions("majority-position", [2, 2, 1], [case, two], None)
    # a two-choice question cannot take the majority position 2: no answer, counted wrong
    assert out["q"]["answer"] == 2 and out["t"]["answer"] is None


def test_segmentation_targets_outputs_and_the_heads_that_solve_it(tmp_path, installed_registry):
    from pathlib import Path

    from pathkit_tasks.segmentation.task import SegmentationTask, output_folder, stitch_settings

    class Liver(Dataset):
        name = "liver"

        def class_names(self):
            return ("TUM", "NOR")

    task, ds = SegmentationTask(), Liver()
    mask = tmp_path / "s.geojson"
    mask.write_text("{}")
    slide = Case("s", "p", target={"mask": str(mask), "foreground": "TUM"}, slides=(Path("s.tiff"),),
                 meta={"stitch": {"blend": "gaussian"}})
    assert task.check_target(slide, ds) is None and task.model_target(slide, ds) is None
    assert task.reference(slide, ds) == {"mask": str(mask), "foreground": "TUM", "slide": "s.tiff"}
    assert "not an existing" in task.check_target(Case("t", "p", target={"mask": "nope.png", "foreground": "TUM"},
                                                       slides=(Path("t.tiff"),)), ds)
    assert "not one of" in task.check_target(Case("t", "p", target={"mask": str(mask), "foreground": "STE"},
                                                   slides=(Path("t.tiff"),)), ds)
    assert "unknown stitching" in task.check_target(Case("t", "p", target={"mask": str(mask), "foreground": "TUM"},
                                                         slides=(Path("t.tiff"),), meta={"stitch": {"mode": 1}}), ds)
    patch = Case("x", "p", target="NOR", images=("x.png",))
    assert task.check_target(patch, ds) is None and task.model_target(patch, ds) == 1
    out = task.output({"map": "m.npz"}, slide, ds)
    assert out["foreground"] == 0 and out["class_names"] == ["TUM", "NOR"] and out["threshold"] is None
    assert stitch_settings(slide.meta)["blend"] == "gaussian" and stitch_settings({})["subdivide"] == 1
    assert output_folder(Path("r/predictions.jsonl")) == Path("r/segmentation")
    assert output_folder(Path("r/predictions_last.jsonl")) == Path("r/segmentation_last")
    assert task.tiling(ds, {"overlap": 0.25}) == {"overlap": 0.25, "pad_edges": True, "min_tissue_fraction": 0.1}
    # any patch-classification head solves segmentation; a report generator does not
    knn, caption = installed_registry.get("generator", "knn"), installed_registry.get("generator", "wsi-caption")
    assert SegmentationTask.solved_by(knn) and not SegmentationTask.solved_by(caption)


def test_vqa_meta_reaches_the_reader_but_the_answer_does_not(fresh_registry, toy_root, tmp_path):
    from pathkit_core.run import RunSpec, run_pipeline

    class Questions(Toy):
        name = "questions"
        task = TASK_MULTIPLE_CHOICE_VQA
        default_metrics = ("vqa-acc",)
        task_defaults = {"selector": "first-rows", "budget": 4, "candidates": 4}

        def cases(self, split):
            for case in super().cases(split):
                answer = int(case.case_id[1:]) % 2
                yield Case(case.case_id, case.patient_id, target=answer, features=case.features,
                           meta={"question": "Is feature 0 positive?", "choices": ["no", "yes"]})

    class Reader(Generator):
        name = "sign-reader"
        tasks = (TASK_MULTIPLE_CHOICE_VQA,)
        needs_fit = False
        items: list = []

        def build(self, spec):
            import torch

            class Model(torch.nn.Module):
                def collate(self, items):
                    Reader.items.extend(items)
                    return items

                def predict(self, batch):
                    return [{"answer": int(item["features"][:, 0].mean() > 0)} for item in batch]

            return Model()

    class Accuracy(Metric):
        name = "vqa-acc"
        tasks = (TASK_MULTIPLE_CHOICE_VQA,)

        def compute(self, predictions, references, *, ids=None, context=None):
            hits = [p["answer"] == r["answer"] for p, r in zip(predictions, references, strict=True)]
            return MetricResult({"accuracy": sum(hits) / len(hits)})

    class FirstRows(Selector):
        # a third-party selector: the first K rows of the case (the default "pathoargus" is a plugin's)
        name = "first-rows"

        def select(self, pool, *, budget, candidates):
            return Selection.of(range(min(budget, pool.n)), pool)

    fresh_registry({"toy": toy_plugin(), "vqa": ComponentPlugin(Questions, Reader, FirstRows, Accuracy)})
    result = run_pipeline(RunSpec(dataset="questions", encoder="precomputed", generator="sign-reader",
                                  dataset_root=toy_root, workdir=tmp_path / "ws", cpu=True), log=lambda _: None)
    assert result.summary["vqa-acc"]["accuracy"] == 1.0
    test_items = [i for i in Reader.items if i["case_id"] >= "c12"]
    assert test_items and all(i["meta"]["question"] == "Is feature 0 positive?" for i in test_items)
    assert all("answer" not in i["meta"] and i["target"] is None for i in test_items)
    # the budget: K = 4 of the N = 6 rows of each case, recorded with each prediction
    assert all(len(i["features"]) == 4 and i["tile_set"].tolist() == [0] * 4 for i in test_items)
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    assert metrics["budget"]["available_total"] == 4 * N_TILES and metrics["budget"]["selected_total"] == 16
    assert set(result.baselines) == {"majority-position"}


def test_case_ids_must_be_plain_and_unique():
    from pathkit_core.contracts import case_id_problem
    from pathkit_tasks.report.task import ReportTask

    for bad in ("../../escape.tiff", "a/b", "..", "", "x\x00y", 3):
        assert case_id_problem(bad), bad
    assert case_id_problem("PIT_01_00002_01") is None and case_id_problem("TCGA-AA-3517.tiff") is None

    class Reports(Dataset):
        name = "reports"
        task = "report"

    splits = {"train": [Case("a", "p", target="x"), Case("../b", "p", target="y")],
              "test": [Case("a", "q", target="z")]}
    with pytest.raises(PathkitError) as err:
        ReportTask().validate_cases(splits, Reports())
    message = str(err.value)
    assert "../b (train): case id '../b' must be a plain name" in message
    assert "a (test): the case id is also in the train split" in message


def test_segmentation_calls_a_patch_head_on_the_window_matrix_as_predict_would():
    """The stitching fast path (a patch head called on each chunk's feature matrix) gives the
    probabilities the trainer's per-window `predict` gives."""
    import numpy as np
    import torch
    from pathkit_generators.knn import KNearestNeighbours

    from pathkit_core.contracts import GeneratorSpec
    from pathkit_core.training.trainer import TrainConfig, make_accelerator, predict
    from pathkit_tasks.segmentation.task import _probabilities, _window_items, _window_probabilities

    g = torch.Generator().manual_seed(0)
    items = [{"case_id": f"p{i}", "features": torch.randn(1, 8, generator=g), "target": i % 3} for i in range(30)]
    spec = GeneratorSpec(task="segmentation", feature_dim=8, class_names=("a", "b", "c"), train_items=items,
                         hparams={"k": 5})
    model = KNearestNeighbours().build(spec)
    features, coords = torch.randn(50, 8, generator=g).half(), torch.arange(100).reshape(50, 2)
    cfg = TrainConfig(cpu=True, progress=False)
    accelerator = make_accelerator(cfg)
    fast = _window_probabilities(model, features, coords, 7, batch_size=16, accelerator=accelerator, cfg=cfg)
    raw = predict(model, _window_items(features, coords, 7), batch_size=16, accelerator=accelerator, cfg=cfg)
    slow = np.stack([_probabilities(raw[str(7 + i)]) for i in range(50)])
    assert fast.shape == (50, 3) and fast.dtype == np.float32
    np.testing.assert_allclose(fast, slow, atol=1e-6)
    assert len({tuple(r) for r in fast.round(3)}) > 3  # mixed votes: a comparison that can fail


# --------------------------------------------------------------------------- hardening (issue 28)


def _segmentation_facts(run_dir):
    from pathkit_core.contracts import RunFacts

    return RunFacts(workdir=run_dir.parent, run_dir=run_dir, encoder="tiny-vit", tile_spec=TileSpec(224, 0.5))


def test_segmentation_outputs_replace_the_folder_as_a_whole_and_clean_a_killed_runs_temporaries(tmp_path):
    from pathkit_tasks.segmentation.task import SegmentationTask

    run_dir = tmp_path / "run"
    old = run_dir / "segmentation"
    (old / "maps").mkdir(parents=True)
    (old / "maps" / "gone.npz").write_bytes(b"a slide of an earlier run")
    (old / "maps" / ".c1.npz.k1ll3d.tmp").write_bytes(b"half")  # a killed atomic write, old layout
    killed = run_dir / ".segmentation.k1ll3d.tmp"  # a killed whole-folder write
    (killed / "maps").mkdir(parents=True)
    (killed / "maps" / "c1.npz").write_bytes(b"half")
    predictions = {"c1": {"map": None, "empty": True}, "c2": {"map": None, "empty": True}}
    SegmentationTask().write_predictions(run_dir / "predictions.jsonl", predictions, ["c1", "c2"],
                                         _segmentation_facts(run_dir))
    assert sorted(p.name for p in run_dir.iterdir()) == ["predictions.jsonl", "segmentation"]
    assert list(old.rglob("*")) == []  # the earlier run's outputs and temporaries went with it
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["c1", "c2"]


def test_segmentation_outputs_of_a_run_that_dies_while_writing_leave_the_old_ones_whole(tmp_path, monkeypatch):
    import pathkit_tasks.segmentation.task as seg

    run_dir = tmp_path / "run"
    (run_dir / "segmentation" / "maps").mkdir(parents=True)
    (run_dir / "segmentation" / "maps" / "c1.npz").write_bytes(b"the earlier run's map")

    def dies_on_the_second(case_id, prediction, folder, run_dir, *, into=None):
        (into / "maps").mkdir(exist_ok=True)
        (into / "maps" / f"{case_id}.npz").write_bytes(b"new")
        if case_id == "c2":
            raise MemoryError("killed while writing c2")
        return {"map": f"segmentation/maps/{case_id}.npz"}, []

    monkeypatch.setattr(seg, "render_slide", dies_on_the_second)
    with pytest.raises(MemoryError):
        seg.SegmentationTask().write_predictions(run_dir / "predictions.jsonl", {"c1": {}, "c2": {}}, ["c1", "c2"],
                                                 _segmentation_facts(run_dir))
    assert (run_dir / "segmentation" / "maps" / "c1.npz").read_bytes() == b"the earlier run's map"
    assert sorted(p.name for p in run_dir.iterdir()) == ["segmentation"]
