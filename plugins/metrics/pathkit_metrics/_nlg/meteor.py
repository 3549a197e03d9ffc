"""METEOR 1.5 through the jar that pycocoevalcap ships: one JVM per process, reused, thread-safe.

The jar is driven with pycocoevalcap's command line (`-stdio -l en -norm`, 2 GB heap) and
protocol: one `SCORE ||| ref ... ||| hypothesis` line per segment returns its statistics,
then one `EVAL ||| stats ||| ...` line returns each segment's score and the corpus score
(METEOR's aggregate over the summed statistics, not the mean of segment scores). What
differs from pycocoevalcap is robustness: texts are made safe for the line protocol (a
newline would end the line early, a `|||` would split a field; with `-norm` the jar's
tokenizer ignores whitespace, so replacing them by spaces does not change a score); lines
are pipelined instead of one round trip per segment; a silent or dead JVM is a clear
error (and the next call starts a fresh one) instead of a hang; a forked child starts its
own JVM instead of sharing the parent's pipes; and the paraphrase table the jar reads at
start-up (61 MB of gzip, most of its start-up time) is cut to the corpus's vocabulary
(`paraphrases.py`: same matches, same scores). The JVM is started with `-a` naming a named
pipe, so it loads everything else while pathkit reads the inputs, then reads the cut table
from the pipe once the corpus is known.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import importlib.util
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from pathkit_core.contracts import PathkitError

JAR_NAME = "meteor-1.5.jar"
PARAPHRASE_TABLE = Path("data") / "paraphrase-en.gz"
ENV_METEOR_JAR = "PATHKIT_METEOR_JAR"
DEFAULT_TIMEOUT_S = 300.0
# METEOR's alignment search grows steeply with length (3,000 words against 3,000 took about
# 100 s here); longer texts are refused up front rather than left to stall the JVM.
DEFAULT_MAX_WORDS = 3000

# Linux pipes buffer 64 KiB; a payload below this is written without a helper thread.
_PIPE_SAFE_BYTES = 16_384

_LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


class MeteorUnavailable(PathkitError):
    """METEOR 1.5 cannot run here: no Java, or no jar."""


def locate_meteor_jar() -> Path:
    """The METEOR 1.5 jar: `PATHKIT_METEOR_JAR`, else the one inside the installed pycocoevalcap."""
    override = os.environ.get(ENV_METEOR_JAR)
    if override:
        jar = Path(override)
        if not jar.is_file():
            raise MeteorUnavailable(f"{ENV_METEOR_JAR}={override}: no such file")
        return jar
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None:
        raise MeteorUnavailable(
            "METEOR 1.5 uses the jar shipped by pycocoevalcap, which is not installed: "
            "`pip install pycocoevalcap`, or point PATHKIT_METEOR_JAR at meteor-1.5.jar"
        )
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [str(Path(spec.origin).parent)]
    for root in roots:
        jar = Path(root) / "meteor" / JAR_NAME
        if jar.is_file():
            if not (jar.parent / PARAPHRASE_TABLE).is_file():
                raise MeteorUnavailable(
                    f"{jar.parent / PARAPHRASE_TABLE}: METEOR's paraphrase table is missing; "
                    "reinstall pycocoevalcap"
                )
            return jar
    raise MeteorUnavailable(
        f"pycocoevalcap is installed at {', '.join(roots) or '?'} but has no meteor/{JAR_NAME}; "
        "reinstall it, or point PATHKIT_METEOR_JAR at the jar"
    )


def find_java() -> str:
    """The `java` executable: on PATH, else under JAVA_HOME."""
    found = shutil.which("java")
    if found:
        return found
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    where = f"PATH and JAVA_HOME={java_home}" if java_home else "PATH (JAVA_HOME is unset)"
    raise MeteorUnavailable(
        f"METEOR 1.5 runs on Java and no `java` executable was found on {where}; install a Java "
        "runtime (e.g. `apt-get install default-jre-headless`) or score without METEOR "
        "(option meteor=False)"
    )


def protocol_safe(text: str, *, hypothesis: bool) -> str:
    """Text that cannot break the jar's line protocol.

    pycocoevalcap cleans hypotheses only (`|||` removed, double spaces halved); the same is
    done here, plus line breaks turned into spaces, and references get the same treatment
    because a newline or `|||` in a reference breaks the protocol just as well.
    """
    text = _LINE_BREAKS.sub(" ", text)
    while "|||" in text:
        text = text.replace("|||", "")
    if hypothesis:
        text = text.replace("  ", " ")
    return text


def paraphrase_table(jar: Path) -> Path | None:
    """The paraphrase table the jar reads by default (`data/paraphrase-en.gz` beside it), if there."""
    table = jar.parent / PARAPHRASE_TABLE
    return table if table.is_file() else None


def jar_command(java: str, jar: Path, paraphrases: Path | None = None) -> list[str]:
    """pycocoevalcap's command line for the jar; `paraphrases` replaces its paraphrase table (`-a`).

    One JVM flag is added: `-XX:TieredStopAtLevel=1` (the quick C1 compiler only). METEOR's
    alignment search is short-lived work for which C2's background compilation costs more
    than it returns: 741 REG pairs took about half the time on 2 cores (docs/benchmarks.md,
    "Cold nlg"); floating point is strict in Java 17, so the scores are the same bits.
    """
    command = [
        java,
        "-XX:+PerfDisableSharedMem",  # else a JVM warning about hsperfdata can reach stdout
        "-XX:TieredStopAtLevel=1",
        "-Xmx2G",
        "-jar",
        str(jar),
        "-",
        "-",
        "-stdio",
        "-l",
        "en",
        "-norm",
    ]
    return command + (["-a", str(paraphrases)] if paraphrases is not None else [])


# What a JVM was given as paraphrase table: the whole table, or a cut keeping the table words
# marked in a boolean mask over the table's vocabulary (a later corpus whose words are all
# marked can reuse it).
FULL_TABLE = "full"


class _MeteorProcess:
    """One running METEOR jar and its pipes; callers hold `_LOCK`.

    With `waiting_for_table`, the jar was told to read its paraphrase table from a named pipe
    and waits there until `feed` writes one; `table` records what it was given.
    """

    def __init__(self, java: str, jar: Path, *, waiting_for_table: bool = False) -> None:
        self.fifo_dir: Path | None = None
        self._fifo_fd: int | None = None
        self.table: object = None if waiting_for_table else FULL_TABLE
        self.feeder: threading.Thread | None = None
        self.fed_for: object = None
        self._feed_errors: list[BaseException] = []
        paraphrases = None
        if waiting_for_table:
            self.fifo_dir = Path(tempfile.mkdtemp(prefix="pathkit-meteor-"))
            paraphrases = self.fifo_dir / "paraphrases.gz"
            os.mkfifo(paraphrases, 0o600)
            # held open for writing from now on: the jar's open of the pipe returns at once, and
            # if this process dies before feeding it (SIGKILL), the jar reads end-of-file
            # instead of waiting forever for a writer, then end-of-file on stdin, and exits
            self._fifo_fd = os.open(paraphrases, os.O_RDWR | os.O_NONBLOCK)
        self.paraphrases = paraphrases
        command = jar_command(java, jar, paraphrases)
        try:
            self.proc = subprocess.Popen(
                command,
                cwd=str(jar.parent),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
            )
        except OSError as exc:
            self._remove_fifo()
            raise MeteorUnavailable(f"cannot start METEOR ({' '.join(command)}): {exc}") from exc
        self.owner_pid = os.getpid()
        self.command = command
        self.guard = self._start_guard() if self.fifo_dir is not None else None
        self._pending = bytearray()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()

    def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for raw in iter(stream.readline, b""):
            self._stderr_tail.append(raw.decode("utf-8", "replace").rstrip())

    def _start_guard(self) -> subprocess.Popen | None:
        """A shell that waits for end-of-file on its stdin, whose other end only this process
        holds, then kills the JVM and removes the pipe's folder. A JVM waiting on the pipe does
        not read its own stdin, so without it a SIGKILLed caller would leave it waiting forever."""
        try:
            return subprocess.Popen(
                ["sh", "-c", 'cat >/dev/null; kill -9 "$1" 2>/dev/null; rm -rf "$2"', "sh",
                 str(self.proc.pid), str(self.fifo_dir)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None  # no shell: the JVM is still stopped by `close` and at exit

    def alive(self) -> bool:
        return self.proc.poll() is None

    def waiting(self) -> bool:
        """Whether the jar still waits for its paraphrase table."""
        return self.fifo_dir is not None and self.table is None

    def feed(self, payload: bytes, table: object, timeout: float) -> None:
        """Write the gzip paraphrase table into the pipe the jar reads it from, in a thread (the
        jar reads it only after loading its other resources), then close the pipe."""
        assert self._fifo_fd is not None
        self.table = table
        self.feeder = threading.Thread(target=self._feed, args=(self._fifo_fd, payload, timeout), daemon=True)
        self.feeder.start()

    def _feed(self, fd: int, payload: bytes, timeout: float) -> None:
        import fcntl  # POSIX only, as named pipes are
        import termios

        deadline = time.monotonic() + timeout
        view = memoryview(payload)
        def wait(what: str) -> None:
            if not self.alive():
                raise OSError(f"the JVM exited before {what}")
            if time.monotonic() > deadline:
                raise OSError(f"the JVM did not finish {what} within {timeout:g} s")

        try:
            while view:  # non-blocking writes: a JVM that dies cannot leave this thread blocked
                try:
                    view = view[os.write(fd, view):]
                except BlockingIOError:
                    wait("reading it")
                    select.select([], [fd], [], 0.05)
            # the pipe is closed only once the jar has read it all: closing it earlier, before
            # the jar has opened it, would discard what it holds and leave the jar's open waiting
            unread = bytearray(4)
            while fcntl.ioctl(fd, termios.FIONREAD, unread) == 0 and int.from_bytes(unread, sys.byteorder):
                wait("reading it")
                time.sleep(0.002)
        except OSError as exc:
            self._feed_errors.append(exc)
        finally:
            self._close_fifo()

    def _close_fifo(self) -> None:
        fd, self._fifo_fd = self._fifo_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def stderr_tail(self) -> str:
        time.sleep(0.05)  # let the drain thread catch the last words of a dying JVM
        return " | ".join(line for line in self._stderr_tail if line)[-2000:]

    def _fail(self, reason: str) -> PathkitError:
        tail = self.stderr_tail()
        self.close()
        return PathkitError(f"METEOR jar {reason}" + (f"; its stderr: {tail}" if tail else ""))

    def _read_line(self, timeout: float) -> str:
        stdout = self.proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            newline = self._pending.find(b"\n")
            if newline >= 0:
                line = bytes(self._pending[:newline]).decode("utf-8", "replace").strip()
                del self._pending[: newline + 1]
                if not line or (line.startswith("[") and "warning" in line.lower()):
                    continue  # JVM unified-logging warnings go to stdout
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._fail(f"gave no answer within {timeout:g} s (option meteor_timeout)")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self._fail(f"exited unexpectedly (exit code {self.proc.poll()})")
            self._pending.extend(chunk)

    def _read_numbers(self, timeout: float, what: str) -> tuple[str, list[float]]:
        line = self._read_line(timeout)
        try:
            return line, [float(tok) for tok in line.split()]
        except ValueError:
            raise self._fail(f"answered {line[:200]!r} where {what} was expected") from None

    def _write_all(self, payload: bytes, errors: list[BaseException]) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(payload)
            stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            errors.append(exc)

    def score(self, score_lines: Sequence[str], timeout: float) -> tuple[float, list[float]]:
        try:
            return self._score(score_lines, timeout)
        except PathkitError as exc:
            if self._feed_errors:
                raise PathkitError(f"{exc}; feeding it the paraphrase table failed: {self._feed_errors[0]}") from exc
            raise

    def _score(self, score_lines: Sequence[str], timeout: float) -> tuple[float, list[float]]:
        payload = "".join(f"{line}\n" for line in score_lines).encode("utf-8", "replace")
        errors: list[BaseException] = []
        writer = None
        if len(payload) <= _PIPE_SAFE_BYTES:
            self._write_all(payload, errors)  # fits the pipe buffer: cannot block
        else:
            # A writer thread feeds the SCORE lines while this thread reads the answers, so
            # a large corpus neither deadlocks on full pipes nor pays a round trip per segment.
            writer = threading.Thread(target=self._write_all, args=(payload, errors), daemon=True)
            writer.start()
        stats = []
        for _ in score_lines:
            line, _numbers = self._read_numbers(timeout, "segment statistics")
            stats.append(line)  # passed back verbatim, as pycocoevalcap does
        if writer is not None:
            writer.join()
        if errors:
            raise self._fail(f"stopped reading its input ({errors[0]})")
        eval_line = ("EVAL ||| " + " ||| ".join(stats) + "\n").encode("ascii")
        self._write_all(eval_line, errors)
        if errors:
            raise self._fail(f"stopped reading its input ({errors[0]})")
        segment_scores = []
        for _ in score_lines:
            segment_scores.append(self._single_number(timeout, "a segment score"))
        corpus = self._single_number(timeout, "the corpus score")
        return corpus, segment_scores

    def _single_number(self, timeout: float, what: str) -> float:
        _line, numbers = self._read_numbers(timeout, what)
        if len(numbers) != 1:
            raise self._fail(f"answered {numbers[:5]} where {what} was expected")
        return numbers[0]

    def close(self) -> None:
        if self.owner_pid != os.getpid():
            return  # a forked child must not stop its parent's JVM
        if self.guard is not None:
            self.guard.kill()
            with contextlib.suppress(OSError, ValueError):
                assert self.guard.stdin is not None
                self.guard.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.guard.wait(timeout=10)
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin:
                self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if stream:
                    stream.close()
        if self.feeder is not None:
            self.feeder.join(timeout=1)
        self._remove_fifo()

    def _remove_fifo(self) -> None:
        if self.feeder is None:
            self._close_fifo()  # else the feeder closes it
        if self.fifo_dir is not None:
            shutil.rmtree(self.fifo_dir, ignore_errors=True)


_LOCK = threading.Lock()
_PROCESS: _MeteorProcess | None = None
_INDEX: dict[Path, object] = {}


def _can_wait_for_table() -> bool:
    # a pipe opened for reading and writing at once is Linux's and the BSDs' behaviour, not POSIX's
    return hasattr(os, "mkfifo") and sys.platform.startswith(("linux", "darwin", "freebsd"))


def _current() -> _MeteorProcess | None:
    """The process-wide JVM if it still runs in this process; callers hold `_LOCK`."""
    global _PROCESS
    if _PROCESS is not None and (_PROCESS.owner_pid != os.getpid() or not _PROCESS.alive()):
        if _PROCESS.owner_pid == os.getpid():
            _PROCESS.close()
        _PROCESS = None
    return _PROCESS


def _start() -> _MeteorProcess:
    """Start the process-wide JVM: waiting on a pipe for its paraphrase table where the jar has
    one to cut and named pipes exist, else with the jar's own table; callers hold `_LOCK`."""
    global _PROCESS
    jar = locate_meteor_jar()
    java = find_java()
    waiting = paraphrase_table(jar) is not None and _can_wait_for_table()
    _PROCESS = _MeteorProcess(java, jar, waiting_for_table=waiting)
    return _PROCESS


