"""An ablation report's ``per_query.tsv`` read back, and checked against the counts ``report.json`` recorded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError

ID_COLUMNS = ("feature_set", "fold", "qid", "n_docs", "n_relevant")  # per_query's columns besides the metrics


def read_per_query(path) -> pd.DataFrame:
    """An ablation report's ``per_query.tsv`` (ids as text, metrics as floats), checked."""
    path = Path(path)
    fix = "give the directory an ablation wrote with --report"
    if not path.is_file():
        raise LtrfeatError("no per-query table here", path=path, fix=fix)
    try:
        table = pd.read_csv(
            path,
            sep="\t",
            dtype={"feature_set": str, "fold": str, "qid": str},
            keep_default_na=False,
            na_values=["NaN"],
        )
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise LtrfeatError(f"not a per-query table ({' '.join(str(exc).split())[:200]})", path=path, fix=fix) from None
    missing = [c for c in ID_COLUMNS if c not in table.columns]
    metrics = [c for c in table.columns if c not in ID_COLUMNS]
    if missing or not metrics:
        raise LtrfeatError(
            f"not a per-query table: missing columns {', '.join(missing) or 'of metrics'}", path=path, fix=fix
        )
    for metric in metrics:
        values = pd.to_numeric(table[metric], errors="coerce")
        bad = values.isna() & table[metric].notna()  # "NaN" (an excluded query) was read as missing already
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise LtrfeatError(
                f"{metric} is {table[metric].iloc[row]!r}, not a number", path=path, line=row + 2, fix=fix
            )
        table[metric] = values.astype(np.float64)
    return table


def check_per_query_counts(per_query: pd.DataFrame, report_dir) -> None:
    """Compare the table's query counts with those ``report.json`` recorded (per set and metric): a
    ``per_query.tsv`` cut short (say, at a line boundary) is an error naming both counts, not a
    comparison of the queries that happen to remain. A report without ``report.json`` is not checked."""
    report_path = Path(report_dir) / "report.json"
    try:
        recorded = json.loads(report_path.read_text(encoding="utf-8")).get("results") or []
    except (OSError, ValueError, AttributeError):
        return
    table = Path(report_dir) / "per_query.tsv"
    groups = dict(tuple(per_query.groupby("feature_set", sort=False)))
    for entry in recorded:
        if not isinstance(entry, dict) or entry.get("metric") not in per_query.columns:
            continue
        rows = groups.get(entry.get("feature_set"))
        found = 0 if rows is None else int(np.isfinite(rows[entry["metric"]].to_numpy(dtype=np.float64)).sum())
        if found != entry.get("n_queries"):
            raise LtrfeatError(
                f"holds {found} queries of feature set {entry.get('feature_set')!r} for {entry['metric']}, "
                f"but report.json records {entry.get('n_queries')}: the table is truncated or edited",
                path=table,
                fix="restore per_query.tsv from the ablation's report (or re-run the ablation)",
            )
