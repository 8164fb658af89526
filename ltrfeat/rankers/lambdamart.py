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

Each engine's calls are in its own module (:mod:`~ltrfeat.rankers._lightgbm_engine`,
:mod:`~ltrfeat.rankers._xgboost_engine`), the checks of what ``fit`` is given in :mod:`~ltrfeat.rankers._fit_inputs`.
"""

from __future__ import annotations

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

from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, ModelFileError, ParameterError
from ltrfeat.core.fileio import atomic_output
from ltrfeat.core.logs import show_progress
from ltrfeat.core.versions import library_versions
from ltrfeat.rankers._fit_inputs import (
    MAX_LABEL,
    LabelError,
    _as_matrix,
    check_labels,
    _check_learnable,
    _given_sets,
)
from ltrfeat.rankers._lightgbm_engine import LIGHTGBM_DEFAULT_MAX_LABEL, _LightGBM
from ltrfeat.rankers._xgboost_engine import XGBOOST_EXP_GAIN_MAX_LABEL, _XGBoost
from ltrfeat.rankers.choices import ENGINES, META_FORMAT
from ltrfeat.rankers.config import RankerConfig
from ltrfeat.rankers.contributions import Contributions
from ltrfeat.rankers.model_check import check_lightgbm_params, check_model, engine_message
from ltrfeat.rankers.positions import position_order, position_record

__all__ = [
    "LIGHTGBM_DEFAULT_MAX_LABEL",
    "MAX_LABEL",
    "MISSING_POLICY",
    "PLAIN_KINDS",
    "XGBOOST_EXP_GAIN_MAX_LABEL",
    "LabelError",
    "LambdaMART",
    "RankerNotFittedError",
    "check_labels",
    "meta_path",
    "trained_by",
    "write_model_files",
]

# metadata kinds of models that are nothing but LambdaMART trees ("lambdamart": files written before kinds
# took the candidate names)
PLAIN_KINDS = ("lambdamart", *ENGINES, *(f"{e}-tuned" for e in ENGINES))
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


def _engine_feature_names(feature_map: FeatureMap) -> list[str]:
    """Feature names for the engine: ours when both engines accept them, else ``f<id>``."""
    names = feature_map.names
    if all(re.fullmatch(r"[A-Za-z0-9_.\-]+", n) for n in names):
        return names
    return [f"f{i}" for i in feature_map.ids]


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
        trainer = _TRAINER.get()
        train, valid = _given_sets(X, y, group, qid, position, eval_set, eval_group)
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
        self.feature_map_ = train.feature_map.select(self._feature_columns(train))
        max_label = check_labels(train.label, "train")
        _check_learnable(train.label, train.group_sizes(), "train")
        parts = {"train": (self._columns(train), train.label, train.group_sizes())}
        valid_regrouped = False
        if valid is not None:
            valid, valid_regrouped = self._grouped(valid, "valid")
            max_label = max(max_label, check_labels(valid.label, "valid"))
            parts["valid"] = (self._columns(valid), valid.label, valid.group_sizes())

        self.engine_params_ = engine.params(self, max_label, positioned=order is not None)
        if self.engine == "lightgbm":
            check_lightgbm_params(self.engine_params_, len(self.feature_map_))
        init = None
        if init_score is not None:
            init = (
                self._row_scores(init_score, train, train_regrouped, "init_score", order),
                None
                if valid is None
                else self._row_scores(valid_init_score, valid, valid_regrouped, "valid_init_score"),
            )
        names = _engine_feature_names(self.feature_map_)
        booster, best, run, curve = self._boost(parts, names, trainer, init, train.position, verbose)
        self.booster_ = booster
        self.best_iteration_ = int(best)
        gains = engine.importance(booster, self.best_iteration_, names)
        order = np.argsort(-gains, kind="stable")
        self.feature_importance_ = {self.feature_map_.names[j]: float(gains[j]) for j in order}
        n_nan = int(np.isnan(parts["train"][0]).sum())
        self.metadata_ = self._metadata(train, valid, max_label, run, curve, n_nan, train_regrouped, valid_regrouped)
        return self

    def _feature_columns(self, train: RankingSet) -> list[int]:
        """The columns of ``train`` that ``features`` selects, in feature-id order."""
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
        return columns

    def _boost(self, parts: dict, names: list[str], trainer, init, position, verbose: bool) -> tuple:
        """``(booster, best iteration, iterations run, validation curve)`` from the engine's training (``trainer``'s
        inside :func:`trained_by`), boosting from ``init`` (train and valid scores) when given; parameters the
        engine refuses are a :class:`ParameterError`."""
        engine = _ENGINES[self.engine]
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
            try:
                if trainer is not None:
                    return trainer(*args)
                if init is None:
                    return engine.train(*args, position=position)
                return engine.train(*args, init=init, position=position)
            except (lgb.basic.LightGBMError, xgb.core.XGBoostError) as exc:  # mostly bad --param values
                raise ParameterError(
                    f"{self.engine} refused to train: {engine_message(exc)}",
                    fix="check the --param names and values against the engine's documentation",
                ) from None

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
