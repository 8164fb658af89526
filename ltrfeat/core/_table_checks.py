"""Column checks shared by the text table readers: required columns, ids, missing texts, duplicates, conflicts."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ltrfeat.core._raw_tables import _empty_text, _RawTable
from ltrfeat.core.errors import TextTableError, line_list

MISSING_TEXT_POLICIES = ("error", "drop", "keep")


class TextTableWarning(UserWarning):
    """Rows were dropped or texts replaced because the caller chose so (``missing='drop'|'keep'``,
    ``conflicts='first'``); the message says how many and where."""


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
