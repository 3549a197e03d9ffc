"""METEOR's paraphrase table cut to the words of the corpus being scored.

METEOR 1.5 reads its whole English paraphrase table (`paraphrase-en.gz`, 61 MB, 5.27 M
entries) at every start, which is most of the jar's start-up time. An entry is three lines
(a probability, then the two phrases); the jar keeps the two phrases as word ids and, when
aligning a hypothesis with a reference, reports a match only where every word of one phrase
occurs in one sentence and every word of the other phrase in the other sentence (exact,
whitespace-separated word equality on the `-norm` tokens; `ParaphraseMatcher` and
`ParaphraseTransducer` in the jar). An entry with a word that no sentence of the corpus
holds can therefore never match, and a table without it gives the same matches in the same
order (the kept entries keep their order), hence the same scores.

Which words a sentence holds is decided here on a SUPERSET of the jar's `-norm` tokens, so
no entry that could match is dropped: every table word `w` is kept when `canonical(w)` is a
substring of `canonical(text)` for some text of the corpus. The jar's normaliser
(`edu.cmu.meteor.util.Normalizer`) only lowercases, turns quote and dash variants into
ASCII ones, unescapes SGML entities, and inserts spaces (it never joins two pieces of text),
so each of its tokens is a substring of the lowercased text once those variants are made
equal; `canonical` lowercases, maps every quote form to `'` and every dash form to `-`
(runs of either collapsed to one), final sigma to sigma and dotless i to i (a JVM with a
Turkish default locale lowercases I to a dotless i), and the corpus is also read
with `&quot;`, `&apos;`, `&lt;`, `&gt;`, `&amp;` unescaped. Texts are cut into pieces
only at ASCII spaces, which the jar never keeps inside a token.

The table is parsed once into a cache (under `$XDG_CACHE_HOME/pathkit`, else
`~/.cache/pathkit`), keyed by the sha256 of the jar and of the table and by `CUTTER_VERSION`:
the vocabulary, each entry's word ids as a CSR array, memory-mapped per call; a cut then
takes tens of milliseconds instead of the seconds the JVM spends reading the gzip file.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import html
import json
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pathkit_core.contracts import PathkitError

CUTTER_VERSION = 2
CACHE_FOLDER = "meteor-paraphrases"
ENV_CACHE = "XDG_CACHE_HOME"

_QUOTES = "'`\u00b4\u2018\u2019\u201a\u201b\u2032\u2035\"\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb"
_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
# final sigma as sigma, dotless i as i (Java lowercases by the default locale: a Turkish
# one makes "I" a dotless i)
_CANON = str.maketrans({**dict.fromkeys(_QUOTES, "'"), **dict.fromkeys(_DASHES, "-"), "\u03c2": "\u03c3",
                        "\u0131": "i"})
_RUNS = re.compile(r"'{2,}|-{2,}")
_SGML = re.compile(r"&(?:quot|apos|lt|gt|amp);")


def canonical(text: str) -> str:
    """Lowercase with every quote form as `'` and every dash form as `-` (runs collapsed),
    final sigma as sigma and dotless i as i: two strings the jar's `-norm` can make equal are
    equal here."""
    return _RUNS.sub(lambda m: m.group()[0], text.lower().translate(_CANON))


def corpus_substrings(texts: Iterable[str], longest: int) -> set[str]:
    """Every substring, up to `longest` characters, of the space-separated pieces of the
    texts' canonical forms (and of their SGML-unescaped forms): a superset of the canonical
    forms of the tokens the jar's `-norm` makes of them."""
    pieces: set[str] = set()
    for text in texts:
        variants = (text, html.unescape(text)) if _SGML.search(text) else (text,)
        for variant in variants:
            pieces.update(canonical(variant).split(" "))
    out: set[str] = set()
    for piece in pieces:
        n = len(piece)
        for start in range(n):
            stop = min(n, start + longest)
            out.update(piece[start:end] for end in range(start + 1, stop + 1))
    return out




def file_sha256(path: Path, memo: Path) -> str:
    """sha256 of a file, remembered in `memo` by path, size, mtime and inode (as git's index
    does), so a start does not read 61 MB to hash it; any change of those hashes it again."""
    st = path.stat()
    stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    entry = known.get(str(path.resolve()))
    if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    from pathkit_core.workspace import atomic_write_text, sha256_file

    sha = sha256_file(path)
    known[str(path.resolve())] = {"stamp": stamp, "sha256": sha}
    with contextlib.suppress(OSError, PathkitError):
        atomic_write_text(memo, json.dumps(known))
    return sha


