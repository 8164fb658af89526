"""LambdaMART's settings as one frozen, validated object, importable without the engines.

A :class:`RankerConfig` holds every :class:`~ltrfeat.rankers.lambdamart.LambdaMART` parameter but the feature
selection, under the same names: ``LambdaMART.from_config(config, features=...)`` trains with it, and a model's
``get_params()`` without ``features`` is ``config.to_dict()``. ``to_dict`` gives plain JSON values (what
``train-ranker`` records in ``OUT.meta.json`` as ``ranker_config``); ``from_dict`` reads them back, refusing
unknown keys with the list of known ones.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.rankers.choices import ENGINES


def _is_integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class RankerConfig:
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

    engine: str = "lightgbm"
    n_estimators: int = 500
    learning_rate: float = 0.05
    num_leaves: int = 31
    early_stopping_rounds: int | None = 50
    eval_at: int = 10
    seed: int = 0
    n_jobs: int | None = None
    params: dict | None = dataclasses.field(default=None, hash=False)

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise LtrfeatError(f"unknown engine {self.engine!r}", fix=f"use one of {', '.join(ENGINES)}")
        for name in ("n_estimators", "eval_at"):
            value = getattr(self, name)
            if not _is_integer(value) or value < 1:
                raise LtrfeatError(
                    f"{name} must be a positive integer, got {value!r}",
                    fix=f"e.g. {name}={getattr(RankerConfig, name)}",
                )
        if not _is_integer(self.num_leaves) or self.num_leaves < 2:
            raise LtrfeatError(f"num_leaves must be an integer >= 2, got {self.num_leaves!r}", fix="e.g. num_leaves=31")
        if not (isinstance(self.learning_rate, numbers.Real) and 0 < self.learning_rate < math.inf):
            raise LtrfeatError(
                f"learning_rate must be a finite number > 0, got {self.learning_rate!r}", fix="e.g. learning_rate=0.05"
            )
        if self.early_stopping_rounds is not None and not (
            _is_integer(self.early_stopping_rounds) and self.early_stopping_rounds >= 0
        ):
            raise LtrfeatError(
                f"early_stopping_rounds must be an integer >= 0, got {self.early_stopping_rounds!r}",
                fix="0 or None disables early stopping",
            )
        if not _is_integer(self.seed):
            raise LtrfeatError(f"seed must be an integer, got {self.seed!r}")
        if self.n_jobs is not None and not (_is_integer(self.n_jobs) and self.n_jobs >= -1):
            raise LtrfeatError(f"n_jobs must be a thread count, got {self.n_jobs!r}", fix="None, 0 or -1 use all cores")
        if self.params is not None and not isinstance(self.params, dict):
            raise LtrfeatError(
                f"params must be a dict of engine parameters, got {type(self.params).__name__}",
                fix='e.g. params={"min_data_in_leaf": 50}',
            )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The settings a RankerConfig holds."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, source: str = "ranker config") -> RankerConfig:
        """A config from plain values (``to_dict``'s output, a config file's table); unknown keys are an error."""
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise LtrfeatError(
                f"{source}: LambdaMART has no setting {unknown[0]!r}", fix=f"use one of {', '.join(cls.names())}"
            )
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (``params`` copied)."""
        return dataclasses.asdict(self)
