"""Tables read a chunk of rows at a time (TSV, CSV, JSONL, Parquet; text ones optionally gzipped), every cell as
text: memory stays bounded by the chunk, whatever the file's size.

Each chunk is a DataFrame of ``str`` columns (missing = NA) whose index, named ``line``, is the source line of each
row: exact for JSONL; for TSV/CSV the header is line 1 and data row k is line k + 1 (exact unless the file holds
blank lines or quoted line breaks); for Parquet the 1-based row number.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator

import numpy as np
import pandas as pd

from ltrfeat.core.errors import TextTableError
from ltrfeat.core.fileio import open_input
from ltrfeat.core.text import json_object, table_format, text_codec

CHUNK_ROWS = 1_000_000
_BLOCK_BYTES = 1 << 20  # pyarrow's read block: larger blocks cost several times their size in parse buffers
_ENCODING_FIX = "pass the file's encoding (Python encoding=..., CLI --encoding), e.g. cp1252 or latin-1"


def iter_table_chunks(
    path, *, fmt: str | None = None, encoding: str = "utf-8", rows: int = CHUNK_ROWS
) -> Iterator[pd.DataFrame]:
    """The table at ``path`` as DataFrames of at most ``rows`` rows (see the module docstring); an empty file or
    one without data rows is a :class:`TextTableError`."""
    fmt = table_format(path, fmt)
    codec = text_codec(encoding, path=path)
    reader = {"parquet": _parquet_chunks, "jsonl": _jsonl_chunks}.get(fmt, _delimited_chunks)
    any_rows = False
    try:
        for chunk in reader(path, fmt, codec, rows):
            if len(chunk):
                any_rows = True
                chunk.attrs["source"] = str(path)
                yield chunk
    except FileNotFoundError:
        raise TextTableError("file not found", path=path, fix="check the path") from None
    except IsADirectoryError:
        raise TextTableError("is a directory, not a table file", path=path, fix="pass a file") from None
    if not any_rows:
        raise TextTableError("table has no data rows", path=path, fix="check that the right file was given")


def _frame(columns: dict[str, pd.Series | list], lines: np.ndarray) -> pd.DataFrame:
    index = pd.Index(lines, name="line")
    return pd.DataFrame({name: pd.Series(values, dtype="str").set_axis(index) for name, values in columns.items()})


def _check_header(header: list[str], path) -> list[str]:
    if not header or header == [""]:
        raise TextTableError("file is empty", path=path, fix="write a header and at least one row")
    seen = {name for i, name in enumerate(header) if name in header[:i]}
    if seen:
        raise TextTableError(
            f"duplicate column name {sorted(seen)[0]!r} in the header",
            path=path,
            line=1,
            fix="give every column a distinct name",
        )
    return header


def _delimited_chunks(path, fmt: str, codec: str, rows: int) -> Iterator[pd.DataFrame]:
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    with open_input(path) as fh:
        first = fh.readline()
    try:
        header_line = first.decode(codec).removeprefix("\ufeff").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise TextTableError(
            f"cannot decode the header as {codec} ({exc.reason})", path=path, line=1, fix=_ENCODING_FIX
        ) from None
    header = header_line.split("\t") if fmt == "tsv" else next(csv.reader([header_line]), [])
    header = _check_header(header, path)
    with open_input(path) as fh:
        parse = (
            pa_csv.ParseOptions(delimiter="\t", quote_char=False, double_quote=False, escape_char=False)
            if fmt == "tsv"
            else pa_csv.ParseOptions(newlines_in_values=True)
        )
        options = pa_csv.ReadOptions(column_names=header, skip_rows=1, encoding=codec, block_size=_BLOCK_BYTES)
        convert = pa_csv.ConvertOptions(
            column_types={h: pa.string() for h in header}, strings_can_be_null=True, null_values=[""]
        )
        done = 0
        try:
            reader = pa_csv.open_csv(fh, read_options=options, parse_options=parse, convert_options=convert)
            pending: list = []
            pending_rows = 0
            for batch in reader:
                pending.append(batch)
                pending_rows += batch.num_rows
                while pending_rows >= rows:
                    table = pa.Table.from_batches(pending)
                    yield _arrow_chunk(table.slice(0, rows), header, done + 2)
                    done += rows
                    rest = table.slice(rows)
                    pending, pending_rows = rest.to_batches(), rest.num_rows
                    del table, rest
                    pa.default_memory_pool().release_unused()
            if pending_rows:
                yield _arrow_chunk(pa.Table.from_batches(pending), header, done + 2)
        except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
            message = str(exc).splitlines()[0]
            if "UTF8" in message or "decode" in message or isinstance(exc, UnicodeDecodeError):
                raise TextTableError(
                    f"cannot decode the file as {codec} after data row {done}", path=path, fix=_ENCODING_FIX
                ) from None
            sep = "tab" if fmt == "tsv" else "comma"
            raise TextTableError(
                f"malformed {fmt.upper()} after data row {done} ({message})",
                path=path,
                fix=f"give every row as many {sep}-separated fields as the header"
                + ("; TSV text cannot contain tabs or newlines" if fmt == "tsv" else "; quote fields holding commas"),
            ) from None


def _arrow_chunk(table, header: list[str], first_line: int) -> pd.DataFrame:
    lines = np.arange(first_line, first_line + table.num_rows, dtype=np.int64)
    return _frame({h: table.column(h).to_pandas() for h in header}, lines)


def _parquet_chunks(path, fmt: str, codec: str, rows: int) -> Iterator[pd.DataFrame]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_input(path) as fh:
        try:
            parquet = pq.ParquetFile(fh)
        except (pa.ArrowInvalid, OSError) as exc:
            raise TextTableError(
                f"not a readable Parquet file ({exc})", path=path, fix="check the file, or pass the right format"
            ) from None
        done = 0
        for batch in parquet.iter_batches(batch_size=rows):
            columns = {}
            for name, column in zip(batch.schema.names, batch.columns):
                if pa.types.is_nested(column.type):
                    raise TextTableError(
                        f"column {name!r} holds a nested value ({column.type})",
                        path=path,
                        fix="store ids, positions and counts as plain strings or numbers",
                    )
                columns[name] = _as_text(column.to_pandas())
            yield _frame(columns, np.arange(done + 1, done + batch.num_rows + 1, dtype=np.int64))
            done += batch.num_rows


def _as_text(values: pd.Series) -> pd.Series:
    """Parquet numbers and booleans as the text a TSV would hold (null and NaN: missing)."""
    if pd.api.types.is_string_dtype(values.dtype) or values.dtype == object:
        return values
    if pd.api.types.is_bool_dtype(values.dtype):
        return values.map({True: "true", False: "false"})
    if pd.api.types.is_float_dtype(values.dtype):
        return values.map(lambda v: None if math.isnan(v) else repr(v))
    return values.astype("str").where(values.notna())


def _jsonl_chunks(path, fmt: str, codec: str, rows: int) -> Iterator[pd.DataFrame]:
    with open_input(path, binary=False, encoding="utf-8-sig" if codec == "utf-8" else codec) as fh:
        records: list[dict] = []
        lines: list[int] = []
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError as exc:
                raise TextTableError(
                    f"cannot decode the file as {codec} ({exc.reason})", path=path, line=lineno + 1, fix=_ENCODING_FIX
                ) from None
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            records.append(json_object(line, path, lineno))
            lines.append(lineno)
            if len(records) >= rows:
                yield _records_frame(records, lines, path)
                records, lines = [], []
        if records:
            yield _records_frame(records, lines, path)
        elif lineno == 0:
            raise TextTableError("file is empty", path=path, fix="write one JSON object per line")


def _records_frame(records: list[dict], lines: list[int], path) -> pd.DataFrame:
    names = list(dict.fromkeys(key for record in records for key in record))
    columns = {}
    for name in names:
        cells = []
        for record, line in zip(records, lines):
            value = record.get(name)
            if isinstance(value, (dict, list)):
                raise TextTableError(
                    f"column {name!r} holds a nested value ({type(value).__name__})",
                    path=path,
                    line=line,
                    fix="store ids, positions and counts as plain strings or numbers",
                )
            cells.append(_json_text(value))
        columns[name] = cells
    return _frame(columns, np.asarray(lines, dtype=np.int64))


def _json_text(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)