def shutdown_meteor() -> None:
    """Stop this process's METEOR JVM, if one runs (also registered with atexit)."""
    global _PROCESS
    with _LOCK:
        if _PROCESS is not None:
            _PROCESS.close()
            _PROCESS = None


atexit.register(shutdown_meteor)


def start_meteor() -> bool:
    """Start this process's JVM now, without waiting for it to load (it loads its resources,
    then waits for the corpus's paraphrase table, while the caller does other work); whether
    one is starting or running. A JVM that cannot start is reported by `meteor_scores`, not here."""
    with _LOCK:
        try:
            if _current() is None:
                _start()
        except (PathkitError, OSError):
            return False
    return True


def _index_for(jar: Path, table: Path):  # noqa: ANN202 - a paraphrases.TableIndex, imported lazily
    """The parsed paraphrase table from the cache `pathkit meteor index` builds (rebuilt when
    found damaged); None, with a message, when there is none (the whole table is used then:
    the same scores, the slower start). A scoring call never builds a missing cache itself:
    building takes about half a minute and 2 GB of memory, more than the start it saves."""
    from pathkit_metrics._nlg import paraphrases

    if table in _INDEX:
        return _INDEX[table]
    index = None
    try:
        folder = paraphrases.cache_folder(jar, table)
        if not folder.exists():
            _say("METEOR: its whole paraphrase table is read (a few seconds at each start); "
                 "`pathkit meteor index` indexes it once so that later starts read only what a corpus can match")
        else:
            try:
                index = paraphrases.load_index(folder)
            except PathkitError as exc:
                index = _rebuilt(paraphrases, table, folder, exc)
    except (PathkitError, OSError) as exc:
        _say(f"METEOR: no paraphrase cache ({exc}); the whole table is read (same scores, slower start)")
    _INDEX[table] = index
    return index


