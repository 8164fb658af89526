"""LambdaMART training and ablation runs on a Dask cluster.

Training (:func:`fit_dask`) goes through the engines' own Dask interfaces — LightGBM's
``DaskLGBMRanker`` (data-parallel tree learner) and ``xgboost.dask.train`` with ``qid`` — on
partitions cut only between queries, each sent to the cluster once (``client.scatter``).
:class:`~ltrfeat.rankers.lambdamart.LambdaMART` does everything else (feature selection, label checks,
metadata), so the saved model has exactly the format of local training.

LightGBM's Dask interface has no early stopping, so all ``n_estimators`` trees are trained and
the best iteration is chosen afterwards on the client by the rule LightGBM's early stopping
applies (the first maximum of validation NDCG@k before ``early_stopping_rounds`` rounds
without improvement), with the NDCG LightGBM computes (gain ``label_gain``, queries without
a relevant document count 1). XGBoost's Dask training early-stops itself.

:class:`DaskExecutor` runs an ablation's (fold, feature set, seed) runs as Dask tasks
(:func:`ltrfeat.experiments.ablation.run_ablation` ``executor=``), shipping each fold once.
"""

from __future__ import annotations

import warnings

import numpy as np

from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.dask_cluster import worker_addresses
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.rankers.lambdamart import LambdaMART, trained_by

_SCALARS = (str, bytes, int, float, bool, type(None))


def query_partitions(groups, n_parts: int) -> list[tuple[int, int, int, int]]:
    """``(row_start, row_end, group_start, group_end)`` of at most ``n_parts`` contiguous
    partitions of about equal rows, cut only between queries (``groups``: rows per query)."""
    groups = np.asarray(groups, dtype=np.int64)
    ends = np.cumsum(groups)
    n_parts = max(1, min(int(n_parts), len(groups)))
    targets = ends[-1] * np.arange(1, n_parts) / n_parts
    cuts = (
        np.unique(np.clip(np.searchsorted(ends, targets) + 1, 1, len(groups) - 1)) if n_parts > 1 else np.array([], int)
    )
    group_bounds = [0, *map(int, cuts), len(groups)]
    row_bounds = np.concatenate([[0], ends])[group_bounds]
    return [
        (int(row_bounds[i]), int(row_bounds[i + 1]), group_bounds[i], group_bounds[i + 1])
        for i in range(len(group_bounds) - 1)
    ]


def _workers(client) -> int:
    return max(1, len(worker_addresses(client)))


class _Partitioned:
    """One data part (X, y, groups) scattered to the cluster as query-aligned dask arrays."""

    def __init__(self, client, part, n_parts: int):
        import dask.array as da

        X, y, groups = part
        bounds = query_partitions(groups, n_parts)
        qid = np.repeat(np.arange(len(groups), dtype=np.int64), groups)

        # part i always goes to the i-th worker (by address), so a rerun trains the same machines on
        # the same rows: LightGBM's distributed bins depend on each machine's local data
        workers = worker_addresses(client)

        def collection(pieces):
            futures = [client.scatter(p, workers=[workers[i % len(workers)]], hash=False) for i, p in enumerate(pieces)]
            return da.concatenate([da.from_delayed(f, shape=p.shape, dtype=p.dtype) for f, p in zip(futures, pieces)])

        self.X = collection([np.ascontiguousarray(X[a:b]) for a, b, _, _ in bounds])
        self.y = collection([np.asarray(y[a:b], dtype=np.float64) for a, b, _, _ in bounds])
        self.group = collection([np.asarray(groups[g0:g1], dtype=np.int64) for _, _, g0, g1 in bounds])
        self.qid = collection([qid[a:b] for a, b, _, _ in bounds])
        self.n_parts = len(bounds)


