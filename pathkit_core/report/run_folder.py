"""A finished run folder as a report reads it: every artifact on disk (metrics, per-case table,
predictions, test cases, history, stages, provenance, QC), loaded on first use; nothing reruns a stage
(docs/reports.md, "Adding a task's or a plugin's own sections")."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.formats import RUN_FOLDER_VERSION, check_version
from pathkit_core.report.figures import FigureWriter
from pathkit_core.report.registry import UsesRegistry

FIGURES_FOLDER = "figures"
TEST_CASES_FILE = "test_cases.jsonl"
FEATURES_QC_FILE = "features_qc.csv"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file ([] when it is absent); a bad line is an error naming it."""
    if not path.exists():
        return []
    from pathkit_core.readers import read_jsonl_file

    return read_jsonl_file(path)


def _scores_problem(scores: Any, where: str) -> str | None:
    if not isinstance(scores, dict):
        return f"{where} is {type(scores).__name__}, not an object of scores"
    for metric, values in scores.items():
        if not isinstance(values, dict):
            return f"{where}.{metric} is {type(values).__name__}, not an object of scores"
        for key, value in values.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                return f"{where}.{metric}.{key} is {value!r}, not a number"
    return None


def check_metrics_record(found: dict[str, Any], path: Path) -> None:
    """A run's metrics.json as pathkit writes it: scores are numbers per metric (and per
    baseline), details objects; anything else (a file edited by hand or damaged) is an error
    naming the file and the key, before any report is drawn from it."""
    problems = [_scores_problem(found.get("metrics") or {}, "metrics")]
    baselines = found.get("baselines") or {}
    if not isinstance(baselines, dict):
        problems.append(f"baselines is {type(baselines).__name__}, not an object")
    else:
        problems += [_scores_problem(v, f"baselines.{k}") for k, v in baselines.items()]
    details = found.get("details") or {}
    if not isinstance(details, dict):
        problems.append(f"details is {type(details).__name__}, not an object")
    else:
        problems += [f"details.{k} is {type(v).__name__}, not an object" for k, v in details.items()
                     if v is not None and not isinstance(v, dict)]
    problem = next((p for p in problems if p), None)
    if problem:
        raise PathkitError(f"{path}: {problem}; the file is damaged (rerun the score stage to rewrite it)")


def is_run_folder(path: Path) -> bool:
    return (Path(path) / "metrics.json").is_file()


