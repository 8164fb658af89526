"""Writing text tables atomically, a slice of rows at a time (:func:`write_table`)."""

from __future__ import annotations

import csv
import json
import math

import pandas as pd

from ltrfeat.core._raw_tables import table_format
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.fileio import atomic_output

_TSV_FORBIDDEN = ("\t", "\n", "\r")
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
