"""One block of whole LETOR/svmlight lines parsed with numpy, and the strict per-line parser that names the first
bad line when anything in a block looks wrong."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import NoReturn

import numpy as np

from ltrfeat.core._letor_format import _UTF8_FIX
from ltrfeat.core.errors import LetorFormatError

_MAX_ID_DIGITS = 9
_NUMBER_RE = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan(?:\(\w*\))?)", re.IGNORECASE)
_SEPARATORS = bytes(range(33))
_TOKEN_SPLIT = re.compile(rb"[\x00-\x20]+")


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
    _refuse_nul(buf, lines, path=path, line0=line0)
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


def _refuse_nul(buf: np.ndarray, lines: _Lines, *, path, line0: int) -> None:
    """A NUL byte outside a comment is never LETOR: the file is binary, UTF-16 or damaged (read as a separator, it
    would hide that). Comments are free text and may hold one (the writer writes what it is given)."""
    nul = np.flatnonzero(buf == 0)
    if len(nul):
        line = np.searchsorted(lines.newline, nul)
        in_body = nul < lines.body_end[line]
        if in_body.any():
            raise LetorFormatError(
                "NUL byte in the line (a binary or UTF-16 file, or a damaged one)",
                path=path,
                line=line0 + int(line[np.argmax(in_body)]),
                fix="give a UTF-8 text file; e.g. iconv -f UTF-16 -t UTF-8, or remove the NUL bytes with tr -d '\\000'",
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
