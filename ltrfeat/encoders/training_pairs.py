"""A training table of (query, doc, label[, qid]) pairs made ready for an encoder trainer.

:func:`validate_pairs` checks the table; :func:`training_data` (or :func:`prepare_pairs` and :func:`sample_rows`)
maps labels to soft labels, holds out validation queries and picks the sample rows; :func:`data_hash` fingerprints
the table for the training record.

Samples
-------
A loss with ``every_pair`` (``generalized``, GDSSM) takes every judged training pair as a sample, with its soft label
``y``; the others (``softmax``, ``hinge``) every pair whose ``y >= min_positive`` (Q, D+).

Soft labels
-----------
``soft_labels="linear"`` maps raw labels linearly onto [0, 1] (min -> 0, max -> 1; for graded averages such as
1..3), ``"clicks"`` maps click counts c >= 0 through the monotone, saturating ``phi(c) = c / (c + click_scale)`` with
``phi(0) = 0``, ``"identity"`` takes labels already in [0, 1].

Validation split
----------------
``val_fraction`` of the queries (by ``qid`` when given, else by query text) are held out, seeded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ltrfeat.core.errors import TextTableError
from ltrfeat.core.splits import holdout, holdout_size
from ltrfeat.encoders.config import SOFT_LABELS, TrainingConfig
from ltrfeat.encoders.encoder import distinct
from ltrfeat.encoders.losses.base import RankingLoss

__all__ = [
    "MAX_REL",
    "Prepared",
    "check_holdout",
    "data_hash",
    "map_soft_labels",
    "prepare_pairs",
    "sample_rows",
    "table_queries",
    "training_data",
    "validate_pairs",
]

MAX_REL = 30  # the validation NDCG's grade cap


def map_soft_labels(labels: np.ndarray, how: str, *, click_scale: float = 1.0) -> np.ndarray:
    """Map raw labels to y in [0, 1] (see "Soft labels" in the module docstring)."""
    if how == "linear":
        lo, hi = labels.min(), labels.max()
        if hi == lo:
            raise TextTableError(
                f"every label is {lo}: graded training needs at least two label values",
                fix="give pairs with different labels, or soft_labels='identity'",
                param="soft_labels",
            )
        return (labels - lo) / (hi - lo)
    if how == "clicks":
        if (labels < 0).any():
            raise TextTableError(
                "click counts must be >= 0", fix="give counts, or soft_labels='linear'", param="soft_labels"
            )
        return labels / (labels + click_scale)
    if how == "identity":
        if ((labels < 0) | (labels > 1)).any():
            raise TextTableError(
                "soft_labels='identity' needs labels in [0, 1]",
                fix="use soft_labels='linear' for graded labels or 'clicks' for counts",
                param="soft_labels",
            )
        return labels.astype(np.float64)
    raise ValueError(f"soft_labels must be one of {SOFT_LABELS}, got {how!r}")


def data_hash(pairs: pd.DataFrame) -> str:
    """sha256 of the training table's qid/query/doc/label(/weight) columns (order-sensitive)."""
    h = hashlib.sha256()
    for col in ("qid", "query", "doc", "label", "weight"):
        if col in pairs:
            h.update(col.encode())
            h.update("\x1e".join(map(repr, pairs[col].tolist())).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def validate_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` with numeric labels (and sample weights, when a ``weight`` column is given); a one-line error for a
    missing column, an empty table, a text that is not a string, a label that is not a finite number or a weight
    that is not a finite number >= 0."""
    missing = [c for c in ("query", "doc", "label") if c not in pairs]
    if missing:
        raise TextTableError(
            f"training table lacks column(s) {missing}", fix="give columns query, doc, label (and optionally qid)"
        )
    if len(pairs) == 0:
        raise TextTableError("training table is empty", fix="give judged or clicked (query, doc) pairs")
    for col in ("query", "doc"):
        bad = ~pairs[col].map(lambda v: isinstance(v, str))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise TextTableError(
                f"row {row + 1}: {col} text is {pairs[col].iloc[row]!r}, not a string",
                fix="fill or drop pairs with missing texts",
            )
    labels = pd.to_numeric(pairs["label"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(labels)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TextTableError(
            f"row {row + 1}: label {pairs['label'].iloc[row]!r} is not a finite number",
            fix="give numeric labels or click counts",
        )
    if "weight" not in pairs:
        return pairs.assign(label=labels)
    weights = pd.to_numeric(pairs["weight"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TextTableError(
            f"row {row + 1}: weight {pairs['weight'].iloc[row]!r} is not a finite number >= 0",
            fix="give sample weights >= 0, or no weight column",
        )
    return pairs.assign(label=labels, weight=weights)


@dataclass
class Prepared:
    """A training table as index arrays: distinct texts, each row's query/doc index, soft label, NDCG grade and
    whether it is a training (not a validation) row."""

    q_idx: np.ndarray  # per row: index into queries
    d_idx: np.ndarray  # per row: index into docs
    y: np.ndarray  # soft label per row
    rel: np.ndarray  # NDCG relevance per row
    train: np.ndarray  # bool per row
    queries: list
    docs: list
    weight: np.ndarray | None = None  # sample weight per row (None: every sample counts once)


def table_queries(pairs: pd.DataFrame) -> int:
    """The number of queries :func:`prepare_pairs` splits ``pairs`` by: distinct ``qid`` when given, else query text."""
    return int((pairs["qid"] if "qid" in pairs else pairs["query"]).nunique())


def check_holdout(n_queries: int, val_fraction: float, *, what: str = "") -> None:
    """Refuse a validation share of ``n_queries`` training queries that leaves no validation or no training query
    (callers check before any training); ``what`` names the training."""
    n_val = holdout_size(n_queries, val_fraction)
    if val_fraction > 0 and not 0 < n_val < n_queries:
        raise TextTableError(
            f"{what}{n_queries} queries cannot be split into training and validation (val_fraction {val_fraction} "
            f"holds out {n_val})",
            fix="give more queries or val_fraction=0 (no early stopping)",
            param="val_fraction",
        )


def prepare_pairs(pairs: pd.DataFrame, *, how: str, click_scale: float, val_fraction: float, seed: int) -> Prepared:
    """Distinct texts, soft labels (``how``: see :func:`map_soft_labels`) and the seeded validation split by query."""
    labels = pairs["label"].to_numpy()
    queries, q_idx = distinct(pairs["query"].tolist())
    docs, d_idx = distinct(pairs["doc"].tolist())
    keys = pairs["qid"].astype(str).tolist() if "qid" in pairs else pairs["query"].tolist()
    key_list, key_idx = distinct(keys)
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    check_holdout(len(key_list), val_fraction)
    _, val_keys = holdout(np.arange(len(key_list)), val_fraction, [seed, 1])
    train = ~np.isin(key_idx, val_keys)
    rel = np.minimum(labels - labels.min(), MAX_REL)
    y = map_soft_labels(labels, how, click_scale=click_scale)
    weight = pairs["weight"].to_numpy(np.float64) if "weight" in pairs else None
    return Prepared(q_idx, d_idx, y, rel, train, queries, docs, weight)


def training_data(pairs: pd.DataFrame, cfg: TrainingConfig, loss: RankingLoss) -> tuple[str, Prepared, np.ndarray]:
    """The training table's hash, its prepared arrays (soft labels, validation split) and the sample rows, by the
    settings of ``cfg`` (``soft_labels``, ``click_scale`` -- 1 for a config without it --, ``val_fraction``,
    ``seed``, ``min_positive``) and the samples ``loss`` reads."""
    click_scale = getattr(cfg, "click_scale", 1.0)
    data = prepare_pairs(
        pairs, how=cfg.soft_labels, click_scale=click_scale, val_fraction=cfg.val_fraction, seed=cfg.seed
    )
    return data_hash(pairs), data, sample_rows(data, every_pair=loss.every_pair, min_positive=cfg.min_positive)


def sample_rows(data: Prepared, *, every_pair: bool, min_positive: float) -> np.ndarray:
    """Training rows that are samples: every pair for a loss that reads soft labels (``every_pair``: the generalized
    loss), else those with y >= min_positive."""
    rows = np.flatnonzero(data.train if every_pair else data.train & (data.y >= min_positive))
    if len(rows) == 0:
        raise TextTableError(
            f"no training pair has a soft label >= min_positive={min_positive}",
            fix="lower min_positive or check the labels and soft_labels mapping",
        )
    return rows
