"""Atomic output (temp file + rename) and transparent gzip by file extension."""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import json
import logging
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from ltrfeat.core import limits, tempfiles
from ltrfeat.core.errors import LtrfeatError, TextTableError

log = logging.getLogger("ltrfeat")


_RATIO_AFTER = 16 * 2**20


def is_gzip_path(path) -> bool:
    return str(path).endswith(".gz")


class _CheckedGzip(gzip.GzipFile):
    """A gzip reader whose damaged or truncated data is a one-line :class:`LtrfeatError` naming the file
    (gzip raises ``BadGzipFile``, ``EOFError`` or ``zlib.error``, and click turns ``EOFError`` into a bare
    "Aborted!"). It reads ``source`` and closes it when closed, as when GzipFile opens the file itself."""

    def __init__(self, source: io.BufferedReader, *, name: str):
        super().__init__(filename=name, mode="rb", fileobj=source)
        self._source = source

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._source.close()

    def _checked(self, method, *args):
        try:
            result = method(*args)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise LtrfeatError(
                f"gzip data is damaged or truncated ({type(exc).__name__}: {exc})",
                path=self.name,
                fix="re-create or re-download the file (gzip -t FILE tests it)",
            ) from None
        self._check_ratio()
        return result

    def _check_ratio(self) -> None:
        """A decompression bomb (a small file of repeated bytes) is refused once it passes
        ``max_gzip_ratio`` (see :mod:`ltrfeat.core.limits`) after 16 MiB of output."""
        out = self.tell()
        if out < _RATIO_AFTER:
            return
        try:
            packed = self._source.tell()
        except (OSError, ValueError):  # a pipe: no position to compare with
            return
        bound = limits.current().max_gzip_ratio
        if out > bound * max(packed, 1):
            raise LtrfeatError(
                f"gzip data expands more than {bound:g}-fold ({out} bytes from {packed} so far), "
                "as a decompression bomb does",
                path=self.name,
                fix="check the file; if it is genuine, raise the bound with ltrfeat --max-gzip-ratio",
            )

    def read(self, size=-1):
        return self._checked(super().read, size)

    def read1(self, size=-1):
        return self._checked(super().read1, size)

    def readline(self, size=-1):
        return self._checked(super().readline, size)

    def readinto(self, b):
        return self._checked(super().readinto, b)

    def peek(self, n):
        return self._checked(super().peek, n)


def open_input(path, *, binary: bool = True, encoding: str = "utf-8"):
    """Open ``path`` for reading; ``.gz`` files (or gzip magic bytes) are decompressed.

    Damaged or truncated gzip data is an :class:`LtrfeatError` naming the file when read."""
    path = Path(path)
    raw = open(path, "rb")
    # peek, not read-and-reopen: a pipe or FIFO (``<(zcat f)``, /dev/stdin) can be read only once
    source: io.BufferedReader | _CheckedGzip = (
        _CheckedGzip(raw, name=str(path)) if raw.peek(2)[:2] == b"\x1f\x8b" else raw
    )
    if binary:
        return source
    return io.TextIOWrapper(source, encoding=encoding, newline="")


_WRITE_FAILURES = {
    errno.ENOSPC: "free space on that file system or write elsewhere",
    errno.EDQUOT: "free space within your disk quota or write elsewhere",
    errno.EFBIG: "the file-size limit was reached (ulimit -f, or the file system's largest file); raise it or "
    "write elsewhere",
}


@contextlib.contextmanager
def write_failures(path):
    """Turn a failed write of the output ``path`` (disk full, quota, file-size limit: an ``OSError`` that
    often names no file) into an :class:`LtrfeatError` naming the output and the cause."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _WRITE_FAILURES:
            raise
        raise LtrfeatError(
            f"cannot write the output ({exc.strerror or os.strerror(exc.errno)})",
            path=tempfiles.shown(path),
            fix=_WRITE_FAILURES[exc.errno],
        ) from None


def check_writable(path) -> None:
    """Fail early (before a long run) when ``path`` could not be written: its nearest existing
    ancestor must be a writable directory, and ``path`` itself not a directory."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    problem = None
    if path.is_dir():
        problem = "is a directory"
    elif not parent.is_dir():
        problem = f"{parent} is not a directory"
    elif not os.access(parent, os.W_OK | os.X_OK):
        problem = f"{parent} is not writable"
    if problem:
        raise LtrfeatError(
            f"cannot write the output ({problem})", path=path, fix="choose a file in a writable directory"
        )


