"""METEOR's paraphrase table cut to the corpus: same scores as the whole table, the cache."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from pathkit_metrics._nlg import meteor as meteor_mod
from pathkit_metrics._nlg import paraphrases

from pathkit_core.contracts import PathkitError

HAS_JAVA = shutil.which("java") is not None
needs_java = pytest.mark.skipif(not HAS_JAVA, reason="METEOR 1.5 needs a `java` executable on PATH")

# three entries in the jar's format: probability, phrase, phrase
TINY_TABLE = (
    b"0.5\nbig dog\nlarge hound\n"
    b"0.015432594889040002\nthe cat\na feline\n"
    b"0.25\ndog\nhound\n"
    b"0.125\ndo n't\ndo not\n"
)


def _tiny(tmp_path: Path, content: bytes = TINY_TABLE) -> tuple[Path, Path]:
    """A fake jar beside `data/paraphrase-en.gz`, as pycocoevalcap lays them out."""
    jar = tmp_path / "meteor" / meteor_mod.JAR_NAME
    table = jar.parent / meteor_mod.PARAPHRASE_TABLE
    table.parent.mkdir(parents=True)
    jar.write_bytes(b"not really a jar")
    table.write_bytes(gzip.compress(content))
    return jar, table


# --------------------------------------------------------------------------- vocabulary superset


def test_canonical_makes_the_jars_variants_equal():
    assert paraphrases.canonical("Don\u2019t") == paraphrases.canonical("don't") == "don't"
    assert paraphrases.canonical("\u201cQuoted\u201d") == paraphrases.canonical("''quoted''") == "'quoted'"
    assert paraphrases.canonical('"x"') == "'x'"
    assert paraphrases.canonical("a\u2014b") == paraphrases.canonical("a--b") == "a-b"
    assert paraphrases.canonical("\u039f\u0394\u039f\u03a3") == paraphrases.canonical("\u03bf\u03b4\u03bf\u03c2")
    assert paraphrases.canonical("\u0131t") == paraphrases.canonical("IT") == "it"  # a Turkish default locale


def test_corpus_substrings_hold_the_jars_tokens():
    # the jar's -norm makes "Can't stop-now." into "ca n't stop now ." and unescapes &quot;
    keys = paraphrases.corpus_substrings(["Can't stop-now.", "say &quot;hi&quot;"], longest=24)
    for token in ("ca", "n't", "can't", "stop", "now", "-", ".", "say", "'", "hi", "&quot;"):
        assert paraphrases.canonical(token) in keys, token
    assert "can't stop" not in keys  # pieces never cross a space
    assert "stop-no" in keys and "stop-now." not in paraphrases.corpus_substrings(["stop-now."], longest=5)


# --------------------------------------------------------------------------- the index and the cut


def test_index_round_trip_and_cut_by_hand(tmp_path):
    jar, table = _tiny(tmp_path)
    paraphrases.build_index(table, tmp_path / "index")
    index = paraphrases.load_index(tmp_path / "index")
    everything, n = index.table_bytes(np.ones(len(index.vocab), dtype=bool))
    assert (everything, n) == (TINY_TABLE, 4)  # byte for byte, in the table's order
    # "the big dog" / "a large hound": big dog<->large hound and dog<->hound can match, the cat
    # <->a feline and do n't<->do not cannot (cat, feline, n't, not are absent)
    words = index.vocabulary_mask(["SCORE ||| a large hound ||| the big dog"])
    cut, n = index.table_bytes(words)
    assert n == 2 and cut == b"0.5\nbig dog\nlarge hound\n0.25\ndog\nhound\n"
    assert gzip.decompress(index.cut_bytes(words)) == cut
    # "don't" is normalised by the jar into "do n't": the entry is kept
    cut, _ = index.table_bytes(index.vocabulary_mask(["we Don\u2019t know ||| we do not know"]))
    assert cut == b"0.125\ndo n't\ndo not\n"
    assert index.table_bytes(index.vocabulary_mask(["nothing in common"])) == (b"", 0)
    # a second build into a folder that loads (another process was quicker) keeps it, leaving
    # no temporary folder behind
    manifest = (tmp_path / "index" / "manifest.json").stat().st_mtime_ns
    paraphrases.build_index(table, tmp_path / "index")
    assert (tmp_path / "index" / "manifest.json").stat().st_mtime_ns == manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "meteor"]


def test_a_bad_table_is_a_clear_error(tmp_path):
    _, table = _tiny(tmp_path, b"not a number\na\nb\n")
    with pytest.raises(PathkitError, match=r"paraphrase-en\.gz: an entry's first line is not a probability"):
        paraphrases.build_index(table, tmp_path / "index")
    table.write_bytes(gzip.compress(b"0.1\na\rb\nc\n"))
    with pytest.raises(PathkitError, match=r"paraphrase-en\.gz: carriage returns"):
        paraphrases.build_index(table, tmp_path / "index")
    table.write_bytes(b"plain text, not gzip")
    with pytest.raises(PathkitError, match=r"paraphrase-en\.gz: not a readable gzip"):
        paraphrases.build_index(table, tmp_path / "index")
    assert not (tmp_path / "index").exists()


def test_cache_key_follows_the_tables_sha256(tmp_path, monkeypatch):
    jar, table = _tiny(tmp_path)
    hashed: list[Path] = []
    from pathkit_core import workspace

    real = workspace.sha256_file  # what `file_sha256` hashes with, imported when it hashes
    monkeypatch.setattr(workspace, "sha256_file", lambda path: hashed.append(path) or real(path))
    first = paraphrases.cache_folder(jar, table, root=tmp_path / "cache")
    assert sorted(hashed) == sorted([jar, table])
    assert paraphrases.cache_folder(jar, table, root=tmp_path / "cache") == first
    assert len(hashed) == 2  # unchanged files are not read again
    table.write_bytes(gzip.compress(TINY_TABLE + b"0.1\ncat\nfeline\n"))
    second = paraphrases.cache_folder(jar, table, root=tmp_path / "cache")
    assert second != first and hashed[-1] == table
    table.write_bytes(gzip.compress(TINY_TABLE))  # the old content again: the old key
    assert paraphrases.cache_folder(jar, table, root=tmp_path / "cache") == first
    monkeypatch.setattr(paraphrases, "CUTTER_VERSION", paraphrases.CUTTER_VERSION + 1)
    assert paraphrases.cache_folder(jar, table, root=tmp_path / "cache") != first


@pytest.mark.parametrize("damage", ["truncate ids", "drop manifest", "garble manifest", "bad word id", "short vocab"])
def test_a_damaged_cache_is_rebuilt_with_a_message(tmp_path, monkeypatch, capsys, damage):
    jar, table = _tiny(tmp_path)
    monkeypatch.setenv(paraphrases.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setattr(meteor_mod, "_INDEX", {})
    monkeypatch.setattr(meteor_mod, "locate_meteor_jar", lambda: jar)
    folder, built = meteor_mod.build_meteor_index()
    assert built and folder.parent == tmp_path / "cache" / "pathkit" / paraphrases.CACHE_FOLDER
    assert "indexed" in capsys.readouterr().err
    if damage == "truncate ids":
        data = (folder / "ids.npy").read_bytes()
        (folder / "ids.npy").write_bytes(data[:-3])
    elif damage == "drop manifest":
        (folder / "manifest.json").unlink()
    elif damage == "garble manifest":
        (folder / "manifest.json").write_text("{not json")
    elif damage == "bad word id":
        ids = np.load(folder / "ids.npy")
        ids[0] = 60000
        np.save(folder / "ids.npy", ids)
    else:
        (folder / "vocab.bin").write_bytes(b"big\ndog")
    monkeypatch.setattr(meteor_mod, "_INDEX", {})
    if damage == "bad word id":  # found when a cut reads it, not at load: rebuilt then
        damaged = meteor_mod._index_for(jar, table)
        everything = np.ones(len(damaged.vocab), dtype=bool)
        with pytest.raises(PathkitError, match="damaged cache"):
            damaged.table_bytes(everything)
        monkeypatch.setattr(meteor_mod, "locate_meteor_jar", lambda: jar)
        assert gzip.decompress(meteor_mod._cut(damaged, everything)) == TINY_TABLE
        assert "paraphrase cache is damaged" in capsys.readouterr().err
        assert meteor_mod._INDEX[table] is not damaged
        return
    rebuilt = meteor_mod._index_for(jar, table)
    assert "paraphrase cache is damaged" in capsys.readouterr().err
    assert rebuilt.table_bytes(np.ones(len(rebuilt.vocab), dtype=bool)) == (TINY_TABLE, 4)


def test_a_missing_index_is_not_built_by_scoring_but_by_its_command(tmp_path, monkeypatch, capsys):
    """Scoring without the index reads the whole table and names the command that builds it;
    `pathkit meteor index` builds it once and then finds it."""
    jar, table = _tiny(tmp_path)
    monkeypatch.setenv(paraphrases.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setattr(meteor_mod, "_INDEX", {})
    monkeypatch.setattr(meteor_mod, "locate_meteor_jar", lambda: jar)
    assert meteor_mod._wanted_table(["SCORE ||| big dog ||| large hound"], False) == (meteor_mod.FULL_TABLE, None)
    assert "`pathkit meteor index`" in capsys.readouterr().err
    assert not (tmp_path / "cache" / "pathkit" / paraphrases.CACHE_FOLDER).exists() or \
        not any(p.is_dir() for p in (tmp_path / "cache" / "pathkit" / paraphrases.CACHE_FOLDER).iterdir())
    from typer.testing import CliRunner

    from pathkit_core.cli import build_app

    runner = CliRunner()
    first = runner.invoke(build_app(), ["meteor", "index"])
    assert first.exit_code == 0, first.output
    assert "built in" in first.output
    again = runner.invoke(build_app(), ["meteor", "index"])
    assert again.exit_code == 0 and "already in" in again.output
    monkeypatch.setattr(meteor_mod, "_INDEX", {})
    wanted, index = meteor_mod._wanted_table(["SCORE ||| big dog ||| large hound"], False)
    assert index is not None
    assert gzip.decompress(index.cut_bytes(wanted)) == b"0.5\nbig dog\nlarge hound\n0.25\ndog\nhound\n"


def test_no_cache_folder_falls_back_to_the_whole_table(tmp_path, monkeypatch, capsys):
    jar, table = _tiny(tmp_path)
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("")
    monkeypatch.setenv(paraphrases.ENV_CACHE, str(blocker))
    monkeypatch.setattr(meteor_mod, "_INDEX", {})
    monkeypatch.setattr(meteor_mod, "locate_meteor_jar", lambda: jar)
    assert meteor_mod._wanted_table(["SCORE ||| a ||| b"], False) == (meteor_mod.FULL_TABLE, None)
    assert "whole paraphrase table is read" in capsys.readouterr().err


# --------------------------------------------------------------------------- the real jar


def _jar_scores(lines: list[str], table: bytes) -> tuple[float, list[float]]:
    """Corpus and segment scores of SCORE lines from a JVM fed `table` (gzip) through its pipe."""
    jar = meteor_mod.locate_meteor_jar()
    process = meteor_mod._MeteorProcess(meteor_mod.find_java(), jar, waiting_for_table=True)
    try:
        process.feed(table, "test", timeout=600)
        return process.score(lines, timeout=600)
    finally:
        process.close()


def _jar_scores_without_paraphrases(lines: list[str]) -> list[str]:
    """Segment and corpus scores, as text, from the jar run with `-m 'exact stem synonym'`."""
    jar = meteor_mod.locate_meteor_jar()
    command = [*meteor_mod.jar_command(meteor_mod.find_java(), jar), "-m", "exact stem synonym"]
    score = "".join(f"{line}\n" for line in lines)
    stats = subprocess.run(command, cwd=jar.parent, input=score, capture_output=True, text=True, check=True,
                           timeout=600).stdout.split("\n")[: len(lines)]
    out = subprocess.run(command, cwd=jar.parent, input=score + "EVAL ||| " + " ||| ".join(stats) + "\n",
                         capture_output=True, text=True, check=True, timeout=600).stdout.split("\n")
    return out[len(lines): 2 * len(lines) + 1]


def _real_entries(count: int) -> list[bytes]:
    """The first `count` entries of the jar's own paraphrase table."""
    table = meteor_mod.paraphrase_table(meteor_mod.locate_meteor_jar())
    assert table is not None
    lines = []
    with gzip.open(table, "rb") as handle:
        for _ in range(3 * count):
            lines.append(handle.readline())
    return [b"".join(lines[k: k + 3]) for k in range(0, len(lines), 3)]


