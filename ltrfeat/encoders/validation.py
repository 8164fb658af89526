"""The validation metric of every encoder training: NDCG@10 of the model's score used alone as a ranker.

Gain ``2^rel - 1`` with ``rel = label - min label`` capped at :data:`~ltrfeat.encoders.training_pairs.MAX_REL`,
ties broken by input order, queries with no positive gain skipped: a training signal, not a reported figure, kept as
it was so that encoders, and their caches, train as before.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.core.metrics import evaluate_queries

__all__ = ["finite_mean", "ndcg_at", "ndcg_per_query"]


def ndcg_per_query(scores, rels, groups, *, k: int = 10) -> np.ndarray:
    """NDCG@k of every group (in order of first appearance), by the project's one metric implementation
    (:func:`ltrfeat.core.metrics.evaluate_queries`: gain ``2^rel - 1``, log2 discount, ties in input order).

    NaN for a group without a positive grade; all NaN when a score is not finite (a diverged model).
    """
    scores = np.asarray(scores, dtype=np.float64)
    groups = np.asarray(groups)
    if len(scores) == 0:
        return np.zeros(0)
    if not np.isfinite(scores).all():
        return np.full(len(pd.unique(groups)), np.nan)
    name = f"ndcg@{k}"
    # any positive grade counts as relevant, so only all-zero groups (ideal DCG 0) are NaN
    per_query = evaluate_queries(
        groups,
        np.asarray(rels, dtype=np.float64),
        scores,
        [name],
        relevance_threshold=float(np.finfo(np.float64).tiny),
        ties="input",  # the checkpoint an encoder keeps, and the cached encoders, stay those of before
    )
    return per_query[name].to_numpy(dtype=np.float64)


def finite_mean(per_query: np.ndarray) -> float:
    """Mean of the finite values (NaN when there is none): a mean NDCG@10 over the queries with a positive grade."""
    values = per_query[np.isfinite(per_query)]
    return float(values.mean()) if len(values) else float("nan")


def ndcg_at(scores, rels, groups, *, k: int = 10) -> float:
    """Mean NDCG@k over the groups that have a positive grade (:func:`ndcg_per_query`).

    NaN when no group has a positive grade, or when a score is not finite (a diverged model: never the
    best epoch).
    """
    return finite_mean(ndcg_per_query(scores, rels, groups, k=k))
