"""Ablation wall time: one engine thread per model (the ablation default) vs all cores.

An ablation trains many small LambdaMART models; this times the same small ablation on the
MQ2008 rotation (Fold1-2: base 1-40 vs base + 41-46, one seed, 50 trees) with ``n_jobs=1``
and with ``n_jobs=None`` (all cores) in the same process, and prints the ratio.

    python benchmarks/ablation_threads.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import SHARED, environment, timed, write_results  # noqa: E402
from ltrfeat.experiments.letor_folds import load_letor_folds  # noqa: E402
from ltrfeat.experiments.feature_sets import plan_feature_sets  # noqa: E402
from ltrfeat.experiments.ablation import run_ablation  # noqa: E402


def mq2008_folds(root: Path, n_folds: int = 2):
    raw = SHARED / "datasets" / "letor4_mq2008" / "raw"
    if not raw.is_dir():
        sys.exit(f"{raw} is absent: this benchmark needs the MQ2008 S1..S5 files")
    parts = [(raw / f"S{i}.txt").read_bytes() for i in range(1, 6)]
    for k in range(n_folds):
        d = root / f"Fold{k + 1}"
        d.mkdir(parents=True)
        (d / "train.txt").write_bytes(b"".join(parts[(k + j) % 5] for j in range(3)))
        (d / "vali.txt").write_bytes(parts[(k + 3) % 5])
        (d / "test.txt").write_bytes(parts[(k + 4) % 5])
    return load_letor_folds(root)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        folds = mq2008_folds(Path(tmp))
    sets = [
        s
        for s in plan_feature_sets(folds[0].train.feature_map, base="1-40", neural={"g": "41-46"})
        if s.kind == "ranker"
    ]
    params = {"n_estimators": 50, "early_stopping_rounds": 50}

    def ablation(n_jobs):
        return run_ablation(folds, sets, seeds=(0,), ranker_params=params | {"n_jobs": n_jobs}, progress=False)

    one, result_one = timed(lambda: ablation(1), repeat=2)
    every, result_all = timed(lambda: ablation(None), repeat=2)
    n_models = len(result_one.runs)
    same = result_one.per_query.equals(result_all.per_query)
    figures = {
        "models": n_models,
        "seconds_one_thread": one,
        "seconds_all_cores": every,
        "all_cores_over_one_thread": every / one,
        "identical_metrics": same,
    }
    env = environment()
    print(
        f"{n_models} models (MQ2008 Fold1-2, 2 feature sets, 50 trees), best of 2, "
        f"{env['cpu_count']} cores, load average {env['load_average']}"
    )
    print(f"  n_jobs=1 (ablation default): {one:7.2f} s   (baseline)")
    print(f"  n_jobs=None (all cores):     {every:7.2f} s   ratio {every / one:.2f}x")
    print(f"  same per-query metrics: {same}")
    print(f"wrote {write_results('ablation_threads', figures)}")


if __name__ == "__main__":
    main()