@needs_java
def test_cut_table_scores_exactly_as_the_whole_table(tmp_path):
    entries = _real_entries(30_000)
    table = tmp_path / "whole.gz"
    table.write_bytes(gzip.compress(b"".join(entries)))
    paraphrases.build_index(table, tmp_path / "index")
    index = paraphrases.load_index(tmp_path / "index")
    # pairs whose only link is a paraphrase of the table, in several spellings the jar's -norm
    # undoes (case, curly quotes, dashes), plus a pair with nothing to match
    picks = [entries[k].decode().split("\n")[1:3] for k in (5, 101, 2002, 7777, 12345, 29999)]
    predictions = [f"The slide shows {a} in the sample." for a, _ in picks]
    references = [[f"the slide shows {b} in the sample ."] for _, b in picks]
    predictions += ["We CAN\u2019T say \u201cnone\u201d", "unrelated words only"]
    references += [["we cannot say ''none''"], ["nothing else here"]]
    lines = meteor_mod.score_lines(predictions, references)
    cut = index.cut_bytes(index.vocabulary_mask(lines))
    assert 0 < gzip.decompress(cut).count(b"\n") // 3 < 3000  # far smaller than the 30,000 entries
    corpus, segments = _jar_scores(lines, cut)
    assert (corpus, segments) == _jar_scores(lines, table.read_bytes())
    # the paraphrases matter to these pairs: without the module, the jar scores them lower
    without = [float(x) for x in _jar_scores_without_paraphrases(lines)]
    assert sum(a < b for a, b in zip(without[:-1], segments, strict=True)) >= 4
    assert without[-1] < corpus