class RunFolder(UsesRegistry):
    """The artifacts of one run folder (`<workdir>/runs/<dataset>/<encoder>/<generator>/<key>/`)."""

    def __init__(self, path: str | Path, registry: Any = None) -> None:
        self.path = Path(path)
        if not is_run_folder(self.path):
            raise PathkitError(f"{self.path} is not a run folder: it has no metrics.json (run `pathkit run` first)")
        self._registry = registry
        self.figures = FigureWriter(self.path / FIGURES_FOLDER, relative_to=self.path)

    # ------------------------------------------------------------------ files

    @cached_property
    def metrics(self) -> dict[str, Any]:
        from pathkit_core.readers import read_json_file

        found = read_json_file(self.path / "metrics.json", "metrics record")
        check_version(found.get("format_version"), what="run folder", path=self.path / "metrics.json",
                      current=RUN_FOLDER_VERSION, redo="pathkit run ... --workdir NEW_WORKDIR")
        check_metrics_record(found, self.path / "metrics.json")
        return found

    @cached_property
    def provenance(self) -> dict[str, Any]:
        return read_json(self.path / "provenance.json") or {}

    @cached_property
    def stages(self) -> dict[str, Any]:
        return read_json(self.path / "stages.json") or {}

    @cached_property
    def history(self) -> list[dict[str, Any]]:
        found = read_json(self.path / "checkpoints" / "history.json")
        return found if isinstance(found, list) else []

    @cached_property
    def per_case(self) -> Any:
        """The per-case table (polars DataFrame) of the reported checkpoint, or None."""
        path = self.path / "per_case.parquet"
        if not path.exists() and not path.is_symlink():
            return None
        from pathkit_core.readers import read_parquet_file

        return read_parquet_file(path, "per-case table")

    def per_case_rows(self, wanted: Any) -> tuple[list[str], dict[str, dict[str, Any]]]:
        """Of the `wanted` per-case columns, those the table has (in that order), and its rows by
        case id holding them; ([], {}) when there is no per-case table with ids."""
        per_case = self.per_case
        if per_case is None or "id" not in per_case.columns:
            return [], {}
        present = [c for c in wanted if c in per_case.columns]
        return present, {r["id"]: r for r in per_case.select(["id", *present]).iter_rows(named=True)}

    @cached_property
    def predictions(self) -> dict[str, Any]:
        """The reported checkpoint's test predictions by case id, read the task's way."""
        path = self.path / "predictions.jsonl"
        if not path.exists():
            return {}
        task = self.task
        if task is not None:
            from pathkit_core.training.trainer import task_read_predictions

            return task_read_predictions(task, path)
        return {r["id"]: r.get("prediction") for r in read_jsonl(path)}

    @cached_property
    def test_cases(self) -> dict[str, dict[str, Any]]:
        """The scored test cases by id: reference, patient, slides, images, feature files."""
        return {str(r["id"]): r for r in read_jsonl(self.path / TEST_CASES_FILE) if "id" in r}

    def references(self) -> dict[str, Any]:
        return {cid: row.get("reference") for cid, row in self.test_cases.items()}

    @cached_property
    def features_qc(self) -> Any:
        path = self.path / FEATURES_QC_FILE
        if not path.exists():
            return None
        import polars as pl

        from pathkit_core.features.qc import QC_COLUMNS, QC_NUMBERS

        # typed as written: a column that is empty for every input (no QC recorded) is still a number,
        # and a column an older pathkit did not write is there, empty
        frame = pl.read_csv(path, infer_schema_length=0)
        types = {c: (pl.Int64 if c == "n_tiles" else pl.Float64 if c in QC_NUMBERS else pl.Utf8) for c in QC_COLUMNS}
        return frame.with_columns([pl.col(c).cast(t, strict=False) if c in frame.columns else pl.lit(None, t).alias(c)
                                   for c, t in types.items()])

    # ------------------------------------------------------------------ facts

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.provenance.get("config") or {})

    @property
    def dataset(self) -> str:
        return str(self.metrics.get("run", {}).get("dataset") or self.config.get("dataset") or "")

    @property
    def encoder(self) -> str:
        return str(self.metrics.get("run", {}).get("encoder") or self.config.get("encoder") or "")

    @property
    def generator(self) -> str:
        return str(self.metrics.get("run", {}).get("generator") or self.config.get("generator") or "")

    @property
    def workdir(self) -> Path | None:
        """The workspace the run belongs to (`<workdir>/runs/<dataset>/<encoder>/<generator>/<key>`)."""
        given = self.config.get("workdir")
        if given and Path(given).is_dir():
            return Path(given)
        parents = self.path.resolve().parents
        return parents[4] if len(parents) > 4 and parents[3].name == "runs" else None

    @cached_property
    def task_name(self) -> str:
        named = self.metrics.get("task")
        if named:
            return str(named)
        try:
            return str(self.registry.get("dataset", self.dataset).task)
        except Exception:  # noqa: BLE001 - a run of an uninstalled dataset still gets its generic report
            return ""

    @cached_property
    def task(self) -> Any:
        """The run's Task instance, or None when no installed plugin registers it."""
        if not self.task_name:
            return None
        try:
            return self.registry.get("task", self.task_name)()
        except Exception:  # noqa: BLE001
            return None

    @property
    def summary(self) -> dict[str, dict[str, float]]:
        return dict(self.metrics.get("metrics") or {})

    @property
    def baselines(self) -> dict[str, dict[str, dict[str, float]]]:
        return dict(self.metrics.get("baselines") or {})

    def details(self, key: str) -> tuple[str, dict[str, Any]] | None:
        """(metric, its details) of the first metric whose `MetricResult.details` hold `key`."""
        for metric, found in (self.metrics.get("details") or {}).items():
            if isinstance(found, dict) and key in found:
                return metric, found
        return None

    def score(self, key: str, metric: str | None = None) -> float | None:
        for name, values in self.summary.items():
            if (metric is None or name == metric) and key in values:
                return values[key]
        return None

    @property
    def selected_epoch(self) -> int | None:
        fit = self.stages.get("fit") or {}
        best = fit.get("best_epoch")
        if best is None:
            best = ((self.metrics.get("checkpoints") or {}).get("best") or {}).get("epoch")
        return int(best) if isinstance(best, int | float) else None

    def attention_index(self, checkpoint: str = "best") -> list[dict[str, str]]:
        """Deprecated in pathkit 0.2, removed in 0.3: the attention export's index moved to the
        classification task package, `pathkit_tasks.classification.attention.attention_index(run.path,
        checkpoint)`; this forwards to it."""
        from pathkit_core._deprecation import moved_attribute

        moved = moved_attribute(__name__, "attention_index", "pathkit_tasks.classification.attention",
                                qualname="RunFolder.attention_index")
        return moved(self.path, checkpoint)


__all__ = ["FEATURES_QC_FILE", "FIGURES_FOLDER", "TEST_CASES_FILE", "RunFolder", "is_run_folder", "read_json",
           "read_jsonl"]
