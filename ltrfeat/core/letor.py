"""Reading and writing LETOR 4.0 and svmlight (LightGBM ``.query``) ranking files.

Line formats
------------
LETOR:    ``label qid:ID fid:val fid:val ... #comment``
svmlight: ``label fid:val ...`` with group sizes (one per query, in row order) in ``<file>.query``.

Feature ids are 1-based and strictly increasing within a line; zeros may be omitted
(sparse) or present (dense). Qids are strings. Lines that hold only whitespace or only a
comment are skipped. ``.gz`` files are read and written compressed. An optional
``<file>.weight`` holds one weight per row, ``<file>.position`` (LightGBM's convention, 1-based here) the
position at which each row was shown (click data); ``<file>.features.json`` names the columns.

Comments
--------
The comment of a row is the text after the first ``#`` with the line ending and *one*
leading space removed (``# 7555 rambo`` → ``"7555 rambo"``, ``#docid = X`` →
``"docid = X"``). The writer emits ``#`` + comment, or ``# `` + comment when the comment
itself starts with whitespace, so comments round-trip exactly. :func:`parse_comment`
turns a comment into key/value pairs (``docid = X inc = 1``) or a bare docid (``7555``).

Speed
-----
Files are read in blocks of whole lines. Each block is tokenised with numpy on its raw
bytes (whitespace, ``#`` and ``:`` positions), feature ids are parsed as digit arrays,
and every label and value of the block is converted by one ``np.fromstring`` call. When
anything looks wrong, a strict per-line parser re-reads the block only to name the first
bad line. Values are parsed as float64 and stored as float32.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import numpy as np

from ltrfeat.core import limits
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LetorFormatError, LetorWriteError
from ltrfeat.core.fileio import StaleSideFiles, atomic_output, is_stream, open_input

LETOR_FORMATS = ("letor", "svmlight")
NAN_POLICIES = ("error", "keep", "zero")

_BLOCK_BYTES = 4 << 20
_MAX_ID_DIGITS = 9
_DENSE_LOOKUP_LIMIT = 10_000_000
_NUMBER_RE = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan(?:\(\w*\))?)", re.IGNORECASE)
_SEPARATORS = bytes(range(33))
_TOKEN_SPLIT = re.compile(rb"[\x00-\x20]+")
_PAIR_RE = re.compile(r"\s*([^\s=]+)\s*=\s*(\S+)")
_DOCID_RE = re.compile(r"docid\s*=\s*(\S+)")
_UTF8_FIX = "re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"


# --------------------------------------------------------------------------- comments


def parse_comment(comment: str | None) -> dict:
    """Key/value pairs of a LETOR comment, or its bare leading docid.

    ``"docid = GX0 inc = 1 prob = 0.2"`` → ``{"docid": "GX0", "inc": "1", "prob": "0.2"}``
    (pairs are read from the start and reading stops at the first token that is not
    ``key = value``); ``"7555 rambo"`` (Elasticsearch LTR logs) → ``{"docid": "7555"}``;
    empty or ``None`` → ``{}``.
    """
    if not comment:
        return {}
    pairs = {}
    pos = 0
    while m := _PAIR_RE.match(comment, pos):
        pairs[m.group(1)] = m.group(2)
        pos = m.end()
    if pairs:
        return pairs
    tokens = comment.split(None, 1)
    return {"docid": tokens[0]} if tokens else {}


def _docid_of(comment: str | None) -> str | None:
    if comment is None:
        return None
    if comment.startswith("docid"):  # the LETOR 4.0 layout, without building a dict
        m = _DOCID_RE.match(comment)
        if m:
            return m.group(1)
    return parse_comment(comment).get("docid")


# --------------------------------------------------------------------------- sidecar files


def group_path_of(path) -> Path:
    """``<file>.query``: LightGBM's group-size file beside an svmlight file."""
    return Path(f"{path}.query")


def weight_path_of(path) -> Path:
    """``<file>.weight``: one weight per row beside a data file."""
    return Path(f"{path}.weight")


def position_path_of(path) -> Path:
    """``<file>.position``: one 1-based display position per row beside a data file (click data)."""
    return Path(f"{path}.position")


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


# --------------------------------------------------------------------------- strict per-line parser


def _strict_check(line: bytes, *, path, lineno: int, svmlight: bool) -> None:
    """Raise the :class:`LetorFormatError` for ``line`` if it is malformed (slow, precise)."""
    tokens = _TOKEN_SPLIT.split(line.split(b"#", 1)[0].strip(_SEPARATORS))
    tokens = [] if tokens == [b""] else tokens
    if not tokens:
        return

    def fail(problem, fix):
        raise LetorFormatError(problem, path=path, line=lineno, fix=fix)

    label = tokens[0]
    if not _NUMBER_RE.fullmatch(label):
        if label.startswith(b"qid:") or b":" in label:
            fail(f"line starts with {_show(label)} instead of a label", "each line is 'label qid:ID fid:value ...'")
        fail(f"label {_show(label)} is not a number", "the first token of a line is its numeric label")
    if not math.isfinite(float(label)):
        fail(f"label {_show(label)} is not finite", "labels must be finite numbers")
    features = tokens[1:]
    if not svmlight:
        if not features or not features[0].startswith(b"qid:"):
            second = _show(features[0]) if features else "nothing"
            fail(
                f"missing qid: (second token is {second})",
                "LETOR lines are 'label qid:ID fid:value ...'; for svmlight files without qid: "
                "put group sizes in <file>.query",
            )
        if len(features[0]) == 4:
            fail("empty qid", "write qid:ID with a non-empty ID")
        try:
            features[0][4:].decode("utf-8")
        except UnicodeDecodeError:
            fail(f"qid {_show(features[0])} is not valid UTF-8", _UTF8_FIX)
        features = features[1:]
    previous = 0
    for token in features:
        if token.startswith(b"qid:"):
            if svmlight:
                fail("unexpected qid: in an svmlight file", "read it as LETOR (fmt='letor')")
            fail("duplicate qid:", "each line has exactly one qid:ID, right after the label")
        if token.count(b":") != 1:
            fail(f"feature token {_show(token)} is not id:value", "write features as id:value")
        fid, value = token.split(b":")
        if not fid.isdigit():
            fail(f"feature id {_show(fid)} is not a positive integer", "feature ids are 1-based integers")
        if int(fid) == 0:
            fail("feature id 0: ids are 1-based", "renumber features from 1")
        if fid.startswith(b"0"):
            fail(f"feature id {_show(fid)} has a leading zero", "write ids as plain integers")
        if len(fid) > _MAX_ID_DIGITS:
            fail(f"feature id {_show(fid)} is too large", f"use ids below 10^{_MAX_ID_DIGITS}")
        if int(fid) <= previous:
            fail(
                f"feature ids are not increasing ({previous} then {int(fid)})",
                "sort each line's features by id and drop duplicates",
            )
        previous = int(fid)
        if not _NUMBER_RE.fullmatch(value):
            fail(f"value {_show(value)} of feature {int(fid)} is not a number", "write values as decimal numbers")


