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

from .dataset import FeatureMap, RankingSet
from .errors import TextTableError
from .fileio import atomic_output, is_gzip_path, open_input

FORMATS = ("tsv", "csv", "jsonl", "parquet")
_SUFFIX_FORMAT = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                  ".parquet": "parquet", ".pq": "parquet"}
PAIR_COLUMNS = ("qid", "query", "docid", "doc", "label")
MISSING_POLICIES = ("error", "drop", "keep")
_TSV_FORBIDDEN = ("\t", "\n", "\r")
_LABEL_MAP_FORMS = ("'none' (labels already integers), 'round', 'linear:LO:HI:GRADES' (e.g. linear:1:3:7), "
                    "'threshold:T1,T2,...'")


class TextTableWarning(UserWarning):
    """Rows were dropped or texts replaced because the caller chose so (``missing='drop'|'keep'``,
    ``conflicts='first'``); the message says how many and where."""


# ---------------------------------------------------------------------------------------------
# Formats and raw reading: every cell becomes a str or None, with the source line of each row.

def table_format(path, fmt: str | None = None) -> str:
    """The table format of ``path``: ``fmt`` if given, else from the extension (``.gz`` ignored)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise TextTableError(f"unknown table format {fmt!r}", path=path, fix=f"use one of {', '.join(FORMATS)}")
        return fmt
    name = str(path)[:-3] if is_gzip_path(path) else str(path)
    found = _SUFFIX_FORMAT.get(Path(name).suffix.lower())
    if found is None:
        raise TextTableError("cannot tell the table format from the file name", path=path,
                             fix=f"use a .tsv, .csv, .jsonl or .parquet name or pass the format ({', '.join(FORMATS)})")
    if found == "parquet" and is_gzip_path(path):
        raise TextTableError("Parquet files are compressed internally and cannot be .gz", path=path,
                             fix="drop the .gz suffix")
    return found


@dataclasses.dataclass
class _RawTable:
    path: str
    fmt: str
    columns: list[str]
    cells: dict[str, list]  # column -> list of str | None
    lines: np.ndarray  # 1-based source line (row number for Parquet) of each row

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def header_line(self) -> int | None:
        return 1 if self.fmt in ("tsv", "csv") else None


def _read_raw(path, *, encoding: str, fmt: str | None) -> _RawTable:
    fmt = table_format(path, fmt)
    try:
        if fmt == "parquet":
            table = _read_parquet(path)
        else:
            text = _decode(path, encoding)
            reader = {"tsv": _parse_tsv, "csv": _parse_csv, "jsonl": _parse_jsonl}[fmt]
            table = reader(text, str(path))
    except FileNotFoundError:
        raise TextTableError("file not found", path=path, fix="check the path") from None
    except IsADirectoryError:
        raise TextTableError("is a directory, not a table file", path=path, fix="pass a file") from None
    if not table.columns:
        raise TextTableError("file is empty", path=path, fix="write a header and at least one row")
    if len(table) == 0:
        raise TextTableError("table has no data rows", path=path, line=table.header_line,
                             fix="check that the right file was given")
    return table


def _decode(path, encoding: str) -> str:
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise TextTableError(f"unknown encoding {encoding!r}", path=path,
                             fix="use a Python codec name such as utf-8, cp1252 or latin-1") from None
    with open_input(path) as fh:
        raw = fh.read()
    start = len(codecs.BOM_UTF8) if name == "utf-8" and raw.startswith(codecs.BOM_UTF8) else 0
    try:
        text = raw[start:].decode(name)
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = raw.count(b"\n", 0, offset) + 1
        bad = raw[offset:start + exc.end]
        guess = _guess_encoding(raw, failed=name)
        raise TextTableError(
            f"cannot decode byte {bad.hex(' ')} at byte offset {offset} as {encoding}", path=path, line=line,
            fix=f"the file decodes as {guess}: pass encoding={guess!r} (CLI: --encoding {guess})",
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


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
            raise TextTableError(f"duplicate column name {name!r} in the header", path=path, line=1,
                                 fix="give every column a distinct name")
        seen.add(name)
    return header


def _columnar(path, fmt, header, rows, lines) -> _RawTable:
    columns = list(zip(*rows)) if rows else [()] * len(header)
    cells = {name: [v if v != "" else None for v in col] for name, col in zip(header, columns)}
    return _RawTable(path, fmt, header, cells, np.asarray(lines, dtype=np.int64))


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
            raise TextTableError(f"row has {len(fields)} tab-separated fields, the header has {len(header)}",
                                 path=path, line=lineno,
                                 fix="TSV text cannot contain tabs or newlines; clean it or use CSV/JSONL")
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
                raise TextTableError(f"row has {len(fields)} comma-separated fields, the header has {len(header)}",
                                     path=path, line=lineno, fix="quote fields that contain commas, quotes or newlines")
            rows.append(fields)
            lines.append(lineno)
    except csv.Error as exc:
        raise TextTableError(f"malformed CSV ({exc})", path=path, line=reader.line_num,
                             fix="quote fields that contain commas, quotes or newlines and double inner quotes") from None
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
        raise TextTableError(f"column {column!r} holds a nested value ({type(value).__name__})", path=path,
                             line=line, fix="store text, ids and labels as plain strings or numbers")
    return str(value)


def _from_records(path, fmt, records, lines) -> _RawTable:
    columns: dict[str, None] = {}
    for rec in records:
        columns.update(dict.fromkeys(rec))
    cells = {c: [_cell(rec.get(c), path=path, line=ln, column=c) for rec, ln in zip(records, lines)] for c in columns}
    return _RawTable(path, fmt, list(columns), cells, np.asarray(lines, dtype=np.int64))


def _parse_jsonl(text: str, path: str) -> _RawTable:
    records, lines = [], []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TextTableError(f"invalid JSON ({exc.msg} at column {exc.colno})", path=path, line=lineno,
                                 fix="write one JSON object per line") from None
        if not isinstance(rec, dict):
            raise TextTableError(f"expected a JSON object, found {type(rec).__name__}", path=path, line=lineno,
                                 fix="write one JSON object per line")
        records.append(rec)
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
        raise TextTableError(f"not a readable Parquet file ({exc})", path=path,
                             fix="check the file, or pass the right format") from None
    path = str(path)
    lines = np.arange(1, table.num_rows + 1, dtype=np.int64)
    cells = {name: [_cell(v, path=path, line=i + 1, column=name) for i, v in enumerate(table.column(name).to_pylist())]
             for name in table.column_names}
    return _RawTable(path, "parquet", list(table.column_names), cells, lines)


# ---------------------------------------------------------------------------------------------
# Column checks shared by the three readers.

def _line_list(lines, limit: int = 5) -> str:
    shown = ", ".join(str(int(x)) for x in lines[:limit])
    return shown + (", ..." if len(lines) > limit else "")


def _require(table: _RawTable, wanted: dict[str, str], how) -> None:
    """Every ``role -> column`` in ``wanted`` exists; ``how(role)`` says how to map another column."""
    for role, column in wanted.items():
        if column not in table.cells:
            found = ", ".join(repr(c) for c in table.columns)
            raise TextTableError(f"no column {column!r} for the {role} (columns found: {found})",
                                 path=table.path, line=table.header_line, fix=how(role))


def _ids(table: _RawTable, column: str, what: str, fix: str) -> list[str]:
    values = [None if v is None else v.strip() for v in table.cells[column]]
    empty = [i for i, v in enumerate(values) if not v]
    if empty:
        raise TextTableError(f"{len(empty)} rows have an empty {what} (lines {_line_list(table.lines[empty])})",
                             path=table.path, line=int(table.lines[empty[0]]), fix=fix)
    return values


def _missing_mask(table: _RawTable, columns: list[str], *, missing: str) -> np.ndarray:
    """Rows to keep; reports rows whose text is empty in any of ``columns`` as ``missing`` says
    (``"keep"`` turns those cells into ``""`` in ``table``)."""
    if missing not in MISSING_POLICIES:
        raise TextTableError(f"unknown missing-text policy {missing!r}", fix=f"use one of {', '.join(MISSING_POLICIES)}")
    bad = np.zeros(len(table), dtype=bool)
    per_column = []
    for col in columns:
        empty = np.fromiter((v is None or not v.strip() for v in table.cells[col]), dtype=bool, count=len(table))
        if empty.any():
            per_column.append(f"{int(empty.sum())} in {col!r}")
        bad |= empty
    if not bad.any():
        return ~bad
    where = table.lines[bad]
    summary = f"{int(bad.sum())} rows have empty or missing text ({'; '.join(per_column)}; lines {_line_list(where)})"
    if missing == "error":
        raise TextTableError(summary, path=table.path, line=int(where[0]),
                             fix="fill in the text, or choose missing='drop' to skip such rows or 'keep' to keep empty text")
    action = "dropped" if missing == "drop" else "kept with empty text"
    warnings.warn(f"{table.path}: {summary}: {action}", TextTableWarning, stacklevel=3)
    if missing == "keep":
        for col in columns:
            table.cells[col] = ["" if v is None else v for v in table.cells[col]]
        return np.ones(len(table), dtype=bool)
    return ~bad


def _frame(table: _RawTable, columns: dict[str, list], keep: np.ndarray) -> pd.DataFrame:
    keep_idx = np.flatnonzero(keep)
    data = {name: [values[i] for i in keep_idx] if len(keep_idx) < len(table) else list(values)
            for name, values in columns.items()}
    df = pd.DataFrame(data, index=pd.Index(table.lines[keep_idx], name="line"))
    df.attrs["source"] = table.path
    return df


def _lines_of(df: pd.DataFrame) -> np.ndarray:
    """Source lines of a frame from the readers (index ``line``), else 1-based row numbers."""
    return df.index.to_numpy() if df.index.name == "line" else np.arange(1, len(df) + 1)


def _duplicate_positions(keys: pd.Series | pd.DataFrame) -> np.ndarray | None:
    """Positions of all rows sharing the first duplicated key, or None when keys are unique."""
    dup = keys.duplicated(keep=False).to_numpy()
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
        raise TextTableError(f"duplicate {what} ({value}) at lines {_line_list(lines)} "
                             f"({int(keys.duplicated().sum())} duplicate rows in all)", path=path,
                             line=int(lines[1]), fix=fix)


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
        summary = (f"{len(set(ids.tolist()))} {key}s name different {what} texts on different rows "
                   f"(e.g. {key} {value!r} at lines {_line_list(lines)})")
        if conflicts == "error":
            raise TextTableError(summary, path=path, line=int(lines[0]),
                                 fix="fix the texts or ids, choose conflicts='first' to keep each id's first text, "
                                     "or leave the id column unmapped to derive ids from the text")
        warnings.warn(f"{path}: {summary}: kept the first text of each", TextTableWarning, stacklevel=3)
    return table[~table[key].duplicated()]


# ---------------------------------------------------------------------------------------------
# Public readers.

def read_queries(path, *, qid_col: str = "qid", text_col: str = "query", encoding: str = "utf-8",
                 fmt: str | None = None, missing: str = "error") -> pd.DataFrame:
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
    _require(table, {"qid": qid_col, "query": text_col},
             lambda role: f"pick the {role} column with {'qid_col' if role == 'qid' else 'text_col'}=<column>")
    qids = _ids(table, qid_col, "qid", "every query needs an id")
    keep = _missing_mask(table, [text_col], missing=missing)
    df = _frame(table, {"qid": qids, "query": table.cells[text_col]}, keep)
    _check_unique(df, ["qid"], "qid", table.path, "give each query one row with a unique id")
    return df


def read_docs(path, *, docid_col: str = "docid", fields=None, encoding: str = "utf-8",
              fmt: str | None = None, missing: str = "error") -> pd.DataFrame:
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
    _require(table, {"docid": docid_col}, lambda role: "pick the id column with docid_col=<column>")
    if fields is None:
        mapping = {c: c for c in table.columns if c != docid_col}
    elif isinstance(fields, dict):
        mapping = dict(fields)
    else:
        names = [f.strip() for f in fields.split(",")] if isinstance(fields, str) else list(fields)
        mapping = {f: f for f in names if f}
    if not mapping:
        raise TextTableError("no text fields to read", path=table.path, line=table.header_line,
                             fix="add at least one text column besides the docid")
    if "docid" in mapping:
        raise TextTableError("a text field cannot be named 'docid'", path=table.path, fix="rename that field")
    _require(table, mapping, lambda role: f"list existing columns in fields (field {role!r} is missing)")
    docids = _ids(table, docid_col, "docid", "every document needs an id")
    keep = _missing_mask(table, list(mapping.values()), missing=missing)
    df = _frame(table, {"docid": docids, **{out: table.cells[col] for out, col in mapping.items()}}, keep)
    _check_unique(df, ["docid"], "docid", table.path, "give each document one row with a unique id")
    return df


def parse_column_mapping(spec: str) -> dict[str, str]:
    """Parse ``"query=search_term,doc=product_title"`` into ``{"query": "search_term", ...}``.

    Keys are canonical names (``qid query docid doc label``) or extra text-field names;
    values are file columns. Whitespace around names is ignored.
    """
    mapping: dict[str, str] = {}
    if spec.strip() and not spec.replace(",", "").strip():
        raise TextTableError(f"column mapping {spec!r} names no column",
                             fix="write NAME=COLUMN pairs separated by commas, e.g. query=search_term,doc=title")
    for item in spec.split(","):
        if not item.strip():
            continue
        key, sep, column = item.partition("=")
        key, column = key.strip(), column.strip()
        if not sep or not key or not column:
            raise TextTableError(f"bad column mapping item {item.strip()!r}",
                                 fix="write NAME=COLUMN pairs separated by commas, e.g. query=search_term,doc=title")
        if key in mapping:
            raise TextTableError(f"column mapping names {key!r} twice", fix="map each name once")
        mapping[key] = column
    return mapping


def derive_id(prefix: str, *texts: str) -> str:
    """Deterministic id from text: ``prefix + sha1(texts joined by U+001F)[:12]``.

    The same text gives the same id in every file, so train and test tables agree.
    """
    return prefix + hashlib.sha1("\x1f".join(texts).encode("utf-8")).hexdigest()[:12]


def read_judged_pairs(path, *, columns=None, encoding: str = "utf-8", fmt: str | None = None,
                      label_map: str = "none", missing: str = "error") -> pd.DataFrame:
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
    all its text fields). A (qid, docid) pair judged twice is an error; an id that
    names different texts on different rows is reported by :func:`pairs_to_ranking`.
    """
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    mapping = parse_column_mapping(columns) if isinstance(columns, str) else dict(columns or {})
    for name in PAIR_COLUMNS:
        if name not in mapping and (name not in ("qid", "docid") or name in table.cells):
            mapping[name] = name
    _require(table, mapping, lambda role: f"map it with columns={{'{role}': <column>}} (string form '{role}=<column>')")
    doc_fields = ["doc", *[k for k in mapping if k not in PAIR_COLUMNS]]
    keep = _missing_mask(table, [mapping["query"], *[mapping[f] for f in doc_fields]], missing=missing)
    labels = _parse_labels(table, mapping["label"], keep)
    id_fix = "fill in every id, or leave the id column unmapped to derive ids from the text"
    out: dict[str, list] = {}
    queries = table.cells[mapping["query"]]
    docs = [table.cells[mapping[f]] for f in doc_fields]
    if "qid" in mapping:
        out["qid"] = _ids(table, mapping["qid"], "qid", id_fix)
    else:
        cache: dict[str, str] = {}  # queries repeat: hash each distinct text once
        out["qid"] = [None if q is None else cache.get(q) or cache.setdefault(q, derive_id("q", q)) for q in queries]
    out["query"] = queries
    if "docid" in mapping:
        out["docid"] = _ids(table, mapping["docid"], "docid", id_fix)
    else:
        out["docid"] = [derive_id("d", *[t or "" for t in texts]) for texts in zip(*docs)]
    out.update(zip(doc_fields, docs))
    df = _frame(table, out, keep)
    df["label"] = map_labels(labels, label_map, path=table.path, lines=table.lines[keep])
    _check_unique(df, ["qid", "docid"], "judged pair", table.path, "judge each (query, document) pair once")
    return df


