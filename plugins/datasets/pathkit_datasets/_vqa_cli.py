"""`pathkit vqa audit` (registered by the pathoargus plugin): a VQA dataset's answer positions and
how often each answer option is right, per split and capability, without tiling or training."""

from __future__ import annotations

from pathlib import Path

import typer

from pathkit_core.cli.common import parse_key_values, print_json, print_table, user_errors
from pathkit_core.contracts import PathkitError
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA


def audit_dataset(dataset: str, root: Path | None, options: dict, workdir: Path) -> dict:
    """{"audit": answer positions per split and capability, "options": each answer option's support
    (how often it is right when offered) per split and capability, "excluded": count}."""
    from pathkit_core.plugins import get_plugin_manager
    from pathkit_core.workspace import FileLock
    from pathkit_datasets._vqa_table import answer_option_audit, answer_position_audit

    cls = get_plugin_manager().get("dataset", dataset)
    if cls.task != TASK_MULTIPLE_CHOICE_VQA:
        raise PathkitError(f"dataset {dataset!r} is a {cls.task!r} dataset, not multiple-choice VQA")
    if root is None and cls.has_demo():
        with FileLock(workdir / "locks" / f"demo-{cls.name}.lock", timeout=600):
            root = cls(None, **options).make_demo(workdir / "datasets" / cls.name)
    opened = cls(root, **options)
    opened.validate()
    parts = {name: list(opened.cases(name)) for name in opened.splits()}
    return {"audit": answer_position_audit(parts), "options": answer_option_audit(parts),
            "excluded": len(opened.excluded_cases()),
            "questions": {name: len(cases) for name, cases in parts.items()}}


def register(app: typer.Typer) -> None:
    vqa = typer.Typer(help="Multiple-choice VQA datasets: audits.", no_args_is_help=True)

    @vqa.command("audit")
    @user_errors
    def audit_cmd(
        dataset: str = typer.Option(..., "--dataset", "-d", help="A VQA dataset (pathoargus, wsi-vqa)."),
        dataset_root: Path | None = typer.Option(None, "--dataset-root", help="Dataset folder (none: its demo)."),
        dataset_option: list[str] = typer.Option([], "--dataset-option", "-o", help="Dataset option KEY=VALUE."),
        workdir: Path = typer.Option(Path("pathkit-work"), "--workdir", "-w", help="Workspace (for a demo)."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
        top: int = typer.Option(5, "--top", help="Answer options shown per split and capability (--json: all)."),
    ) -> None:
        """Answer positions per split and capability (PathoArgus balances them within one question), and
        how often each answer option is right when offered (its semantic support)."""
        result = audit_dataset(dataset, dataset_root, parse_key_values(dataset_option, "--dataset-option"), workdir)
        if as_json:
            print_json(result)
            return
        rows = []
        for part, groups in result["audit"].items():
            for name, counts in groups.items():
                positions = " / ".join(f"{k} {v}" for k, v in counts.items() if len(k) == 1)
                rows.append((part, name, counts["questions"], positions, counts["imbalance"]))
        print_table(f"answer positions of {dataset} ({result['excluded']} question(s) excluded)",
                    ["split", "capability", "questions", "positions", "max - min"], rows)
        shown = []
        for part, groups in result["options"].items():
            for name, options in groups.items():
                for row in options[:top]:
                    shown.append((part, name, row["option"], row["offered"], row["correct"], f"{row['support']:.3f}"))
        print_table(f"answer options of {dataset}: the {top} most often right per split and capability "
                    "(support = right / offered)", ["split", "capability", "option", "offered", "right", "support"],
                    shown)

    app.add_typer(vqa, name="vqa")