def _show(token: bytes) -> str:
    text = token.decode("utf-8", "backslashreplace")
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _raise_first_error(data: bytes, *, first: int, path, line0: int, svmlight: bool) -> NoReturn:
    lines = data.split(b"\n")
    for k in range(first, len(lines)):
        _strict_check(lines[k], path=path, lineno=line0 + k, svmlight=svmlight)
    raise LetorFormatError(
        f"could not parse the numbers of lines {line0 + first}-{line0 + len(lines) - 2}",
        path=path,
        fix="check these lines for unusual number syntax",
    )


# --------------------------------------------------------------------------- vectorised block parser


@dataclasses.dataclass
class _Block:
    """Parsed rows of one block of whole lines; ``fid``/``value``/``row`` list the features."""

    label: np.ndarray
    qid: list  # svmlight: empty until the group file's queries fill it (_Stream.blocks)
    comment: list
    lineno: np.ndarray
    fid: np.ndarray
    value: np.ndarray
    row: np.ndarray
    nbytes: int

    def __len__(self):
        return len(self.label)


# bytes the block parser looks at
_LF, _CR, _SPACE, _HASH, _COLON, _ZERO = 10, 13, 32, 35, 58, 48
_Q, _I, _D = b"qid"


@dataclasses.dataclass
class _Lines:
    """Where each line of a block starts and ends, and where its comment (``#``) begins."""

    starts: np.ndarray
    newline: np.ndarray
    first_hash: np.ndarray  # the line's first "#", or the end of the block
    has_hash: np.ndarray
    body_end: np.ndarray  # the comment's "#" or the newline
    hashes: np.ndarray
    colons: np.ndarray


@dataclasses.dataclass
class _Tokens:
    """Body tokens (runs of bytes above space, outside comments) and body colons, counted per line."""

    start: np.ndarray
    end: np.ndarray
    per_line: np.ndarray
    colons: np.ndarray
    colons_per_line: np.ndarray


def _parse_block(data: bytes, *, path, line0: int, svmlight: bool) -> _Block:
    """Parse a block of whole lines (``data`` ends with ``\\n``) with numpy.

    Tokens are runs of bytes above 0x20 other than ``#``. In a valid line the body (before
    ``#``) holds a label token, a ``qid:`` token (LETOR) and feature tokens, and its colons
    align one to one, in order, with the qid and feature tokens. Colons, qid tokens and
    comments are then blanked so that one ``np.fromstring`` reads ``label fid value fid
    value ...`` for every line. Anything unexpected hands the block to the strict parser.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    _refuse_lone_cr(buf, path=path, line0=line0)
    lines = _scan_lines(buf)
    tokens = _body_tokens(buf, lines)
    data_lines = np.flatnonzero(tokens.per_line > 0)
    if not len(data_lines):
        return _Block(
            label=np.zeros(0),
            qid=[],
            comment=[],
            lineno=data_lines,
            fid=np.zeros(0, dtype=np.int64),
            value=np.zeros(0),
            row=data_lines,
            nbytes=len(buf),
        )

    def fail_at(bad: np.ndarray) -> None:
        if bad.any():
            _raise_first_error(data, first=int(data_lines[np.argmax(bad)]), path=path, line0=line0, svmlight=svmlight)

    # every line: label [qid:Q] fid:value ..., with one colon per qid and feature token
    n_head = 1 if svmlight else 2
    first_tok = (np.cumsum(tokens.per_line) - tokens.per_line)[data_lines]
    first_colon = (np.cumsum(tokens.colons_per_line) - tokens.colons_per_line)[data_lines]
    n_feat = tokens.per_line[data_lines] - n_head
    fail_at((n_feat < 0) | (tokens.colons_per_line[data_lines] != n_feat + (n_head - 1)))

    is_feat_tok = np.ones(len(tokens.start), dtype=bool)
    is_feat_tok[first_tok] = False
    is_feat_colon = np.ones(len(tokens.colons), dtype=bool)
    bad = np.zeros(len(data_lines), dtype=bool)
    q = first_tok + 1  # the qid token of every line (LETOR)
    if not svmlight:
        is_feat_tok[q] = False
        is_feat_colon[first_colon] = False
        bad |= _bad_qid_tokens(buf, tokens, q, first_colon)
    f_start, f_end = tokens.start[is_feat_tok], tokens.end[is_feat_tok]
    f_colon = tokens.colons[is_feat_colon]
    feat_line = np.repeat(np.arange(len(data_lines)), n_feat)
    bad[feat_line[(f_colon <= f_start) | (f_colon >= f_end - 1)]] = True  # "fid:value" with both parts
    fail_at(bad)

    # feature ids as integers; then blank ids, colons, qid tokens and comments, leaving the numbers
    text = buf.copy()
    text[tokens.colons] = _SPACE
    fid, bad_id = _feature_ids(buf, text, f_start, f_colon)
    if not svmlight:
        text[_spans(tokens.start[q], tokens.end[q])] = _SPACE
    text[_spans(lines.first_hash[lines.has_hash], lines.newline[lines.has_hash])] = _SPACE
    label, value = _labels_and_values(
        data,
        text.tobytes(),
        n_feat,
        n_values=len(f_start),
        path=path,
        line0=line0,
        svmlight=svmlight,
        first_line=int(data_lines[0]),
    )
    del text
    bad_id |= fid < 1
    same_line = feat_line[1:] == feat_line[:-1]
    bad[feat_line[bad_id]] = True
    bad[feat_line[1:][same_line & (fid[1:] <= fid[:-1])]] = True  # ids must increase along a line
    bad |= ~np.isfinite(label)
    fail_at(bad)

    qid: list = []
    if not svmlight:
        q0, q1 = (tokens.start[q] + 4).tolist(), tokens.end[q].tolist()
        qid = _decode_all([data[a:b] for a, b in zip(q0, q1)], data_lines, path=path, line0=line0, what="qid")
    return _Block(
        label=label,
        qid=qid,
        comment=_comments(data, buf, lines, data_lines, path=path, line0=line0),
        lineno=data_lines + line0,
        fid=fid,
        value=value,
        row=feat_line,
        nbytes=len(buf),
    )


def _scan_lines(buf: np.ndarray) -> _Lines:
    special = np.flatnonzero((buf == _COLON) | (buf == _HASH) | (buf == _LF))  # one scan for the three
    kind = buf[special]
    newline, hashes, colons = special[kind == _LF], special[kind == _HASH], special[kind == _COLON]
    starts = np.empty_like(newline)
    starts[0] = 0
    starts[1:] = newline[:-1] + 1
    first_hash = np.append(hashes, len(buf))[np.searchsorted(hashes, starts)]
    has_hash = first_hash < newline
    return _Lines(starts, newline, first_hash, has_hash, np.where(has_hash, first_hash, newline), hashes, colons)


def _inside_bodies(positions: np.ndarray, lines: _Lines) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``positions`` (sorted) that lie in a line's body, and each line's [lo, hi) range into them."""
    lo = np.searchsorted(positions, lines.starts)
    hi = np.searchsorted(positions, lines.body_end)
    if lines.has_hash.any():  # drop what lies in comments
        keep = (
            np.cumsum(np.bincount(lo, minlength=len(positions) + 1) - np.bincount(hi, minlength=len(positions) + 1))[
                :-1
            ]
            > 0
        )
        return keep, lo, hi
    return np.ones(len(positions), dtype=bool), lo, hi


