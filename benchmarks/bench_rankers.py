"""Wrapper overhead: ``LambdaMART(engine="lightgbm")`` vs raw ``lightgbm.train`` on the same data.

Generates an MSLR-sized set (default 300,000 rows = 3,000 queries x 100 documents, 136
features, labels 0-4), then alternates wrapper and raw runs with identical parameters
(the wrapper's ``engine_params_``) and reports median times and the overhead ratio.
Target: wrapper training time <= 1.05 x raw. Because whole-fit times swing with machine
load, it also times the wrapper's own work (fit time spent outside ``lightgbm.train``)
as a share of the raw fit. Prediction is timed the same way.

    python benchmarks/bench_rankers.py [--rows 300000] [--rounds 100] [--repeats 3] [--threads N]

Writes ``benchmarks/results/bench_rankers.json``. On a shared, loaded machine prefer
``--threads 1``: OpenMP threads that outnumber free cores make both sides erratic.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402
from ltrfeat.core.dataset import FeatureMap, RankingSet  # noqa: E402
from ltrfeat.rankers.lambdamart import LambdaMART  # noqa: E402


def generate(rows: int, n_features: int, docs_per_query: int, seed: int = 0) -> RankingSet:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, n_features)).astype(np.float32)
    weights = rng.normal(size=8)
    signal = X[:, :8] @ weights + rng.normal(scale=2.0, size=rows)
    label = np.digitize(signal, np.quantile(signal, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    qid = np.repeat(np.arange(rows // docs_per_query + 1).astype(str), docs_per_query)[:rows]
    return RankingSet(qid.astype(object), label, X, FeatureMap.dense(n_features))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--docs-per-query", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()

    data = generate(args.rows, args.features, args.docs_per_query)
    print(
        f"data: {len(data)} rows, {data.n_queries} queries, {data.n_features} features; "
        f"{args.rounds} rounds, {args.threads} threads, {args.repeats} repeats (alternating)"
    )

    inside = []  # seconds the wrapper spent inside lightgbm.train: the rest is its own overhead
    real_train = lgb.train

    def timed_train(*a, **kw):
        t = time.perf_counter()
        booster = real_train(*a, **kw)
        inside.append(time.perf_counter() - t)
        return booster

    def wrapper():
        lgb.train = timed_train
        try:
            t = time.perf_counter()
            model = LambdaMART(n_estimators=args.rounds, n_jobs=args.threads, early_stopping_rounds=None).fit(data)
            return time.perf_counter() - t, model
        finally:
            lgb.train = real_train

    def raw(params):
        t = time.perf_counter()
        booster = lgb.train(
            params, lgb.Dataset(data.X, data.label, group=data.group_sizes()), num_boost_round=args.rounds
        )
        return time.perf_counter() - t, booster

    fit_w, fit_r, pred_w, pred_r = [], [], [], []
    for repeat in range(args.repeats):
        # alternate which side runs first, so warm-up and drifting load hit both sides
        if repeat % 2 == 0:
            tw, model = wrapper()
            tr, booster = raw(model.engine_params_)
        else:
            tr, booster = raw(model.engine_params_)
            tw, model = wrapper()
        fit_w.append(tw)
        fit_r.append(tr)
        t = time.perf_counter()
        scores_w = model.predict(data)
        pred_w.append(time.perf_counter() - t)
        t = time.perf_counter()
        scores_r = booster.predict(data.X)
        pred_r.append(time.perf_counter() - t)
        if not np.array_equal(scores_w, scores_r):
            raise SystemExit("wrapper and raw LightGBM predictions differ")

    fw, fr = statistics.median(fit_w), statistics.median(fit_r)
    own = statistics.median(w - i for w, i in zip(fit_w, inside))
    pw, pr = statistics.median(pred_w), statistics.median(pred_r)
    figures = {
        "config": vars(args),
        "fit_wrapper_median_s": fw,
        "fit_raw_median_s": fr,
        "fit_ratio_median": fw / fr,
        "fit_ratio_best": min(fit_w) / min(fit_r),
        "wrapper_own_s": own,
        "wrapper_own_over_raw_fit": own / fr,
        "predict_wrapper_median_s": pw,
        "predict_raw_median_s": pr,
        "predict_ratio_median": pw / pr,
        "fit_wrapper_runs_s": fit_w,
        "fit_raw_runs_s": fit_r,
        "identical_predictions": True,
        "lightgbm_threads": args.threads,
        "lightgbm": lgb.__version__,
    }
    print(
        f"fit      wrapper {fw:8.2f} s   raw lightgbm.train  {fr:8.2f} s   ratio {fw / fr:.3f} median, "
        f"{figures['fit_ratio_best']:.3f} best-of-{args.repeats} (target <= 1.05)"
    )
    print(
        f"wrapper's own work (fit time outside lightgbm.train) {own:.3f} s = {100 * own / fr:.2f} % of raw fit "
        f"(the load-independent overhead figure)"
    )
    print(f"predict  wrapper {pw:8.3f} s   raw Booster.predict {pr:8.3f} s   ratio {pw / pr:.3f}")
    print(f"runs (s): wrapper {[round(x, 2) for x in fit_w]}  raw {[round(x, 2) for x in fit_r]}")
    print(f"wrote {write_results('bench_rankers', figures)}")


if __name__ == "__main__":
    main()
