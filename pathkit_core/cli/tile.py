"""`pathkit tile SLIDE_OR_DIR... --out DIR`: tissue segmentation and tile manifests for many slides."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, err_console, print_json, print_table, user_errors
from pathkit_core.contracts import PathkitError

_MAX_ROWS = 60


def register(app: typer.Typer) -> None:
    @app.command("tile")
    @user_errors
    def tile_cmd(
        slides: list[Path] = typer.Argument(..., help="Slide files and/or folders of slides."),
        out: Path = typer.Option(..., "--out", "-o", help="Folder for manifests, QC thumbnails, status."),
        target_mpp: float = typer.Option(0.5, "--mpp", "--target-mpp", help="Target resolution of the tiles in um/px."),
        tile_px: int | None = typer.Option(None, "--tile-px",
                                           help="Tile size in pixels at the target mpp (default 256)."),
        tile_um: float | None = typer.Option(None, "--tile-um",
                                             help="Tile size in micrometres instead (128 = 256 px at 0.5 um/px)."),
        stride_px: int | None = typer.Option(None, "--stride",
                                             help="Grid step in target pixels (default: the tile size)."),
        overlap: float = typer.Option(0.0, "--overlap", help="Tile overlap as a fraction (if no --stride)."),
        min_tissue: float = typer.Option(0.5, "--min-tissue", help="Minimum tissue fraction per tile."),
        min_tissue_area: float = typer.Option(25.0, "--min-tissue-area",
                                              help="Minimum tissue per slide in mm^2 (below: warned)."),
        exclude_low_tissue: bool = typer.Option(
            False, "--exclude-low-tissue", help="Give slides below --min-tissue-area no tiles (a cohort minimum)."),
        segmenter: str = typer.Option("otsu", "--segmenter", help="Tissue segmenter (otsu, hest, grandqc, ...)."),
        segmenter_weights: Path | None = typer.Option(
            None, "--segmenter-weights", help="Checkpoint of a learned segmenter (else $PATHKIT_WEIGHTS_DIR/<name>/)."),
        segmenter_option: list[str] = typer.Option(
            [], "--segmenter-option", help="Segmenter option KEY=VALUE (repeatable), e.g. batch_size=8, device=cuda."),
        slide_reader: str | None = typer.Option(
            None, "--slide-reader", help="Slide reader by name (pathkit list slide-readers) [first that opens it]."),
        tissue_geojson: Path | None = typer.Option(
            None, "--tissue-geojson", exists=True, file_okay=False, dir_okay=True,
            help="Folder of edited tissue masks (<slide_id>.tissue.geojson) used instead of the segmenter."),
        thumbnail_px: int = typer.Option(
            2048, "--thumbnail-px", help="Longest side of the tissue mask and its thumbnail, at most (docs/wsi.md)."),
        workers: int = typer.Option(1, "--workers", "-j", min=1, help="Slides tiled in parallel (processes)."),
        slide_mpp: float | None = typer.Option(None, "--slide-mpp",
                                               help="The slide's own mpp when its metadata lacks it (one slide only)."),
        mpp_csv: Path | None = typer.Option(None, "--mpp-csv", help="CSV `slide,mpp` of slide mpp values."),
        strict: bool = typer.Option(False, "--strict", help="Stop at the first failing slide."),
        overwrite: bool = typer.Option(False, "--overwrite",
                                       help="Replace manifests made with other parameters or an older slide."),
        write_csv: bool = typer.Option(False, "--csv", help="Also write <slide_id>.csv tile tables."),
        recursive: bool = typer.Option(False, "--recursive", "-r", help="Search folders recursively."),
        shard_option: str | None = typer.Option(
            None, "--shard", help="Take shard i of N (i/N) [a Slurm array task's own; 1/1: every slide]."),
        list_only: bool = typer.Option(
            False, "--list", help="Print the paths of the slides this process would tile (its shard) and exit."),
        as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    ) -> None:
        """Segment tissue and write a tile manifest (+ QC thumbnail) per slide, resumably.

        Slides whose manifest exists with the same parameters are skipped; a failing slide is
        recorded in OUT/tiling_status.json and the batch goes on. Exit status 1 if any slide failed.
        `--shard i/N` (or a Slurm array task, or the ranks of torchrun) tiles one shard of the
        slides, chosen by a hash of the slide id; shards share one OUT.
        """
        from pathkit_core.shard import current_shard, shard_summary
        from pathkit_core.workspace import check_writable_dir
        from pathkit_core.wsi.slide import MPP_FIX_TILE, find_slides, slide_id_for
        from pathkit_core.wsi.tiling import TilingFailed, TilingParams, low_tissue_note, tile_slides

        shard = current_shard(shard_option)
        if list_only:  # e.g. to stage this shard's slides on node-local disk (docs/scale.md)
            for path in shard.select(find_slides(slides, recursive=recursive), key=slide_id_for):
                typer.echo(str(path))
            return

        if tile_px is not None and tile_um is not None:
            raise PathkitError("give --tile-px or --tile-um, not both")
        check_writable_dir(out, "--out")
        params = TilingParams(
            target_mpp=target_mpp, tile_px=(256 if tile_px is None else tile_px) if tile_um is None else None,
            tile_um=tile_um, stride_px=stride_px, overlap=overlap, min_tissue_fraction=min_tissue,
            min_tissue_area_mm2=min_tissue_area, exclude_below_min_area=exclude_low_tissue, segmenter=segmenter,
            segmenter_options=_segmenter_options(segmenter_option, segmenter_weights), thumbnail_px=thumbnail_px,
            slide_reader=slide_reader or "", tissue_geojson=str(tissue_geojson or ""))
        from pathkit_core.wsi.reader_choice import check_reader_name
        from pathkit_core.wsi.segmentation import get_segmenter

        # an unknown name, a learned segmenter's missing weights or library: usage errors before any work
        get_segmenter(segmenter).identity(params)
        check_reader_name(slide_reader)
        paths = find_slides(slides, recursive=recursive)
        overrides = _mpp_overrides(paths, mpp_csv, slide_mpp)
        try:
            results = tile_slides(slides, out, params, workers=workers, mpp_overrides=overrides, strict=strict,
                                  progress=not quiet and not as_json, overwrite=overwrite, write_csv=write_csv,
                                  recursive=recursive, shard=shard, mpp_fix=MPP_FIX_TILE)
        except TilingFailed as exc:
            results = exc.results
            err_console.print(f"[bold red]stopped (--strict):[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        failed = [r for r in results if r.status == "failed"]
        if not shard.whole:
            err_console.print(shard_summary(shard, len(results), len(paths)), highlight=False)
        if as_json:
            print_json([r.as_dict() for r in results])
        else:
            _summary(results, out, params.params_hash())
            note = low_tissue_note(results, params)
            if note:
                err_console.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
        if failed:
            raise typer.Exit(1)


def _mpp_overrides(paths: list[Path], mpp_csv: Path | None, slide_mpp: float | None) -> dict[str, float]:
    """The slide mpp values of `--mpp-csv` and `--slide-mpp`; a slide the CSV names twice (by file name and by
    id), or `--slide-mpp` given for several slides, is refused before any work."""
    from pathkit_core.wsi.slide import lookup_mpp, read_mpp_csv, slide_id_for

    overrides = read_mpp_csv(mpp_csv) if mpp_csv is not None else {}
    for path in paths if overrides else ():
        lookup_mpp(overrides, path)
    if slide_mpp is not None:
        if len(paths) != 1:
            raise PathkitError(f"--slide-mpp applies to one slide, but {len(paths)} were given; use --mpp-csv")
        overrides[slide_id_for(paths[0])] = slide_mpp
    return overrides


def _segmenter_options(option: list[str], weights: Path | None) -> dict:
    """`--segmenter-option KEY=VALUE`s and `--segmenter-weights` (made absolute: worker processes and
    a run's identity see the same file)."""
    from pathkit_core.cli.plain import parse_key_values

    options = parse_key_values(option, "--segmenter-option")
    if weights is not None:
        options["weights"] = str(weights.expanduser().resolve())
    return options


def _summary(results: list, out: Path, params_hash: str) -> None:
    counts = Counter(r.status for r in results)
    order = {"failed": 0, "empty": 1, "ok": 2, "skipped": 3}
    shown = sorted(results, key=lambda r: (order.get(r.status, 9), r.slide_id))[:_MAX_ROWS]
    rows = []
    for r in shown:
        note = r.reason if r.status in ("failed", "empty") else "; ".join(r.warnings)
        note = note.removeprefix(f"{r.slide_path}: ")
        area = f"{r.tissue_area_mm2:.2f}" if r.tissue_area_mm2 is not None else ""
        rows.append((r.slide_id, r.status, r.code, r.n_tiles, area, f"{r.seconds:.1f}", note))
    print_table(f"tiling into {out} (params {params_hash})",
                ["slide", "status", "code", "tiles", "tissue mm2", "s", "reason / warnings"], rows)
    if len(results) > _MAX_ROWS:
        console.print(escape(f"... {len(results) - _MAX_ROWS} more rows in {out / 'tiling_status.json'}"),
                      highlight=False)
    total = sum(r.n_tiles for r in results if r.status in ("ok", "skipped"))
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    console.print(f"{len(results)} slide(s): {summary}; {total} tiles", highlight=False)