def _parse_labels(table: _RawTable, column: str, keep: np.ndarray) -> np.ndarray:
    """Labels of the kept rows as float64; empty, non-numeric, NaN or infinite labels are errors."""
    raw = np.asarray(table.cells[column], dtype=object)[keep]
    lines = table.lines[keep]
    values = pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise TextTableError(f"label {raw[bad[0]]!r} is not a finite number ({len(bad)} such rows, lines "
                             f"{_line_list(lines[bad])})", path=table.path, line=int(lines[bad[0]]),
                             fix="every judged pair needs a numeric label")
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
        raise TextTableError(f"label {values[bad[0]]:g} {problem} ({len(bad)} such rows, {where}s "
                             f"{_line_list(lines[bad])})", path=path, line=int(lines[bad[0]]), fix=fix)

    if not np.isfinite(values).all():
        fail(~np.isfinite(values), "is not a finite number", "every label must be a number")
    kind, _, arg = str(spec).strip().partition(":")
    tiny = 1e-9  # absorbs float noise such as 1.33 written for 4/3
    if kind == "none" and not arg:
        fractional = np.abs(values - np.rint(values)) > tiny
        if fractional.any():
            fail(fractional, "is not an integer grade",
                 "map fractional labels explicitly with a label map: 'round', 'linear:LO:HI:GRADES' "
                 "(e.g. linear:1:3:7 maps 1..3 onto 0..6) or 'threshold:T1,T2,...'")
        return np.rint(values)
    if kind == "round" and not arg:
        return np.floor(values + 0.5 + tiny)
    if kind == "linear":
        try:
            lo, hi, grades = (float(p) for p in arg.split(":"))
        except ValueError:
            lo = hi = grades = math.nan
        if not (lo < hi and grades >= 2 and grades == int(grades)):
            raise TextTableError(f"bad label map {spec!r}",
                                 fix="write linear:LO:HI:GRADES with LO < HI and an integer GRADES >= 2, e.g. linear:1:3:7")
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
            raise TextTableError(f"bad label map {spec!r}",
                                 fix="write threshold:T1,T2,... with strictly increasing numbers, e.g. threshold:1.5,2.5")
        return np.searchsorted(thresholds, values, side="right").astype(np.float64)
    raise TextTableError(f"unknown label map {spec!r}", fix=f"use {_LABEL_MAP_FORMS}")


