"""`pathkit tile`: exit codes, summary, usage errors, and SIGKILL-then-rerun equivalence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pathkit_core.wsi.tiling import read_tiling_status

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")

FAST = ["--mpp", "2", "--tile-px", "64", "--min-tissue-area", "0", "--thumbnail-px", "1024", "-q"]


def test_batch_exit_status_and_status_file(cli, synthetic_slides, tmp_path):
    out = tmp_path / "out"
    result = cli("tile", synthetic_slides["tissue"], synthetic_slides["nompp"], "--out", out, *FAST)
    assert result.exit_code == 1
    assert "no-mpp" in result.output and "tissue" in result.output and "failed 1" in result.output
    status = read_tiling_status(out)
    assert status["tissue"]["status"] == "ok" and status["nompp"]["code"] == "no-mpp"
    # --slide-mpp rescues a single slide; everything succeeds -> exit 0
    result = cli("tile", synthetic_slides["nompp"], "--out", out, "--slide-mpp", "0.5", *FAST)
    assert result.exit_code == 0, result.output
    result = cli("tile", synthetic_slides["tissue"], "--out", out, "--json", *FAST)
    assert result.exit_code == 0 and json.loads(result.output)[0]["status"] == "skipped"


def test_usage_errors_exit_2(cli, synthetic_slides, tmp_path):
    (tmp_path / "empty").mkdir()
    r = cli("tile", tmp_path / "empty", "--out", tmp_path / "o", *FAST)
    assert r.exit_code == 2 and "no slides found" in r.output
    r = cli("tile", synthetic_slides["tissue"], synthetic_slides["glass"], "--out", tmp_path / "o",
            "--slide-mpp", "0.5", *FAST)
    assert r.exit_code == 2 and "--mpp-csv" in r.output
    r = cli("tile", synthetic_slides["tissue"], "--out", tmp_path / "o", "--tile-um", "128", "--tile-px", "256")
    assert r.exit_code == 2 and "not both" in r.output
    r = cli("tile", synthetic_slides["tissue"], "--out", tmp_path / "o", "--segmenter", "nope", *FAST)
    assert r.exit_code == 2 and "unknown segmenter 'nope'" in r.output and "otsu" in r.output


def test_mpp_csv_and_strict(cli, synthetic_slides, tmp_path):
    csv = tmp_path / "mpp.csv"
    csv.write_text("slide,mpp\nnompp,0.5\n")
    r = cli("tile", synthetic_slides["nompp"], synthetic_slides["glass"], "--out", tmp_path / "a",
            "--mpp-csv", csv, *FAST)
    assert r.exit_code == 0, r.output
    r = cli("tile", synthetic_slides["nompp"], synthetic_slides["glass"], "--out", tmp_path / "b",
            "--strict", *FAST)
    assert r.exit_code == 1 and "stopped (--strict)" in r.output
    assert not (tmp_path / "b" / "glass.parquet").exists()


def _pathkit(*args: str | Path) -> list[str]:
    return [sys.executable, "-c", "from pathkit_core.cli import main; main()", *map(str, args)]


def _outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".parquet", ".png")}


def test_sigkill_then_rerun_matches_an_uninterrupted_run(tmp_path):
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    slides = tmp_path / "slides"
    for i in range(6):
        write_synthetic_slide(slides / f"s{i}.tiff", width=1536, height=1024, mpp=0.5, seed=i,
                              tissue=[Blob(0.3 + 0.05 * i, 0.5, 0.2, 0.3, texture="noise")])
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    ref, killed = tmp_path / "ref", tmp_path / "killed"
    subprocess.run(_pathkit("tile", slides, "--out", ref, *FAST), check=True, env=env,
                   capture_output=True, timeout=300)
    proc = subprocess.Popen(_pathkit("tile", slides, "--out", killed, *FAST), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(killed.glob("*.parquet")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = len(list(killed.glob("*.parquet")))
    assert proc.returncode == -signal.SIGKILL and 1 <= done < 6, "the run was not killed mid-way"
    rerun = subprocess.run(_pathkit("tile", slides, "--out", killed, "--json", *FAST), env=env,
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    statuses = [r["status"] for r in json.loads(rerun.stdout)]
    assert statuses.count("skipped") >= done and "failed" not in statuses
    assert _outputs(killed) == _outputs(ref)
    assert not list(killed.glob(".*.tmp")) and not list(killed.glob(".*.lock"))


def test_piped_output_keeps_every_path_on_one_line(synthetic_slides, tmp_path):
    # `pathkit tile ... | cat`: stdout is a pipe, COLUMNS unset; rich's own default (80 columns)
    # folded the table and split the output folder's path across lines
    out = tmp_path / ("a-long-folder-name-" * 6) / "tiles"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run([sys.executable, "-m", "pathkit_core.cli", "tile", str(synthetic_slides["tissue"]),
                           "--out", str(out), *FAST], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len(str(out)) > 120 and any(str(out) in line for line in proc.stdout.splitlines())
    assert "\x1b[" not in proc.stdout  # plain: no colour codes in a log
    # COLUMNS, when set, is the width
    narrow = subprocess.run([sys.executable, "-m", "pathkit_core.cli", "tile", str(synthetic_slides["tissue"]),
                             "--out", str(out), *FAST], capture_output=True, text=True,
                            env={**env, "COLUMNS": "70"}, timeout=300)
    assert narrow.returncode == 0 and max(len(line) for line in narrow.stdout.splitlines()) <= 70
