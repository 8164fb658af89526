"""LambdaMART through XGBoost's own API: the operations of the LightGBM engine, with the same names."""

from __future__ import annotations

import warnings

import numpy as np
import xgboost as xgb

from ltrfeat.rankers.positions import ENGINE_PARAMS

XGBOOST_EXP_GAIN_MAX_LABEL = 31  # XGBoost's exponential NDCG gain accepts labels <= 31


class _XGBoost:
    """The same operations through XGBoost's own API."""

    @staticmethod
    def params(est, max_label: int, positioned: bool = False) -> dict:
        """The engine's parameters from ``est``'s settings (a LambdaMART or a RankerConfig: the same names)."""
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
