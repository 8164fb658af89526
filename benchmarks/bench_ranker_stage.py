"""The ablation's ranker stage alone, in this process, on a generated feature world shaped like the 10k-pair bench's
(3 folds, 9 lexical + 5 neural columns, 7 ranker sets and the alone sets, default model selection, 3 seeds): its CPU
seconds, a digest of the per-query table (equal digests = the same report numbers, so two checkouts can be
compared run for run), and how much of 2 workers' time a stage of these runs would leave idle at its end.

No encoders are trained: the neural columns are noisy copies of the relevance signal, so the run isolates the
ranker code. ``--twin`` makes the fourth neural column an exact copy of the third, as on the 10k bench, where
``sbert-ft`` keeps its zero-shot start in every fold and scores exactly as ``sbert``. ``--profile FILE`` writes a
cProfile of the stage.

Run: python benchmarks/bench_ranker_stage.py [--queries 400] [--twin] [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import heapq
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import write_results  # noqa: E402
from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet  # noqa: E402
from ltrfeat.experiments.ablate import SUBSAMPLE  # noqa: E402
from ltrfeat.experiments.ablation import AblationConfig, run_ablation  # noqa: E402
from ltrfeat.experiments.folds import Fold  # noqa: E402
from ltrfeat.experiments.feature_sets import plan_feature_sets  # noqa: E402
from ltrfeat.rankers.selection import SelectionConfig  # noqa: E402


def world(n_queries: int, seed: int = 5, *, twin: bool = False) -> tuple[list[Fold], list]:
    """3 folds (train, valid = a fifth of the training queries, test) and the ablation's feature sets (``twin``:
    ``enc3_doc_cos`` equal to ``enc2_doc_cos``)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(20, 31, n_queries)
    queries = np.array([f"q{i}" for i in range(n_queries)], dtype=object)
    qid = np.repeat(queries, sizes)
    signal = rng.normal(size=len(qid))
    label = np.clip(np.round(signal + rng.normal(scale=0.7, size=len(qid)) + 1), 0, 3)
    names = [f"lex{j}" for j in range(8)] + ["bm25_title"] + [f"enc{k}_doc_cos" for k in range(5)]
    noise = np.linspace(0.8, 3.0, len(names))
    X = np.column_stack([signal + rng.normal(scale=s, size=len(qid)) for s in noise]).astype(np.float32)
    if twin:
        X[:, names.index("enc3_doc_cos")] = X[:, names.index("enc2_doc_cos")]
    fmap = FeatureMap(Feature(j + 1, name) for j, name in enumerate(names))
    data = RankingSet(qid, label, X, fmap)
    order = rng.permutation(n_queries)
    folds = []
    for k in range(3):
        test = queries[order[k::3]]
        rest = rng.permutation(np.setdiff1d(queries, test))
        n_valid = len(rest) // 5
        parts = [np.sort(rest[n_valid:]), np.sort(rest[:n_valid]), np.sort(test)]
        folds.append(Fold(f"fold{k + 1}", *(data.subset_queries(p) for p in parts)))
    sets = plan_feature_sets(fmap, base=",".join(names[:9]), neural={f"enc{k}": f"enc{k}_doc_cos" for k in range(5)})
    return folds, sets


class TimedExecutor:
    """Runs the ablation's runs one by one in this process and keeps each run's CPU seconds."""

    def __init__(self):
        self.runs: list[dict] = []

    def map(self, fn, *columns):
        for args in zip(*columns):
            start = time.process_time()
            out = fn(*args)
            self.runs.append({"fold": args[0].name, "set": args[1].name, "cpu_seconds": time.process_time() - start})
            yield out


def idle_share(seconds: list[float], workers: int = 2) -> float:
    """Share of ``workers``' time left idle when they take the runs in this order (each the next free one's)."""
    free = [0.0] * workers
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    span = max(free)
    return 1 - sum(seconds) / (workers * span) if span else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=400, help="judged queries (20-30 candidates each)")
    parser.add_argument("--twin", action="store_true", help="one neural column an exact copy of another")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the stage here")
    args = parser.parse_args()
    folds, sets = world(args.queries, twin=args.twin)
    config = AblationConfig(
        seeds=(0, 1, 2),
        ranker_params={"n_estimators": 500, "params": dict(SUBSAMPLE["lightgbm"])},
        selection=SelectionConfig(),
    )
    executor = TimedExecutor()
    profile = cProfile.Profile() if args.profile else None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, wall = usage.ru_utime + usage.ru_stime, time.perf_counter()
    if profile:
        profile.enable()
    result = run_ablation(folds, sets, config, progress=False, executor=executor)
    if profile:
        profile.disable()
        profile.dump_stats(args.profile)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, wall = usage.ru_utime + usage.ru_stime - cpu, time.perf_counter() - wall
    digest = hashlib.sha256(result.per_query.to_csv(index=False, float_format="%.12g").encode()).hexdigest()[:16]
    seconds = [r["cpu_seconds"] for r in executor.runs]
    figures = {
        "queries": args.queries,
        "twin": args.twin,
        "rows": sum(len(f.train) + len(f.valid) + len(f.test) for f in folds) // 3,
        "runs": len(seconds),
        "fits": len(result.runs),
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "per_query_digest": digest,
        "idle_share_2_workers_plan_order": idle_share(seconds),
        "idle_share_2_workers_largest_first": idle_share(sorted(seconds, reverse=True)),
        "runs_cpu_seconds": executor.runs,
    }
    print(
        f"{figures['rows']:,} pairs, {len(seconds)} runs ({len(result.runs)} fits): {cpu:.1f} cpu-s, {wall:.1f} s wall;"
        f" per-query digest {digest}; 2 workers idle {figures['idle_share_2_workers_plan_order']:.1%} in plan order,"
        f" {figures['idle_share_2_workers_largest_first']:.1%} largest first"
    )
    if not args.profile:
        write_results("bench_ranker_stage_twin" if args.twin else "bench_ranker_stage", figures)


if __name__ == "__main__":
    main()
