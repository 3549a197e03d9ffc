"""Content identities of the files a run rests on (pathkit_core.sources)."""

from __future__ import annotations

import hashlib
import os

from pathkit_core import sources
from pathkit_core.sources import FULL_HASH_BYTES, file_identity, note_read, path_identity, recording


def test_a_small_file_is_hashed_whole_and_named_by_content(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "sub" / "b.csv"
    b.parent.mkdir()
    a.write_bytes(b"slide,label\ns0,pale\n")
    b.write_bytes(a.read_bytes())
    assert file_identity(a) == "sha256:" + hashlib.sha256(a.read_bytes()).hexdigest()
    assert file_identity(b) == file_identity(a)  # same bytes elsewhere: the same data
    os.utime(b, ns=(1, 1))
    assert file_identity(b) == file_identity(a)  # the time stamp is not the content
    b.write_bytes(b"slide,label\ns0,dark\n")
    assert file_identity(b) != file_identity(a)


def _large(tmp_path, name="slide.svs"):
    size = FULL_HASH_BYTES + 3 * 1024 * 1024
    data = bytearray(os.urandom(size))
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return path, data


def _edit_in_place(path, offset):
    """Flip one byte without changing the size, then put the modification time back."""
    st = os.stat(path)
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns and os.stat(path).st_size == st.st_size


def test_a_large_file_is_hashed_whole_once_and_any_edited_byte_counts(tmp_path, monkeypatch):
    monkeypatch.setenv(sources.ENV_IDENTITY_CACHE, str(tmp_path / "cache"))
    path, data = _large(tmp_path)
    first = file_identity(path)
    assert first == "sha256:" + hashlib.sha256(bytes(data)).hexdigest()
    # a byte the former sampled identity never read (between its blocks), same size, same mtime
    _edit_in_place(path, FULL_HASH_BYTES // 3 + 12_345)
    assert file_identity(path) != first
    path.write_bytes(bytes(data))
    assert file_identity(path) == first
    # a rewrite of another length is another file whatever it holds
    path.write_bytes(bytes(data) + b"\0")
    assert file_identity(path) != first


def test_the_identity_cache_spares_the_read_and_misses_after_any_write(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(sources.ENV_IDENTITY_CACHE, str(cache))
    path, data = _large(tmp_path)
    first = file_identity(path)
    (entry,) = cache.iterdir()
    st = os.stat(path)
    assert entry.name == f"{st.st_dev:x}-{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}-{st.st_ctime_ns:x}"
    assert entry.read_text() == first
    reads = []
    real = hashlib.file_digest

    def counting(fh, name):
        reads.append(fh.name)
        return real(fh, name)

    monkeypatch.setattr(sources.hashlib, "file_digest", counting)
    sources._identity.cache_clear()  # a fresh process: the cache file answers, the slide is not read
    assert file_identity(path) == first and reads == []
    # a same-size edit that restores the mtime still changes the ctime: hashed again, not cached wrong
    _edit_in_place(path, 5)
    assert file_identity(path) != first and reads == [str(path)]
    # a damaged cache entry is ignored and the file hashed
    sources._identity.cache_clear()
    for e in cache.iterdir():
        e.write_text("sha256:not-a-digest")
    assert file_identity(path) == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_small_files_and_a_cache_turned_off_leave_no_cache_files(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(sources.ENV_IDENTITY_CACHE, str(cache))
    small = tmp_path / "labels.csv"
    small.write_text("a,b\n")
    file_identity(small)
    assert not cache.exists()
    monkeypatch.setenv(sources.ENV_IDENTITY_CACHE, "off")
    assert sources.identity_cache_dir() is None
    path, data = _large(tmp_path)
    assert file_identity(path) == "sha256:" + hashlib.sha256(bytes(data)).hexdigest()
    assert not cache.exists()
    monkeypatch.delenv(sources.ENV_IDENTITY_CACHE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sources.identity_cache_dir() == tmp_path / "xdg" / "pathkit" / "identity"


def test_identities_recorded_by_older_versions_still_match(tmp_path):
    path, data = _large(tmp_path)
    size = len(data)
    # the former sampled identity: size, the first and last 32 KiB and four 8 KiB blocks between
    head, block = 32 * 1024, 8 * 1024
    offsets = [0] + [head + (size - 2 * head - block) * (i + 1) // 5 for i in range(4)] + [size - head]
    digest = hashlib.sha256()
    for off in offsets:
        digest.update(bytes(data[off:off + (head if off in (0, size - head) else block)]))
    sampled = f"sampled:{size}:{digest.hexdigest()}"
    assert sources.matches_identity(path, sampled)
    assert sources.matches_identity(path, hashlib.sha256(bytes(data)).hexdigest())  # bare hex of old manifests
    assert sources.matches_identity(path, file_identity(path))
    assert not sources.matches_identity(path, None)
    _edit_in_place(path, offsets[2] + 7)
    assert not sources.matches_identity(path, sampled)
    assert not sources.matches_identity(path, hashlib.sha256(bytes(data)).hexdigest())


def test_path_identity_names_zip_members_and_ignores_what_is_no_file(tmp_path):
    archive = tmp_path / "TUM.zip"
    archive.write_bytes(b"PK fake")
    assert path_identity(f"{archive}::TUM_1.png") == f"{file_identity(archive)}::TUM_1.png"
    assert path_identity(tmp_path / "missing.csv") is None
    assert path_identity(tmp_path) is None
    assert path_identity("a\0b") is None


def test_recording_collects_what_is_noted_inside_only(tmp_path):
    note_read(tmp_path / "outside.csv")
    with recording() as files:
        note_read(tmp_path / "cohort.csv")
        with recording() as inner:
            note_read(tmp_path / "labels.csv")
        note_read(tmp_path / "splits.csv")
    assert files == {tmp_path / "cohort.csv", tmp_path / "splits.csv"}
    assert inner == {tmp_path / "labels.csv"}
