"""Query, document and judged-pair text tables (TSV, CSV, JSONL, Parquet) as pandas DataFrames.

One DataFrame contract, PyTerrier style:

* queries: columns ``qid, query``; ``qid`` a unique string.
* documents: columns ``docid, <field>...``; ``docid`` a unique string.
* judged pairs: ``qid, query, docid, doc[, extra text fields], label``; ``label`` float64.

Ids are always read as strings ("007" stays "007"). Every returned frame's index, named
``line``, holds the 1-based source line of each row (header = line 1 for CSV/TSV; for
Parquet the 1-based row number), so later checks can still name the offending line.

Formats follow the extension (``.tsv .csv .jsonl .parquet``, the text ones optionally
``.gz``) or an explicit ``fmt``. TSV is plain: one row per line, fields split on tabs,
quotes are ordinary characters; so a TSV field cannot hold a tab, newline or carriage
return and :func:`write_table` refuses such text rather than corrupt it. CSV uses standard
quoting (RFC 4180) and holds any text. Text is empty-or-whitespace = missing.
"""

from __future__ import annotations

import codecs
import csv
import dataclasses
import hashlib
import io
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.duplicates import resolve_duplicates
from ltrfeat.core.errors import TextTableError, line_list
from ltrfeat.core.fileio import atomic_output, is_gzip_path, open_input
from ltrfeat.core.unicode_norm import nfkc

