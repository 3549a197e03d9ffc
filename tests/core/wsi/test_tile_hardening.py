"""`pathkit tile` against a full disk, a named pipe and a symbolic link loop."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import subprocess
import sys
import threading

import pytest

from pathkit_core.wsi.tiling import read_tiling_status
from tests._mounts import run_on_tmpfs

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")

FAST = ["--mpp", "2", "--tile-px", "64", "--min-tissue-area", "0", "--thumbnail-px", "256", "-q"]


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".lock")) or ".stale." in p.name)


def _fail_replace_into(monkeypatch, name_part: str):
    """os.replace raises ENOSPC for targets whose name holds `name_part` (the data is written,
    then the filesystem refuses: the latest point a full disk can strike an atomic write)."""
    real = os.replace
    hits = []

    def replace(src, dst, *args, **kwargs):
        if name_part in os.path.basename(dst):
            hits.append(dst)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return hits


def test_a_full_disk_writing_the_status_file_is_one_line_naming_path_and_free_space(
        cli, synthetic_slides, tmp_path, monkeypatch):
    out = tmp_path / "out"
    hits = _fail_replace_into(monkeypatch, "tiling_status.json")
    result = cli("tile", synthetic_slides["tissue"], "--out", out, *FAST)
    assert hits, "the status file was never written"
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{out / 'tiling_status.json'}: no space left on the device" in err and " free" in err
    assert _leftovers(out) == [] and not (out / "tiling_status.json").exists()
    # The plan is the first status write, before any slide is tiled: nothing was spent on the
    # slide, and a rerun on a disk with room tiles it.
    assert not list(out.glob("*.parquet"))
    monkeypatch.undo()
    again = cli("tile", synthetic_slides["tissue"], "--out", out, "--json", *FAST)
    assert again.exit_code == 0 and json.loads(again.stdout)[0]["status"] == "ok"


def test_a_full_disk_writing_a_manifest_stops_the_batch_and_leaves_nothing_half_written(
        cli, synthetic_slides, tmp_path, monkeypatch):
    out = tmp_path / "out"
    cli("tile", synthetic_slides["tissue"], "--out", out, *FAST)  # one slide done before the disk fills
    import polars as pl
    import pyarrow.parquet as pq

    def full(*args, **kwargs):
        # how Rust-backed writers report it: the OS error only in the message
        raise pl.exceptions.ComputeError("parquet: underlying IO error: No space left on device (os error 28)")

    monkeypatch.setattr(pq, "write_table", full)
    result = cli("tile", synthetic_slides["tissue"], synthetic_slides["pen"], synthetic_slides["aperio"],
                 "--out", out, *FAST)
    assert result.exit_code == 2, result.output
    assert "pen.parquet: no space left on the device" in result.stderr
    assert "tiling stopped at pen" in result.stderr and "Traceback" not in result.stderr
    assert not (out / "aperio.parquet").exists() and not (out / "pen.parquet").exists()
    assert _leftovers(out) == []
    status = read_tiling_status(out)
    assert status["tissue"]["status"] == "skipped" and "pen" not in status  # still a readable record


def test_a_real_full_filesystem(synthetic_slides, tmp_path):
    """The same on a 64 KiB tmpfs: the first slides fit, the last does not."""
    mnt = tmp_path / "small"
    out = mnt / "out"
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    tile = shlex.join([sys.executable, "-c", "from pathkit_core.cli import main; main()", "tile",
                       *(str(synthetic_slides[k]) for k in ("glass", "pen", "tissue")), "--out", str(out), *FAST])
    # list what is left on the small filesystem before it goes away with the namespace
    proc = run_on_tmpfs(mnt, ["sh", "-c", f"{tile}; rc=$?; echo LEFT; ls -A {out}; exit $rc"],
                        size_kib=64, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr.strip()
    assert "no space left on the device" in err and " free)" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    left = proc.stdout.split("LEFT", 1)[1].split()
    stopped = err.rsplit("tiling stopped at ", 1)[1].rstrip(")")
    assert "glass.parquet" in left and f"{stopped}.parquet" not in left and "tissue.parquet" not in left
    assert not [n for n in left if n.endswith((".tmp", ".lock"))], left


def test_a_named_pipe_named_like_a_slide_is_refused_without_blocking(cli, tmp_path):
    fifo = tmp_path / "slide.svs"
    os.mkfifo(fifo)
    done = []
    # A reader opening the pipe would block until a writer appears: the test must not hang.
    worker = threading.Thread(target=lambda: done.append(cli("tile", fifo, "--out", tmp_path / "o", "--json",
                                                              *FAST)), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():
        with open(fifo, "wb"):  # unblock the reader so the test process can end
            pass
        pytest.fail("pathkit tile blocked on a named pipe")
    result = done[0]
    assert result.exit_code == 1
    row = json.loads(result.stdout)[0]
    assert row["code"] == "not-a-file" and "is not a regular file (a named pipe)" in row["reason"]


def test_a_symbolic_link_loop_is_named_as_such(cli, tmp_path):
    a, b = tmp_path / "a.svs", tmp_path / "b.svs"
    a.symlink_to(b)
    b.symlink_to(a)
    result = cli("tile", a, "--out", tmp_path / "o", "--json", *FAST)
    assert result.exit_code == 1
    row = json.loads(result.stdout)[0]
    assert row["code"] == "symlink-loop" and "symbolic link loop" in row["reason"]
    assert "does not exist" not in row["reason"]


def test_open_slide_refuses_a_pipe_and_a_loop_directly(tmp_path):
    from pathkit_core.wsi.slide import SlideError, open_slide

    fifo = tmp_path / "p.svs"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.svs"
    loop.symlink_to(loop)
    codes = []

    def attempt():
        for path in (fifo, loop, tmp_path / "none.svs"):
            try:
                open_slide(path)
            except SlideError as exc:
                codes.append(exc.code)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(30)
    while worker.is_alive():  # a reader blocked on the pipe: let it go, then fail
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(1)
    assert codes == ["not-a-file", "symlink-loop", "not-found"]


def test_the_cli_does_not_hang_on_a_pipe_in_a_subprocess(tmp_path):
    fifo = tmp_path / "slide.svs"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-c", "from pathkit_core.cli import main; main()", "tile", str(fifo),
                           "--out", str(tmp_path / "o"), *FAST], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "named pipe" in proc.stdout + proc.stderr


# --------------------------------------------------------------------------- round 3 (issue 28)


@pytest.mark.parametrize("where", ["afile/sub", "afile", "/proc/self/x"])
def test_an_out_folder_that_cannot_be_made_is_one_line_before_any_work(cli, synthetic_slides, tmp_path, where):
    (tmp_path / "afile").write_text("a file, not a folder")
    out = tmp_path / where if not where.startswith("/") else where
    result = cli("tile", synthetic_slides["tissue"], "--out", out, *FAST)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: --out ") and str(out) in err


def test_tile_px_zero_is_refused_not_read_as_the_default(cli, synthetic_slides, tmp_path):
    result = cli("tile", synthetic_slides["tissue"], "--out", tmp_path / "o", "--mpp", "2", "--tile-px", "0", "-q")
    assert result.exit_code == 2 and "tile size 0 px outside 8-8192" in result.output
    assert not (tmp_path / "o" / "tissue.parquet").exists()


def test_a_dangling_slide_link_in_a_folder_is_listed_as_failed(cli, synthetic_slides, tmp_path):
    folder = tmp_path / "slides"
    folder.mkdir()
    (folder / "tissue.tiff").symlink_to(synthetic_slides["tissue"])
    (folder / "gone.svs").symlink_to(tmp_path / "moved-away.svs")
    result = cli("tile", folder, "--out", tmp_path / "o", "--json", *FAST)
    assert result.exit_code == 1, result.output
    rows = {r["slide_id"]: r for r in json.loads(result.stdout)}
    assert rows["tissue"]["status"] == "ok"
    assert rows["gone"]["status"] == "failed" and "does not exist" in rows["gone"]["reason"]


def test_an_mpp_csv_listing_a_slide_twice_is_an_error_listing_the_repeats(cli, synthetic_slides, tmp_path):
    csv = tmp_path / "mpp.csv"
    csv.write_text("slide,mpp\nnompp,0.5\nother,0.25\nnompp,0.25\n")
    result = cli("tile", synthetic_slides["nompp"], "--out", tmp_path / "o", "--mpp-csv", csv, *FAST)
    assert result.exit_code == 2, result.output
    assert f"{csv}: 1 slide(s) listed more than once, so their mpp is ambiguous: nompp (line 2, line 4)" \
        in result.stderr.replace("\n", "")
    assert not (tmp_path / "o" / "nompp.parquet").exists()
