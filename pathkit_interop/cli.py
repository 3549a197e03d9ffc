"""`pathkit features import|export`: CLAM/TRIDENT/STAMP h5 files into the feature store, and the
store's features out as TRIDENT-style h5."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, err_console, print_table, user_errors
from pathkit_core.contracts import PathkitError


def register(app: typer.Typer) -> None:
    features_app = typer.Typer(help="Import features from CLAM/TRIDENT/STAMP h5 files; export to TRIDENT h5.",
                               no_args_is_help=True)
    app.add_typer(features_app, name="features")

    @features_app.command("import")
    @user_errors
    def import_cmd(
        files: list[Path] = typer.Argument(..., help="CLAM, TRIDENT or STAMP .h5 feature files."),
        encoder: str = typer.Option(..., "--encoder", "-e", help="Encoder name to store them under."),
        out: Path = typer.Option(..., "--out", "-o", help="Feature store folder."),
        slide_id: str | None = typer.Option(None, "--slide-id", help="Slide id (one file only) [from the file]."),
        mpp: float | None = typer.Option(
            None, "--mpp", help="Level-0 mpp converting STAMP micrometre coordinates to pixels."
        ),
        slide: Path | None = typer.Option(None, "--slide", help="Read the mpp from this slide (one file only)."),
        coords_unit: str | None = typer.Option(None, "--coords-unit", help="px or um, when the file does not say."),
        feature_dtype: str = typer.Option("float16", "--feature-dtype", help="Stored dtype."),
        overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing feature files."),
    ) -> None:
        """Import h5 feature files into the store (coordinates become level-0 pixels; QC runs)."""
        from pathkit_core.features.store import check_encoder_name, check_slide_id
        from pathkit_core.workspace import check_regular_file, check_writable_dir
        from pathkit_interop.feature_exchange import import_h5, slide_mpp

        check_encoder_name(encoder)
        if slide_id is not None:
            check_slide_id(slide_id)
        for f in files:
            check_regular_file(f, "feature file")
        check_writable_dir(out, "--out")
        if (slide_id or slide) and len(files) > 1:
            raise PathkitError("--slide-id and --slide apply to one file; import files one by one")
        if coords_unit not in (None, "px", "um"):
            raise PathkitError(f"--coords-unit must be px or um, not {coords_unit!r}")
        if slide is not None:
            mpp = slide_mpp(slide)
        rows = []
        for f in files:
            path = import_h5(f, out, encoder, slide_id=slide_id, mpp=mpp, coords_unit=coords_unit,
                             dtype=feature_dtype, overwrite=overwrite)
            from pathkit_core.features.store import read_feature_meta

            meta = read_feature_meta(path)
            rows.append((str(f), meta["slide_id"], meta["n_tiles"], meta["embed_dim"], meta["status"],
                         meta.get("failure_reason", "")))
        print_table(f"imported into {out / encoder}", ["file", "slide", "tiles", "dim", "status", "reason"], rows)
        if any(r[4] == "failed" for r in rows):
            raise typer.Exit(1)

    @features_app.command("export")
    @user_errors
    def export_cmd(
        source: Path = typer.Argument(..., help="A feature file or an encoder folder of the store."),
        out: Path = typer.Option(..., "--out", "-o", help="Folder for <slide_id>.h5 files."),
    ) -> None:
        """Export pathkit features as TRIDENT-style h5 (features + level-0 coords with attributes)."""
        from pathkit_core.features.store import FEATURE_SUFFIX, read_feature_meta, read_features
        from pathkit_core.workspace import check_writable_dir
        from pathkit_interop.feature_exchange import export_path, export_trident_h5

        files = sorted(source.glob(f"*{FEATURE_SUFFIX}")) if source.is_dir() else [source]
        if not files:
            raise PathkitError(f"{source}: no feature files to export")
        check_writable_dir(out, "--out")
        # Every target is named (from the files' metadata) and checked before anything is written.
        targets = {f: export_path(out, read_feature_meta(f).get("slide_id") or f.name.split(".")[0], f)
                   for f in files}
        for f in files:
            ff = read_features(f, verify=True)
            if ff.meta.get("status") == "failed":
                why = escape(f"{f}: marked failed ({ff.meta.get('failure_reason')})")
                err_console.print(f"[yellow]skipped[/] {why}", highlight=False)
                continue
            target = export_trident_h5(ff, targets[f])
            console.print(escape(f"{f} -> {target}"), highlight=False)

