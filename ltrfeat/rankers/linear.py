"""A pairwise linear ranker: logistic loss on standardised feature differences (RankNet's loss
with a linear scorer, as RankSVM with a logistic instead of a hinge loss).

It answers "do trees help at all?": with a few hundred queries a linear scorer over well-made
features is often as good as LambdaMART and much harder to overfit.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.rankers.contributions import Contributions
from ltrfeat.rankers.single import column_for, concat


def _pairs(data: RankingSet, max_pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (better, worse) of every within-query pair with different labels, at most
    ``max_pairs`` per query (a seeded sample where a query has more)."""
    bounds = data.query_boundaries()
    better, worse = [], []
    for start, end in zip(bounds[:-1], bounds[1:]):
        label = data.label[start:end]
        i, j = np.nonzero(label[:, None] > label[None, :])
        if len(i) > max_pairs:
            keep = np.sort(rng.choice(len(i), max_pairs, replace=False))
            i, j = i[keep], j[keep]
        better.append(i + start)
        worse.append(j + start)
    if not better:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(better), np.concatenate(worse)


class LinearRanker(BaseEstimator):
    """score(x) = w · z(x), with z the feature values standardised by the training mean and
    standard deviation (missing values become 0, the mean) and w fitted by L2-regularised
    logistic regression on z(better) − z(worse) over within-query pairs (Newton–Cholesky, to the optimum).

    Parameters
    ----------
    features : feature names to use (default every column of the training data).
    C : inverse L2 regularisation strength (scikit-learn ``LogisticRegression``).
    max_pairs_per_query : cap on the pairs drawn from one query (a seeded sample beyond it).
    seed : seed of the pair sample and of the sign flips that balance the two classes.

    Fitted attributes
    -----------------
    feature_map_ : features used, in column order. mean_, scale_ : standardisation.
    coef_ : one weight per feature (in standardised units). n_pairs_ : training pairs.
    features_used_ : the features with a non-zero weight.
    """

    def __init__(self, *, features=None, C: float = 1.0, max_pairs_per_query: int = 200, seed: int = 0):
        self.features = features
        self.C = C
        self.max_pairs_per_query = max_pairs_per_query
        self.seed = seed

    def fit(self, train: RankingSet, valid: RankingSet | None = None) -> "LinearRanker":
        """Fit on the queries of ``train`` and ``valid`` together (nothing to early-stop)."""
        if not self.C > 0 or not int(self.max_pairs_per_query) >= 1:
            raise LtrfeatError(
                f"C must be > 0 and max_pairs_per_query >= 1, got {self.C!r}, {self.max_pairs_per_query!r}"
            )
        data = concat(train, valid).regroup()
        columns = (
            list(range(data.n_features))
            if self.features is None
            else sorted({data.feature_map.column_of(f) for f in self.features})
        )
        self.feature_map_ = data.feature_map.select(columns)
        X = data.X[:, columns].astype(np.float64)
        X[~np.isfinite(X)] = np.nan
        with np.errstate(all="ignore"):
            mean = np.nanmean(X, axis=0)
            scale = np.nanstd(X, axis=0)
        self.mean_ = np.nan_to_num(mean)
        self.scale_ = np.where(np.nan_to_num(scale) > 1e-12, np.nan_to_num(scale), 1.0)
        rng = np.random.default_rng(self.seed)
        better, worse = _pairs(data, int(self.max_pairs_per_query), rng)
        self.n_pairs_ = int(len(better))
        if self.n_pairs_ == 0:
            raise LtrfeatError(
                "no query has two documents with different labels, so there is nothing to learn", fix="check the labels"
            )
        Z = self._standardise(X)
        diff = Z[better] - Z[worse]
        flip = rng.random(len(diff)) < 0.5
        diff[flip] *= -1
        # Newton steps with a Cholesky solve of the (features x features) Hessian reach the optimum of this
        # objective in a few passes over the pairs; L-BFGS stopped at its gradient tolerance well short of it
        # on correlated lexical features (weights 10-25% away) after ~60 passes
        model = LogisticRegression(C=self.C, fit_intercept=False, solver="newton-cholesky")
        # one BLAS thread: these problems are small, and many threads on a busy machine made a fit 7x slower
        with threadpool_limits(1):
            model.fit(diff, (~flip).astype(np.int64))
        self.coef_ = model.coef_[0].astype(np.float64)
        return self

    def _standardise(self, X: np.ndarray) -> np.ndarray:
        Z = (X - self.mean_) / self.scale_
        Z[~np.isfinite(Z)] = 0.0
        return Z

    def predict(self, data: RankingSet) -> np.ndarray:
        return self._terms(data).sum(axis=1)

    def contributions(self, data: RankingSet) -> Contributions:
        """The exact terms ``w_j * z_j`` of each row's score (bias 0)."""
        return Contributions(self.feature_map_.names, self._terms(data), np.zeros(len(data)))

    def _terms(self, data: RankingSet) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise LtrfeatError("this LinearRanker is not fitted", fix="call fit() first")
        columns = [column_for(data, f.name) for f in self.feature_map_]
        return self._standardise(data.X[:, columns].astype(np.float64)) * self.coef_

    def describe(self) -> dict:
        top = np.argsort(-np.abs(self.coef_), kind="stable")[:5]
        return {
            "C": self.C,
            "pairs": self.n_pairs_,
            "top_weights": {self.feature_map_.names[j]: round(float(self.coef_[j]), 4) for j in top},
        }

    @property
    def features_used_(self) -> tuple[str, ...]:
        """The features with a non-zero weight."""
        return tuple(f.name for f, w in zip(self.feature_map_, self.coef_) if w != 0)

    def to_json(self) -> dict:
        return {
            "features": self.feature_map_.to_json(),
            "mean": self.mean_.tolist(),
            "scale": self.scale_.tolist(),
            "coef": self.coef_.tolist(),
            "n_pairs": self.n_pairs_,
        }

    @classmethod
    def from_json(cls, obj: dict, params: dict, *, path=None) -> "LinearRanker":
        model = cls(**params)
        model.feature_map_ = FeatureMap.from_json(obj["features"], path=path)
        model.mean_, model.scale_, model.coef_ = (
            np.asarray(obj[k], dtype=np.float64) for k in ("mean", "scale", "coef")
        )
        if not (len(model.mean_) == len(model.scale_) == len(model.coef_) == len(model.feature_map_)):
            raise ValueError("weights and features differ in length")
        model.n_pairs_ = int(obj["n_pairs"])
        return model
