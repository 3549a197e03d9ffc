"""`pathkit crqs ...`: show the clinical fields CRQS reads from a report, build a vocabulary from train reports."""

from __future__ import annotations

from pathlib import Path

import typer

from pathkit_core.cli.common import console, print_json, user_errors
from pathkit_core.contracts import PathkitError


def register(app: typer.Typer) -> None:
    crqs_app = typer.Typer(help="CRQS helpers: the fields read from a report; vocabularies.",
                           no_args_is_help=True)

    @crqs_app.command("extract")
    @user_errors
    def extract_cmd(
        text: str | None = typer.Argument(None, help="Report text (or use --file)."),
        file: Path | None = typer.Option(None, "--file", "-f", help="Read the report from this file."),
        dataset: str | None = typer.Option(
            None, "--dataset", "-d", help="Schema: reg2025, histai, tcga-pathtext (default generic)."
        ),
        vocabulary: Path | None = typer.Option(
            None, "--vocabulary", help="A vocabulary saved by `pathkit crqs vocabulary`."
        ),
    ) -> None:
        """Print the clinical fields (and doubtful findings) CRQS extracts from one report."""
        from pathkit_metrics._crqs.schemas import resolve_schema
        from pathkit_metrics._crqs.scoring import extractor_for, resolve_vocabulary

        if (text is None) == (file is None):
            raise PathkitError("give the report text or --file, not both and not neither")
        if file is not None:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise PathkitError(f"{file}: cannot read report text ({exc})") from None
        context = {"dataset": dataset, "vocabulary": vocabulary}
        schema = resolve_schema(context)
        chosen = resolve_vocabulary(context)
        extraction = extractor_for(chosen).extract(text)
        print_json({
            "schema": schema.name,
            "vocabulary_sha256": chosen.sha256,
            "fields": {k: extraction.fields[k] for k in schema.fields if k in extraction.fields},
            "uncertain": {k: v for k, v in extraction.uncertain.items() if k in schema.fields},
        })

    @crqs_app.command("vocabulary")
    @user_errors
    def vocabulary_cmd(
        reports: Path = typer.Option(
            ..., "--reports", "-r", help="Splits JSON (REG format) or a records file."
        ),
        out: Path = typer.Option(..., "--out", "-o", help="Where to write the vocabulary JSON."),
        split: str = typer.Option("train", "--split", help="Split to learn from in a splits file."),
        min_count: int = typer.Option(2, "--min-count", help="Reports a phrase must occur in."),
    ) -> None:
        """Learn a diagnosis vocabulary from train reports and save it with its sha256."""
        from pathkit_metrics._crqs.vocabulary import BUILTIN_VOCABULARY, build_vocabulary, read_report_texts

        texts = read_report_texts(reports, split)
        learned = build_vocabulary(texts, min_count=min_count)
        learned.save(out)
        console.print(
            f"{len(learned.terms) - len(BUILTIN_VOCABULARY.terms)} learned terms from {len(texts)} reports "
            f"(+{len(BUILTIN_VOCABULARY.terms)} built-in) -> {out}  sha256 {learned.sha256}"
        )

    app.add_typer(crqs_app, name="crqs")


__all__ = ["register"]