def _lightgbm_ndcg_curve(booster, part, n_trees: int, k: int, label_gain) -> list[float]:
    """Validation NDCG@k after each tree, as LightGBM's ``ndcg`` metric computes it."""
    X, y, groups = part
    offsets = np.concatenate([[0], np.cumsum(groups)])
    width = int(groups.max())
    slot = np.arange(len(y)) - np.repeat(offsets[:-1], groups)
    rowq = np.repeat(np.arange(len(groups)), groups)
    gain_table = np.asarray(label_gain, dtype=np.float64) if label_gain is not None else None
    gains = np.zeros((len(groups), width))
    gains[rowq, slot] = gain_table[y.astype(np.int64)] if gain_table is not None else 2.0**y - 1
    discount = 1.0 / np.log2(np.arange(2, width + 2))
    discount[k:] = 0.0
    ideal = -np.sort(-gains, axis=1) @ discount
    has_relevant = ideal > 0
    scores = np.full((len(groups), width), -np.inf)
    raw = np.zeros(len(y))
    curve = []
    for tree in range(n_trees):
        raw += booster.predict(X, start_iteration=tree, num_iteration=1, raw_score=True)
        scores[rowq, slot] = raw
        order = np.argsort(-scores, axis=1, kind="stable")
        dcg = np.take_along_axis(gains, order, axis=1) @ discount
        curve.append(float(np.where(has_relevant, dcg / np.where(has_relevant, ideal, 1.0), 1.0).mean()))
    return curve


def best_iteration(curve, early_stopping_rounds: int | None) -> int:
    """1-based iteration LightGBM's early stopping would keep for a validation ``curve``
    (higher is better); the whole curve without ``early_stopping_rounds``."""
    if not early_stopping_rounds:
        return len(curve)
    best, best_i = -np.inf, 0
    for i, value in enumerate(curve):
        if value > best:
            best, best_i = value, i
        elif i - best_i >= early_stopping_rounds:
            break
    return best_i + 1