@needs_java
def test_the_jvm_is_fed_through_a_pipe_and_reused_or_restarted(tmp_path, monkeypatch):
    monkeypatch.delenv(meteor_mod.ENV_METEOR_JAR, raising=False)
    meteor_mod.shutdown_meteor()
    # an index of the table's first 30,000 entries stands in for `pathkit meteor index`
    small = tmp_path / "first.gz"
    small.write_bytes(gzip.compress(b"".join(_real_entries(30_000))))
    paraphrases.build_index(small, tmp_path / "index")
    real_table = meteor_mod.paraphrase_table(meteor_mod.locate_meteor_jar())
    monkeypatch.setitem(meteor_mod._INDEX, real_table, paraphrases.load_index(tmp_path / "index"))
    try:
        assert meteor_mod.start_meteor()
        process = meteor_mod._PROCESS
        assert process.waiting() and process.paraphrases.parent == process.fifo_dir
        first = meteor_mod.meteor_scores(["the big dog"], [["a large hound"]])
        assert first[1][0] > 0
        assert meteor_mod._PROCESS is process and not process.waiting()
        # a corpus within the words it was given reuses the JVM; new words start a new one
        assert meteor_mod.meteor_scores(["the dog"], [["a hound"]])[1][0] > 0
        assert meteor_mod._PROCESS is process
        meteor_mod.meteor_scores(["a carcinoma"], [["a tumour"]])
        restarted = meteor_mod._PROCESS
        assert restarted is not process and not process.fifo_dir.exists()
        assert restarted.table == meteor_mod.FULL_TABLE  # a second corpus: the whole table, once
        # so going back does not restart it (its score may differ from the first: the stand-in
        # index holds only the table's first entries)
        assert meteor_mod.meteor_scores(["the big dog"], [["a large hound"]])[1][0] > 0
        assert meteor_mod._PROCESS is restarted
    finally:
        meteor_mod.shutdown_meteor()