@dataclass(frozen=True)
class TableIndex:
    """A parsed paraphrase table, its entries grouped by anchor word (the entry's word that is
    rarest in the table): entry `e` of the grouping has words `ids[offsets[e]:offsets[e + 1]]`,
    the first `split[e]` of them its first phrase, `probs[e]` its probability line's value and
    `order[e]` its place in the table; `anchors[w]:anchors[w + 1]` are the entries anchored on
    word `w`. An entry can match only if its anchor is in the corpus, so a cut reads only those
    entries' words (a few per cent of the table for a corpus of reports)."""

    folder: Path
    vocab: list[bytes]
    canon: list[str]
    ids: np.ndarray
    offsets: np.ndarray
    split: np.ndarray
    probs: np.ndarray
    order: np.ndarray
    anchors: np.ndarray
    longest: int

    def vocabulary_mask(self, texts: Iterable[str]) -> np.ndarray:
        """Which table words may occur among the jar's tokens of these texts (a superset)."""
        keys = corpus_substrings(texts, self.longest)
        return np.fromiter((c in keys for c in self.canon), dtype=bool, count=len(self.canon))

    def table_bytes(self, words: np.ndarray) -> tuple[bytes, int]:
        """The entries whose words are all among `words` (a vocabulary mask), in the jar's
        format (probability, phrase, phrase; a line each) and in their order in the table;
        and how many there are."""
        hit = np.flatnonzero(words)
        entries = _ranges(self.anchors[hit].astype(np.int64), self.anchors[hit + 1].astype(np.int64))
        if not len(entries):
            return b"", 0
        starts = self.offsets[entries].astype(np.int64)
        stops = self.offsets[entries + 1].astype(np.int64)
        word_ids = self.ids[_ranges(starts, stops)].astype(np.int64)
        if word_ids.max(initial=0) >= len(self.vocab):
            raise PathkitError(f"{self.folder}: a word id beyond the vocabulary (damaged cache)")
        local = np.concatenate([[0], np.cumsum(stops - starts)])
        keep = np.logical_and.reduceat(words[word_ids], local[:-1])  # anchored entries have >= 1 word
        chosen = np.flatnonzero(keep)
        chosen = chosen[np.argsort(self.order[entries[chosen]], kind="stable")]
        firsts = self.split[entries[chosen]].astype(np.int64)
        kept_ids = word_ids[_ranges(local[chosen], local[chosen + 1])].tolist()
        bounds = np.cumsum(np.stack([firsts, local[chosen + 1] - local[chosen] - firsts], axis=1).ravel()).tolist()
        vocab = self.vocab
        words = [vocab[i] for i in kept_ids]
        probs = self.probs[entries[chosen]].tolist()
        out = []
        start = 0
        for k, prob in enumerate(probs):
            middle, stop = bounds[2 * k], bounds[2 * k + 1]
            out.append(b"%r\n%s\n%s\n" % (prob, b" ".join(words[start:middle]), b" ".join(words[middle:stop])))
            start = stop
        return b"".join(out), len(out)

    def cut_bytes(self, words: np.ndarray) -> bytes:
        """`table_bytes` gzip-compressed (the jar reads its table through a GZIPInputStream)."""
        return gzip.compress(self.table_bytes(words)[0], compresslevel=1, mtime=0)


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The concatenation of `arange(start, stop)` over the pairs."""
    lengths = stops - starts
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(total)


def cache_home() -> Path:
    """pathkit's cache folder: `$XDG_CACHE_HOME/pathkit`, else `~/.cache/pathkit`."""
    return Path(os.environ.get(ENV_CACHE) or Path.home() / ".cache") / "pathkit"


def cache_folder(jar: Path, table: Path, root: Path | None = None) -> Path:
    root = cache_home() if root is None else root
    memo = root / CACHE_FOLDER / "file-hashes.json"
    key = hashlib.sha256(
        f"{file_sha256(jar, memo)} {file_sha256(table, memo)} {CUTTER_VERSION}".encode()
    ).hexdigest()[:24]
    return root / CACHE_FOLDER / key


