"""LambdaMART through LightGBM's own API: parameters, training, prediction and (de)serialisation."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np

from ltrfeat.rankers.model_check import lightgbm_messages
from ltrfeat.rankers.positions import ENGINE_PARAMS

LIGHTGBM_DEFAULT_MAX_LABEL = 30  # LightGBM's default label_gain covers labels 0..30


class _LightGBM:
    """Parameters, training, prediction and (de)serialisation through LightGBM's own API."""

    @staticmethod
    def params(est, max_label: int, positioned: bool = False) -> dict:
        """The engine's parameters from ``est``'s settings (a LambdaMART or a RankerConfig: the same names)."""
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