def is_stream(path) -> bool:
    """Whether output to ``path`` goes straight to it instead of through a temporary file and a rename:
    ``-`` (standard output), a path under ``/dev`` or ``/proc`` (``/dev/null``, ``/dev/stdout``, a
    ``/proc/self/fd`` link), or an existing path that is not a regular file once links are followed
    (a FIFO, a socket, a character device)."""
    text = str(path)
    if text == "-":
        return True
    if text.startswith(("/dev/", "/proc/")) or os.path.realpath(text).startswith(("/dev/", "/proc/")):
        return True
    try:
        mode = os.stat(text).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def atomic_output(path, *, binary: bool = False, encoding: str = "utf-8", sidecar_of=None):
    """Yield a writable file whose content replaces ``path`` only if the block succeeds.

    The data goes to a temporary file in the same directory (see :mod:`ltrfeat.core.tempfiles`),
    which is renamed over ``path`` on success and removed on any exception, so a failed run never
    leaves a partial output. A ``.gz`` path is gzip-compressed (deterministically: mtime 0).

    A path that is not a regular file (see :func:`is_stream`: ``-``, ``/dev/null``, a FIFO, a
    ``/dev/stdout`` link) is written straight to, never renamed over. ``sidecar_of``: the main
    output this file accompanies (``<out>.features.json`` of ``<out>``); when that output is a
    stream, the sidecar is not written (one note on stderr says so) instead of landing in ``/dev``.
    """
    if sidecar_of is not None and is_stream(sidecar_of):
        log.warning("%s is not a regular file: %s not written beside it", sidecar_of, Path(path).name)
        yield io.BytesIO() if binary else io.StringIO()
        return
    if is_stream(path):
        with _stream_output(path, binary=binary, encoding=encoding) as fh:
            yield fh
        return
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "is a directory")
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfiles.new_file(path)
    except OSError as exc:
        raise LtrfeatError(
            f"cannot write the output ({exc.strerror or exc})", path=path, fix="choose a file in a writable directory"
        ) from None
    os.chmod(tmp, 0o666 & ~_umask())  # new_file creates 0600; outputs get the usual permissions
    try:
        with write_failures(path), os.fdopen(fd, "wb") as raw:
            with _encoded(raw, path, binary=binary, encoding=encoding) as fh:
                yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    finally:
        tempfiles.release(tmp)


class StaleSideFiles:
    """Side files that an earlier write of an output left and this one does not make (the ``.weight`` of a
    run with weights, beside a run without): they go with the output they belonged to. Enter it before the
    output's :func:`atomic_output` and call :meth:`retire` just before the output is renamed into place; the
    files are moved aside, deleted once the output is in place, and put back if it is not."""

    def __init__(self):
        self._moved: list[tuple[Path, Path]] = []

    def __enter__(self) -> StaleSideFiles:
        return self

    def retire(self, paths) -> None:
        for path in map(Path, paths):
            if path.is_file() and not is_stream(path):
                self._moved.append((path, tempfiles.move_aside(path)))

    def __exit__(self, exc_type, exc, tb) -> None:
        for path, aside in self._moved:
            with contextlib.suppress(FileNotFoundError):
                if exc_type is None:
                    aside.unlink()
                else:
                    os.replace(aside, path)
            tempfiles.release(aside)


@contextlib.contextmanager
def _encoded(raw, path, *, binary: bool, encoding: str):
    """``raw`` behind gzip (for a ``.gz`` path) and a text layer (unless ``binary``); ``raw`` stays open."""
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


@contextlib.contextmanager
def _stream_output(path, *, binary: bool, encoding: str):
    """Write straight to a non-regular ``path`` (``-``: standard output, left open)."""
    if str(path) == "-":
        raw = sys.stdout.buffer
        sys.stdout.flush()
        with write_failures("standard output"):
            with _encoded(raw, path, binary=binary, encoding=encoding) as fh:
                yield fh
            raw.flush()
        return
    try:
        raw = open(path, "wb")
    except OSError as exc:
        raise LtrfeatError(
            f"cannot write the output ({exc.strerror or exc})", path=path, fix="choose a file or device you can write"
        ) from None
    with write_failures(path), raw, _encoded(raw, path, binary=binary, encoding=encoding) as fh:
        yield fh


_CHECKED = b"ltrfeat-checked sha256="


