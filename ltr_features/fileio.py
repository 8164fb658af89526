"""Atomic output (temp file + rename) and transparent gzip by file extension."""
from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
from pathlib import Path


def is_gzip_path(path) -> bool:
    return str(path).endswith(".gz")


def open_input(path, *, binary: bool = True, encoding: str = "utf-8"):
    """Open ``path`` for reading; ``.gz`` files (or gzip magic bytes) are decompressed."""
    path = Path(path)
    with open(path, "rb") as fh:
        magic = fh.read(2)
    raw = gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")
    if binary:
        return raw
    return io.TextIOWrapper(raw, encoding=encoding, newline="")


@contextlib.contextmanager
def atomic_output(path, *, binary: bool = False, encoding: str = "utf-8"):
    """Yield a writable file whose content replaces ``path`` only if the block succeeds.

    The data goes to a temporary file in the same directory, which is renamed over
    ``path`` on success and removed on any exception, so a failed run never leaves a
    partial output. A ``.gz`` path is gzip-compressed (deterministically: mtime 0).
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; outputs get the usual permissions
    try:
        with os.fdopen(fd, "wb") as raw:
            sink = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if is_gzip_path(path) else raw
            if binary:
                yield sink
            else:
                text = io.TextIOWrapper(sink, encoding=encoding, newline="\n")
                yield text
                text.flush()
                text.detach()
            if sink is not raw:
                sink.close()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
