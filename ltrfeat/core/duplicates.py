"""Repeated judgments of one (query, document) pair: one policy for every reader of judged pairs.

Real exports repeat judgments (a product listed twice under one title, a pair re-rated). Policies:

* ``error`` (default): refuse, with the count and the first repeated pair's lines;
* ``first``: keep the first row of each pair (its label and texts);
* ``mean``: keep the first row's texts with the mean grade of the pair's rows, rounded half up
  (``floor(mean + 0.5)``) so grades stay integers;
* ``max``: keep the first row's texts with the highest grade.

:func:`resolve_duplicates` returns the kept rows and the figures (policy, repeated rows, pairs,
pairs whose grades disagreed), which commands record in convert.json, encoder bundles and reports.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.core.errors import TextTableError, line_list

POLICIES = ("error", "first", "mean", "max")
FIX = (
    "choose how to merge them with --duplicates first, mean or max (API: duplicates=...), or judge "
    "each (query, document) pair once"
)


def _pair_codes(frame: pd.DataFrame, key: list[str]) -> np.ndarray:
    """One int64 per row, equal exactly when the rows' ``key`` values are."""
    combined = np.zeros(len(frame), dtype=np.int64)
    for column in key:
        codes, uniques = pd.factorize(frame[column])
        combined = combined * (len(uniques) + 1) + codes + 1
    return combined


def resolve_duplicates(
    frame: pd.DataFrame, *, policy: str = "error", key=("qid", "docid"), label: str = "label", lines=None, path=None
) -> tuple[pd.DataFrame, dict]:
    """``(rows kept, figures)`` of ``frame`` under ``policy`` (see the module docstring).

    ``lines``: each row's source line (default: the index when it is named ``line``, else row numbers),
    for the error. Figures: ``policy``, ``repeated_rows`` (rows beyond the first of their pair),
    ``pairs`` (pairs judged more than once) and ``disagreeing_pairs`` (of those, with differing grades).
    """
    if policy not in POLICIES:
        raise TextTableError(f"unknown duplicates policy {policy!r}", fix=f"use one of {', '.join(POLICIES)}")
    key = list(key)
    figures = {"policy": policy, "repeated_rows": 0, "pairs": 0, "disagreeing_pairs": 0}
    codes = pd.Series(_pair_codes(frame, key))
    if codes.is_unique:
        return frame, figures
    repeated = codes.duplicated().to_numpy()
    involved = codes.duplicated(keep=False).to_numpy()
    grades = frame[label].to_numpy(dtype=np.float64)
    spread = pd.Series(grades[involved]).groupby(codes[involved].to_numpy()).agg(["min", "max"])
    figures.update(
        repeated_rows=int(repeated.sum()),
        pairs=int(len(spread)),
        disagreeing_pairs=int((spread["min"] != spread["max"]).sum()),
    )
    if policy == "error":
        if lines is None:
            lines = frame.index.to_numpy() if frame.index.name == "line" else np.arange(1, len(frame) + 1)
        lines = np.asarray(lines)
        first = np.flatnonzero(codes.to_numpy() == codes[np.flatnonzero(involved)[0]])
        value = ", ".join(f"{k} {frame[k].iloc[first[0]]!r}" for k in key)
        rows = figures["repeated_rows"]
        raise TextTableError(
            f"duplicate judged pairs: {rows} {'row judges' if rows == 1 else 'rows judge'} a (query, document) pair again ({figures['pairs']} pairs, "
            f"{figures['disagreeing_pairs']} with different grades); the first: {value} at lines "
            f"{line_list(np.sort(lines[first]))}",
            path=path,
            line=int(np.sort(lines[first])[1]),
            fix=FIX,
        )
    kept = frame[~repeated].copy()
    if policy in ("mean", "max"):
        merged = pd.Series(grades).groupby(codes.to_numpy()).agg(policy)
        values = merged.reindex(codes[~repeated].to_numpy()).to_numpy()
        kept[label] = np.floor(values + 0.5) if policy == "mean" else values
    return kept, figures


def data_record(pairs: pd.DataFrame) -> dict:
    """What the training table's reader says about it, for the records of trained models and reports:
    ``{"duplicates": figures}`` when ``pairs`` (from a reader) had repeated judgments, and ``{"clicks": record}`` when
    they are click labels (:func:`ltrfeat.clicks.debias.click_labels`: the log, its size and the position-bias
    correction with its propensity curve)."""
    figures = pairs.attrs.get("duplicates")
    record = {"duplicates": dict(figures)} if figures and figures.get("repeated_rows") else {}
    if pairs.attrs.get("clicks"):
        record["clicks"] = dict(pairs.attrs["clicks"])
    return record


def duplicates_line(figures: dict | None) -> str | None:
    """One stderr line about merged repeated judgments, or None when there were none."""
    if not figures or not figures.get("repeated_rows"):
        return None
    return (
        f"note: --duplicates {figures['policy']}: merged {figures['repeated_rows']} repeated rows into "
        f"{figures['pairs']} judged pairs ({figures['disagreeing_pairs']} had different grades)"
    )
