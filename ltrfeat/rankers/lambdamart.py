"""LambdaMART behind one scikit-learn style interface, over LightGBM or XGBoost.

Both engines are used through their own training APIs (``lightgbm.train`` with
``objective="lambdarank"``, ``xgboost.train`` with ``objective="rank:ndcg"``); this
module only prepares groups, labels and feature columns, records what was done, and
saves the model in the engine's native format:

- ``MODEL`` — LightGBM text model or XGBoost JSON model, holding exactly the trees used
  for prediction (up to the best early-stopping iteration);
- ``MODEL.meta.json`` — features (ids and names), label handling, engine parameters,
  training-data hashes, early-stopping result, feature importance and library versions,
  plus the SHA-256 of ``MODEL`` so a mismatched pair is refused.

Loading never unpickles. Missing feature values are NaN and go to the engine as missing
(LightGBM ``use_missing``, XGBoost ``missing=NaN``), which learns a default direction.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import xgboost as xgb
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from tqdm.auto import tqdm

from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, ModelFileError, ParameterError
from ltrfeat.core.fileio import atomic_output
from ltrfeat.core.logs import show_progress
from ltrfeat.core.versions import library_versions
from ltrfeat.rankers.choices import ENGINES, META_FORMAT
from ltrfeat.rankers.config import RankerConfig
from ltrfeat.rankers.contributions import Contributions
from ltrfeat.rankers.model_check import check_lightgbm_params, check_model, engine_message, lightgbm_messages
from ltrfeat.rankers.positions import ENGINE_PARAMS, position_order, position_record

# metadata kinds of models that are nothing but LambdaMART trees ("lambdamart": files written before kinds
# took the candidate names)
PLAIN_KINDS = ("lambdamart", *ENGINES, *(f"{e}-tuned" for e in ENGINES))
LIGHTGBM_DEFAULT_MAX_LABEL = 30  # LightGBM's default label_gain covers labels 0..30
XGBOOST_EXP_GAIN_MAX_LABEL = 31  # XGBoost's exponential NDCG gain accepts labels <= 31
MAX_LABEL = 1023  # 2^1024 - 1 overflows a double: no engine can weigh larger grades
MISSING_POLICY = "NaN cells are passed to the engine as missing values (it learns a default split direction)"


def meta_path(model_path) -> Path:
    """``<model>.meta.json`` beside a model file."""
    return Path(f"{model_path}.meta.json")


def write_model_files(path, raw: bytes, meta: dict) -> None:
    """``raw`` to ``path`` and ``meta`` (plus the file's name and SHA-256) to ``<path>.meta.json``, atomically."""
    meta = meta | {"model_file": Path(path).name, "model_sha256": hashlib.sha256(raw).hexdigest()}
    with atomic_output(path, binary=True) as fh:
        fh.write(raw)
    with atomic_output(meta_path(path), sidecar_of=path) as fh:
        json.dump(meta, fh, indent=1)
        fh.write("\n")


class RankerNotFittedError(LtrfeatError, NotFittedError):
    """``predict``/``save`` before ``fit``: an ltrfeat error that scikit-learn recognises as NotFittedError."""


def _as_matrix(X, where: str) -> tuple[np.ndarray, list[str] | None]:
    """A 2-d float32 feature matrix and, for a DataFrame with string column names, those names."""
    names = None
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        if all(isinstance(c, str) for c in X.columns):
            names = [str(c) for c in X.columns]
        X = X.to_numpy(dtype=np.float32, na_value=np.nan)
    try:
        X = np.asarray(X, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise LtrfeatError(
            f"{where}: X is not a numeric feature matrix ({exc})",
            fix="pass a 2-d numeric array or DataFrame (or a RankingSet)",
        ) from None
    if X.ndim != 2:
        raise LtrfeatError(
            f"{where}: X must be 2-d (rows x features), got shape {X.shape}",
            fix="reshape it, e.g. X.reshape(-1, 1) for one feature",
        )
    return X, names


def _ranking_from_arrays(X, y, group, qid, where: str, position=None) -> RankingSet:
    """A RankingSet from LightGBM-style ``X, y, group=sizes`` (or per-row ``qid``), with optional per-row
    display ``position`` (click data)."""
    X, names = _as_matrix(X, where)
    n = len(X)
    if y is None:
        raise LtrfeatError(f"{where}: labels y are missing", fix="call fit(X, y, group=sizes) or fit(ranking_set)")
    label = np.asarray(y, dtype=np.float64).reshape(-1)
    if len(label) != n:
        raise LtrfeatError(f"{where}: X has {n} rows but y has {len(label)} labels")
    if (group is None) == (qid is None):
        raise LtrfeatError(
            f"{where}: LambdaMART needs the query of every row",
            fix="pass group= (query sizes in row order, LightGBM's convention) or qid= (one id per row), not both",
        )
    if group is not None:
        sizes = np.asarray(group).reshape(-1)
        if (
            not (np.issubdtype(sizes.dtype, np.number) and (sizes == np.round(sizes)).all() and (sizes > 0).all())
            or int(sizes.sum()) != n
        ):
            raise LtrfeatError(
                f"{where}: group must hold positive query sizes summing to the {n} rows "
                f"(got {len(sizes)} sizes summing to {sizes.sum() if sizes.size else 0})",
                fix="group[i] = number of rows of the i-th query; rows of a query are contiguous",
            )
        ids = np.repeat(np.arange(len(sizes)), sizes.astype(np.int64)).astype(str).astype(object)
    else:
        ids = np.asarray(qid, dtype=object).reshape(-1)
        if len(ids) != n:
            raise LtrfeatError(f"{where}: X has {n} rows but qid has {len(ids)} ids")
        ids = np.array([str(q) for q in ids], dtype=object)
    try:
        fmap = (
            FeatureMap.dense(X.shape[1])
            if names is None
            else FeatureMap(Feature(j + 1, name) for j, name in enumerate(names))
        )
    except ValueError as exc:
        raise LtrfeatError(f"{where}: bad feature names ({exc})", fix="give the columns unique names") from None
    if position is not None and np.shape(position) != (n,):
        raise LtrfeatError(
            f"{where}: X has {n} rows but position has shape {np.shape(position)}",
            fix="give the 1-based display position of every row (clicks)",
        )
    try:
        return RankingSet(qid=ids, label=label, X=X, feature_map=fmap, position=position)
    except ValueError as exc:
        raise LtrfeatError(f"{where}: {exc}", fix="positions are whole numbers, 1 = top of the page") from None


def _engine_feature_names(feature_map: FeatureMap) -> list[str]:
    """Feature names for the engine: ours when both engines accept them, else ``f<id>``."""
    names = feature_map.names
    if all(re.fullmatch(r"[A-Za-z0-9_.\-]+", n) for n in names):
        return names
    return [f"f{i}" for i in feature_map.ids]


class LabelError(LtrfeatError):
    """Labels LambdaMART cannot train on; ``part`` is ``"train"`` or ``"valid"`` (the CLI adds the file)."""

    def __init__(self, problem: str, *, part: str, row: int, fix: str):
        self.part, self.row = part, row
        super().__init__(problem, fix=fix)


def _check_labels(label: np.ndarray, where: str) -> int:
    """Labels must be non-negative integers up to :data:`MAX_LABEL`; returns the largest."""
    bad = ~np.isfinite(label) | (label < 0) | (label != np.round(label))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise LabelError(
            f"{where} labels must be non-negative integer grades for lambdarank; "
            f"row {row + 1} has {float(label[row]):g}",
            part=where,
            row=row + 1,
            fix="map fractional or negative labels to integer grades first (e.g. the label mapping of the text tables)",
        )
    if label.max(initial=0) > MAX_LABEL:
        row = int(np.argmax(label))
        raise LabelError(
            f"{where} label {float(label[row]):g} at row {row + 1} is above {MAX_LABEL} "
            "(the gain 2^label-1 overflows a double)",
            part=where,
            row=row + 1,
            fix=f"map the labels to at most {MAX_LABEL + 1} grades (e.g. by rank or in bins)",
        )
    return int(label.max())


def _check_learnable(label: np.ndarray, sizes, where: str) -> None:
    """A ranker learns only from queries holding two documents of different grades: refuse data without one
    (it would train a constant model and report success)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    if len(label) and (np.maximum.reduceat(label, starts) != np.minimum.reduceat(label, starts)).any():
        return
    if len(sizes) and sizes.max() <= 1:
        reason = f"each of its {len(sizes)} queries has one document"
    elif len(label) and label.min() == label.max():
        reason = f"every label is {float(label[0]):g}"
    else:
        reason = "within each query all documents have the same label"
    raise LabelError(
        f"{where} data cannot train a ranker: {reason}, so no query ranks one document above another",
        part=where,
        row=1,
        fix="check the labels and the qid column (each query needs documents of different grades)",
    )


def _progress(total: int, verbose: bool, desc: str):
    return tqdm(total=total, desc=desc, unit="tree", disable=not show_progress(verbose), leave=False)


def _current_params(params: dict) -> dict:
    """A model file's recorded parameters as LambdaMART takes them: older files also hold ``verbose`` (now an
    argument of ``fit``) and ``deterministic`` (now LightGBM's own parameter, in ``params``)."""
    params = dict(params)
    params.pop("verbose", None)
    if params.pop("deterministic", True) is False:
        params["params"] = {"deterministic": False} | dict(params.get("params") or {})
    return params


class _LightGBM:
    """Parameters, training, prediction and (de)serialisation through LightGBM's own API."""

    @staticmethod
    def params(est: "LambdaMART", max_label: int, positioned: bool = False) -> dict:
        params = {
            "objective": "lambdarank",
            "metric": "ndcg",
            "eval_at": [est.eval_at],
            "learning_rate": est.learning_rate,
            "num_leaves": est.num_leaves,
            "seed": est.seed,
            "deterministic": True,
            "num_threads": est.n_jobs or 0,
            "verbosity": -1,
        }
        if (est.params or {}).get("deterministic", True):
            params["force_row_wise"] = True
        if max_label > LIGHTGBM_DEFAULT_MAX_LABEL:
            params["label_gain"] = [float(2.0**i - 1) for i in range(max_label + 1)]
        return params | (ENGINE_PARAMS["lightgbm"] if positioned else {}) | dict(est.params or {})

    @staticmethod
    def train(params, n_rounds, train, valid, names, early_stopping_rounds, bar, init=(None, None), position=None):
        def dataset(part, init_score, reference=None, position=None):
            X, y, groups = part
            return lgb.Dataset(
                X,
                label=y,
                group=groups,
                feature_name=names,
                reference=reference,
                init_score=init_score,
                position=position,
                free_raw_data=False,
            )

        dtrain = dataset(train, init[0], position=position)
        history: dict = {}

        def progress(env):
            bar.update(1)

        callbacks = [progress, lgb.record_evaluation(history)]
        valid_sets = []
        if valid is not None:
            valid_sets = [dataset(valid, init[1], reference=dtrain)]
            if early_stopping_rounds:
                callbacks.append(lgb.early_stopping(early_stopping_rounds, first_metric_only=True, verbose=False))
        booster = lgb.train(
            params,
            dtrain,
            num_boost_round=n_rounds,
            valid_sets=valid_sets,
            valid_names=["valid"][: len(valid_sets)],
            callbacks=callbacks,
        )
        # lgb.train keeps only the best trees after early stopping: count rounds from the history
        curve = next(iter(history["valid"].values())) if valid is not None else []
        best = booster.best_iteration or booster.current_iteration()
        return booster, best, len(curve) or booster.current_iteration(), list(curve)

    @staticmethod
    def predict(booster, X, n_trees, names):
        return booster.predict(X, num_iteration=n_trees)

    @staticmethod
    def contributions(booster, X, n_trees, names):
        return booster.predict(X, num_iteration=n_trees, pred_contrib=True)

    @staticmethod
    def importance(booster, n_trees, names) -> np.ndarray:
        return booster.feature_importance("gain", iteration=n_trees)

    @staticmethod
    def dump(booster, n_trees) -> bytes:
        return booster.model_to_string(num_iteration=n_trees).encode()

    @staticmethod
    def load(raw: bytes):
        with lightgbm_messages() as messages:  # a warning while loading our own file means it was changed
            booster = lgb.Booster(model_str=raw.decode())
        if messages:
            raise ValueError(messages[0])
        return booster


class _XGBoost:
    """The same operations through XGBoost's own API."""

    @staticmethod
    def params(est: "LambdaMART", max_label: int, positioned: bool = False) -> dict:
        # Leaf-wise growth with a leaf budget, like LightGBM, so num_leaves means the same.
        params = {
            "objective": "rank:ndcg",
            "eval_metric": f"ndcg@{est.eval_at}",
            "eta": est.learning_rate,
            "tree_method": "hist",
            "grow_policy": "lossguide",
            "max_leaves": est.num_leaves,
            "max_depth": 0,
            "seed": est.seed,
            "nthread": est.n_jobs or 0,
            "verbosity": 0,
        }
        if max_label > XGBOOST_EXP_GAIN_MAX_LABEL:
            warnings.warn(
                f"XGBoost's exponential NDCG gain accepts labels <= {XGBOOST_EXP_GAIN_MAX_LABEL}; "
                f"labels reach {max_label}, so training uses linear gain (ndcg_exp_gain=false)",
                stacklevel=4,
            )
            params["ndcg_exp_gain"] = False
        return params | (ENGINE_PARAMS["xgboost"] if positioned else {}) | dict(est.params or {})

    @staticmethod
    def train(params, n_rounds, train, valid, names, early_stopping_rounds, bar, init=(None, None), position=None):
        # lambdarank_unbiased reads positions from the row order (position_order sorted the rows)
        def dmatrix(part, base_margin):
            X, y, groups = part
            return xgb.DMatrix(X, label=y, group=groups, missing=np.nan, feature_names=names, base_margin=base_margin)

        class Progress(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                bar.update(1)
                return False

        history: dict = {}
        evals = [] if valid is None else [(dmatrix(valid, init[1]), "valid")]
        booster = xgb.train(
            params,
            dmatrix(train, init[0]),
            num_boost_round=n_rounds,
            evals=evals,
            early_stopping_rounds=(early_stopping_rounds or None) if evals else None,
            evals_result=history,
            verbose_eval=False,
            callbacks=[Progress()],
        )
        run = booster.num_boosted_rounds()
        best = booster.best_iteration + 1 if evals and early_stopping_rounds else run
        curve = next(iter(history["valid"].values())) if evals else []
        return booster, best, run, list(curve)

    @staticmethod
    def predict(booster, X, n_trees, names):
        data = xgb.DMatrix(X, missing=np.nan, feature_names=names)
        return booster.predict(data, iteration_range=(0, n_trees))

    @staticmethod
    def contributions(booster, X, n_trees, names):
        data = xgb.DMatrix(X, missing=np.nan, feature_names=names)
        return booster.predict(data, iteration_range=(0, n_trees), pred_contribs=True)

    @staticmethod
    def importance(booster, n_trees, names) -> np.ndarray:
        scores = booster[:n_trees].get_score(importance_type="total_gain")
        return np.array([scores.get(n, 0.0) for n in names])

    @staticmethod
    def dump(booster, n_trees) -> bytes:
        return bytes(booster[:n_trees].save_raw(raw_format="json"))

    @staticmethod
    def load(raw: bytes):
        booster = xgb.Booster()
        booster.load_model(bytearray(raw))
        return booster


_ENGINES: dict[str, Any] = {"lightgbm": _LightGBM, "xgboost": _XGBoost}
_TRAINER: ContextVar[Any] = ContextVar("trainer", default=None)


@contextmanager
def trained_by(trainer) -> Iterator[None]:
    """Within the block, :meth:`LambdaMART.fit` calls ``trainer`` instead of the engine's local training (same
    arguments and result as ``_LightGBM.train``), e.g. :func:`ltrfeat.rankers.dask_training.dask_trainer`."""
    token = _TRAINER.set(trainer)
    try:
        yield
    finally:
        _TRAINER.reset(token)


class LambdaMART(BaseEstimator):
    """LambdaMART ranker trained with LightGBM or XGBoost.

    Parameters
    ----------
    engine, n_estimators, learning_rate, num_leaves, early_stopping_rounds, eval_at, seed, n_jobs, params :
        the settings of a :class:`~ltrfeat.rankers.config.RankerConfig` (same names, defaults and checks, made
        when ``fit`` starts; see :meth:`from_config`). LightGBM trains with ``deterministic`` and
        ``force_row_wise`` on, so reruns give identical models; ``params={"deterministic": False}`` turns
        both off (XGBoost's CPU ``hist`` method is deterministic already).
    features : feature selection, e.g. ``"1-46,bm25_title"`` (ids, id ranges, names); None = all.

    Fitted attributes
    -----------------
    booster_ : the engine's booster. feature_map_ : features used, in column order.
    best_iteration_ : trees used for prediction. feature_importance_ : total gain by name.
    features_used_ : the features with gain (model selection's complexity).
    engine_params_ : the exact parameter dict given to the engine. metadata_ : what
    ``save`` writes beside the model.
    """

    # metadata routing (sklearn.set_config(enable_metadata_routing=True)): a search's fit(X, y, qid=...) reaches fit
    __metadata_request__fit = {"qid": True}

    def __init__(
        self,
        *,
        engine: str = "lightgbm",
        n_estimators: int = 500,
        learning_rate: float = 0.05,
        num_leaves: int = 31,
        early_stopping_rounds: int | None = 50,
        eval_at: int = 10,
        seed: int = 0,
        n_jobs: int | None = None,
        params: dict | None = None,
        features=None,
    ):
        self.engine = engine
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_at = eval_at
        self.seed = seed
        self.n_jobs = n_jobs
        self.params = params
        self.features = features

    @classmethod
    def from_config(cls, config: RankerConfig, *, features=None) -> "LambdaMART":
        """An unfitted LambdaMART with ``config``'s settings, on ``features`` (None: all)."""
        return cls(**config.to_dict(), features=features)

    # -- fitting -----------------------------------------------------------------------
    def _validate_params(self) -> None:
        RankerConfig(**{name: value for name, value in self.get_params().items() if name != "features"})

    @staticmethod
    def _grouped(data: RankingSet, where: str) -> tuple[RankingSet, bool]:
        if len(data) == 0:
            raise LtrfeatError(f"{where} data has no rows", fix="check the input file")
        if data.is_contiguous():
            return data, False
        warnings.warn(f"{where}: rows of a query are not contiguous; regrouped by qid (stable)", stacklevel=3)
        return data.regroup(), True

    def fit(
        self,
        X,
        y=None,
        *,
        group=None,
        qid=None,
        position=None,
        eval_set=None,
        eval_group=None,
        init_score=None,
        valid_init_score=None,
        verbose: bool = False,
    ) -> "LambdaMART":
        """Train; with validation data, early-stop on its NDCG@``eval_at``.

        Two calling conventions:

        * ``fit(train: RankingSet, valid: RankingSet | None = None)`` (positional: the second
          argument is the validation set);
        * scikit-learn / LightGBM: ``fit(X, y, group=sizes)`` or ``fit(X, y, qid=ids)``, with X a
          2-d numeric array or DataFrame (its string column names become the feature names, else
          ``f1..fn``), ``y`` integer grades, ``group`` the number of rows of each query in row order
          (LightGBM's convention) or ``qid`` one query id per row (regrouped when not contiguous);
          validation as ``eval_set=[(X_val, y_val)]`` with ``eval_group=[sizes]`` (or ``(X, y, qid)``
          triples). In a Pipeline: ``pipe.fit(pairs, y, ranker__qid=pairs["qid"])``.

        Click data: with display positions (``train.position``, or ``position=`` one 1-based position per row of
        ``X``) the labels are clicks and the engine's own unbiased lambdarank corrects for position bias (see
        :mod:`ltrfeat.rankers.positions`); ``metadata_["position_bias"]`` records how.

        ``init_score`` / ``valid_init_score`` (one float per row) are scores the trees boost from
        (LightGBM ``init_score``, XGBoost ``base_margin``); :meth:`predict` returns only the trees'
        part, so the caller adds its initial score back (see :class:`ltrfeat.rankers.single.BoostedFromFeature`).
        Inside :func:`trained_by` another trainer (e.g. a Dask cluster's) replaces the engine's local training call.
        ``verbose`` shows a tqdm progress bar on stderr (only when it is a terminal).
        """
        train, valid = X, y
        trainer = _TRAINER.get()
        if not isinstance(train, RankingSet):
            train, valid = self._arrays_to_rankings(train, valid, group, qid, eval_set, eval_group, position)
        elif any(a is not None for a in (group, qid, position, eval_set, eval_group)):
            raise LtrfeatError(
                "group, qid, position, eval_set and eval_group go with fit(X, y); a RankingSet carries its queries "
                "and positions",
                fix="call fit(train_set, valid_set) or fit(X, y, group=...)",
            )
        elif valid is not None and not isinstance(valid, RankingSet):
            raise LtrfeatError(
                f"valid must be a RankingSet, got {type(valid).__name__}",
                fix="with arrays call fit(X, y, group=sizes, eval_set=[(X_val, y_val)], eval_group=[...])",
            )
        self._validate_params()
        if (init_score is not None or valid_init_score is not None) and trainer is not None:
            raise LtrfeatError(
                "initial scores are not supported with a custom (e.g. Dask) trainer",
                fix="train locally, or boost from zero",
            )
        if (valid_init_score is not None) != (init_score is not None and valid is not None):
            raise LtrfeatError("give valid_init_score exactly when init_score and valid are given")
        engine = _ENGINES[self.engine]
        train, train_regrouped = self._grouped(train, "train")
        order = None
        if train.position is not None:
            if trainer is not None:
                raise LtrfeatError(
                    "position-debiased training (click data with positions) runs locally",
                    fix="leave out --dask, or train without the positions",
                )
            order = position_order(train, self.engine, "train")
            train = train.take(order)
        if train.weight is not None:
            warnings.warn(
                "train: row weights are ignored (the lambdarank objectives here are unweighted)", stacklevel=2
            )
        try:
            columns = sorted(train.feature_map.resolve(self.features), key=lambda j: train.feature_map.features[j].id)
        except KeyError as exc:
            raise LtrfeatError(
                f"feature selection {self.features!r}: {exc.args[0]}",
                fix="use ids, id ranges (1-46) or names present in the training data",
            ) from None
        if not columns and self.features is None:
            raise LtrfeatError(
                "the training data has no feature columns", fix="add features first (e.g. ltrfeat extract)"
            )
        if not columns:
            raise LtrfeatError(f"feature selection {self.features!r} selects no feature")
        self.feature_map_ = train.feature_map.select(columns)
        max_label = _check_labels(train.label, "train")
        _check_learnable(train.label, train.group_sizes(), "train")
        parts = {"train": (self._columns(train), train.label, train.group_sizes())}
        valid_regrouped = False
        if valid is not None:
            valid, valid_regrouped = self._grouped(valid, "valid")
            max_label = max(max_label, _check_labels(valid.label, "valid"))
            parts["valid"] = (self._columns(valid), valid.label, valid.group_sizes())

        self.engine_params_ = engine.params(self, max_label, positioned=order is not None)
        names = _engine_feature_names(self.feature_map_)
        with _progress(self.n_estimators, verbose, f"{self.engine} lambdarank") as bar:
            args = (
                self.engine_params_,
                self.n_estimators,
                parts["train"],
                parts.get("valid"),
                names,
                self.early_stopping_rounds,
                bar,
            )
            if self.engine == "lightgbm":
                check_lightgbm_params(self.engine_params_, len(self.feature_map_))
            try:
                if trainer is not None:
                    booster, best, run, curve = trainer(*args)
                elif init_score is None:
                    booster, best, run, curve = engine.train(*args, position=train.position)
                else:
                    init = (
                        self._row_scores(init_score, train, train_regrouped, "init_score", order),
                        None
                        if valid is None
                        else self._row_scores(valid_init_score, valid, valid_regrouped, "valid_init_score"),
                    )
                    booster, best, run, curve = engine.train(*args, init=init, position=train.position)
            except (lgb.basic.LightGBMError, xgb.core.XGBoostError) as exc:  # mostly bad --param values
                raise ParameterError(
                    f"{self.engine} refused to train: {engine_message(exc)}",
                    fix="check the --param names and values against the engine's documentation",
                ) from None
        self.booster_ = booster
        self.best_iteration_ = int(best)
        gains = engine.importance(booster, self.best_iteration_, names)
        order = np.argsort(-gains, kind="stable")
        self.feature_importance_ = {self.feature_map_.names[j]: float(gains[j]) for j in order}
        n_nan = int(np.isnan(parts["train"][0]).sum())
        self.metadata_ = self._metadata(train, valid, max_label, run, curve, n_nan, train_regrouped, valid_regrouped)
        return self

    @staticmethod
    def _row_scores(values, data: RankingSet, regrouped: bool, name: str, order=None) -> np.ndarray:
        """``values`` (one per row of the data as given) in the training row order (``order``: rows sorted by
        position for the engine)."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (len(data),) or not np.isfinite(values).all():
            raise LtrfeatError(
                f"{name} must hold one finite score per row ({len(data)} rows), got shape {values.shape}"
            )
        if regrouped:
            raise LtrfeatError(f"{name} needs rows of a query to be contiguous", fix="regroup the data first")
        return values if order is None else values[order]

    @staticmethod
    def _arrays_to_rankings(
        X, y, group, qid, eval_set, eval_group, position=None
    ) -> tuple[RankingSet, RankingSet | None]:
        train = _ranking_from_arrays(X, y, group, qid, "train", position)
        if eval_set is None:
            if eval_group is not None:
                raise LtrfeatError("eval_group without eval_set", fix="pass eval_set=[(X_val, y_val)] as well")
            return train, None
        sets = [eval_set] if isinstance(eval_set, tuple) else list(eval_set)
        if len(sets) != 1:
            raise LtrfeatError(
                f"eval_set holds {len(sets)} sets; early stopping uses exactly one",
                fix="pass eval_set=[(X_val, y_val)]",
            )
        groups = [None] if eval_group is None else ([eval_group] if np.ndim(eval_group[0]) == 0 else list(eval_group))
        part = tuple(sets[0])
        if len(part) == 3:  # (X, y, qid)
            return train, _ranking_from_arrays(part[0], part[1], None, part[2], "valid")
        if len(part) != 2 or len(groups) != 1:
            raise LtrfeatError("eval_set takes [(X_val, y_val)] with eval_group=[sizes], or [(X_val, y_val, qid_val)]")
        valid = _ranking_from_arrays(part[0], part[1], groups[0], None, "valid")
        if valid.n_features != train.n_features:
            raise LtrfeatError(f"valid has {valid.n_features} features, train {train.n_features}")
        return train, dataclasses.replace(valid, feature_map=train.feature_map)

    def _metadata(self, train, valid, max_label, run, curve, n_nan, train_regrouped, valid_regrouped) -> dict:
        if self.engine_params_.get("ndcg_exp_gain") is False:
            gain = "label (linear: XGBoost ndcg_exp_gain=false)"
        elif "label_gain" in self.engine_params_:
            gain = "LightGBM label_gain from engine_params (set to 2^label-1 up to max_label)"
        else:
            gain = "2^label-1 (engine default)"
        training = {
            "train_hash": train.content_hash(),
            "train_rows": len(train),
            "train_queries": int(len(train.group_sizes())),
            "train_regrouped": train_regrouped,
            "iterations_run": int(run),
            "best_iteration": self.best_iteration_,
        }
        if valid is not None:
            training |= {
                "valid_hash": valid.content_hash(),
                "valid_rows": len(valid),
                "valid_queries": int(len(valid.group_sizes())),
                "valid_regrouped": valid_regrouped,
                "early_stopping_rounds": self.early_stopping_rounds,
                "stopped_early": bool(run < self.n_estimators),
                "best_valid_score": {f"ndcg@{self.eval_at}": float(curve[self.best_iteration_ - 1])},
            }
        position_bias = (
            {}
            if train.position is None
            else {"position_bias": position_record(train, self.engine, self.engine_params_)}
        )
        return {
            "format": META_FORMAT,
            "engine": self.engine,
            "params": self.get_params(),
            "engine_params": self.engine_params_,
            "features": self.feature_map_.to_json(),
            "engine_feature_names": _engine_feature_names(self.feature_map_),
            "labels": {"mapping": "identity (integer grades)", "max_label": max_label, "gain": gain},
            "missing_values": {"policy": MISSING_POLICY, "train_nan_cells": n_nan},
            "training": training,
            "feature_importance_gain": self.feature_importance_,
            "versions": library_versions(self.engine, "numpy", "scikit-learn"),
        } | position_bias

    # -- prediction --------------------------------------------------------------------
    def _selected(self, data: RankingSet) -> list[int]:
        """Columns of ``data`` holding the model's features (matched by name), in model order."""
        available = {name: j for j, name in enumerate(data.feature_map.names)}
        missing = [f for f in self.feature_map_ if f.name not in available]
        if missing:
            shown = ", ".join(f"{f.id}:{f.name}" for f in missing[:5])
            raise ModelFileError(
                f"the data lacks {len(missing)} of the model's {len(self.feature_map_)} features ({shown}"
                f"{', ...' if len(missing) > 5 else ''}); it has {data.feature_map!r}",
                fix="use a file with the same features (and its .features.json sidecar) as the training data",
            )
        return [available[f.name] for f in self.feature_map_]

    def _columns(self, data: RankingSet) -> np.ndarray:
        """The model's feature matrix from ``data`` (no copy when the columns already match)."""
        selected = self._selected(data)
        return data.X if selected == list(range(data.n_features)) else data.X[:, selected]

    def predict(self, data) -> np.ndarray:
        """Scores (float64), one per row of ``data`` in its row order.

        ``data`` is a RankingSet (columns matched by feature name), a DataFrame (columns matched by
        name when it has every model feature, else by position) or a 2-d array whose columns are the
        model's features in order (``feature_map_.names``). Queries play no part in prediction.
        """
        return self._engine_call("predict", data)

    def contributions(self, data) -> Contributions:
        """The engine's exact TreeSHAP values of ``data``'s rows (taken as :meth:`predict` takes them): one
        column per model feature plus the bias, adding up to :meth:`predict` (see
        :mod:`ltrfeat.rankers.contributions`)."""
        out = self._engine_call("contributions", data)
        return Contributions(self.feature_map_.names, out[:, :-1], out[:, -1])

    def _engine_call(self, method: str, data) -> np.ndarray:
        if not hasattr(self, "booster_"):
            raise RankerNotFittedError("this LambdaMART is not fitted", fix="call fit() or LambdaMART.load() first")
        X = self._columns(data) if isinstance(data, RankingSet) else self._matrix(data)
        names = _engine_feature_names(self.feature_map_)
        out = getattr(_ENGINES[self.engine], method)(self.booster_, X, self.best_iteration_, names)
        return np.asarray(out, dtype=np.float64)

    def _matrix(self, X) -> np.ndarray:
        """The model's columns of an array or DataFrame given to :meth:`predict`."""
        matrix, names = _as_matrix(X, "predict")
        model = self.feature_map_.names
        if names is not None and set(model) <= set(names):
            return matrix[:, [names.index(n) for n in model]]
        if matrix.shape[1] != len(model):
            shown = ", ".join(model[:5]) + (", ..." if len(model) > 5 else "")
            raise ModelFileError(
                f"X has {matrix.shape[1]} columns but the model has {len(model)} features ({shown})",
                fix="pass the model's features in order (feature_map_.names), or a DataFrame with those column names",
            )
        return matrix

    def describe(self) -> dict:
        """What the fit chose, for reports."""
        return {"best_iteration": self.best_iteration_}

    @property
    def features_used_(self) -> tuple[str, ...]:
        """The features some tree splits on (gain > 0), highest gain first: what the model's complexity counts."""
        return tuple(name for name, gain in self.feature_importance_.items() if gain > 0)

    # -- persistence -------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the native model to ``path`` and the metadata to ``<path>.meta.json``."""
        if not hasattr(self, "booster_"):
            raise RankerNotFittedError("this LambdaMART is not fitted", fix="call fit() before save()")
        write_model_files(path, self.booster_dump(), self.metadata_)

    def booster_dump(self) -> bytes:
        """The engine's native model bytes, holding exactly the trees used for prediction."""
        return _ENGINES[self.engine].dump(self.booster_, self.best_iteration_)

    @classmethod
    def load(cls, path, *, kind: str | None = None) -> "LambdaMART":
        """Load a model written by :meth:`save` (never unpickles). ``kind``: the ranker kind the metadata
        must name (``boost-best`` models hold LambdaMART trees too); None: a plain LambdaMART kind
        (:data:`PLAIN_KINDS`). :func:`ltrfeat.rankers.models.load_ranker` loads every kind."""
        path = Path(path)
        mpath = meta_path(path)
        for p in (path, mpath):
            if not p.is_file():
                raise ModelFileError(
                    "file not found",
                    path=p,
                    fix="give the model file written by train-ranker; its .meta.json must sit beside it",
                )
        try:
            meta = json.loads(mpath.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise ModelFileError("metadata is not UTF-8 text", path=mpath, fix="re-run train-ranker") from None
        except json.JSONDecodeError as exc:
            raise ModelFileError(
                f"metadata is not valid JSON ({exc.msg})", path=mpath, line=exc.lineno, fix="re-run train-ranker"
            ) from None
        if not isinstance(meta, dict) or meta.get("format") != META_FORMAT or meta.get("engine") not in ENGINES:
            raise ModelFileError(
                f"not ltrfeat ranker metadata (expected format {META_FORMAT})",
                path=mpath,
                fix="give the model file written by ltrfeat train-ranker",
            )
        found = meta.get("kind", "lambdamart")
        if found not in ((kind,) if kind is not None else PLAIN_KINDS):
            raise ModelFileError(
                f"this is a {found!r} ranker, not a plain LambdaMART",
                path=mpath,
                fix="load it with ltrfeat.load_ranker (ltrfeat.rankers.models), which reads every kind",
            )
        raw = path.read_bytes()
        if hashlib.sha256(raw).hexdigest() != meta.get("model_sha256"):
            raise ModelFileError(
                "model file does not match its metadata (SHA-256 differs)",
                path=path,
                fix=f"keep {path.name} and {mpath.name} from the same train-ranker run",
            )
        try:
            names = [str(n) for n in meta["engine_feature_names"]]
            best = int(meta["training"]["best_iteration"])
        except (KeyError, TypeError, ValueError):
            raise ModelFileError(
                "metadata lacks engine_feature_names or best_iteration", path=mpath, fix="re-run train-ranker"
            ) from None
        check_model(meta["engine"], raw, feature_names=names, min_trees=best, path=path)  # before native code
        try:
            model = cls(**_current_params(meta["params"]))
            model.booster_ = _ENGINES[meta["engine"]].load(raw)
            model.feature_map_ = FeatureMap.from_json(meta["features"], path=mpath)
            model.best_iteration_ = int(meta["training"]["best_iteration"])
            model.engine_params_ = meta["engine_params"]
            model.feature_importance_ = dict(meta["feature_importance_gain"])
        except (KeyError, TypeError, ValueError, lgb.basic.LightGBMError, xgb.core.XGBoostError) as exc:
            raise ModelFileError(
                f"cannot load model ({type(exc).__name__}: {engine_message(exc)})", path=path, fix="re-run train-ranker"
            ) from None
        model.metadata_ = {k: v for k, v in meta.items() if k not in ("model_file", "model_sha256")}
        return model