class _LightGBMTrainer:
    """``DaskLGBMRanker`` with the arguments and result of ``ltrfeat.rankers._lightgbm_engine._LightGBM.train``."""

    def __init__(self, client, n_partitions: int, workers: int):
        # workers: what the training was planned on (a worker restarting afterwards does not change it)
        self.client, self.n_partitions, self.workers = client, n_partitions, workers

    def __call__(self, params, n_rounds, train, valid, names, early_stopping_rounds, bar):
        from lightgbm.dask import DaskLGBMRanker

        data = _Partitioned(self.client, train, self.n_partitions)
        # num_threads comes from each worker's thread count; the metric is computed afterwards
        kwargs = {k: v for k, v in params.items() if k not in ("num_threads", "metric", "eval_at")}
        ranker = DaskLGBMRanker(client=self.client, n_estimators=n_rounds, **kwargs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
            ranker.fit(data.X, data.y, group=data.group, feature_name=names)
        booster = ranker.booster_
        bar.update(n_rounds)
        if valid is None:
            return booster, n_rounds, n_rounds, []
        curve = _lightgbm_ndcg_curve(
            booster, valid, booster.current_iteration(), params["eval_at"][0], params.get("label_gain")
        )
        return booster, best_iteration(curve, early_stopping_rounds), booster.current_iteration(), curve


class _XGBoostTrainer:
    """``xgboost.dask.train`` with the arguments and result of ``ltrfeat.rankers._xgboost_engine._XGBoost.train``."""

    def __init__(self, client, n_partitions: int, workers: int):
        # workers: what the training was planned on (a worker restarting afterwards does not change it)
        self.client, self.n_partitions, self.workers = client, n_partitions, workers

    def __call__(self, params, n_rounds, train, valid, names, early_stopping_rounds, bar):
        import xgboost.dask as dxgb

        def matrix(part):
            data = _Partitioned(self.client, part, self.n_partitions)
            return dxgb.DaskDMatrix(self.client, data.X, data.y, qid=data.qid, missing=np.nan, feature_names=names)

        evals = [] if valid is None else [(matrix(valid), "valid")]
        params = {k: v for k, v in params.items() if k != "nthread"}  # each worker uses its own threads
        out = dxgb.train(
            self.client,
            params,
            matrix(train),
            num_boost_round=n_rounds,
            evals=evals,
            early_stopping_rounds=(early_stopping_rounds or None) if evals else None,
            verbose_eval=False,
        )
        booster = out["booster"]
        run = booster.num_boosted_rounds()
        bar.update(run)
        best = booster.best_iteration + 1 if evals and early_stopping_rounds else run
        curve = list(next(iter(out["history"]["valid"].values()))) if evals else []
        return booster, best, run, curve


def dask_trainer(client, engine: str, *, n_partitions: int | None = None):
    """The ``trainer`` for :meth:`LambdaMART.fit` that trains ``engine`` on the cluster of
    ``client``, with ``n_partitions`` query-aligned partitions (default: one per worker)."""
    trainers = {"lightgbm": _LightGBMTrainer, "xgboost": _XGBoostTrainer}
    if engine not in trainers:
        raise LtrfeatError(f"unknown engine {engine!r}", fix=f"use one of {', '.join(trainers)}")
    workers = _workers(client)
    return trainers[engine](client, n_partitions or workers, workers)


def fit_dask(
    model: LambdaMART,
    train: RankingSet,
    valid: RankingSet | None = None,
    *,
    client,
    n_partitions: int | None = None,
    verbose: bool = False,
) -> LambdaMART:
    """Fit ``model`` on a Dask cluster; it is then saved, loaded and used exactly like a local one.

    ``n_partitions`` query-aligned partitions (default one per worker) are scattered once;
    ``model.n_jobs`` is ignored (each worker uses its own threads); ``verbose`` as for ``fit``. The metadata
    records ``training.distributed`` (engine interface, workers, partitions, how the best iteration was chosen).
    """
    trainer = dask_trainer(client, model.engine, n_partitions=n_partitions)
    with trained_by(trainer):
        model.fit(train, valid, verbose=verbose)
    how = (
        "xgboost.dask.train early stopping"
        if model.engine == "xgboost"
        else "all rounds trained (lightgbm.dask has no early stopping); best iteration chosen afterwards on the "
        "validation NDCG by LightGBM's early-stopping rule"
    )
    model.metadata_["training"]["distributed"] = {
        "interface": "lightgbm.dask.DaskLGBMRanker" if model.engine == "lightgbm" else "xgboost.dask.train",
        "workers": trainer.workers,
        "partitions": trainer.n_partitions,
        "best_iteration": how if valid is not None else "all rounds (no validation data)",
    }
    return model


class DaskExecutor:
    """``map`` over a Dask cluster in the manner of ``concurrent.futures.Executor.map``.

    Every distinct argument object that is not a plain scalar (an ablation's folds and feature
    sets) is sent to the cluster once and shared by the tasks that use it. Tasks are submitted
    at once; results are yielded in order. A task whose worker dies is rescheduled by Dask;
    ``retries`` re-runs a task that raised.
    """

    def __init__(self, client, *, retries: int = 1):
        self.client = client
        self.retries = retries

    def map(self, fn, *iterables):
        columns = [list(column) for column in iterables]
        shared = {id(v): v for column in columns for v in column if not isinstance(v, _SCALARS)}
        futures = dict(zip(shared, self.client.scatter(list(shared.values()), hash=False))) if shared else {}
        args = [[v if isinstance(v, _SCALARS) else futures[id(v)] for v in column] for column in columns]
        tasks = self.client.map(fn, *args, pure=False, retries=self.retries)
        return self._results(tasks, list(futures.values()))

    @staticmethod
    def _results(tasks, shared):
        try:
            for task in tasks:
                yield task.result()
        finally:
            for future in tasks + shared:
                future.cancel()
