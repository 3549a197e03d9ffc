"""`pathkit score`: score a predictions file against references with metric plugins.

Its options are one table (`SCORE_OPTIONS`) read by typer for the `score` command and by the
plain parser of `pathkit_sdk.commands`, which runs a plain command line without typer
(`run_plain`, found by `pathkit` through the entry-point index): a scoring process imports
what scoring needs. Printed output is the same either way: the JSON summary is written with the
json module, tables, warnings and errors through the same rich consoles (imported when used).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.cli.plain import parse_key_values, print_json, split_names
from pathkit_core.contracts import PathkitError, brief_list
from pathkit_sdk.commands import REQUIRED, CliOption, typer_command
from pathkit_sdk.commands import run_plain as run_without_typer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pathkit_core.evaluation.runner import ScoreResult

SCORE_OPTIONS = (
    CliOption("metric", ("--metric", "-m"), str, REQUIRED, "Metric name(s), comma-separated.", multiple=True),
    CliOption("predictions", ("--predictions", "-p"), Path, REQUIRED,
              "REG JSON list, JSONL, PathBench JSON, or a folder of per-case files (masks: s1.png, ...)."),
    CliOption("references", ("--references", "-r"), Path, None, "References file or folder (not for PathBench)."),
    CliOption("dataset", ("--dataset", "-d"), str, None, "Dataset (schema-aware metrics read it)."),
    CliOption("out", ("--out", "-o"), Path, None, "Write metrics.json and per_case.parquet here."),
    CliOption("as_json", ("--json",), bool, False, "Print the summary as JSON on stdout."),
    CliOption("option", ("--option",), str, (), "Metric option KEY=VALUE (repeatable).", multiple=True),
)
# What `write_result_folder` puts in a result folder of its own (`--out`).
RESULT_FILES = ("metrics.json", "per_case.parquet")


def _warn(message: str, **kwargs: Any) -> None:
    from pathkit_core.cli.common import err_console

    err_console.print(message, **kwargs)


def _warn_flagged(flagged: dict[str, str]) -> None:
    """One warning for the cases with damaged text (`ScoreResult.input_flags`), naming the first."""
    from pathkit_core.evaluation.runner import INPUT_FLAGS

    if flagged:
        first, notes = next(iter(flagged.items()))
        _warn(f"[yellow]warning:[/] {len(flagged)} case(s) have damaged text ({INPUT_FLAGS} in the per-case "
              f"table), e.g. {first}: {notes}", highlight=False, soft_wrap=True)


def foreign_entries(folder: str | Path, names: Iterable[str]) -> list[str]:
    """What `folder` holds besides `names` (empty when it does not exist): a result folder is
    replaced as a whole, so anything else in it would be lost."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    allowed = set(names)

    def ours(name: str) -> bool:  # a result file, or what a killed atomic write of one left
        return name in allowed or (name.startswith(".") and name.endswith(".tmp")
                                   and name[1:].split(".tmp")[0].rsplit(".", 1)[0] in allowed)

    return sorted(p.name for p in folder.iterdir() if not ours(p.name))


def check_result_folder(folder: str | Path, names: Iterable[str], what: str) -> Path:
    """Before any work: `folder` can be written (`pathkit_core.workspace.check_writable_dir`) and holds
    nothing but the result files `names` of an earlier run, so replacing it as a whole loses nothing of
    the user's."""
    from pathkit_core.workspace import check_writable_dir  # its imports cost a printing-only run ~25 ms

    folder = check_writable_dir(folder, what)
    other = foreign_entries(folder, names)
    if other:
        raise PathkitError(f"{what} {folder} holds other files ({brief_list(other, 5)}); its results are replaced "
                           "as a whole, "
                           "so give an empty or new folder, or one an earlier run of this command wrote")
    return folder


def score_command(metric: list[str], predictions: Path, references: Path | None, dataset: str | None,
                  out: Path | None, as_json: bool, option: list[str]) -> None:
    """Score predictions against references."""
    from pathkit_core.evaluation.runner import prepare_metrics, score
    from pathkit_interop.records import join_by_id, match_extensions, read_records

    if out is not None:
        check_result_folder(out, RESULT_FILES, "--out")  # before scoring, so no score is lost at the end
    names = split_names(metric)
    options = parse_key_values(option, "--option")
    context = {"options": options} if options else None
    # metrics that wait for something (METEOR's JVM) start it now, while the files are read
    prepare_metrics(names, dataset=dataset, context=context)
    whole = _whole_records(names)
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
        _warn(f"matched {len(renamed)} prediction id(s) to reference ids that differ only by a slide "
              f"file extension (e.g. {renamed[0][0]!r} -> {renamed[0][1]!r})", highlight=False)
    ids = join_by_id(values, refs, pred_name=str(predictions), ref_name=str(references or predictions))
    result = score(names, values, refs, ids=ids, dataset=dataset, context=context)
    if out is not None:
        write_result_folder(result, out, extra={"predictions": str(predictions), "references": str(references),
                                                "dataset": dataset, "n_cases": len(ids)})
    _warn_flagged(result.input_flags)
    if as_json:
        print_json(result.summary)
        return
    from pathkit_core.cli.common import console, print_scores

    print_scores(f"scores over {len(ids)} cases", result.summary, details=result.details)
    if out is not None:
        from rich.markup import escape

        console.print(f"results written to {escape(str(out))}", highlight=False)


def register(app: Any) -> None:
    from pathkit_core.cli.common import user_errors

    app.command("score")(user_errors(typer_command(SCORE_OPTIONS, score_command, score_command.__doc__ or "")))


def run_plain(argv: Sequence[str]) -> int | None:
    """`pathkit score ARGS` without typer: the exit status, or None when typer is to read ARGS."""
    return run_without_typer(SCORE_OPTIONS, score_command, argv)


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


def write_result_folder(result: ScoreResult, out_dir: str | Path, *, extra: Mapping[str, Any] | None = None) -> Path:
    """`write_results` into a folder of its own (`pathkit score --out`), replaced as a whole: the
    new files are written beside it and the folders swapped, so a run killed while writing leaves
    the old result whole, never a new metrics.json beside an old per_case.parquet."""
    from pathkit_core.evaluation.runner import write_results
    from pathkit_core.workspace import replaced_folder  # subprocess, socket, tempfile: only to write

    with replaced_folder(out_dir) as tmp:
        write_results(result, tmp, extra=extra)
    return Path(out_dir)
