"""Text read within the line-length limit (:mod:`ltrfeat.core.limits`): a data file in blocks of whole lines, its
first data line, and the side files of one number per line (group sizes, weights, positions)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ltrfeat.core import limits
from ltrfeat.core._letor_format import _UTF8_FIX
from ltrfeat.core.errors import LetorFormatError
from ltrfeat.core.fileio import open_input


def _byte_blocks(path, block_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(first line number, bytes of whole lines ending in \\n)`` for the whole file.

    A line that spans blocks is collected piece by piece (linear in its length) up to
    ``max_line_bytes`` (see :mod:`ltrfeat.core.limits`); a longer one is an error naming it."""
    max_line = limits.current().max_line_bytes
    with open_input(path) as fh:
        line0, first = 1, True
        pending: list[bytes] = []  # the start of a line that has not ended yet
        pending_bytes = 0
        while chunk := fh.read(block_bytes):
            if first and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            first = False
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                pending.append(chunk)
                pending_bytes += len(chunk)
                if pending_bytes > max_line:
                    raise _line_too_long(path, line0, max_line)
                continue
            if pending_bytes + chunk.find(b"\n") > max_line:
                raise _line_too_long(path, line0, max_line)
            block = b"".join(pending + [chunk[:cut]]) if pending else chunk[:cut]
            _check_line_lengths(block, path, line0, max_line)
            yield line0, block
            line0 += block.count(b"\n")
            pending, pending_bytes = ([chunk[cut:]], len(chunk) - cut) if cut < len(chunk) else ([], 0)
        if pending_bytes:
            if pending_bytes > max_line:
                raise _line_too_long(path, line0, max_line)
            yield line0, b"".join(pending) + b"\n"


def _bounded_lines(fh, path):
    """The lines of ``fh``, each at most ``max_line_bytes`` long (else an error naming it)."""
    max_line = limits.current().max_line_bytes
    lineno = 0
    while line := fh.readline(max_line + 1):
        lineno += 1
        if len(line) > max_line:
            raise _line_too_long(path, lineno, max_line)
        yield line


def _check_line_lengths(block: bytes, path, line0: int, max_line: int) -> None:
    """Refuse a block of whole lines holding one longer than ``max_line`` bytes (cheap: only
    looked at when the block itself is that long)."""
    if len(block) <= max_line:
        return
    ends = np.flatnonzero(np.frombuffer(block, np.uint8) == ord("\n"))
    lengths = np.diff(ends, prepend=-1) - 1
    if lengths.max(initial=0) > max_line:
        raise _line_too_long(path, line0 + int(np.argmax(lengths > max_line)), max_line)


def _line_too_long(path, line: int, max_line: int) -> LetorFormatError:
    return LetorFormatError(
        f"line is longer than {max_line} bytes",
        path=path,
        line=line,
        fix="check that this is a LETOR/svmlight file; a genuine longer line needs ltrfeat --max-line-bytes",
    )


# --------------------------------------------------------------------------- side files of numbers


_POSITIVE_FIX = {"group size": "every query needs at least one row", "position": "positions are 1-based (1 = top)"}


def _read_numbers(path, *, kind: str, integer: bool) -> np.ndarray:
    values = []
    try:
        with open_input(path, binary=False) as fh:
            for lineno, line in enumerate(_bounded_lines(fh, path), 1):
                text = line.strip()
                if not text:
                    continue
                try:
                    value = int(text) if integer else float(text)
                except ValueError:
                    raise LetorFormatError(
                        f"{kind} {text[:40]!r} is not {'an integer' if integer else 'a number'}",
                        path=path,
                        line=lineno,
                        fix=f"write one {kind} per line",
                    ) from None
                if integer and value <= 0:
                    raise LetorFormatError(
                        f"{kind} {value} is not positive",
                        path=path,
                        line=lineno,
                        fix=_POSITIVE_FIX[kind],
                    )
                if not integer and not math.isfinite(value):
                    raise LetorFormatError(
                        f"{kind} {text!r} is not finite", path=path, line=lineno, fix="use finite weights"
                    )
                values.append(value)
    except UnicodeDecodeError:
        raise LetorFormatError(f"{kind} file is not valid UTF-8", path=path, fix=_UTF8_FIX) from None
    if not values:
        raise LetorFormatError(f"empty {kind} file", path=path, fix=f"write one {kind} per line")
    return np.asarray(values, dtype=np.int64 if integer else np.float64)


def _first_data_tokens(path) -> list:
    with open_input(path) as fh:
        for line in _bounded_lines(fh, path):
            tokens = line.split(b"#", 1)[0].split()
            if tokens:
                return tokens
    return []