def build_meteor_index(*, force: bool = False) -> tuple[Path, bool]:
    """(the cache folder, whether it was built now) of the jar's paraphrase table: built, with a
    progress bar, unless a loadable one exists (`force`: rebuilt anyway)."""
    from pathkit_metrics._nlg import paraphrases

    jar = locate_meteor_jar()
    table = paraphrase_table(jar)
    if table is None:
        raise PathkitError(f"{jar.parent / PARAPHRASE_TABLE}: METEOR's paraphrase table is missing")
    folder = paraphrases.cache_folder(jar, table)
    if folder.exists() and not force:
        try:
            _INDEX[table] = paraphrases.load_index(folder)
            return folder, False
        except PathkitError as exc:
            _rebuilt(paraphrases, table, folder, exc)
            return folder, True
    shutil.rmtree(folder, ignore_errors=True)
    _INDEX[table] = _build_index(paraphrases, table, folder)
    return folder, True


def _rebuilt(paraphrases, table: Path, folder: Path, problem: Exception):  # noqa: ANN001, ANN202
    """The cache in `folder` found damaged (`problem`): said, removed and built again (kept in `_INDEX`)."""
    _say(f"METEOR: the paraphrase cache is damaged ({problem}); rebuilding it")
    shutil.rmtree(folder, ignore_errors=True)
    _INDEX[table] = index = _build_index(paraphrases, table, folder)
    return index


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _build_index(paraphrases, table: Path, folder: Path):  # noqa: ANN001, ANN202
    """Build the cache with a progress bar on stderr, and say how long it took."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    console.print(f"METEOR: indexing its paraphrase table {table} once, into {folder}")
    t0 = time.perf_counter()
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), DownloadColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("reading paraphrase-en.gz", total=table.stat().st_size)
        paraphrases.build_index(table, folder, lambda done, total: bar.update(task, completed=done))
    index = paraphrases.load_index(folder)
    console.print(f"METEOR: paraphrase table indexed in {time.perf_counter() - t0:.1f} s "
                  f"({len(index.split):,} entries, {len(index.vocab):,} words); later runs reuse it")
    return index


def _wanted_table(lines: Sequence[str], full_table: bool):  # noqa: ANN202
    """What these SCORE lines need of the paraphrase table: (FULL_TABLE, None) for the whole
    table, else (the vocabulary mask of the lines, the table's index to cut it with)."""
    jar = locate_meteor_jar()
    table = paraphrase_table(jar)
    if full_table or table is None:
        return FULL_TABLE, None
    index = _index_for(jar, table)
    if index is None:
        return FULL_TABLE, None
    return index.vocabulary_mask(lines), index  # the SCORE lines hold exactly the texts the jar reads


def _cut(index, words) -> bytes:  # noqa: ANN001 - a paraphrases.TableIndex and a vocabulary mask
    """The gzip cut of the table for these words; a cache found damaged while cutting (its word
    ids are checked as they are read) is rebuilt, with a message, and cut again."""
    try:
        return index.cut_bytes(words)
    except PathkitError as exc:
        from pathkit_metrics._nlg import paraphrases

        table = paraphrase_table(locate_meteor_jar())
        assert table is not None
        return _rebuilt(paraphrases, table, index.folder, exc).cut_bytes(words)


def _covers(given: object, wanted: object) -> bool:
    """Whether a JVM given table `given` matches everything table `wanted` would."""
    if isinstance(given, str):  # FULL_TABLE
        return True
    if isinstance(wanted, str) or given is None:
        return False
    return not bool((wanted & ~given).any())  # type: ignore[operator]


def _ready_process(lines: Sequence[str], timeout: float, full_table: bool) -> _MeteorProcess:
    """The JVM to score these lines, fed (or started with) a paraphrase table covering them;
    callers hold `_LOCK`."""
    process = _current()
    if process is not None and not process.waiting() and isinstance(process.table, str):
        return process  # it has the whole table
    key = (hash(tuple(lines)), full_table)
    if process is not None and not process.waiting() and process.fed_for == key:
        return process  # fed for these very lines (by `feed_meteor`)
    wanted, index = _wanted_table(lines, full_table)
    if process is not None and not process.waiting():
        if _covers(process.table, wanted):
            process.fed_for = key
            return process
        # its table lacks entries this corpus can match: a fresh JVM given the whole table, so
        # that a long run scoring ever new text (validation every epoch) restarts it once at
        # most; only a one-corpus process (`pathkit score`) gains from a cut
        wanted, index = FULL_TABLE, None
        process.close()
        process = None
    if process is None:
        process = _start()
    if process.waiting():
        if index is None:
            payload = locate_meteor_jar().parent.joinpath(PARAPHRASE_TABLE).read_bytes()
        else:
            payload = _cut(index, wanted)
        process.feed(payload, wanted, timeout)
    process.fed_for = key
    return process


def feed_meteor(lines: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, full_table: bool = False) -> None:
    """Give this process's JVM (started now if none runs) the paraphrase table for these SCORE
    lines without waiting for it to be read, so it loads while the caller computes other
    metrics; `score_with_jar` on the same lines then only scores."""
    with _LOCK:
        _ready_process(lines, timeout, full_table)


def meteor_available() -> tuple[bool, str]:
    """Whether METEOR can run here, and if not why (no JVM is started)."""
    try:
        find_java()
        locate_meteor_jar()
    except MeteorUnavailable as exc:
        return False, str(exc)
    return True, ""


def score_lines(
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    ids: Sequence[str] | None = None,
    max_words: int | None = DEFAULT_MAX_WORDS,
) -> list[str]:
    """The jar's `SCORE` lines of the cases, made safe for its protocol; a text longer than
    `max_words` words is refused here, before any JVM is involved (None lifts the limit)."""
    if len(predictions) != len(references):
        raise PathkitError(f"METEOR: {len(predictions)} predictions but {len(references)} references")
    if not predictions:
        raise PathkitError("METEOR: no cases to score")
    lines = []
    for index, (hypothesis, refs) in enumerate(zip(predictions, references, strict=True)):
        if max_words is not None:
            longest = max([len(hypothesis.split())] + [len(r.split()) for r in refs])
            if longest > max_words:
                case = ids[index] if ids is not None else str(index)
                raise PathkitError(
                    f"METEOR: case {case!r} has a text of {longest} words, over the limit of "
                    f"{max_words} (METEOR's alignment time grows steeply with length); raise it "
                    "with option meteor_max_words, or score without METEOR (meteor=False)"
                )
        safe_refs = " ||| ".join(protocol_safe(r, hypothesis=False) for r in refs)
        lines.append(f"SCORE ||| {safe_refs} ||| {protocol_safe(hypothesis, hypothesis=True)}")
    return lines


def score_with_jar(lines: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S,
                   full_table: bool = False) -> tuple[float, list[float]]:
    """Corpus METEOR and segment scores of `score_lines`'s lines, from this process's JVM, its
    paraphrase table cut to the lines' vocabulary (`full_table`: the whole table)."""
    with _LOCK:
        process = _ready_process(lines, timeout, full_table)
        try:
            return process.score(lines, timeout)
        except PathkitError:
            global _PROCESS
            if _PROCESS is process:
                _PROCESS = None  # the next call starts a fresh JVM
            raise


def meteor_scores(
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    ids: Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_words: int | None = DEFAULT_MAX_WORDS,
    full_table: bool = False,
) -> tuple[float, list[float]]:
    """Corpus METEOR 1.5 and per-case segment scores, as pycocoevalcap's `Meteor.compute_score`.

    `timeout` bounds the wait for any one answer of the jar; `max_words` refuses longer
    texts up front (None lifts the limit); `full_table` gives the jar its whole paraphrase
    table instead of the cut to the corpus (same scores, slower start).
    """
    return score_with_jar(score_lines(predictions, references, ids=ids, max_words=max_words), timeout=timeout,
                          full_table=full_table)
