"""`pathkit extract`, `pathkit qc` and `pathkit features import|export`: tile features and their checks."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, err_console, print_json, print_table, user_errors
from pathkit_core.contracts import PathkitError

_MAX_ROWS = 60


def _tile_first(slides: list[Path], tiles_dir: Path, encoder_cls: Any, mpp: float | None, workers: int, progress: bool,
                state: Any, shard: Any, slide_reader: str | None = None) -> tuple[list[Path], list[str], set[str]]:
    """Tile this shard's slides with the encoder's tile spec: the manifests of all slides that
    have one (this shard's and other shards' so far), the ids of all slides given and the ids of
    those with a manifest."""
    from pathkit_core.wsi.slide import MPP_FIX_EXTRACT, find_slides, slide_id_for
    from pathkit_core.wsi.tiling import TilingParams, low_tissue_note, manifest_path_for, tile_slides

    spec = encoder_cls.tile_spec
    params = TilingParams(target_mpp=spec.mpp, tile_px=spec.tile_px, slide_reader=slide_reader or "")
    paths = sorted(find_slides(slides), key=lambda p: slide_id_for(p))
    overrides = {str(p): mpp for p in paths} if mpp is not None else None
    results = tile_slides(paths, tiles_dir, params, workers=max(1, workers), mpp_overrides=overrides,
                          progress=progress and shard.rank == 0, shard=shard, mpp_fix=MPP_FIX_EXTRACT)
    if state is not None:
        state.wait_for_everyone()
    for r in results:
        if r.status == "failed":
            err_console.print(f"[yellow]tiling failed[/] {escape(r.slide_id)}: {escape(r.reason)}", highlight=False)
    note = low_tissue_note(results, params) if shard.rank == 0 else None
    if note:
        err_console.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    ids = [slide_id_for(p) for p in paths]
    found = {sid: manifest for sid in ids if (manifest := manifest_path_for(tiles_dir, sid)).is_file()}
    return list(found.values()), ids, set(found)


def _summary_rows(out: Path, encoder: str, slide_ids: list[str]) -> list[tuple[str, str, Any, str]]:
    from pathkit_core.features.store import feature_path, read_status

    status = read_status(out, encoder)
    rows = []
    for sid in slide_ids:
        rec = status.get(sid)
        if rec is None:
            exists = feature_path(out, encoder, sid).is_file()
            rows.append((sid, "ok" if exists else "missing", "", "" if exists else "no record"))
        else:
            rows.append((sid, rec.get("status", "?"), rec.get("n_tiles", ""), rec.get("reason", "")))
    return rows


def _check_extract_options(slides: list[Path] | None, manifests: Path | None, out: Path, device: str | None,
                           tiles_dir: Path | None) -> None:
    """Usage errors and unwritable folders, before any model is loaded or slide tiled."""
    from pathkit_core.features.extract import parse_device
    from pathkit_core.workspace import check_writable_dir

    if bool(slides) == (manifests is not None):
        raise PathkitError("give either SLIDE arguments or --manifests DIR (one of the two)")
    check_writable_dir(out, "--out")
    if device not in (None, "auto"):
        parse_device(device)
    if tiles_dir is not None:
        check_writable_dir(tiles_dir, "--tiles-dir")


def _manifest_inputs(manifests: Path) -> tuple[list[Path], list[str], set[str]]:
    """The manifests of a `pathkit tile` folder, their slide ids, and those ids again (all tiled)."""
    from pathkit_core.features.extract import manifest_paths
    from pathkit_core.wsi.manifest import read_manifest_meta

    items = manifest_paths(manifests)
    every = sorted(str(read_manifest_meta(p)["slide_id"]) for p in items)
    return items, every, set(every)


def register(app: typer.Typer) -> None:
    @app.command("extract")
    @user_errors
    def extract_cmd(
        slides: list[Path] = typer.Argument(None, help="Slides to tile and extract (or use --manifests)."),
        encoder: str = typer.Option(..., "--encoder", "-e", help="Encoder name (pathkit list encoders)."),
        manifests: Path | None = typer.Option(
            None, "--manifests", "-m", help="Folder of tile manifests (<slide_id>.parquet) made by `pathkit tile`."),
        out: Path = typer.Option(..., "--out", "-o",
                                 help="Feature store folder (<out>/<encoder>/<slide>.safetensors)."),
        weights: Path | None = typer.Option(None, "--weights", help="Checkpoint file or folder."),
        batch_size: int = typer.Option(64, "--batch-size", "-b", min=1, help="Tiles per forward pass."),
        workers: int | None = typer.Option(None, "--workers", "-j", min=0,
                                           help="DataLoader workers reading tiles [GPU: up to 8; CPU: 0]."),
        dtype: str = typer.Option("auto", "--dtype",
                                  help="Compute precision: auto (encoder's on GPU, fp32 on CPU), fp32, fp16, bf16."),
        feature_dtype: str = typer.Option("float16", "--feature-dtype",
                                          help="Stored dtype: float16, bfloat16, float32."),
        device: str | None = typer.Option(None, "--device", help="cpu, cuda, cuda:1 [auto]."),
        download: bool = typer.Option(False, "--download",
                                      help="Allow downloading the checkpoint from the Hugging Face hub."),
        tiles_dir: Path | None = typer.Option(None, "--tiles-dir",
                                              help="Where SLIDE arguments are tiled [<out>/tiles/<tile spec>]."),
        mpp: float | None = typer.Option(None, "--slide-mpp", help="Level-0 mpp for slides whose metadata lacks it."),
        slide_reader: str | None = typer.Option(
            None, "--slide-reader", help="Slide reader by name (pathkit list slide-readers) [first that opens it]."),
        overwrite: bool = typer.Option(False, "--overwrite", help="Re-extract slides already extracted."),
        compile_model: bool = typer.Option(
            False, "--compile", help="Run the model through torch.compile (falls back to eager if that fails)."),
        shard_option: str | None = typer.Option(
            None, "--shard", help="Take shard i of N (i/N) [a Slurm array task's own; 1/1: every slide]."),
        as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    ) -> None:
        """Extract tile features per slide into a checksummed safetensors store, resumably.

        Slides are sharded by a hash of their id: `--shard i/N` (or a Slurm array task) takes
        one shard; under `accelerate launch` (or torchrun) the processes split it. Shards share
        one OUT. Failed slides are recorded with the reason in OUT/<encoder>/extraction_status.json
        and the run goes on; exit status 1 if any slide of this shard failed.
        """
        from pathkit_core.features.extract import distributed_state, extract_features, resolve_encoder
        from pathkit_core.shard import current_shard, shard_summary

        _check_extract_options(slides, manifests, out, device, tiles_dir)
        from pathkit_core.wsi.reader_choice import check_reader_name

        check_reader_name(slide_reader)
        enc = resolve_encoder(encoder)
        shard = current_shard(shard_option)  # a usage error before any model is loaded
        state = distributed_state(device)
        if state is not None:
            shard = shard.outer().within(int(state.process_index), int(state.num_processes))
        rank = shard.rank
        if slides:
            tdir = tiles_dir or out / "tiles" / enc.tile_spec.key()
            items, every, with_manifest = _tile_first(list(slides), tdir, type(enc), mpp, workers or 1, not quiet,
                                                      state, shard, slide_reader)
            if not items:
                raise PathkitError("no slide could be tiled; see the messages above")
        else:
            items, every, with_manifest = _manifest_inputs(manifests)  # type: ignore[arg-type]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            results = extract_features(enc, items, out, weights_path=weights, batch_size=batch_size, workers=workers,
                                       device=device, dtype=dtype, feature_dtype=feature_dtype, progress=not quiet,
                                       accelerator=state, allow_download=True if download else None,
                                       overwrite=overwrite, compile=compile_model, shard=shard)
        for w in caught:
            err_console.print(f"[yellow]warning:[/] {escape(str(w.message))}", highlight=False)
        # The summary covers this shard (all ranks of the launch); other shards report their own.
        ours = shard.outer().select(every)
        note = shard_summary(shard.outer(), len(ours), len(every))
        # Slides that could not be tiled were reported above; the table is about features.
        slide_ids = [sid for sid in ours if sid in with_manifest]
        if note and rank == 0:
            err_console.print(note, highlight=False)
        rows = _summary_rows(out, enc.name, slide_ids)
        # Slides another live process holds are neither done nor failed.
        locked = {r.slide_id: r.reason for r in results if r.status == "locked"}
        rows = [(s, "locked", n, locked[s]) if s in locked else (s, st, n, why) for s, st, n, why in rows]
        failed = [r for r in rows if r[1] == "failed"]
        if rank == 0:
            if as_json:
                print_json([{"slide_id": s, "status": st, "n_tiles": n, "reason": why} for s, st, n, why in rows])
            else:
                shown = rows if len(rows) <= _MAX_ROWS else failed[:_MAX_ROWS]
                print_table(f"features: {enc.name} -> {out / enc.name}", ["slide", "status", "tiles", "reason"], shown)
                done = sum(1 for r in rows if r[1] == "ok")
                console.print(f"{done} ok, {len(failed)} failed, {len(rows) - done - len(failed)} other")
        if failed:
            raise typer.Exit(1)

    @app.command("qc")
    @user_errors
    def qc_cmd(folder: Path = typer.Argument(..., help="A feature store folder (<out> or <out>/<encoder>)."),
               encoder: str | None = typer.Option(None, "--encoder", "-e", help="Only this encoder's folder."),
               as_json: bool = typer.Option(False, "--json", help="Print the per-slide QC as JSON.")) -> None:
        """Verify every feature file (checksum, shapes, manifest row count) and recompute its QC.

        Per slide: status, tiles and QC flags. Exit status 1 when any slide failed.
        """
        from pathkit_core.features.qc import audit_store
        from pathkit_core.workspace import folder_name_problem

        problem = folder_name_problem(encoder) if encoder is not None else None
        if problem:  # the encoder names one folder of the store, never a path out of it
            raise PathkitError(f"pathkit qc --encoder: {problem}")
        records = audit_store(folder, encoder=encoder)
        if not records:
            raise PathkitError(f"{folder}: no feature files or extraction records found")
        failed = [r for r in records if r["status"] == "failed"]
        if as_json:
            print_json(records)
        else:
            rows = [(r["encoder"], r["slide_id"], r["status"], r.get("n_tiles", ""), r.get("embed_dim", ""),
                     _fmt(r.get("mean_variance")), "; ".join(r.get("problems", []))) for r in records]
            print_table(f"feature QC: {folder}", ["encoder", "slide", "status", "tiles", "dim", "variance",
                                                  "flags / reason"], rows)
            console.print(f"{len(records) - len(failed)} ok, {len(failed)} failed")
        if failed:
            raise typer.Exit(1)


def _fmt(value: Any) -> str:
    return "" if value is None else f"{value:.3g}"
