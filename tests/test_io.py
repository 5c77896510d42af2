"""Tests of atomic output and the error types."""

from __future__ import annotations

import pytest

from interfpred._core.atomic import atomic_open, atomic_write_text
from interfpred.errors import InputError, InterfpredError


def test_atomic_write_replaces_whole_file(tmp_path):
    path = tmp_path / "f.txt"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two")
    assert path.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_atomic_open_leaves_old_file_on_error(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_open(path) as fh:
            fh.write("half")
            raise RuntimeError("crash")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_atomic_open_into_missing_folder_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "nope" / "f.txt", "x")


def test_input_error_formats_location():
    assert str(InputError("bad", path="a.csv", line=3)) == "a.csv line 3: bad"
    assert str(InputError("bad", path="a.csv")) == "a.csv: bad"
    assert str(InputError("bad", line=4)) == "row 4: bad"
    err = InputError("bad", path="a.csv", line=3)
    assert isinstance(err, InterfpredError) and isinstance(err, ValueError)
    assert (err.path, err.line, err.message) == ("a.csv", 3, "bad")


def test_atomic_write_gives_normal_permissions_and_keeps_existing_mode(tmp_path):
    import os
    import stat
    umask = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.txt"
        atomic_write_text(fresh, "x")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
        kept = tmp_path / "kept.txt"
        kept.write_text("old")
        kept.chmod(0o640)
        atomic_write_text(kept, "new")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    finally:
        os.umask(umask)


def test_read_json_refuses_bad_and_binary_files(tmp_path):
    from interfpred._core.atomic import read_json

    good = tmp_path / "g.json"
    good.write_text('{"a": [1, 2]}')
    assert read_json(good) == {"a": [1, 2]}
    bad = tmp_path / "b.json"
    bad.write_text('{\n"a": }')
    with pytest.raises(InterfpredError, match=r"b.json line 2: not valid JSON"):
        read_json(bad)
    binary = tmp_path / "x.json"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(InterfpredError, match="binary"):
        read_json(binary)