def parse_table(table: Path, progress: Callable[[int, int], None] | None = None) -> dict[str, object]:
    """Parse the gzip table into the index arrays; `progress(done, total)` in compressed bytes."""
    total = table.stat().st_size
    vocab: dict[bytes, int] = {}
    parts: dict[str, list[np.ndarray]] = {"ids": [], "counts": [], "split": [], "probs": []}
    with open(table, "rb") as raw, gzip.GzipFile(fileobj=raw) as gz:
        buffer = b""
        while True:
            try:
                chunk = gz.read(1 << 24)
            except (OSError, EOFError, zlib.error) as exc:
                raise PathkitError(f"{table}: not a readable gzip paraphrase table ({exc})") from exc
            if b"\r" in chunk or b"\x0b" in chunk:
                # the jar's readLine also ends a line at a carriage return, and its tokenizer does
                # not split at a vertical tab where bytes.split does: such a table is refused
                raise PathkitError(f"{table}: carriage returns or vertical tabs in the paraphrase table "
                                   "are not supported")
            lines = (buffer + chunk).split(b"\n")
            if chunk:  # keep the last, maybe partial, line and any partial entry for the next round
                tail = lines.pop()
                whole = len(lines) - len(lines) % 3
                buffer = b"\n".join([*lines[whole:], tail])
                del lines[whole:]
            else:
                if lines and lines[-1] == b"":
                    lines.pop()
                del lines[len(lines) - len(lines) % 3:]
            if lines:
                try:
                    _add_entries(lines, vocab, parts)
                except ValueError as exc:
                    raise PathkitError(f"{table}: an entry's first line is not a probability ({exc})") from exc
            if progress is not None:
                progress(raw.tell(), total)
            if not chunk:
                break
    if not vocab:
        raise PathkitError(f"{table}: the paraphrase table holds no entries")
    ids, counts, split = (np.concatenate(parts[name]) for name in ("ids", "counts", "split"))
    if split.max() > np.iinfo(np.uint16).max:
        raise PathkitError(f"{table}: a phrase of {int(split.max())} words; the cache holds at most 65535")
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return {
        "vocab": list(vocab),
        "ids": ids.astype(np.uint16 if len(vocab) <= 1 << 16 else np.uint32),
        "offsets": offsets.astype(np.uint32 if offsets[-1] < 1 << 32 else np.uint64),
        "split": split.astype(np.uint16),
        "probs": np.concatenate(parts["probs"]),
    }


def _add_entries(lines: list[bytes], vocab: dict[bytes, int], parts: dict[str, list[np.ndarray]]) -> None:
    """Append whole entries (three lines each) to the parsed parts; new words get new ids."""
    n = len(lines) // 3
    sides = lines[1::3] + lines[2::3]  # all first phrases, then all second phrases
    counts = np.fromiter(map(len, map(bytes.split, sides)), dtype=np.int64, count=2 * n)
    words = b" ".join(sides).split()
    ids = np.fromiter((vocab.setdefault(w, len(vocab)) for w in words), dtype=np.int64, count=len(words))
    first, second = counts[:n], counts[n:]
    parts["ids"].append(ids[_entry_order(first, second)])
    parts["counts"].append(first + second)
    parts["split"].append(first)
    parts["probs"].append(np.array([float(x) for x in lines[0::3]], dtype=np.float64))


