"""LambdaMART's settings as one frozen, validated object, importable without the engines.

A :class:`RankerConfig` holds every :class:`~ltrfeat.rankers.lambdamart.LambdaMART` parameter but the feature
selection, under the same names: ``LambdaMART.from_config(config, features=...)`` trains with it, and a model's
``get_params()`` without ``features`` is ``config.to_dict()``. ``to_dict`` gives plain JSON values (what
``train-ranker`` records in ``OUT.meta.json`` as ``ranker_config``); ``from_dict`` reads them back, refusing
unknown keys with the list of known ones.
"""

from __future__ import annotations

import dataclasses
from numbers import Integral, Real
from typing import ClassVar

from ltrfeat.core.settings import MAX_THREADS, SEED, Interval, OneOf, Settings
from ltrfeat.rankers.choices import ENGINES


@dataclasses.dataclass(frozen=True)
class RankerConfig(Settings):
    """LambdaMART settings (checked when made).

    engine : ``lightgbm`` (lambdarank) or ``xgboost`` (rank:ndcg).
    n_estimators : maximum boosting rounds.
    learning_rate : shrinkage per tree.
    num_leaves : leaves per tree (XGBoost grows leaf-wise with ``max_leaves``).
    early_stopping_rounds : stop when the validation NDCG@``eval_at`` has not improved for this many rounds
        (needs validation data); 0 or None disables.
    eval_at : cutoff k of the validation NDCG used for early stopping.
    seed : random seed passed to the engine.
    n_jobs : engine threads; None, 0 or -1 use all cores.
    params : extra engine parameters, applied last (they override the ones above), e.g.
        ``{"min_data_in_leaf": 50}``; LightGBM trains with ``deterministic`` and ``force_row_wise`` on, so
        reruns give identical models, unless ``{"deterministic": False}`` turns both off.
    """

    label: ClassVar[str] = "LambdaMART"
    _parameter_constraints: ClassVar[dict] = {
        "engine": [OneOf(*ENGINES)],
        "n_estimators": [Interval(Integral, 1, None)],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "num_leaves": [Interval(Integral, 2, None)],
        "early_stopping_rounds": [Interval(Integral, 0, None), None],
        "eval_at": [Interval(Integral, 1, None)],
        "seed": [SEED],
        "n_jobs": [Interval(Integral, -1, MAX_THREADS), None],
        "params": [dict, None],
    }
    _fixes: ClassVar[dict] = {
        "n_estimators": "e.g. n_estimators=500",
        "learning_rate": "e.g. learning_rate=0.05",
        "num_leaves": "e.g. num_leaves=31",
        "early_stopping_rounds": "0 or None disables early stopping",
        "eval_at": "e.g. eval_at=10",
        "n_jobs": "None, 0 or -1 use all cores",
        "params": 'e.g. params={"min_data_in_leaf": 50}',
    }

    engine: str = "lightgbm"
    n_estimators: int = 500
    learning_rate: float = 0.05
    num_leaves: int = 31
    early_stopping_rounds: int | None = 50
    eval_at: int = 10
    seed: int = 0
    n_jobs: int | None = None
    params: dict | None = dataclasses.field(default=None, hash=False)
