"""Rankers built on one feature: the best single feature itself, and LambdaMART boosted from it.

With a few hundred queries a learned ranker often loses to its own best input, so both are
candidates of model selection (:mod:`ltrfeat.rankers.selection`) and baselines of every ablation.
"Best" is decided on the training queries only: each feature is tried in both directions
(``+`` larger values rank first, ``-`` smaller values first) and scored by the mean of the
criterion metrics over the training queries.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.rankers.contributions import Contributions, add_feature_term
from ltrfeat.rankers.lambdamart import LambdaMART
from ltrfeat.core.metrics import mean_per_query

DEFAULT_CRITERION = ("ndcg@1", "ndcg@3", "ndcg@10")


def concat(*parts: RankingSet | None) -> RankingSet:
    """The rows of several sets with the same columns, in order (``None`` parts are skipped)."""
    given = [p for p in parts if p is not None]
    if len(given) == 1:
        return given[0]
    fmap = given[0].feature_map
    for p in given[1:]:
        if p.feature_map != fmap:
            raise LtrfeatError("the parts have different feature columns", fix="give them the same features")

    def pick(name):
        return (
            None if any(getattr(p, name) is None for p in given) else np.concatenate([getattr(p, name) for p in given])
        )

    return RankingSet(
        np.concatenate([p.qid for p in given]),
        np.concatenate([p.label for p in given]),
        np.vstack([p.X for p in given]),
        fmap,
        pick("docid"),
        pick("comment"),
        pick("weight"),
    )


def criterion_per_query(
    data: RankingSet,
    score,
    criterion=DEFAULT_CRITERION,
    *,
    gain: str = "exp2",
    no_relevant: str = "exclude",
    ties: str = "expected",
    qid=None,
) -> np.ndarray:
    """Per query of ``data`` (order of first appearance), the mean of the ``criterion`` metrics of ``score``;
    NaN for queries the no-relevant convention excludes. ``qid``: codes to use instead of ``data.qid``."""
    return mean_per_query(
        data.qid if qid is None else qid,
        data.label,
        score,
        criterion,
        gain=gain,
        no_relevant=no_relevant,
        ties=ties,
        docid=data.docid,
    )


def feature_scores(data: RankingSet, column: int, direction: int = 1) -> np.ndarray:
    """One column as ranking scores: ``direction`` * value, with NaN/inf ranked last (ties kept)."""
    values = direction * data.X[:, column].astype(np.float64)
    finite = np.isfinite(values)
    if finite.all():
        return values
    low = values[finite].min() if finite.any() else 0.0
    return np.where(finite, values, low - max(1.0, abs(low)))


def query_zscore(qid, values: np.ndarray) -> np.ndarray:
    """``values`` standardised within each query (mean 0, standard deviation 1; 0 where constant)."""
    codes = pd.factorize(np.asarray(qid, dtype=object))[0]
    count = np.bincount(codes)
    mean = (np.bincount(codes, weights=values) / count)[codes]
    std = np.sqrt(np.bincount(codes, weights=(values - mean) ** 2) / count)[codes]
    return np.where(std > 1e-12, (values - mean) / np.where(std > 1e-12, std, 1.0), 0.0)


def column_for(data: RankingSet, name: str) -> int:
    """The column of feature ``name`` in ``data``; a one-line error when the data lacks it."""
    try:
        return data.feature_map.column_of(name)
    except KeyError:
        raise ModelFileError(
            f"the data lacks the model's feature {name!r}; it has {data.feature_map!r}",
            fix="use a file with the same features (and .features.json sidecar) as the training data",
        ) from None


@dataclasses.dataclass(frozen=True)
class FeatureChoice:
    """A feature (by name) and its direction (+1: larger first, -1: smaller first)."""

    name: str
    direction: int

    def __str__(self) -> str:
        return self.name if self.direction > 0 else f"-{self.name}"


def rank_single_features(
    data: RankingSet,
    features=None,
    *,
    criterion=DEFAULT_CRITERION,
    gain: str = "exp2",
    no_relevant: str = "exclude",
    ties: str = "expected",
) -> pd.DataFrame:
    """Per-query criterion of every (feature, direction) of ``features`` (default all) on ``data``:
    a table indexed by qid with one column per :class:`FeatureChoice` (as its string)."""
    columns = range(data.n_features) if features is None else sorted({data.feature_map.column_of(f) for f in features})
    codes = pd.factorize(data.qid)[0]
    out = {}
    for j in columns:
        for direction in (1, -1):
            choice = FeatureChoice(data.feature_map.features[j].name, direction)
            out[str(choice)] = criterion_per_query(
                data,
                feature_scores(data, j, direction),
                criterion,
                gain=gain,
                no_relevant=no_relevant,
                ties=ties,
                qid=codes,
            )
    return pd.DataFrame(out, index=pd.Index(data.queries(), name="qid"))


def rank_single_features_as(data: RankingSet, features, settings) -> pd.DataFrame:
    """:func:`rank_single_features` with the criterion and metric conventions of ``settings`` (any object with
    ``criterion``, ``gain``, ``no_relevant`` and ``ties``: a :class:`BestSingleFeature`, selection's candidates)."""
    return rank_single_features(
        data,
        features,
        criterion=settings.criterion,
        gain=settings.gain,
        no_relevant=settings.no_relevant,
        ties=settings.ties,
    )


def best_of(table: pd.DataFrame) -> FeatureChoice:
    """The column of a :func:`rank_single_features` table with the highest mean (first on ties)."""
    means = table.mean(axis=0, skipna=True).fillna(-np.inf).to_numpy()
    label = table.columns[int(np.argmax(means))]
    return FeatureChoice(label.lstrip("-"), -1 if label.startswith("-") else 1)


class BestSingleFeature(BaseEstimator):
    """Rank by the single feature (and direction) that scores best on the training queries.

    Parameters
    ----------
    features : candidate features (names), default every column of the training data.
    criterion : metrics whose per-query mean decides (see :func:`ltrfeat.core.metrics.parse_metrics`).
    gain, no_relevant, ties : metric conventions (see :class:`ltrfeat.core.metrics.Conventions`).

    Fitted attributes
    -----------------
    choice_ : the :class:`FeatureChoice`. feature_ : its name. direction_ : +1 or -1.
    features_used_ : ``(feature_,)``.
    training_scores_ : criterion mean of every (feature, direction) on the training queries.
    """

    def __init__(
        self,
        *,
        features=None,
        criterion=DEFAULT_CRITERION,
        gain: str = "exp2",
        no_relevant: str = "exclude",
        ties: str = "expected",
    ):
        self.features = features
        self.criterion = criterion
        self.gain = gain
        self.no_relevant = no_relevant
        self.ties = ties

    def fit(self, train: RankingSet, valid: RankingSet | None = None, *, table: pd.DataFrame | None = None):
        """Choose on the queries of ``train`` and ``valid`` together (there is nothing to early-stop).
        ``table``: a precomputed :func:`rank_single_features` table of those queries (saves time)."""
        data = concat(train, valid)
        if len(data) == 0:
            raise LtrfeatError("train data has no rows", fix="check the input file")
        if table is None:
            table = rank_single_features_as(data, self.features, self)
        if table.shape[1] == 0 or table.notna().sum().sum() == 0:
            raise LtrfeatError(
                "no training query has a relevant document, so no feature can be chosen", fix="check the labels"
            )
        self.choice_ = best_of(table)
        self.feature_, self.direction_ = self.choice_.name, self.choice_.direction
        self.feature_map_ = data.feature_map.select([data.feature_map.column_of(self.feature_)])
        self.training_scores_ = {k: float(v) for k, v in table.mean(axis=0).items()}
        return self

    def predict(self, data: RankingSet) -> np.ndarray:
        if not hasattr(self, "choice_"):
            raise LtrfeatError("this BestSingleFeature is not fitted", fix="call fit() first")
        return feature_scores(data, column_for(data, self.feature_), self.direction_)

    def contributions(self, data: RankingSet) -> Contributions:
        """The whole score is the chosen feature's term (bias 0)."""
        return Contributions([self.feature_], self.predict(data)[:, None], np.zeros(len(data)))

    def describe(self) -> dict:
        return {"feature": self.feature_, "direction": self.direction_}

    @property
    def features_used_(self) -> tuple[str, ...]:
        return (self.feature_,)


class BoostedFromFeature(BaseEstimator):
    """LambdaMART whose trees boost from the best single feature.

    The best feature (chosen on the training queries, see :class:`BestSingleFeature`) is
    standardised within each query and multiplied by ``scale``; that is the initial score
    (LightGBM ``init_score`` / XGBoost ``base_margin``) the trees correct. With early stopping
    on the validation queries the trees stop as soon as they stop helping, so on small data
    the ranker stays close to its best input. Each ``scales`` value is trained and the one with
    the best validation criterion kept (without validation data: the first). One scale by default:
    each costs a LambdaMART training, and at 2 two documents one standard deviation apart start at a
    pairwise probability of 0.88 — a confident start the trees can still overturn.

    Parameters
    ----------
    scales : candidate multipliers of the per-query z-score.
    criterion, gain, no_relevant, ties : as :class:`BestSingleFeature`.
    **lambdamart : parameters of the :class:`~ltrfeat.rankers.lambdamart.LambdaMART` (engine, seed, ...).
    """

    def __init__(
        self,
        *,
        scales=(2.0,),
        criterion=DEFAULT_CRITERION,
        gain: str = "exp2",
        no_relevant: str = "exclude",
        ties: str = "expected",
        lambdamart: dict | None = None,
    ):
        self.scales = scales
        self.criterion = criterion
        self.gain = gain
        self.no_relevant = no_relevant
        self.ties = ties
        self.lambdamart = lambdamart

    def _init(self, data: RankingSet, scale: float) -> np.ndarray:
        column = column_for(data, self.feature_)
        return scale * query_zscore(data.qid, feature_scores(data, column, self.direction_))

    def fit(self, train: RankingSet, valid: RankingSet | None = None, *, table: pd.DataFrame | None = None):
        params = dict(self.lambdamart or {})
        best = BestSingleFeature(
            features=params.get("features"),
            criterion=self.criterion,
            gain=self.gain,
            no_relevant=self.no_relevant,
            ties=self.ties,
        ).fit(train, valid, table=table)
        self.feature_, self.direction_ = best.feature_, best.direction_
        train, valid = train.regroup(), None if valid is None else valid.regroup()
        fits = []
        for scale in self.scales:
            model = LambdaMART(**params).fit(
                train,
                valid,
                init_score=self._init(train, scale),
                valid_init_score=None if valid is None else self._init(valid, scale),
            )
            quality = 0.0
            if valid is not None:
                scores = self._init(valid, scale) + model.predict(valid)
                quality = np.nanmean(
                    criterion_per_query(
                        valid, scores, self.criterion, gain=self.gain, no_relevant=self.no_relevant, ties=self.ties
                    )
                )
            fits.append((quality, scale, model))
        k = max(range(len(fits)), key=lambda i: (fits[i][0], -i))
        _, self.scale_, self.model_ = fits[k]
        self.feature_map_ = self.model_.feature_map_
        self.validation_scores_ = {float(s): float(q) for q, s, _ in fits}
        return self

    def predict(self, data: RankingSet) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise LtrfeatError("this BoostedFromFeature is not fitted", fix="call fit() first")
        return self._init(data, self.scale_) + self.model_.predict(data)

    def contributions(self, data: RankingSet) -> Contributions:
        """The start feature's term (``scale`` * its per-query z-score) plus the trees' TreeSHAP values."""
        if not hasattr(self, "model_"):
            raise LtrfeatError("this BoostedFromFeature is not fitted", fix="call fit() first")
        return add_feature_term(self.model_.contributions(data), self.feature_, self._init(data, self.scale_))

    def describe(self) -> dict:
        return {
            "feature": self.feature_,
            "direction": self.direction_,
            "scale": self.scale_,
            "best_iteration": self.model_.best_iteration_,
        }

    @property
    def features_used_(self) -> tuple[str, ...]:
        """The start feature and every feature the trees split on."""
        return tuple(dict.fromkeys((self.feature_, *self.model_.features_used_)))
