import gzip

import pytest

from ltrfeat.core.errors import LetorFormatError
from ltrfeat.core.fileio import atomic_output, open_input


def test_atomic_output_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_output(target) as fh:
            fh.write("partial")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_replaces_existing_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_output(target) as fh:
            fh.write("new")
            raise RuntimeError
    assert target.read_text() == "old"
    with atomic_output(target) as fh:
        fh.write("new ünïcode\n")
    assert target.read_text(encoding="utf-8") == "new ünïcode\n"


def test_gzip_by_extension_is_deterministic(tmp_path):
    a, b = tmp_path / "a.txt.gz", tmp_path / "b.txt.gz"
    for p in (a, b):
        with atomic_output(p) as fh:
            fh.write("x" * 1000)
    assert a.read_bytes() == b.read_bytes()
    assert gzip.decompress(a.read_bytes()) == b"x" * 1000
    with open_input(a, binary=False) as fh:
        assert fh.read() == "x" * 1000


def test_binary_output(tmp_path):
    with atomic_output(tmp_path / "b.bin", binary=True) as fh:
        fh.write(b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"


def test_error_message_is_one_line_with_file_line_and_fix():
    err = LetorFormatError("bad\nvalue", path="x.txt", line=7, fix="fix it")
    assert str(err) == "x.txt:7: bad value; fix it"


def test_outputs_get_umask_permissions_not_private(tmp_path):
    import os

    with atomic_output(tmp_path / "p.txt") as fh:
        fh.write("x")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "p.txt").stat().st_mode & 0o777 == 0o666 & ~mask