def _body_tokens(buf: np.ndarray, lines: _Lines) -> _Tokens:
    sep = buf <= _SPACE
    sep[lines.hashes] = True
    edges = np.flatnonzero(sep[1:] != sep[:-1]) + 1
    if not sep[0]:
        edges = np.concatenate([[0], edges])
    del sep
    start, end = edges[0::2], edges[1::2]
    keep, lo, hi = _inside_bodies(start, lines)
    keep_c, c_lo, c_hi = _inside_bodies(lines.colons, lines)
    return _Tokens(start[keep], end[keep], hi - lo, lines.colons[keep_c], c_hi - c_lo)


def _bad_qid_tokens(buf: np.ndarray, tokens: _Tokens, q: np.ndarray, first_colon: np.ndarray) -> np.ndarray:
    """Lines whose second token is not ``qid:`` followed by at least one byte."""
    qs = tokens.start[q]
    at = lambda k: buf[np.minimum(qs + k, len(buf) - 1)]  # noqa: E731  (the test on length guards the tail)
    return (
        (tokens.colons[first_colon] != qs + 3)
        | (tokens.end[q] - qs <= 4)
        | (at(0) != _Q)
        | (at(1) != _I)
        | (at(2) != _D)
    )


def _feature_ids(buf: np.ndarray, text: np.ndarray, f_start: np.ndarray, f_colon: np.ndarray):
    """Feature ids parsed digit by digit (blanked in ``text``) and which are malformed: not digits,
    a leading zero, or more than ``_MAX_ID_DIGITS`` digits."""
    fid = np.zeros(len(f_start), dtype=np.int64)
    id_len = f_colon - f_start
    bad_id = (id_len > _MAX_ID_DIGITS) | ((id_len > 1) & (buf[f_start] == _ZERO))
    for j in range(min(int(id_len.max(initial=0)), _MAX_ID_DIGITS)):
        use = np.flatnonzero(id_len > j)
        pos = f_start[use] + j
        digit = buf[pos] - np.uint8(_ZERO)
        bad_id[use[digit > 9]] = True
        fid[use] = fid[use] * 10 + digit
        text[pos] = _SPACE
    return fid, bad_id


