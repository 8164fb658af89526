"""Relevance labels of judged pairs: parsed as numbers, mapped to integer grades (:func:`map_labels`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ltrfeat.core._raw_tables import _RawTable
from ltrfeat.core.errors import TextTableError, line_list

_LABEL_MAP_FORMS = (
    "'none' (labels already integers), 'round', 'linear:LO:HI:GRADES' (e.g. linear:1:3:7), 'threshold:T1,T2,...'"
)


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