def _entry_order(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Positions, in a chunk's words (all first phrases, then all second phrases), of the
    words in entry order (first then second phrase of entry 0, then of entry 1, ...)."""
    n = len(first)
    starts = np.concatenate([[0], np.cumsum(np.concatenate([first, second]))])
    counts = np.empty(2 * n, dtype=np.int64)
    counts[0::2], counts[1::2] = first, second
    side_start = np.empty(2 * n, dtype=np.int64)
    side_start[0::2], side_start[1::2] = starts[:n], starts[n:2 * n]
    out_start = np.concatenate([[0], np.cumsum(counts)])[:-1]
    return np.repeat(side_start - out_start, counts) + np.arange(int(counts.sum()))


def group_by_anchor(parsed: dict[str, object]) -> dict[str, object]:
    """The parsed table regrouped by anchor word (see `TableIndex`); an entry without words,
    which the jar can never match, goes to a last group no word reaches."""
    vocab_size = len(parsed["vocab"])  # type: ignore[arg-type]
    ids = np.asarray(parsed["ids"], dtype=np.int64)
    offsets = np.asarray(parsed["offsets"], dtype=np.int64)
    counts = np.diff(offsets)
    freq = np.bincount(ids, minlength=vocab_size)
    key = freq[ids] * vocab_size + ids  # the rarest word, the lowest id among equally rare ones
    anchor = np.full(len(counts), vocab_size, dtype=np.int64)
    has = counts > 0
    if ids.size:
        anchor[has] = np.minimum.reduceat(key, offsets[:-1][has]) % vocab_size
    order = np.argsort(anchor, kind="stable")
    new_counts = counts[order]
    new_offsets = np.concatenate([[0], np.cumsum(new_counts)])
    word_order = _ranges(offsets[:-1][order], offsets[1:][order])
    return {
        "vocab": parsed["vocab"],
        "ids": np.asarray(parsed["ids"])[word_order],
        "offsets": new_offsets.astype(np.asarray(parsed["offsets"]).dtype),
        "split": np.asarray(parsed["split"])[order],
        "probs": np.asarray(parsed["probs"])[order],
        "order": order.astype(np.uint32 if len(order) < 1 << 32 else np.uint64),
        "anchors": np.searchsorted(anchor[order], np.arange(vocab_size + 2)).astype(np.int64),
    }


ARRAYS = ("ids", "offsets", "split", "probs", "order", "anchors")


def build_index(table: Path, folder: Path, progress: Callable[[int, int], None] | None = None) -> None:
    """Parse the table and write the index into `folder` (made whole, then renamed into place)."""
    grouped = group_by_anchor(parse_table(table, progress))
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        vocab: list[bytes] = grouped["vocab"]  # type: ignore[assignment]
        canon = [canonical(w.decode("utf-8", "replace")) for w in vocab]
        (tmp / "vocab.bin").write_bytes(b"\n".join(vocab))
        (tmp / "canon.txt").write_text("\n".join(canon), encoding="utf-8")
        manifest: dict[str, object] = {"cutter_version": CUTTER_VERSION, "table": str(table),
                                       "words": len(vocab), "longest": max(map(len, canon))}
        for name in ARRAYS:
            array: np.ndarray = grouped[name]  # type: ignore[assignment]
            np.save(tmp / f"{name}.npy", array)
            manifest[name] = {"len": int(len(array)), "dtype": str(array.dtype)}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        if _loads(folder):
            return  # another process built it meanwhile
        shutil.rmtree(folder, ignore_errors=True)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not _loads(folder):  # a concurrent build won the rename: fine if its index loads
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _loads(folder: Path) -> bool:
    try:
        load_index(folder)
    except PathkitError:
        return False
    return True


def load_index(folder: Path) -> TableIndex:
    """The index in `folder`; a PathkitError naming the problem when it is missing or does not
    agree with its manifest (files, lengths, types, the small arrays' structure). The large
    arrays are memory-mapped, not read; a cut checks the word ids it reads."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or manifest.get("cutter_version") != CUTTER_VERSION:
            raise PathkitError(f"{folder}: not a manifest of cutter version {CUTTER_VERSION}")
        vocab = (folder / "vocab.bin").read_bytes().split(b"\n")
        canon = (folder / "canon.txt").read_text(encoding="utf-8").split("\n")
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in ARRAYS}
    except PathkitError:
        raise
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        raise PathkitError(f"{folder}: unreadable paraphrase cache ({exc})") from exc
    words = manifest.get("words")
    if len(vocab) != words or len(canon) != words:
        raise PathkitError(f"{folder}: {len(vocab)} words and {len(canon)} forms, the manifest says {words}")
    for name, array in arrays.items():
        facts = manifest.get(name) or {}
        if array.ndim != 1 or len(array) != facts.get("len") or str(array.dtype) != facts.get("dtype"):
            raise PathkitError(f"{folder}: {name}.npy is {array.dtype}{list(array.shape)}, the manifest says {facts}")
    n = len(arrays["split"])
    offsets, anchors = arrays["offsets"], np.asarray(arrays["anchors"])
    if len(offsets) != n + 1 or int(offsets[0]) != 0 or int(offsets[-1]) != len(arrays["ids"]) or \
            len(arrays["probs"]) != n or len(arrays["order"]) != n or len(anchors) != words + 2 or \
            anchors[0] != 0 or anchors[-1] != n or (np.diff(anchors) < 0).any():
        raise PathkitError(f"{folder}: the cached arrays do not fit together (damaged cache)")
    return TableIndex(folder, vocab, canon, arrays["ids"], offsets, arrays["split"], arrays["probs"],
                      arrays["order"], anchors, int(manifest.get("longest") or 0))
