"""`pathkit score`: score a predictions file against references with metric plugins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from pathkit_core.cli.common import (
    console,
    err_console,
    parse_key_values,
    print_json,
    print_scores,
    split_names,
    user_errors,
)
from pathkit_core.contracts import PathkitError


def _warn_flagged(per_case: Any) -> None:
    from pathkit_core.evaluation.runner import INPUT_FLAGS

    if per_case is None or INPUT_FLAGS not in per_case.columns:
        return
    flagged = per_case.filter(per_case[INPUT_FLAGS] != "")
    if flagged.height:
        first = flagged.row(0, named=True)
        err_console.print(
            f"[yellow]warning:[/] {flagged.height} case(s) have damaged text ({INPUT_FLAGS} in the per-case "
            f"table), e.g. {first['id']}: {first[INPUT_FLAGS]}", highlight=False, soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    @app.command("score")
    @user_errors
    def score_cmd(
        metric: list[str] = typer.Option(..., "--metric", "-m", help="Metric name(s), comma-separated."),
        predictions: Path = typer.Option(..., "--predictions", "-p", help="REG JSON list, JSONL, PathBench JSON, "
                                         "or a folder of per-case files (masks: s1.png, ...)."),
        references: Path | None = typer.Option(None, "--references", "-r",
                                               help="References file or folder (not for PathBench)."),
        dataset: str | None = typer.Option(None, "--dataset", "-d", help="Dataset (schema-aware metrics read it)."),
        out: Path | None = typer.Option(None, "--out", "-o", help="Write metrics.json and per_case.parquet here."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
        option: list[str] = typer.Option([], "--option", help="Metric option KEY=VALUE (repeatable)."),
    ) -> None:
        """Score predictions against references."""
        from pathkit_core.evaluation.runner import RESULT_FILES, prepare_metrics, score, write_result_folder
        from pathkit_core.workspace import check_result_folder
        from pathkit_interop.records import (
            join_by_id,
            match_extensions,
            read_records,
        )

        if out is not None:
            check_result_folder(out, RESULT_FILES, "--out")  # before scoring, so no score is lost at the end
        options = parse_key_values(option, "--option")
        # metrics that wait for something (METEOR's JVM) start it now, while the files are read
        prepare_metrics(split_names(metric), dataset=dataset, context={"options": options} if options else None)
        whole = _whole_records(split_names(metric))
        pred_file = read_records(predictions, whole=whole)
        if references is not None:
            refs = read_records(references, whole=whole).values
        elif pred_file.references is not None:
            refs = pred_file.references
        else:
            raise PathkitError(
                f"{predictions}: carries no references (not a PathBench {{id: {{pred, target}}}} file); "
                "pass --references FILE"
            )
        values, renamed = match_extensions(pred_file.values, refs)
        if renamed:
            err_console.print(f"matched {len(renamed)} prediction id(s) to reference ids that differ only by a slide "
                              f"file extension (e.g. {renamed[0][0]!r} -> {renamed[0][1]!r})", highlight=False)
        ids = join_by_id(values, refs, pred_name=str(predictions), ref_name=str(references or predictions))
        result = score(split_names(metric), values, refs, ids=ids, dataset=dataset,
                       context={"options": options} if options else None)
        if out is not None:
            write_result_folder(result, out, extra={"predictions": str(predictions), "references": str(references),
                                              "dataset": dataset, "n_cases": len(ids)})
        _warn_flagged(result.per_case)
        if as_json:
            print_json(result.summary)
            return
        print_scores(f"scores over {len(ids)} cases", result.summary, details=result.details)
        if out is not None:
            console.print(f"results written to {out}")


def _whole_records(names: list[str]) -> bool:
    """Whether the metrics read whole records (`Metric.whole_records`); one call cannot mix both."""
    from pathkit_core.plugins import get_component

    wants = {name: get_component("metric", name).whole_records for name in names}
    if len(set(wants.values())) > 1:
        whole = ", ".join(n for n, w in wants.items() if w)
        plain = ", ".join(n for n, w in wants.items() if not w)
        raise PathkitError(f"metric(s) {whole} read whole records and {plain} read one value per record: "
                           "score them in separate calls")
    return any(wants.values())