@pytest.mark.slow
@needs_java
def test_real_reports_score_exactly_as_with_the_whole_table(realdata):
    """The REG 2025 test reports, each against another, and TCGA reports against each other:
    every segment score and the corpus score equal with the cut and the whole table."""
    import random

    reports = json.loads((realdata / "reports" / "reg2025_pathbench_splits.json").read_text())["test"]
    order = list(range(len(reports)))
    random.Random(0).shuffle(order)
    predictions = [reports[order[i]]["report"] for i in range(len(reports))]
    references = [[r["report"]] for r in reports]
    tcga = [r["ocr_text"] for r in json.loads((realdata / "reports" / "tcga_ocr_reports_sample.json").read_text())]
    tcga = [t for t in tcga if t and len(t.split()) < 1200][:80]
    predictions += tcga[:40]
    references += [[t] for t in tcga[40:]]
    meteor_mod.shutdown_meteor()
    try:
        cut = meteor_mod.meteor_scores(predictions, references, max_words=None)
        whole = meteor_mod.meteor_scores(predictions, references, max_words=None, full_table=True)
    finally:
        meteor_mod.shutdown_meteor()
    assert cut == whole
    assert os.environ.get("PATHKIT_REALDATA")


def test_a_killed_caller_leaves_no_jvm_waiting_on_its_pipe(tmp_path):
    """A JVM blocked on the paraphrase pipe does not read stdin, so it would outlive a SIGKILLed
    caller: the guard process stops it and removes the pipe's folder."""
    import signal
    import sys
    import time

    jar, _ = _tiny(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").write_text("#!/bin/sh\nexec sleep 120\n")  # a JVM that never gets anywhere
    (bin_dir / "java").chmod(0o755)
    code = (
        "import os, signal\n"
        "from pathkit_metrics._nlg import meteor\n"
        "assert meteor.start_meteor()\n"
        "print(meteor._PROCESS.proc.pid, meteor._PROCESS.fifo_dir, flush=True)\n"
        f"os.kill(os.getpid(), {int(signal.SIGKILL)})\n"
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", meteor_mod.ENV_METEOR_JAR: str(jar)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == -signal.SIGKILL, out.stderr
    pid_text, fifo_dir = out.stdout.split()
    pid = int(pid_text)

    def running() -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state not in ("Z", "X")

    deadline = time.monotonic() + 20
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running()
    while Path(fifo_dir).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(fifo_dir).exists()
