"""Table files read raw (TSV, CSV, JSONL, Parquet): every cell a str or None, with the source line of each row;
the format from the extension or ``fmt``."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core._text_decoding import _decode, _read_bytes
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.fileio import is_gzip_path, open_input

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


def _empty_text(values: pd.Series) -> np.ndarray:
    """Rows whose text is missing, empty or only whitespace."""
    return (values.isna() | (values.str.strip() == "")).to_numpy(dtype=bool)


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