# ---------------------------------------------------------------------------------------------
# Judged pairs -> ranking set + text tables.

def pairs_to_ranking(pairs: pd.DataFrame, *, fields=("doc",), conflicts: str = "error",
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
    if conflicts not in ("error", "first"):
        raise TextTableError(f"unknown conflicts policy {conflicts!r}", fix="use 'error' or 'first'")
    fields = list(fields)
    path = pairs.attrs.get("source")
    needed = ["qid", "query", "docid", "label", *fields]
    absent = [c for c in needed if c not in pairs.columns]
    if absent:
        raise TextTableError(f"judged pairs lack columns {absent} (found {list(pairs.columns)})", path=path,
                             fix="read them with read_judged_pairs or add the columns")
    if len(pairs) == 0:
        raise TextTableError("no judged pairs", path=path, fix="check the input table")
    for key, pattern, what in (("qid", r"[\s#]", "whitespace or '#'"), ("docid", r"\s", "whitespace")):
        spaced = pairs[key].astype(str).str.contains(pattern, regex=True).to_numpy()
        if spaced.any():
            bad = _lines_of(pairs)[spaced]
            raise TextTableError(f"{key} {pairs[key].to_numpy()[spaced][0]!r} contains {what}, which a LETOR "
                                 f"file cannot carry (lines {_line_list(bad)})", path=path, line=int(bad[0]),
                                 fix=f"use ids without {what}, or leave the id column unmapped to derive ids")
    _check_unique(pairs, ["qid", "docid"], "judged pair", path, "judge each (query, document) pair once")
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


# ---------------------------------------------------------------------------------------------
# Writing.

def write_table(df: pd.DataFrame, path, *, fmt: str | None = None) -> None:
    """Write ``df`` (its columns, not its index) to ``path`` atomically, format by extension.

    Missing values are written as empty fields (CSV/TSV) or ``null`` (JSONL/Parquet);
    floats round-trip exactly. TSV cannot hold a tab, newline or carriage return in any
    cell or column name: such a frame is refused with the offending column and line.
    """
    fmt = table_format(path, fmt)
    if fmt == "parquet":
        with atomic_output(path, binary=True) as fh:
            df.to_parquet(fh, index=False)
        return
    columns = [str(c) for c in df.columns]
    cells = [_text_cells(df[c]) for c in df.columns]
    if fmt == "tsv":
        _refuse_for_tsv(columns, cells, path)
    with atomic_output(path) as fh:
        if fmt == "jsonl":
            for row in zip(*[_json_cells(df[c]) for c in df.columns]):
                fh.write(json.dumps(dict(zip(columns, row)), ensure_ascii=False, allow_nan=False))
                fh.write("\n")
        elif fmt == "tsv":
            for row in [columns, *zip(*cells)]:
                fh.write("\t".join(row))
                fh.write("\n")
        else:
            # Python's csv writer leaves a lone "\r" unquoted under minimal quoting; quote all then.
            has_cr = any("\r" in v for col in cells for v in col) or any("\r" in c for c in columns)
            writer = csv.writer(fh, lineterminator="\n", quoting=csv.QUOTE_ALL if has_cr else csv.QUOTE_MINIMAL)
            writer.writerow(columns)
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


def _refuse_for_tsv(columns: list[str], cells: list[list[str]], path) -> None:
    names = {"\t": "a tab", "\n": "a newline", "\r": "a carriage return"}
    for name in columns:
        for ch in _TSV_FORBIDDEN:
            if ch in name:
                raise TextTableError(f"column name {name!r} contains {names[ch]}, which TSV cannot hold", path=path,
                                     line=1, fix="rename the column")
    for name, col in zip(columns, cells):
        for i, v in enumerate(col):
            for ch in _TSV_FORBIDDEN:
                if ch in v:
                    raise TextTableError(f"column {name!r} contains {names[ch]}, which TSV cannot hold", path=path,
                                         line=i + 2, fix="write .csv, .jsonl or .parquet instead, or clean the text")
