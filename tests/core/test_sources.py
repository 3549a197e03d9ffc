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


def test_a_large_file_is_sampled_and_every_sampled_region_counts(tmp_path):
    size = FULL_HASH_BYTES + 3 * 1024 * 1024
    path = tmp_path / "slide.svs"
    data = bytearray(os.urandom(size))
    path.write_bytes(bytes(data))
    first = file_identity(path)
    assert first.startswith(f"sampled:{size}:")
    for offset in sources.sampled_offsets(size):
        changed = bytearray(data)
        changed[offset + 7] ^= 0xFF
        path.write_bytes(bytes(changed))
        assert file_identity(path) != first, offset
    path.write_bytes(bytes(data))
    assert file_identity(path) == first
    # a rewrite of another length is another file whatever it holds
    path.write_bytes(bytes(data) + b"\0")
    assert file_identity(path) != first


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
