"""A ranking scorer for scikit-learn's searches: ``GridSearchCV(..., scoring=ndcg_scorer(10))``.

NDCG needs each row's query, which scikit-learn hands a scorer only through metadata routing: with
``sklearn.set_config(enable_metadata_routing=True)``, ``search.fit(X, y, qid=qid, groups=qid)`` routes
``qid`` to :class:`~ltrfeat.rankers.lambdamart.LambdaMART`'s ``fit`` (it requests it by default) and to this
scorer (it requests it), and ``groups`` to a ``GroupKFold`` that keeps each query's rows in one fold.
"""

from __future__ import annotations

import numpy as np
import sklearn
from sklearn.metrics import make_scorer

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.metrics import evaluate_queries


def _mean_ndcg(y_true, y_pred, *, qid=None, k: int, gain: str, no_relevant: str) -> float:
    if qid is None:
        raise LtrfeatError(
            "ndcg_scorer got no query ids",
            fix="call sklearn.set_config(enable_metadata_routing=True) and pass qid= (one id per row) to fit",
        )
    metric = f"ndcg@{k}"
    per_query = evaluate_queries(np.asarray(qid), y_true, y_pred, metric, gain=gain, no_relevant=no_relevant)
    return float(np.nanmean(per_query[metric])) if per_query[metric].notna().any() else float("nan")


def ndcg_scorer(k: int = 10, *, gain: str = "exp2", no_relevant: str = "exclude"):
    """A scikit-learn scorer: the mean over queries of NDCG@``k`` (conventions as
    :class:`ltrfeat.core.metrics.Conventions`), requesting ``qid`` through metadata routing."""
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise LtrfeatError(f"ndcg_scorer: k must be a positive integer, got {k!r}")
    scorer = make_scorer(_mean_ndcg, k=int(k), gain=gain, no_relevant=no_relevant)
    with sklearn.config_context(enable_metadata_routing=True):  # the request is kept once routing is on
        return scorer.set_score_request(qid=True)