def write_checked(path, payload: bytes) -> None:
    """Write a cache entry: one header line with the SHA-256 of ``payload``, then ``payload`` (atomically)."""
    import hashlib

    with atomic_output(path, binary=True) as fh:
        fh.write(_CHECKED + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n")
        fh.write(payload)


def read_checked(path, *, what: str = "cache entry") -> bytes | None:
    """The payload of an entry :func:`write_checked` wrote, or None: absent, or damaged -- torn, edited,
    of an older format or not matching its SHA-256 -- in which case one notice on stderr says it will
    be computed again."""
    import hashlib

    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read %s %s (%s); computing it again", what, path, exc.strerror or exc)
        return None
    head, sep, payload = data.partition(b"\n")
    if not (sep and head.startswith(_CHECKED)) or hashlib.sha256(payload).hexdigest().encode() != head[len(_CHECKED) :]:
        log.warning("%s %s is damaged (its content does not match its SHA-256); computing it again", what, path)
        return None
    return payload


OUTPUT_MARKER = ".ltrfeat-output"


def mark_output_dir(directory, *, kind: str) -> None:
    """Write the marker that says ``directory`` (an output directory being assembled) was written by
    ltrfeat, so a later ``--overwrite`` may replace it (see :func:`check_output_dir`)."""
    from ltrfeat.core.versions import library_versions

    marker = {"written_by": "ltrfeat", "kind": kind, "version": library_versions("ltrfeat").get("ltrfeat")}
    Path(directory, OUTPUT_MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")


def output_kind(directory) -> str | None:
    """The ``kind`` of the ltrfeat output marker in ``directory`` (:func:`mark_output_dir`), or None without a
    readable one."""
    try:
        marker = json.loads(Path(directory, OUTPUT_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker.get("kind") if isinstance(marker, dict) and marker.get("written_by") == "ltrfeat" else None


@contextlib.contextmanager
def replaced_dir(out_dir, *, kind: str | None):
    """Build the output directory ``out_dir`` in a new temporary sibling (yielded) and swap it in when the block
    ends without an error, marked as written by ltrfeat (``kind``, see :func:`mark_output_dir`; None: no marker).
    Until then an earlier ``out_dir`` stays as it was: an error, Ctrl-C or SIGTERM midway leaves it intact and
    removes the temporary directory; a failed write (disk full) is one line naming ``out_dir`` (:func:`write_failures`)."""
    import shutil

    out_dir = Path(out_dir)
    with write_failures(out_dir):  # disk full: one line naming the output
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = tempfiles.new_dir(out_dir)
        old = None
        try:
            yield tmp
            if kind is not None:
                mark_output_dir(tmp, kind=kind)
            if out_dir.exists():
                old = tempfiles.new_dir(out_dir, suffix=".old")
                out_dir.rename(old / out_dir.name)
            tmp.rename(out_dir)
        except BaseException:
            if old is not None and not out_dir.exists():
                (old / out_dir.name).rename(out_dir)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            tempfiles.release(tmp)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
            tempfiles.release(old)


def check_output_dir(out_dir, *, overwrite: bool, option: str, what: str = "output") -> Path:
    """Fail early when the output directory ``out_dir`` (given with ``option``) exists and may not be
    replaced: it is not a directory, or it is not empty and either ``overwrite`` is off or it lacks
    the marker of a directory this tool wrote (:func:`mark_output_dir`) -- ``--overwrite`` never
    deletes a directory of someone else's files. ``what`` names the directory in messages."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise LtrfeatError("exists and is not a directory", path=out_dir, fix=f"choose another {option} path")
    if not (out_dir.is_dir() and any(out_dir.iterdir())):
        return out_dir
    if not overwrite:
        raise LtrfeatError(
            f"{what} directory exists and is not empty",
            path=out_dir,
            fix=f"choose another {option} directory or pass --overwrite",
        )
    if not (out_dir / OUTPUT_MARKER).is_file():
        raise LtrfeatError(
            f"--overwrite replaces only directories ltrfeat wrote, and this one has no {OUTPUT_MARKER} marker",
            path=out_dir,
            fix=f"choose another {option} directory, or remove this one yourself if it may go",
        )
    return out_dir


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_lines(path, encoding: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line, ``\\r\\n`` or ``\\n`` ended, decoded one by one so a
    bad byte is reported with its line."""
    try:
        fh = open_input(path)
    except FileNotFoundError:
        raise TextTableError("file not found", path=path, fix="check the path") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as exc:
                raise TextTableError(
                    f"cannot decode byte {raw[exc.start : exc.end].hex(' ')} as {encoding}",
                    path=path,
                    line=lineno,
                    fix="pass the file's encoding with --encoding (e.g. latin-1)",
                ) from None
            except LookupError:
                raise TextTableError(
                    f"unknown encoding {encoding!r}", path=path, fix="use a Python codec name such as utf-8 or latin-1"
                ) from None
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield lineno, text.rstrip("\r\n")