def _labels_and_values(
    data: bytes,
    numbers_text: bytes,
    n_feat: np.ndarray,
    *,
    n_values: int,
    path,
    line0: int,
    svmlight: bool,
    first_line: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``label value value ...`` of every line, read at once, split into labels and feature values."""
    try:
        numbers = np.fromstring(numbers_text, dtype=np.float64, sep=" ")
    except ValueError:
        numbers = None
    if numbers is None or len(numbers) != len(n_feat) + n_values:
        _raise_first_error(data, first=first_line, path=path, line0=line0, svmlight=svmlight)
    label_at = np.arange(len(n_feat)) + (np.cumsum(n_feat) - n_feat)
    is_value = np.ones(len(numbers), dtype=np.bool_)
    is_value[label_at] = False
    return numbers[label_at], numbers[is_value]


def _comments(data: bytes, buf: np.ndarray, lines: _Lines, data_lines: np.ndarray, *, path, line0: int) -> list:
    """Each data line's comment (after ``#`` and one space, without a trailing ``\\r``), or None."""
    comment = [None] * len(data_lines)
    hashed = np.flatnonzero(lines.has_hash[data_lines])
    if len(hashed):
        c0 = lines.first_hash[data_lines[hashed]] + 1
        c1 = lines.newline[data_lines[hashed]]
        c1 = c1 - ((buf[c1 - 1] == _CR) & (c1 > c0))
        c0 = c0 + ((buf[c0] == _SPACE) & (c0 < c1))
        texts = _decode_all(
            [data[a:b] for a, b in zip(c0.tolist(), c1.tolist())],
            data_lines[hashed],
            path=path,
            line0=line0,
            what="comment",
        )
        for r, text in zip(hashed.tolist(), texts):
            comment[r] = text
    return comment


def _refuse_lone_cr(buf: np.ndarray, *, path, line0: int) -> None:
    """A carriage return not followed by a line feed (old Mac line endings) would silently join lines."""
    cr = np.flatnonzero(buf == _CR)
    if len(cr):
        lone = cr[buf[np.minimum(cr + 1, len(buf) - 1)] != 10]
        if len(lone):
            line = line0 + int(np.count_nonzero(buf[: lone[0]] == 10))
            raise LetorFormatError(
                "carriage return without a line feed (\\r line endings would join lines)",
                path=path,
                line=line,
                fix="convert the line endings to \\n, e.g. tr '\\r' '\\n'",
            )


def _spans(begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Indices of the concatenated ranges ``[begin[i], end[i])``."""
    length = end - begin
    total = int(length.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(begin - (np.cumsum(length) - length), length)
    return offsets + np.arange(total)


def _decode_all(chunks: list, lines: np.ndarray, *, path, line0: int, what: str) -> list:
    try:
        return [c.decode("utf-8") for c in chunks]
    except UnicodeDecodeError:
        for k, c in enumerate(chunks):
            try:
                c.decode("utf-8")
            except UnicodeDecodeError:
                raise LetorFormatError(
                    f"{what} is not valid UTF-8", path=path, line=int(lines[k]) + line0, fix=_UTF8_FIX
                ) from None
        raise


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


# --------------------------------------------------------------------------- reading


@dataclasses.dataclass
class _Options:
    path: Path
    svmlight: bool
    groups: np.ndarray | None
    group_path: Path | None
    weights: np.ndarray | None
    weight_path: Path | None
    positions: np.ndarray | None
    position_path: Path | None
    nan_policy: str
    feature_map: FeatureMap | None
    map_path: Path | None


def _resolve(path, *, fmt, group_path, weight_path, nan_policy, feature_map, position_path=None) -> _Options:
    path = Path(path)
    if fmt not in ("auto",) + LETOR_FORMATS:
        raise ValueError(f"fmt must be 'auto', 'letor' or 'svmlight', got {fmt!r}")
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
    if not path.exists():
        raise LetorFormatError("no such file", path=path, fix="check the path")
    if group_path is None and group_path_of(path).exists():
        group_path = group_path_of(path)
    if fmt == "auto":
        fmt = "letor"
        if group_path is not None and not any(t.startswith(b"qid:") for t in _first_data_tokens(path)[1:2]):
            fmt = "svmlight"
    svmlight = fmt == "svmlight"
    if svmlight and group_path is None:
        raise LetorFormatError(
            "svmlight file without a group file",
            path=path,
            fix=f"write the group sizes to {group_path_of(path).name} or pass group_path",
        )
    groups = _read_numbers(group_path, kind="group size", integer=True) if svmlight else None
    if weight_path is None and weight_path_of(path).exists():
        weight_path = weight_path_of(path)
    weights = _read_numbers(weight_path, kind="weight", integer=False) if weight_path is not None else None
    if position_path is None and position_path_of(path).exists():
        position_path = position_path_of(path)
    positions = _read_numbers(position_path, kind="position", integer=True) if position_path is not None else None
    map_path = None
    if feature_map is None and FeatureMap.sidecar_path(path).exists():
        map_path = FeatureMap.sidecar_path(path)
        feature_map = FeatureMap.load(map_path)
    return _Options(
        path,
        svmlight,
        groups,
        None if group_path is None else Path(group_path),
        weights,
        None if weight_path is None else Path(weight_path),
        positions,
        None if position_path is None else Path(position_path),
        nan_policy,
        feature_map,
        map_path,
    )


def _first_data_tokens(path) -> list:
    with open_input(path) as fh:
        for line in _bounded_lines(fh, path):
            tokens = line.split(b"#", 1)[0].split()
            if tokens:
                return tokens
    return []


class _Stream:
    """Parsed blocks of a file with qids (svmlight: from the group file), weights and checks
    that span blocks: query contiguity and row counts of the group and weight files."""

    def __init__(self, opts: _Options, *, regroup: bool):
        self.opts = opts
        self.regroup = regroup
        self.rows = 0
        self.noncontiguous: list[str] = []
        self._finished: set = set()
        self._last_qid: str | None = None

    def blocks(self) -> Iterator[_Block]:
        opts = self.opts
        ends = None if opts.groups is None else np.cumsum(opts.groups)
        for line0, data in _byte_blocks(opts.path, _BLOCK_BYTES):
            block = _parse_block(data, path=opts.path, line0=line0, svmlight=opts.svmlight)
            if not len(block):
                continue
            if ends is not None:
                index = np.arange(self.rows, self.rows + len(block))
                if index[-1] >= ends[-1]:
                    over = block.lineno[int(ends[-1]) - self.rows]
                    raise LetorFormatError(
                        f"more rows than the group sizes in {opts.group_path} sum to ({int(ends[-1])})",
                        path=opts.path,
                        line=int(over),
                        fix="fix the group file so its sizes sum to the rows",
                    )
                g = np.searchsorted(ends, index, side="right") + 1
                block.qid = [str(x) for x in g.tolist()]
            self._check_contiguous(block)
            self._apply_nan_policy(block)
            self.rows += len(block)
            yield block
        self._check_totals()

    def _check_contiguous(self, block: _Block) -> None:
        qid = block.qid
        runs = [0] + [i for i in range(1, len(qid)) if qid[i] != qid[i - 1]]
        for i in runs:
            q = qid[i]
            if i == 0 and q == self._last_qid:
                continue
            if q in self._finished:
                if not self.regroup:
                    raise LetorFormatError(
                        f"rows of qid {q!r} are not contiguous (the query appeared earlier)",
                        path=self.opts.path,
                        line=int(block.lineno[i]),
                        fix="sort the file by query, or read it with regroup=True (CLI: --regroup)",
                    )
                self.noncontiguous.append(q)
            self._finished.add(q)
        self._last_qid = qid[-1]

    def _apply_nan_policy(self, block: _Block) -> None:
        value = block.value
        with np.errstate(over="ignore"):
            finite32 = np.isfinite(value.astype(np.float32))
        if finite32.all():
            return
        if self.opts.nan_policy == "error":
            k = int(np.argmax(~finite32))
            raise LetorFormatError(
                f"feature {int(block.fid[k])} is {float(value[k])!r} (NaN, infinite or beyond float32)",
                path=self.opts.path,
                line=int(block.lineno[block.row[k]]),
                fix="clean the value, or read with nan_policy='keep' or 'zero' (CLI: --nan-policy)",
            )
        if self.opts.nan_policy == "zero":
            value[~finite32] = 0.0
            return
        overflow = np.isfinite(value) & ~finite32  # "keep" keeps NaN and inf, but 1e39 would turn into inf
        if overflow.any():
            k = int(np.argmax(overflow))
            raise LetorFormatError(
                f"feature {int(block.fid[k])} is {float(value[k])!r}, beyond the float32 range (about 3.4e38)",
                path=self.opts.path,
                line=int(block.lineno[block.row[k]]),
                fix="rescale the feature, or read with nan_policy='zero' (CLI: --nan-policy zero)",
            )

    def _check_totals(self) -> None:
        opts = self.opts
        if self.rows == 0:
            raise LetorFormatError(
                "empty file (no data lines)", path=opts.path, fix="write lines like '2 qid:1 1:0.5 2:0.3'"
            )
        if opts.groups is not None and int(opts.groups.sum()) != self.rows:
            raise LetorFormatError(
                f"group sizes sum to {int(opts.groups.sum())} but the data file has {self.rows} rows",
                path=opts.group_path,
                fix="regenerate the group file from the data",
            )
        for kind, values, path in (
            ("weight", opts.weights, opts.weight_path),
            ("position", opts.positions, opts.position_path),
        ):
            if values is not None and len(values) != self.rows:
                raise LetorFormatError(
                    f"{len(values)} {kind}s for {self.rows} rows", path=path, fix=f"write one {kind} per data row"
                )


def _seen_ids(fid: np.ndarray) -> np.ndarray:
    if not len(fid):
        return np.zeros(0, dtype=np.int64)
    top = int(fid.max())
    if top <= _DENSE_LOOKUP_LIMIT:
        seen = np.zeros(top + 1, dtype=bool)
        seen[fid] = True
        return np.flatnonzero(seen)
    return np.unique(fid)


def _columns_of(block: _Block, ids: np.ndarray, opts: _Options) -> np.ndarray:
    """Column of each feature of ``block`` in a matrix whose columns are ``ids``."""
    col = np.searchsorted(ids, block.fid)
    missing = (
        (col >= len(ids)) | (ids[np.minimum(col, len(ids) - 1)] != block.fid)
        if len(ids)
        else np.ones(len(col), dtype=bool)
    )
    if missing.any():
        k = int(np.argmax(missing))
        raise LetorFormatError(
            f"feature id {int(block.fid[k])} is not in the feature map {opts.map_path or ''}".rstrip(),
            path=opts.path,
            line=int(block.lineno[block.row[k]]),
            fix="regenerate or delete the .features.json sidecar, or pass a matching feature_map",
        )
    return col


def _dense(block: _Block, col: np.ndarray, width: int) -> np.ndarray:
    X = np.zeros((len(block), width), dtype=np.float32)
    X[block.row, col] = block.value
    return X


def _ranking_set(X, block_like, fmap, opts: _Options, rows) -> RankingSet:
    qid, label, comment = block_like
    comment = np.asarray(comment, dtype=object)
    docid = np.array([_docid_of(c) for c in comment.tolist()], dtype=object)
    has_comment = any(c is not None for c in comment.tolist())
    weight = None if opts.weights is None else opts.weights[rows[0] : rows[1]]
    position = None if opts.positions is None else opts.positions[rows[0] : rows[1]]
    return RankingSet(
        np.asarray(qid, dtype=object),
        label,
        X,
        fmap,
        docid=docid if any(d is not None for d in docid.tolist()) else None,
        comment=comment if has_comment else None,
        weight=weight,
        position=position,
    )


def read_letor(
    path,
    *,
    fmt: str = "auto",
    group_path=None,
    weight_path=None,
    position_path=None,
    nan_policy: str = "error",
    regroup: bool = False,
    feature_map: FeatureMap | None = None,
) -> RankingSet:
    """Load a whole LETOR or svmlight file into a :class:`RankingSet`.

    Parameters
    ----------
    path : the data file (``.gz`` is decompressed).
    fmt : ``"letor"``, ``"svmlight"`` or ``"auto"`` (svmlight when a group file exists, from
        ``group_path`` or ``<path>.query``, and the first data line has no ``qid:``).
    group_path : group-size file of an svmlight file (default ``<path>.query``).
    weight_path : per-row weights (default ``<path>.weight`` when it exists).
    position_path : per-row 1-based display positions of click data (default ``<path>.position`` when it
        exists).
    nan_policy : what to do with NaN/inf (or beyond-float32) values: ``"error"``, ``"keep"``, ``"zero"``.
    regroup : when a query's rows are not contiguous, stably regroup them (with a warning)
        instead of raising :class:`LetorFormatError`.
    feature_map : the columns to read into; default the ``<path>.features.json`` sidecar when
        present, else the ids seen in the file named ``f<id>``. Ids in the file that the map
        lacks raise :class:`LetorFormatError`; ids of the map absent from the file are zeros.

    Peak memory is about the float32 matrix plus one block (4 MiB of text) of working
    arrays: the matrix grows in place (``ndarray.resize``), and is only copied when a later
    block brings feature ids not seen before (possible without a feature map).
    """
    sides = {"group_path": group_path, "weight_path": weight_path, "position_path": position_path}
    opts = _resolve(path, fmt=fmt, nan_policy=nan_policy, feature_map=feature_map, **sides)
    stream = _Stream(opts, regroup=regroup)
    ids = None if opts.feature_map is None else np.asarray(opts.feature_map.ids, dtype=np.int64)
    if ids is not None:
        _check_width(len(ids), opts)
    X = None
    qids: list[str] = []
    labels: list[np.ndarray] = []
    comments: list = []
    n = 0
    for block in stream.blocks():
        if ids is None or (opts.feature_map is None and not np.isin(_seen_ids(block.fid), ids).all()):
            new_ids = _seen_ids(block.fid) if ids is None else np.union1d(ids, _seen_ids(block.fid))
            _check_width(len(new_ids), opts, rows=n + len(block))
            if X is not None and ids is not None:  # the matrix is made once the ids are known
                grown = np.zeros((X.shape[0], len(new_ids)), dtype=np.float32)
                grown[:, np.searchsorted(new_ids, ids)] = X
                X = grown
            ids = new_ids
        col = _columns_of(block, ids, opts)
        if X is None:
            X = np.zeros((_estimate_rows(opts.path, block), len(ids)), dtype=np.float32)
        if n + len(block) > X.shape[0]:
            X.resize((max(n + len(block), int(X.shape[0] * 1.5)), X.shape[1]), refcheck=False)
        X[n + block.row, col] = block.value
        n += len(block)
        qids.extend(block.qid)
        labels.append(block.label)
        comments.extend(block.comment)
    assert X is not None and ids is not None, "_resolve refuses a file without data lines"
    X.resize((n, X.shape[1]), refcheck=False)
    fmap = opts.feature_map if opts.feature_map is not None else FeatureMap.from_ids(ids.tolist())
    data = _ranking_set(X, (qids, np.concatenate(labels), comments), fmap, opts, (0, n))
    if stream.noncontiguous:
        warnings.warn(
            f"{opts.path}: rows of {len(set(stream.noncontiguous))} queries were not contiguous; "
            "regrouped them stably (queries in order of first appearance)",
            stacklevel=2,
        )
        data = data.regroup()
    return data


def _check_width(n_ids: int, opts: _Options, *, rows: int | None = None) -> None:
    """Refuse, before any matrix is allocated, a file whose distinct feature ids exceed ``max_features``
    (see :mod:`ltrfeat.core.limits`): the rows are held as a dense float32 matrix."""
    bound = limits.current().max_features
    if n_ids <= bound:
        return
    size = "" if rows is None else f"; its first {rows} rows alone would take {rows * n_ids * 4 / 2**30:.1f} GiB"
    raise LetorFormatError(
        f"{n_ids} distinct feature ids exceed the limit of {bound} for a dense feature matrix{size}",
        path=opts.map_path if opts.feature_map is not None and opts.map_path else opts.path,
        fix="renumber the features densely (1..N), or raise ltrfeat --max-features if rows x ids x 4 bytes fits "
        "in memory",
    )


def _estimate_rows(path: Path, first: _Block) -> int:
    """Row capacity to start with: the file size over the first block's bytes per row
    (gzip files are guessed to expand four times)."""
    size = path.stat().st_size * (4 if str(path).endswith(".gz") else 1)
    return max(len(first), int(size / (first.nbytes / len(first)) * 1.02) + 16)


def iter_letor(
    path,
    *,
    chunk_queries: int = 1000,
    fmt: str = "auto",
    group_path=None,
    weight_path=None,
    position_path=None,
    nan_policy: str = "error",
    regroup: bool = False,
    feature_map: FeatureMap | None = None,
) -> Iterator[RankingSet]:
    """Stream a LETOR or svmlight file as :class:`RankingSet` chunks of ``chunk_queries`` queries.

    Chunks never split a query and all share one :class:`FeatureMap`: the given
    ``feature_map``, else the ``<path>.features.json`` sidecar, else the ids seen in the
    whole file, found by a first pass over the file (so a file without a sidecar is
    parsed twice; the first pass also validates it entirely). Memory is bounded by one
    chunk plus one block of text. Options are those of :func:`read_letor`; with
    ``regroup=True`` the whole file is loaded (regrouping needs every row) and then chunked.
    """
    if chunk_queries < 1:
        raise ValueError(f"chunk_queries must be at least 1, got {chunk_queries}")
    sides = {"group_path": group_path, "weight_path": weight_path, "position_path": position_path}
    options = dict(fmt=fmt, nan_policy=nan_policy, feature_map=feature_map, **sides)
    if regroup:
        data = read_letor(path, regroup=True, **options)
        bounds = data.query_boundaries()
        for q in range(0, len(bounds) - 1, chunk_queries):
            yield data.take(np.arange(bounds[q], bounds[min(q + chunk_queries, len(bounds) - 1)]))
        return
    opts = _resolve(path, **options)
    if opts.feature_map is None:
        seen = np.zeros(0, dtype=np.int64)
        for block in _Stream(opts, regroup=False).blocks():
            seen = np.union1d(seen, _seen_ids(block.fid))
        opts.feature_map = FeatureMap.from_ids(seen.tolist())
    ids = np.asarray(opts.feature_map.ids, dtype=np.int64)
    _check_width(len(ids), opts)
    stream = _Stream(opts, regroup=False)
    pending: list[tuple] = []  # (X, qid, label, comment) pieces not yet emitted
    n_pending_queries = 0
    emitted = 0

    def emit(rows: int):
        nonlocal pending, emitted
        X = np.concatenate([p[0] for p in pending])
        qid = [q for p in pending for q in p[1]]
        label = np.concatenate([p[2] for p in pending])
        comment = [c for p in pending for c in p[3]]
        out = _ranking_set(
            X[:rows],
            (qid[:rows], label[:rows], comment[:rows]),
            opts.feature_map,
            opts,
            (emitted, emitted + rows),
        )
        pending = [(X[rows:], qid[rows:], label[rows:], comment[rows:])] if rows < len(qid) else []
        emitted += rows
        return out

    for block in stream.blocks():
        X = _dense(block, _columns_of(block, ids, opts), len(ids))
        previous = pending[-1][1][-1] if pending else None
        starts = [
            i for i in range(len(block.qid)) if (block.qid[i] != block.qid[i - 1] if i else block.qid[0] != previous)
        ]
        pending.append((X, block.qid, block.label, block.comment))
        n_pending_queries += len(starts)
        while n_pending_queries > chunk_queries:  # the last query may continue in the next block
            rows = _rows_of_first_queries([p[1] for p in pending], chunk_queries)
            yield emit(rows)
            n_pending_queries -= chunk_queries
    if pending:
        yield emit(sum(len(p[1]) for p in pending))


def _rows_of_first_queries(qid_lists: list, k: int) -> int:
    """Number of rows holding the first ``k`` queries of the concatenated qid lists."""
    seen = 0
    rows = 0
    previous = object()
    for qids in qid_lists:
        for q in qids:
            if q != previous:
                seen += 1
                if seen > k:
                    return rows
                previous = q
            rows += 1
    return rows


def letor_summary(
    path, *, fmt: str = "auto", group_path=None, weight_path=None, nan_policy: str = "error", regroup: bool = False
) -> dict:
    """Statistics of a file in one streaming pass (also a full validation).

    Keys: ``path, format, rows, queries, features, max_feature_id, label_histogram``
    (label string → rows), ``docs_per_query`` (min/median/max), ``queries_without_relevant``
    (no label > 0), ``rows_with_comment``, ``rows_with_docid``, ``weighted``, ``positioned`` (a ``.position``
    file gives display positions),
    ``feature_map`` (``"sidecar"`` or ``"ids seen"``), ``regrouped_queries``.
    """
    opts = _resolve(
        path, fmt=fmt, group_path=group_path, weight_path=weight_path, nan_policy=nan_policy, feature_map=None
    )
    stream = _Stream(opts, regroup=regroup)
    seen = np.zeros(0, dtype=np.int64)
    labels: Counter = Counter()
    per_query: dict = {}
    relevant: dict = {}
    with_comment = with_docid = 0
    for block in stream.blocks():
        seen = np.union1d(seen, _seen_ids(block.fid))
        if opts.feature_map is not None:
            _columns_of(block, np.asarray(opts.feature_map.ids, dtype=np.int64), opts)
        labels.update(block.label.tolist())
        for q, lab in zip(block.qid, block.label.tolist()):
            per_query[q] = per_query.get(q, 0) + 1
            relevant[q] = relevant.get(q, False) or lab > 0
        with_comment += sum(c is not None for c in block.comment)
        with_docid += sum(_docid_of(c) is not None for c in block.comment)
    sizes = np.fromiter(per_query.values(), dtype=np.int64)
    fmap = opts.feature_map if opts.feature_map is not None else FeatureMap.from_ids(seen.tolist())
    return {
        "path": str(opts.path),
        "format": "svmlight" if opts.svmlight else "letor",
        "rows": stream.rows,
        "queries": len(per_query),
        "features": len(fmap),
        "max_feature_id": fmap.max_id,
        "label_histogram": {_format_label(k): v for k, v in sorted(labels.items())},
        "docs_per_query": {"min": int(sizes.min()), "median": float(np.median(sizes)), "max": int(sizes.max())},
        "queries_without_relevant": int(sum(not r for r in relevant.values())),
        "rows_with_comment": with_comment,
        "rows_with_docid": with_docid,
        "weighted": opts.weights is not None,
        "positioned": opts.positions is not None,
        "feature_map": "sidecar" if opts.map_path is not None else "ids seen",
        "feature_names": [{"id": f.id, "name": f.name, "source": f.source} for f in fmap],
        "regrouped_queries": len(set(stream.noncontiguous)),
    }


# --------------------------------------------------------------------------- writing


def _format_float32(values: np.ndarray) -> np.ndarray:
    """Shortest text that reads back to the same float32, for each value (object array).

    Formatting goes through the distinct values only (feature files repeat values a lot).
    """
    values = np.asarray(values, dtype=np.float32)
    unique, inverse = np.unique(values, return_inverse=True)
    text = []
    for v in unique:
        s = str(v)
        text.append(s[:-2] if s.endswith(".0") else s)
    return np.asarray(text, dtype=object)[inverse.reshape(values.shape)]


def _format_label(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _comment_text(comment, docid) -> str:
    if comment is None:
        return "" if docid is None else f" #docid = {docid}"
    if "\n" in comment or "\r" in comment:
        raise LetorWriteError(
            f"comment {comment[:40]!r} contains a line break, which a LETOR line cannot hold",
            fix="remove line breaks from comments",
        )
    return " #" + (" " + comment if comment[:1].isspace() else comment)


_ROW_SIDE_FILES = {"weight": weight_path_of, "position": position_path_of}  # one value per data row


class LetorWriter:
    """Streaming writer of LETOR or svmlight files, atomic at close.

    Use as a context manager; each :meth:`write` appends a chunk whose rows of one query
    are contiguous (a query may continue from the previous chunk). At close the data file,
    ``<path>.query`` (svmlight), ``<path>.weight`` and ``<path>.position`` (when chunks carry them) and the
    ``<path>.features.json`` sidecar are put in place, and the side files of an earlier write that this
    one does not make are removed; on an exception none of that happens.

    Parameters
    ----------
    path : output file (``.gz`` compresses).
    feature_map : the columns every chunk has.
    fmt : ``"letor"`` (``label qid:ID fid:val ... #comment``) or ``"svmlight"`` (no qid).
    sparse : omit zero values.
    write_feature_map : write the ``.features.json`` sidecar.
    """

    def __init__(
        self, path, feature_map: FeatureMap, *, fmt: str = "letor", sparse: bool = False, write_feature_map: bool = True
    ):
        self.path = path
        self.feature_map = feature_map
        self.fmt = fmt
        self.sparse = sparse
        self.write_feature_map = write_feature_map

    def __enter__(self) -> "LetorWriter":
        if self.fmt not in LETOR_FORMATS:
            raise ValueError(f"fmt must be 'letor' or 'svmlight', got {self.fmt!r}")
        self._stack = contextlib.ExitStack()
        self._stale = self._stack.enter_context(StaleSideFiles())  # exits last: once the data file is in place
        self._out = self._stack.enter_context(atomic_output(self.path))
        self._row_outs: dict = {}  # "weight"/"position" -> its open side file, once a chunk carries them
        self._groups: list[int] = []
        self._finished: set = set()
        self._last_qid: str | None = None
        self._chunks = 0
        self._prefix = np.asarray([f"{i}:" for i in self.feature_map.ids], dtype=object)
        return self

    def write(self, chunk: RankingSet) -> None:
        """Append ``chunk`` (same feature map as the writer)."""
        if chunk.feature_map != self.feature_map:
            raise ValueError(f"chunk columns {chunk.feature_map!r} differ from the writer's {self.feature_map!r}")
        if not len(chunk):
            return
        for name in _ROW_SIDE_FILES:
            if (getattr(chunk, name) is not None) != (name in self._row_outs) and self._chunks:
                raise ValueError(f"either every chunk has {name}s or none has")
        self._chunks += 1
        self._track_groups(chunk)
        for name, side in _ROW_SIDE_FILES.items():
            if getattr(chunk, name) is not None and name not in self._row_outs:
                self._row_outs[name] = self._stack.enter_context(atomic_output(side(self.path), sidecar_of=self.path))
        labels = [_format_label(x) for x in chunk.label.tolist()]
        tokens = self._prefix[None, :] + _format_float32(chunk.X)
        nonzero = chunk.X != 0 if self.sparse else None
        qids = chunk.qid.tolist()
        comments = [None] * len(chunk) if chunk.comment is None else chunk.comment.tolist()
        docids = [None] * len(chunk) if chunk.docid is None else chunk.docid.tolist()
        lines = []
        for i, row in enumerate(tokens.tolist()):
            head = labels[i] if self.fmt == "svmlight" else f"{labels[i]} qid:{qids[i]}"
            feats = " ".join(row if nonzero is None else tokens[i, nonzero[i]].tolist())
            lines.append(
                f"{head} {feats}{_comment_text(comments[i], docids[i])}"
                if feats
                else f"{head}{_comment_text(comments[i], docids[i])}"
            )
        lines.append("")
        self._out.write("\n".join(lines))
        for name, out in self._row_outs.items():
            out.write("".join(f"{v!r}\n" for v in getattr(chunk, name).tolist()))

    def _track_groups(self, chunk: RankingSet) -> None:
        b = chunk.query_boundaries()
        for start, end in zip(b[:-1].tolist(), b[1:].tolist()):
            q = str(chunk.qid[start])
            if not q or any(ch.isspace() for ch in q) or "#" in q:
                raise LetorWriteError(
                    f"qid {q!r} cannot be written (empty, whitespace or '#')",
                    path=self.path,
                    fix="use query ids without spaces or '#'",
                )
            if q == self._last_qid:
                self._groups[-1] += end - start
                continue
            if q in self._finished:
                raise ValueError(f"rows of qid {q!r} are not contiguous; call regroup() before writing")
            self._finished.add(q)
            self._groups.append(end - start)
            self._last_qid = q

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            try:
                self._finish()
            except BaseException as error:  # every temporary file goes, the earlier output stays
                if not self._stack.__exit__(type(error), error, error.__traceback__):
                    raise
                return False
        return bool(self._stack.__exit__(exc_type, exc, tb))

    def _finish(self) -> None:
        # The side files enter the stack last, so they are renamed before the data file:
        # a data file in place means its side files are too.
        if self.fmt == "svmlight":
            fh = self._stack.enter_context(atomic_output(group_path_of(self.path), sidecar_of=self.path))
            fh.write("".join(f"{g}\n" for g in self._groups))
        if self.write_feature_map:
            fh = self._stack.enter_context(atomic_output(FeatureMap.sidecar_path(self.path), sidecar_of=self.path))
            json.dump(self.feature_map.to_json(), fh, indent=1)
            fh.write("\n")
        written = [
            *(name in self._row_outs for name in _ROW_SIDE_FILES),
            self.fmt == "svmlight",
            self.write_feature_map,
        ]
        sides = [*(side(self.path) for side in _ROW_SIDE_FILES.values()), group_path_of(self.path)]
        sides.append(FeatureMap.sidecar_path(self.path))
        if not is_stream(self.path):
            self._stale.retire(side for side, made in zip(sides, written) if not made)


def write_letor(
    path, data: RankingSet, *, fmt: str = "letor", sparse: bool = False, write_feature_map: bool = True
) -> None:
    """Write ``data`` atomically as LETOR (``fmt="letor"``) or svmlight with ``<path>.query``.

    Also writes ``<path>.weight`` / ``<path>.position`` when ``data.weight`` / ``data.position`` is set and the
    ``.features.json`` sidecar unless ``write_feature_map=False``. Values are written in the shortest form
    that reads back to the same float32; rows keep their order (queries must be
    contiguous: see :meth:`RankingSet.regroup`); ``sparse=True`` omits zeros.
    """
    with LetorWriter(path, data.feature_map, fmt=fmt, sparse=sparse, write_feature_map=write_feature_map) as w:
        w.write(data)