TABLE_FORMATS = ("tsv", "csv", "jsonl", "parquet")
_SUFFIX_FORMAT = {
    ".tsv": "tsv",
    ".tab": "tsv",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
PAIR_COLUMNS = ("qid", "query", "docid", "doc", "label")
MISSING_TEXT_POLICIES = ("error", "drop", "keep")
CONFLICTS = ("error", "first")  # an id naming two texts: refused, or its first text kept
_TSV_FORBIDDEN = ("\t", "\n", "\r")
_LABEL_MAP_FORMS = (
    "'none' (labels already integers), 'round', 'linear:LO:HI:GRADES' (e.g. linear:1:3:7), 'threshold:T1,T2,...'"
)
QUERY_NORMALISATION = "nfkc-casefold-space"  # the name of normalise_query's rule, recorded with its results


def normalise_query(text) -> str:
    """The one form query texts are compared in (the same query across folds, tables and training records): NFKC,
    case-folded, runs of whitespace as one space."""
    return " ".join(nfkc(str(text)).casefold().split())


class TextTableWarning(UserWarning):
    """Rows were dropped or texts replaced because the caller chose so (``missing='drop'|'keep'``,
    ``conflicts='first'``); the message says how many and where."""


# ---------------------------------------------------------------------------------------------
# Formats and raw reading: every cell becomes a str or None, with the source line of each row.


def table_format(path, fmt: str | None = None) -> str:
    """The table format of ``path``: ``fmt`` if given, else from the extension (``.gz`` ignored)."""
    if fmt is not None:
        if fmt not in TABLE_FORMATS:
            raise TextTableError(
                f"unknown table format {fmt!r}", path=path, fix=f"use one of {', '.join(TABLE_FORMATS)}"
            )
        return fmt
    name = str(path)[:-3] if is_gzip_path(path) else str(path)
    found = _SUFFIX_FORMAT.get(Path(name).suffix.lower())
    if found is None:
        raise TextTableError(
            "cannot tell the table format from the file name",
            path=path,
            fix=f"use a .tsv, .csv, .jsonl or .parquet name or pass the format ({', '.join(TABLE_FORMATS)})",
            param="fmt",
        )
    if found == "parquet" and is_gzip_path(path):
        raise TextTableError(
            "Parquet files are compressed internally and cannot be .gz", path=path, fix="drop the .gz suffix"
        )
    return found


@dataclasses.dataclass
class _RawTable:
    path: str
    fmt: str
    columns: list[str]
    cells: dict[str, pd.Series]  # column -> values (text: str, missing: NA), positional index
    lines: np.ndarray  # 1-based source line (row number for Parquet) of each row

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def header_line(self) -> int | None:
        return 1 if self.fmt in ("tsv", "csv") else None

    def text(self, column: str) -> pd.Series:
        """A column as text: numbers and booleans of Parquet files become strings, missing stays NA."""
        values = self.cells[column]
        if pd.api.types.is_string_dtype(values.dtype) or values.dtype == object:
            return values
        if pd.api.types.is_bool_dtype(values.dtype):
            return values.map({True: "true", False: "false"}).astype("str")
        if pd.api.types.is_float_dtype(values.dtype):
            return values.map(lambda v: None if math.isnan(v) else repr(v)).astype("str")
        return values.astype("str").where(values.notna())


def _read_raw(path, *, encoding: str, fmt: str | None) -> _RawTable:
    fmt = table_format(path, fmt)
    table: _RawTable | None
    try:
        if fmt == "parquet":
            table = _read_parquet(path)
        else:
            raw, codec = _read_bytes(path, encoding)
            # UTF-8 goes to pyarrow undecoded (it checks UTF-8 itself); other encodings are transcoded first
            table = (
                None
                if fmt == "jsonl"
                else _fast_delimited(
                    raw if codec == "utf-8" else _decode(raw, codec, path, encoding).encode("utf-8"), str(path), fmt
                )
            )
            if table is None:  # JSONL, or a file the fast reader leaves to the exact line-by-line parser
                reader = {"tsv": _parse_tsv, "csv": _parse_csv, "jsonl": _parse_jsonl}[fmt]
                table = reader(_decode(raw, codec, path, encoding), str(path))
    except FileNotFoundError:
        raise TextTableError("file not found", path=path, fix="check the path") from None
    except IsADirectoryError:
        raise TextTableError("is a directory, not a table file", path=path, fix="pass a file") from None
    if not table.columns:
        raise TextTableError("file is empty", path=path, fix="write a header and at least one row")
    if len(table) == 0:
        raise TextTableError(
            "table has no data rows", path=path, line=table.header_line, fix="check that the right file was given"
        )
    return table


def text_codec(encoding: str, *, path=None) -> str:
    """The normalised name of the text encoding ``encoding``; an unknown name or a codec that is not a text
    encoding (rot13, base64: transforms) is a :class:`TextTableError`."""
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        what = "unknown encoding" if info is None else "not a text encoding:"
        raise TextTableError(
            f"{what} {encoding!r}", path=path, fix="use a Python codec name such as utf-8, cp1252 or latin-1"
        )
    return info.name


def _read_bytes(path, encoding: str) -> tuple[bytes, str]:
    """The file's bytes (a UTF-8 BOM removed) and the normalised codec name."""
    codec = text_codec(encoding, path=path)
    with open_input(path) as fh:
        raw = fh.read()
    if codec == "utf-8" and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    return raw, codec


def _decode(raw: bytes, codec: str, path, encoding: str) -> str:
    """``raw`` as text; undecodable bytes are an error naming the line, the byte offset and a likely encoding."""
    try:
        text = raw.decode(codec)
    except UnicodeDecodeError as exc:
        bom = len(codecs.BOM_UTF8) if codec == "utf-8" and _starts_with_bom(path) else 0
        offset = bom + exc.start
        line = raw.count(b"\n", 0, exc.start) + 1
        bad = raw[exc.start : exc.end]
        guess = _guess_encoding(raw, failed=codec)
        raise TextTableError(
            f"cannot decode byte {bad.hex(' ')} at byte offset {offset} as {encoding}",
            path=path,
            line=line,
            fix=f"the file decodes as {guess}: pass encoding={guess!r} (CLI: --encoding {guess})",
        ) from None
    if b"\n" in raw and "\n" not in text:  # UTF-8 read as UTF-16: no error, but every byte pair one character
        guess, breaks = _guess_encoding(raw, failed=codec), raw.count(b"\n")
        raise TextTableError(
            f"read as {encoding} the file has no line breaks, though its bytes hold {breaks}: it is not {encoding}",
            path=path,
            fix=f"the file decodes as {guess}: pass encoding={guess!r} (CLI: --encoding {guess})",
        )
    return text[1:] if text.startswith("\ufeff") else text


def _starts_with_bom(path) -> bool:
    with open_input(path) as fh:
        return fh.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8


def _guess_encoding(raw: bytes, *, failed: str) -> str:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    for candidate in ("utf-8", "cp1252"):
        if codecs.lookup(candidate).name != failed:
            try:
                raw.decode(candidate)
                return candidate
            except UnicodeDecodeError:
                pass
    return "latin-1"  # decodes any byte sequence


def _check_header(header: list[str], path: str) -> list[str]:
    seen = set()
    for name in header:
        if name in seen:
            raise TextTableError(
                f"duplicate column name {name!r} in the header",
                path=path,
                line=1,
                fix="give every column a distinct name",
            )
        seen.add(name)
    return header


def _columnar(path, fmt, header, rows, lines) -> _RawTable:
    columns = list(zip(*rows)) if rows else [()] * len(header)
    cells = {name: pd.Series([v if v != "" else None for v in col], dtype="str") for name, col in zip(header, columns)}
    return _RawTable(path, fmt, header, cells, np.asarray(lines, dtype=np.int64))


_CSV_QUOTE_NEIGHBOURS = np.array([ord('"'), ord(","), ord("\n"), ord("\r")], dtype=np.uint8)


def _record_bounds(b: np.ndarray, fmt: str):
    """Start and end offsets of the records of a CSV/TSV byte buffer, and whether a quoted CSV
    field spans lines; None when the quoting is not plain RFC 4180 (the exact parser decides)."""
    newlines = np.flatnonzero(b == ord("\n"))
    separators, multiline = newlines, False
    if fmt == "csv":
        quotes = np.flatnonzero(b == ord('"'))
        if len(quotes) % 2:
            return None  # an unterminated quote
        if len(quotes):
            # Counting quotes from the start, odd ones open a field (or are the second of a doubled
            # quote) and must follow a separator or a quote; even ones close it (or are the first of
            # a doubled quote) and must precede one. Anything else is a quote inside an unquoted field
            # or text after a closing quote: left to the exact parser and its line-numbered error.
            opening, closing = quotes[0::2], quotes[1::2]
            before = np.where(opening > 0, b[np.maximum(opening - 1, 0)], ord("\n"))
            after = np.where(closing + 1 < len(b), b[np.minimum(closing + 1, len(b) - 1)], ord("\n"))
            if not (np.isin(before, _CSV_QUOTE_NEIGHBOURS[:3]).all() and np.isin(after, _CSV_QUOTE_NEIGHBOURS).all()):
                return None
            inside = (np.searchsorted(quotes, newlines) % 2).astype(bool)
            separators, multiline = newlines[~inside], bool(inside.any())
    starts = np.concatenate([[0], separators + 1])
    ends = np.concatenate([separators, [len(b)]])
    return starts, ends, newlines, multiline


def _fast_delimited(data: bytes, path: str, fmt: str) -> _RawTable | None:
    """CSV/TSV through pyarrow's multithreaded reader, every column as text.

    Record boundaries and source lines come from a vectorised scan of the bytes. Returns None,
    leaving the file to the exact line-by-line parser (and its line-numbered errors), whenever
    the two could disagree: unusual quoting, rows with the wrong number of fields, blank lines
    that hold spaces, one-column tables, a lone carriage return.
    """
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return None  # a lone carriage return: the exact parser counts it as a line break
    if fmt == "tsv" and not data.startswith((b"\n", b"\r\n")):
        table = _fast_tsv_lines(data, path)
        if table is not None:
            return table
    b = np.frombuffer(data, dtype=np.uint8)
    bounds = _record_bounds(b, fmt)
    if bounds is None:
        return None
    starts, ends, newlines, multiline = bounds
    length = ends - starts
    first = np.where(starts < len(b), b[np.minimum(starts, max(len(b) - 1, 0))], 0) if len(b) else starts * 0
    blank = (length == 0) | ((length == 1) & (first == ord("\r")))
    records = np.flatnonzero(~blank)
    if len(records) == 0:
        return None
    head = int(records[0])
    try:
        header_text = data[starts[head] : ends[head]].decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError:
        return None
    if fmt == "tsv":
        header = header_text.split("\t")
    else:
        header = next(csv.reader(io.StringIO(header_text, newline="")), [])
    header = _check_header(header, path)
    if len(header) < 2:
        return None
    rows = records[1:]
    if head == 0 and len(rows) == len(starts) - 1 - int(length[-1] == 0) and not multiline:
        lines = np.arange(2, len(rows) + 2)  # one record per line, no blank line
    else:
        lines = np.searchsorted(newlines, starts[rows]) + 1
    if len(rows) == 0:
        return _RawTable(path, fmt, header, {h: pd.Series([], dtype="str") for h in header}, lines)
    return _arrow_table(data, int(starts[rows[0]]), path, fmt, header, lines, multiline)


def _fast_tsv_lines(data: bytes, path: str) -> _RawTable | None:
    """:func:`_fast_delimited` for a TSV with one record per line (the header is line 1, record k line
    k+1), without a byte scan; None when that does not hold (pyarrow skips blank lines, so its row
    count then falls short) or the table needs the exact parser."""
    end = data.find(b"\n")
    end = len(data) if end < 0 else end
    try:
        header = _check_header(data[:end].decode("utf-8").removesuffix("\r").split("\t"), path)
    except UnicodeDecodeError:
        return None
    if len(header) < 2:
        return None
    n_rows = data.count(b"\n") - (1 if data.endswith(b"\n") else 0)
    lines = np.arange(2, n_rows + 2)
    if n_rows == 0:
        return _RawTable(path, "tsv", header, {h: pd.Series([], dtype="str") for h in header}, lines)
    return _arrow_table(data, end + 1, path, "tsv", header, lines, False)


def _arrow_table(
    data: bytes, offset: int, path: str, fmt: str, header: list[str], lines: np.ndarray, multiline: bool
) -> _RawTable | None:
    """The records from byte ``offset`` on, read by pyarrow as text columns; None when pyarrow
    disagrees with the scan (row count, field count) or the TSV holds rows of blanks."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    body = pa.py_buffer(memoryview(data)[offset:])
    parse = (
        pa_csv.ParseOptions(delimiter="\t", quote_char=False, double_quote=False, escape_char=False)
        if fmt == "tsv"
        else pa_csv.ParseOptions(newlines_in_values=multiline)
    )
    try:
        table = pa_csv.read_csv(
            pa.BufferReader(body),
            parse_options=parse,
            read_options=pa_csv.ReadOptions(column_names=header),
            convert_options=pa_csv.ConvertOptions(
                column_types={h: pa.string() for h in header},
                strings_can_be_null=True,
                quoted_strings_can_be_null=True,
                null_values=[""],
            ),
        )
    except pa.ArrowInvalid:
        return None
    if table.num_rows != len(lines):
        return None
    frame = table.to_pandas()
    cells = {h: frame[h] for h in header}
    if fmt == "tsv":  # the exact parser skips lines of tabs and spaces only; pyarrow keeps them as rows
        blank_row = _empty_text(cells[header[0]]).copy()
        for h in header[1:]:
            if not blank_row.any():
                break
            blank_row[blank_row] = _empty_text(cells[h][blank_row])
        if blank_row.any():
            return None
    return _RawTable(path, fmt, header, cells, lines.astype(np.int64))


def _parse_tsv(text: str, path: str) -> _RawTable:
    header, rows, lines = None, [], []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip():
            continue
        fields = line.split("\t")
        if header is None:
            header = _check_header(fields, path)
            continue
        if len(fields) != len(header):
            raise TextTableError(
                f"row has {len(fields)} tab-separated fields, the header has {len(header)}",
                path=path,
                line=lineno,
                fix="TSV text cannot contain tabs or newlines; clean it or use CSV/JSONL",
            )
        rows.append(fields)
        lines.append(lineno)
    return _columnar(path, "tsv", header or [], rows, lines)


def _parse_csv(text: str, path: str) -> _RawTable:
    header, rows, lines = None, [], []
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    old_limit = csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # long document bodies
    try:
        last = 0
        for fields in reader:
            lineno, last = last + 1, reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            if header is None:
                header = _check_header(fields, path)
                continue
            if len(fields) != len(header):
                raise TextTableError(
                    f"row has {len(fields)} comma-separated fields, the header has {len(header)}",
                    path=path,
                    line=lineno,
                    fix="quote fields that contain commas, quotes or newlines",
                )
            rows.append(fields)
            lines.append(lineno)
    except csv.Error as exc:
        raise TextTableError(
            f"malformed CSV ({exc})",
            path=path,
            line=reader.line_num,
            fix="quote fields that contain commas, quotes or newlines and double inner quotes",
        ) from None
    finally:
        csv.field_size_limit(old_limit)
    return _columnar(path, "csv", header or [], rows, lines)


def _cell(value, *, path, line, column):
    """A JSON / Parquet value as str or None (missing)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return None if math.isnan(value) else repr(value)
    if isinstance(value, (dict, list, tuple)):
        raise TextTableError(
            f"column {column!r} holds a nested value ({type(value).__name__})",
            path=path,
            line=line,
            fix="store text, ids and labels as plain strings or numbers",
        )
    return str(value)


def _from_records(path, fmt, records, lines) -> _RawTable:
    columns: dict[str, None] = {}
    for rec in records:
        columns.update(dict.fromkeys(rec))
    cells = {
        c: pd.Series([_cell(rec.get(c), path=path, line=ln, column=c) for rec, ln in zip(records, lines)], dtype="str")
        for c in columns
    }
    return _RawTable(path, fmt, list(columns), cells, np.asarray(lines, dtype=np.int64))


def json_object(line: str, path, lineno: int) -> dict:
    """One line of a JSON-lines file as the object it must hold (else a one-line error naming the line)."""
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TextTableError(
            f"invalid JSON ({exc.msg} at column {exc.colno})",
            path=path,
            line=lineno,
            fix="write one JSON object per line",
        ) from None
    if not isinstance(rec, dict):
        raise TextTableError(
            f"expected a JSON object, found {type(rec).__name__}",
            path=path,
            line=lineno,
            fix="write one JSON object per line",
        )
    return rec


def _parse_jsonl(text: str, path: str) -> _RawTable:
    records, lines = [], []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        records.append(json_object(line, path, lineno))
        lines.append(lineno)
    return _from_records(path, "jsonl", records, lines)


def _read_parquet(path) -> _RawTable:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with open_input(path) as fh:
            table = pq.read_table(fh)
    except (pa.ArrowInvalid, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise TextTableError(
            f"not a readable Parquet file ({exc})", path=path, fix="check the file, or pass the right format"
        ) from None
    path = str(path)
    for name, column in zip(table.column_names, table.columns):
        if pa.types.is_nested(column.type):
            row = (
                int(np.flatnonzero(column.is_valid().to_numpy(zero_copy_only=False))[0]) + 1
                if column.null_count < len(column)
                else 1
            )
            raise TextTableError(
                f"column {name!r} holds a nested value ({column.type})",
                path=path,
                line=row,
                fix="store text, ids and labels as plain strings or numbers",
            )
    frame = table.to_pandas(ignore_metadata=True)
    lines = np.arange(1, table.num_rows + 1, dtype=np.int64)
    return _RawTable(path, "parquet", list(table.column_names), {c: frame[c] for c in table.column_names}, lines)


# ---------------------------------------------------------------------------------------------
# Column checks shared by the three readers.


def _require(table: _RawTable, wanted: dict[str, str], how, param=None) -> None:
    """Every ``role -> column`` in ``wanted`` exists; ``how(role)`` says how to map another column (through the
    Python parameter ``param(role)``, see :func:`ltrfeat.core.errors.cli_fixes`)."""
    for role, column in wanted.items():
        if column not in table.cells:
            found = ", ".join(repr(c) for c in table.columns)
            raise TextTableError(
                f"no column {column!r} for the {role} (columns found: {found})",
                path=table.path,
                line=table.header_line,
                fix=how(role),
                param=None if param is None else param(role),
                role=role,
            )


def _ids(table: _RawTable, column: str, what: str, fix: str) -> pd.Series:
    values = table.text(column).str.strip()
    empty = np.flatnonzero((values.isna() | (values == "")).to_numpy(dtype=bool))
    if len(empty):
        raise TextTableError(
            f"{len(empty)} rows have an empty {what} (lines {line_list(table.lines[empty])})",
            path=table.path,
            line=int(table.lines[empty[0]]),
            fix=fix,
        )
    return values


def _empty_text(values: pd.Series) -> np.ndarray:
    """Rows whose text is missing, empty or only whitespace."""
    return (values.isna() | (values.str.strip() == "")).to_numpy(dtype=bool)


def _missing_mask(table: _RawTable, columns: list[str], *, missing: str) -> np.ndarray:
    """Rows to keep; reports rows whose text is empty in any of ``columns`` as ``missing`` says
    (``"keep"`` turns those cells into ``""`` in ``table``)."""
    if missing not in MISSING_TEXT_POLICIES:
        raise TextTableError(
            f"unknown missing-text policy {missing!r}", fix=f"use one of {', '.join(MISSING_TEXT_POLICIES)}"
        )
    bad = np.zeros(len(table), dtype=bool)
    per_column = []
    for col in columns:
        empty = _empty_text(table.text(col))
        if empty.any():
            per_column.append(f"{int(empty.sum())} in {col!r}")
        bad |= empty
    if not bad.any():
        return ~bad
    where = table.lines[bad]
    summary = f"{int(bad.sum())} rows have empty or missing text ({'; '.join(per_column)}; lines {line_list(where)})"
    if missing == "error":
        raise TextTableError(
            summary,
            path=table.path,
            line=int(where[0]),
            fix="fill in the text, or choose missing='drop' to skip such rows or 'keep' to keep empty text",
            param="missing",
        )
    action = "dropped" if missing == "drop" else "kept with empty text"
    warnings.warn(f"{table.path}: {summary}: {action}", TextTableWarning, stacklevel=3)
    if missing == "keep":
        for col in columns:
            table.cells[col] = table.text(col).fillna("")
        return np.ones(len(table), dtype=bool)
    return ~bad


def _frame(table: _RawTable, columns: dict[str, pd.Series], keep: np.ndarray) -> pd.DataFrame:
    everything = bool(keep.all())
    index = pd.Index(table.lines if everything else table.lines[keep], name="line")
    data = {
        name: pd.Series(values.array if everything else values.array[keep], index=index, copy=False)
        for name, values in columns.items()
    }
    df = pd.DataFrame(data, index=index)
    df.attrs["source"] = table.path
    return df


def _lines_of(df: pd.DataFrame) -> np.ndarray:
    """Source lines of a frame from the readers (index ``line``), else 1-based row numbers."""
    return df.index.to_numpy() if df.index.name == "line" else np.arange(1, len(df) + 1)


def _duplicate_positions(keys: pd.Series | pd.DataFrame) -> np.ndarray | None:
    """Positions of all rows sharing the first duplicated key, or None when keys are unique."""
    if isinstance(keys, pd.DataFrame):  # one int64 key per row: hashing ints beats hashing string pairs
        combined = np.zeros(len(keys), dtype=np.int64)
        for column in keys.columns:
            codes, uniques = pd.factorize(keys[column])
            combined = combined * (len(uniques) + 1) + codes + 1
        keys_ = pd.Series(combined)
    else:
        keys_ = keys
    if keys_.is_unique:  # hashes once; positions are only needed for the error
        return None
    dup = keys_.duplicated(keep=False).to_numpy()
    if not dup.any():
        return None
    first = keys.iloc[np.flatnonzero(dup)[0]]
    same = (keys == first).all(axis=1) if isinstance(keys, pd.DataFrame) else keys == first
    return np.flatnonzero(same.to_numpy())


def _check_unique(df: pd.DataFrame, key: list[str], what: str, path, fix: str) -> None:
    keys = df[key] if len(key) > 1 else df[key[0]]
    pos = _duplicate_positions(keys)
    if pos is not None:
        lines = np.sort(_lines_of(df)[pos])
        value = ", ".join(f"{k} {df[k].iloc[pos[0]]!r}" for k in key)
        raise TextTableError(
            f"duplicate {what} ({value}) at lines {line_list(lines)} "
            f"({int(keys.duplicated().sum())} duplicate rows in all)",
            path=path,
            line=int(lines[1]),
            fix=fix,
        )


def _first_texts(df: pd.DataFrame, key: str, columns: list[str], what: str, *, conflicts: str, path) -> pd.DataFrame:
    """One row per ``key`` (first appearance) with its ``columns``; rows sharing a key must agree
    on the text unless ``conflicts="first"``, which keeps the first text and warns."""
    table = df[[key, *columns]]
    distinct = table.reset_index(drop=True).drop_duplicates()
    clash = distinct[key].duplicated(keep=False).to_numpy()
    if clash.any():
        ids = distinct[key].to_numpy()[clash]
        value = ids[0]
        lines = np.sort(_lines_of(df)[(df[key] == value).to_numpy()])
        summary = (
            f"{len(set(ids.tolist()))} {key}s name different {what} texts on different rows "
            f"(e.g. {key} {value!r} at lines {line_list(lines)})"
        )
        if conflicts == "error":
            raise TextTableError(
                summary,
                path=path,
                line=int(lines[0]),
                fix="fix the texts or ids, choose conflicts='first' to keep each id's first text, "
                "or leave the id column unmapped to derive ids from the text",
                param="conflicts",
            )
        warnings.warn(f"{path}: {summary}: kept the first text of each", TextTableWarning, stacklevel=3)
    return table[~table[key].duplicated()]


# ---------------------------------------------------------------------------------------------
# Public readers.


def read_queries(
    path,
    *,
    qid_col: str = "qid",
    text_col: str = "query",
    encoding: str = "utf-8",
    fmt: str | None = None,
    missing: str = "error",
) -> pd.DataFrame:
    """Read a query table into columns exactly ``["qid", "query"]`` (``qid`` unique strings).

    Parameters
    ----------
    path : table file (TSV/CSV/JSONL/Parquet, see :func:`table_format`).
    qid_col, text_col : file columns holding the query id and the query text.
    encoding : text encoding of TSV/CSV/JSONL files; a decoding failure names the line
        and byte offset and suggests the likely encoding.
    fmt : format override (``tsv``, ``csv``, ``jsonl``, ``parquet``).
    missing : rows with empty query text: ``"error"`` (default), ``"drop"`` or ``"keep"``
        (as empty text); dropping and keeping emit a :class:`TextTableWarning`.
    """
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    _require(
        table,
        {"qid": qid_col, "query": text_col},
        lambda role: f"pick the {role} column with {'qid_col' if role == 'qid' else 'text_col'}=<column>",
        lambda role: "qid_col" if role == "qid" else "text_col",
    )
    qids = _ids(table, qid_col, "qid", "every query needs an id")
    keep = _missing_mask(table, [text_col], missing=missing)
    df = _frame(table, {"qid": qids, "query": table.text(text_col)}, keep)
    _check_unique(df, ["qid"], "qid", table.path, "give each query one row with a unique id")
    return df


def read_docs(
    path,
    *,
    docid_col: str = "docid",
    fields=None,
    encoding: str = "utf-8",
    fmt: str | None = None,
    missing: str = "error",
) -> pd.DataFrame:
    """Read a document table into columns ``["docid", <fields...>]`` (``docid`` unique strings).

    Parameters
    ----------
    path, encoding, fmt : as in :func:`read_queries`.
    docid_col : file column holding the document id.
    fields : text fields to keep: ``None`` (every other column), a list of column names, a
        comma-separated string, or a mapping ``{output_name: file_column}`` to rename.
    missing : rows with an empty text in any kept field: ``"error"`` (default), ``"drop"``
        or ``"keep"`` (as empty text), the last two with a :class:`TextTableWarning`.
    """
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    _require(
        table, {"docid": docid_col}, lambda role: "pick the id column with docid_col=<column>", lambda r: "docid_col"
    )
    if fields is None:
        mapping = {c: c for c in table.columns if c != docid_col}
    elif isinstance(fields, dict):
        mapping = dict(fields)
    else:
        names = [f.strip() for f in fields.split(",")] if isinstance(fields, str) else list(fields)
        mapping = {f: f for f in names if f}
    if not mapping:
        raise TextTableError(
            "no text fields to read",
            path=table.path,
            line=table.header_line,
            fix="add at least one text column besides the docid",
        )
    if "docid" in mapping:
        raise TextTableError("a text field cannot be named 'docid'", path=table.path, fix="rename that field")
    _require(
        table, mapping, lambda role: f"list existing columns in fields (field {role!r} is missing)", lambda r: "fields"
    )
    docids = _ids(table, docid_col, "docid", "every document needs an id")
    keep = _missing_mask(table, list(mapping.values()), missing=missing)
    df = _frame(table, {"docid": docids, **{out: table.text(col) for out, col in mapping.items()}}, keep)
    _check_unique(df, ["docid"], "docid", table.path, "give each document one row with a unique id")
    return df


def parse_column_mapping(spec: str) -> dict[str, str]:
    """Parse ``"query=search_term,doc=product_title"`` into ``{"query": "search_term", ...}``.

    Keys are canonical names (``qid query docid doc label``) or extra text-field names;
    values are file columns. Whitespace around names is ignored.
    """
    mapping: dict[str, str] = {}
    if spec.strip() and not spec.replace(",", "").strip():
        raise TextTableError(
            f"column mapping {spec!r} names no column",
            fix="write NAME=COLUMN pairs separated by commas, e.g. query=search_term,doc=title",
        )
    for item in spec.split(","):
        if not item.strip():
            continue
        key, sep, column = item.partition("=")
        key, column = key.strip(), column.strip()
        if not sep or not key or not column:
            raise TextTableError(
                f"bad column mapping item {item.strip()!r}",
                fix="write NAME=COLUMN pairs separated by commas, e.g. query=search_term,doc=title",
            )
        if key in mapping:
            raise TextTableError(f"column mapping names {key!r} twice", fix="map each name once")
        mapping[key] = column
    return mapping


def derive_id(prefix: str, *texts: str) -> str:
    """Deterministic id from text: ``prefix + sha1(texts joined by U+001F)[:12]``.

    The same text gives the same id in every file, so train and test tables agree.
    """
    return prefix + hashlib.sha1("\x1f".join(texts).encode("utf-8")).hexdigest()[:12]


def read_judged_pairs(
    path,
    *,
    columns=None,
    encoding: str = "utf-8",
    fmt: str | None = None,
    label_map: str = "none",
    missing: str = "error",
    duplicates: str = "error",
) -> pd.DataFrame:
    """Read judged (query, document, label) pairs.

    Returns columns ``qid, query, docid, doc, <extra text fields...>, label`` (``label``
    float64 after ``label_map``), index ``line``.

    Parameters
    ----------
    path, encoding, fmt : as in :func:`read_queries`.
    columns : mapping canonical name -> file column (or its string form for
        :func:`parse_column_mapping`), e.g. ``{"query": "search_term", "doc":
        "product_title", "docid": "product_uid", "label": "relevance"}``. Unmapped
        canonical names use the column of the same name. Extra keys name additional
        document text fields (``body=product_description``), kept under that name.
        Other file columns are ignored.
    label_map : how raw labels become integer grades, see :func:`map_labels`.
    missing : rows with empty query or document text: ``"error"`` (default), ``"drop"``
        or ``"keep"``, the last two with a :class:`TextTableWarning`.

    When ``qid`` (``docid``) is neither mapped nor a column, it is derived from the query
    (document) text with :func:`derive_id` (``q``/``d`` prefixes; a document's id hashes
    all its text fields). A (qid, docid) pair judged on several rows is resolved by
    ``duplicates`` (see :mod:`ltrfeat.core.duplicates`; default: an error), and the figures
    are kept in ``attrs["duplicates"]``; an id that names different texts on different rows is
    reported by :func:`pairs_to_ranking`.
    """
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    mapping = parse_column_mapping(columns) if isinstance(columns, str) else dict(columns or {})
    for name in PAIR_COLUMNS:
        if name not in mapping and (name not in ("qid", "docid") or name in table.cells):
            mapping[name] = name
    _require(
        table,
        mapping,
        lambda role: f"map it with columns={{'{role}': <column>}} (string form '{role}=<column>')",
        lambda role: "columns",
    )
    doc_fields = ["doc", *[k for k in mapping if k not in PAIR_COLUMNS]]
    keep = _missing_mask(table, [mapping["query"], *[mapping[f] for f in doc_fields]], missing=missing)
    labels = _parse_labels(table, mapping["label"], keep)
    id_fix = "fill in every id, or leave the id column unmapped to derive ids from the text"
    out: dict[str, pd.Series] = {}
    queries = table.text(mapping["query"])
    docs = [table.text(mapping[f]) for f in doc_fields]
    out["qid"] = _ids(table, mapping["qid"], "qid", id_fix) if "qid" in mapping else _derived_ids("q", [queries])
    out["query"] = queries
    out["docid"] = _ids(table, mapping["docid"], "docid", id_fix) if "docid" in mapping else _derived_ids("d", docs)
    out.update(zip(doc_fields, docs))
    df = _frame(table, out, keep)
    df["label"] = map_labels(labels, label_map, path=table.path, lines=table.lines[keep])
    df, figures = resolve_duplicates(df, policy=duplicates, path=table.path)
    df.attrs["duplicates"] = figures
    return df


def _derived_ids(prefix: str, texts: list[pd.Series]) -> pd.Series:
    """:func:`derive_id` of every row's texts (missing text as ""), hashing each distinct text once."""
    joined = texts[0].fillna("")
    if len(texts) > 1:
        joined = joined.str.cat([t.fillna("") for t in texts[1:]], sep="\x1f")
    codes, uniques = pd.factorize(joined)
    sha1 = hashlib.sha1  # derive_id inlined: this loop runs once per distinct text
    hashed = np.array([prefix + sha1(u.encode("utf-8")).hexdigest()[:12] for u in uniques.tolist()], dtype=object)
    return pd.Series(hashed[codes], dtype="str")


def _parse_labels(table: _RawTable, column: str, keep: np.ndarray) -> np.ndarray:
    """Labels of the kept rows as float64; empty, non-numeric, NaN or infinite labels are errors."""
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = table.cells[column][keep] if not keep.all() else table.cells[column]
    lines = table.lines[keep]
    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        values = raw.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        try:  # vectorised; any unparsable cell sends every row through pandas to name it
            values = pc.cast(pc.utf8_trim_whitespace(pa.array(raw, type=pa.string())), pa.float64()).to_numpy(
                zero_copy_only=False
            )
            values = np.where(np.isnan(values), np.nan, values)  # nulls come back as NaN
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
            values = pd.to_numeric(pd.Series(raw.to_numpy(dtype=object), dtype=object), errors="coerce").to_numpy(
                dtype=np.float64
            )
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        shown = raw.iloc[bad[0]]
        shown = None if (not isinstance(shown, str) and pd.isna(shown)) else shown
        raise TextTableError(
            f"label {shown!r} is not a finite number ({len(bad)} such rows, lines {line_list(lines[bad])})",
            path=table.path,
            line=int(lines[bad[0]]),
            fix="every judged pair needs a numeric label",
        )
    return values


# ---------------------------------------------------------------------------------------------
# Labels.


def map_labels(values, spec: str = "none", *, path=None, lines=None) -> np.ndarray:
    """Map raw relevance labels to integer grades (returned as float64).

    ``spec`` is one of:

    * ``"none"``: labels must already be integers (e.g. 0..4); any other value is an
      error naming the first bad row and suggesting a map.
    * ``"round"``: round half up, ``floor(r + 0.5)`` (2.5 -> 3, 2.33 -> 2).
    * ``"linear:LO:HI:GRADES"``: ``round((r - LO) / (HI - LO) * (GRADES - 1))``, half up,
      mapping ``[LO, HI]`` onto ``0 .. GRADES-1``; values outside ``[LO, HI]`` are an
      error. ``linear:1:3:7`` maps the Home Depot averages 1, 1.33, ..., 3 onto 0..6.
    * ``"threshold:T1,T2,..."``: grade = number of thresholds ``<= r`` (strictly
      increasing thresholds); ``threshold:1.5,2.5`` maps 1.33 -> 0, 2 -> 1, 2.67 -> 2.

    ``path`` and ``lines`` (source line per value) only improve error messages.
    """
    values = np.asarray(values, dtype=np.float64)
    lines = np.arange(1, len(values) + 1) if lines is None else np.asarray(lines)
    where = "line" if path is not None else "row"

    def fail(mask, problem, fix):
        bad = np.flatnonzero(mask)
        raise TextTableError(
            f"label {values[bad[0]]:g} {problem} ({len(bad)} such rows, {where}s {line_list(lines[bad])})",
            path=path,
            line=int(lines[bad[0]]),
            fix=fix,
        )

    if not np.isfinite(values).all():
        fail(~np.isfinite(values), "is not a finite number", "every label must be a number")
    kind, _, arg = str(spec).strip().partition(":")
    tiny = 1e-9  # absorbs float noise such as 1.33 written for 4/3
    if kind == "none" and not arg:
        fractional = np.abs(values - np.rint(values)) > tiny
        if fractional.any():
            fail(
                fractional,
                "is not an integer grade",
                "map fractional labels explicitly with a label map: 'round', 'linear:LO:HI:GRADES' "
                "(e.g. linear:1:3:7 maps 1..3 onto 0..6) or 'threshold:T1,T2,...'",
            )
        return np.rint(values)
    if kind == "round" and not arg:
        return np.floor(values + 0.5 + tiny)
    if kind == "linear":
        try:
            lo, hi, grades = (float(p) for p in arg.split(":"))
        except ValueError:
            lo = hi = grades = math.nan
        if not (lo < hi and grades >= 2 and grades == int(grades)):
            raise TextTableError(
                f"bad label map {spec!r}",
                fix="write linear:LO:HI:GRADES with LO < HI and an integer GRADES >= 2, e.g. linear:1:3:7",
            )
        outside = (values < lo - tiny) | (values > hi + tiny)
        if outside.any():
            fail(outside, f"is outside the linear map range [{lo:g}, {hi:g}]", "widen LO:HI or fix the labels")
        scaled = (values - lo) / (hi - lo) * (grades - 1)
        return np.clip(np.floor(scaled + 0.5 + tiny), 0, grades - 1)
    if kind == "threshold":
        try:
            thresholds = np.array([float(t) for t in arg.split(",")], dtype=np.float64)
        except ValueError:
            thresholds = np.array([math.nan])
        if not len(thresholds) or not np.isfinite(thresholds).all() or (np.diff(thresholds) <= 0).any():
            raise TextTableError(
                f"bad label map {spec!r}",
                fix="write threshold:T1,T2,... with strictly increasing numbers, e.g. threshold:1.5,2.5",
            )
        return np.searchsorted(thresholds, values, side="right").astype(np.float64)
    raise TextTableError(f"unknown label map {spec!r}", fix=f"use {_LABEL_MAP_FORMS}")


# ---------------------------------------------------------------------------------------------
# Judged pairs -> ranking set + text tables.


def pairs_to_ranking(
    pairs: pd.DataFrame,
    *,
    fields=("doc",),
    conflicts: str = "error",
) -> tuple[RankingSet, pd.DataFrame, pd.DataFrame]:
    """Split judged pairs into a feature-less ranking set and its query and document tables.

    Parameters
    ----------
    pairs : judged pairs as from :func:`read_judged_pairs`.
    fields : document text fields to put in the document table.
    conflicts : an id whose text differs between rows (real data has them, e.g. a product
        retitled): ``"error"`` (default) or ``"first"`` (keep its first text, with a
        :class:`TextTableWarning`).

    Returns ``(ranking, queries, docs)``: ``ranking`` has ``X`` of shape ``(n, 0)``, the
    pairs' qid/docid/label and comments ``docid = <docid>``, rows grouped by query
    (queries in order of first appearance, rows of a query in input order); ``queries``
    has columns ``qid, query`` and ``docs`` ``docid, <fields...>``, one row per id in
    order of first appearance (index: the line of that first appearance). Ids must not
    contain whitespace, which a LETOR file could not carry.
    """
    if conflicts not in CONFLICTS:
        raise TextTableError(f"unknown conflicts policy {conflicts!r}", fix=f"use one of {', '.join(CONFLICTS)}")
    fields = list(fields)
    path = pairs.attrs.get("source")
    needed = ["qid", "query", "docid", "label", *fields]
    absent = [c for c in needed if c not in pairs.columns]
    if absent:
        raise TextTableError(
            f"judged pairs lack columns {absent} (found {list(pairs.columns)})",
            path=path,
            fix="read them with read_judged_pairs or add the columns",
        )
    if len(pairs) == 0:
        raise TextTableError("no judged pairs", path=path, fix="check the input table")
    for key, pattern, what in (("qid", r"[\s#]", "whitespace or '#'"), ("docid", r"\s", "whitespace")):
        spaced = pairs[key].astype(str).str.contains(pattern, regex=True).to_numpy()
        if spaced.any():
            bad = _lines_of(pairs)[spaced]
            raise TextTableError(
                f"{key} {pairs[key].to_numpy()[spaced][0]!r} contains {what}, which a LETOR "
                f"file cannot carry (lines {line_list(bad)})",
                path=path,
                line=int(bad[0]),
                fix=f"use ids without {what}, or leave the id column unmapped to derive ids",
            )
    resolve_duplicates(pairs, policy="error", path=path)
    codes, _ = pd.factorize(pairs["qid"].to_numpy(dtype=object))
    grouped = pairs.iloc[np.argsort(codes, kind="stable")]
    queries = _first_texts(grouped, "qid", ["query"], "query", conflicts=conflicts, path=path)
    docs = _first_texts(grouped, "docid", fields, "document", conflicts=conflicts, path=path)
    docid = grouped["docid"].to_numpy(dtype=object)
    ranking = RankingSet(
        qid=grouped["qid"].to_numpy(dtype=object),
        label=grouped["label"].to_numpy(dtype=np.float64),
        X=np.zeros((len(grouped), 0), dtype=np.float32),
        feature_map=FeatureMap(()),
        docid=docid,
        comment=np.array([f"docid = {d}" for d in docid], dtype=object),
    )
    return ranking, queries, docs


def read_table_columns(path, columns, *, encoding: str = "utf-8", fmt: str | None = None) -> pd.DataFrame:
    """The named ``columns`` of a table file (any format :func:`table_format` knows) as text, indexed by source line
    (``line``); a one-line error naming the file when a column is missing or the table is empty."""
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    _require(table, {c: c for c in columns}, lambda role: f"add a {role!r} column")
    return _frame(table, {c: table.text(c) for c in columns}, np.ones(len(table), dtype=bool))


# ---------------------------------------------------------------------------------------------
# Writing.


_WRITE_ROWS = 100_000  # rows turned into text at a time: memory for the cells of a slice, not of the table


def write_table(df: pd.DataFrame, path, *, fmt: str | None = None) -> None:
    """Write ``df`` (its columns, not its index) to ``path`` atomically, format by extension.

    Missing values are written as empty fields (CSV/TSV) or ``null`` (JSONL/Parquet);
    floats round-trip exactly. TSV cannot hold a tab, newline or carriage return in any
    cell or column name: such a frame is refused with the offending column and line.
    Rows are turned into text a slice at a time (a refused cell leaves no file behind).
    """
    fmt = table_format(path, fmt)
    if fmt == "parquet":
        with atomic_output(path, binary=True) as fh:
            df.to_parquet(fh, index=False)
        return
    columns = [str(c) for c in df.columns]
    slices = [df.iloc[start : start + _WRITE_ROWS] for start in range(0, len(df), _WRITE_ROWS)]
    if fmt == "tsv":
        _refuse_for_tsv(columns, [], path)
    # Python's csv writer leaves a lone "\r" unquoted under minimal quoting; quote all then.
    has_cr = fmt == "csv" and (
        any("\r" in c for c in columns)
        or any(
            df[c].astype("str").str.contains("\r", regex=False).any()
            for c in df.columns
            if not pd.api.types.is_numeric_dtype(df[c].dtype)
        )
    )
    with atomic_output(path) as fh:
        writer = csv.writer(fh, lineterminator="\n", quoting=csv.QUOTE_ALL if has_cr else csv.QUOTE_MINIMAL)
        if fmt == "tsv":
            fh.write("\t".join(columns) + "\n")
        elif fmt == "csv":
            writer.writerow(columns)
        for i, part in enumerate(slices):
            if fmt == "jsonl":
                for row in zip(*[_json_cells(part[c]) for c in part.columns]):
                    fh.write(json.dumps(dict(zip(columns, row)), ensure_ascii=False, allow_nan=False))
                    fh.write("\n")
                continue
            cells = [_text_cells(part[c]) for c in part.columns]
            if fmt == "tsv":
                _refuse_for_tsv(columns, cells, path, first_line=2 + i * _WRITE_ROWS)
                fh.writelines("\t".join(row) + "\n" for row in zip(*cells))
            else:
                writer.writerows(zip(*cells))


def _text_cells(series: pd.Series) -> list[str]:
    out = []
    for v in series.tolist():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append("")
        elif isinstance(v, float):
            out.append(repr(v))
        else:
            out.append(str(v))
    return out


def _json_cells(series: pd.Series) -> list:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in series.tolist()]


def _refuse_for_tsv(columns: list[str], cells: list[list[str]], path, *, first_line: int = 2) -> None:
    names = {"\t": "a tab", "\n": "a newline", "\r": "a carriage return"}
    for name in columns:
        for ch in _TSV_FORBIDDEN:
            if ch in name:
                raise TextTableError(
                    f"column name {name!r} contains {names[ch]}, which TSV cannot hold",
                    path=path,
                    line=1,
                    fix="rename the column",
                )
    for name, col in zip(columns, cells):
        for i, v in enumerate(col):
            for ch in _TSV_FORBIDDEN:
                if ch in v:
                    raise TextTableError(
                        f"column {name!r} contains {names[ch]}, which TSV cannot hold",
                        path=path,
                        line=i + first_line,
                        fix="write .csv, .jsonl or .parquet instead, or clean the text",
                    )
