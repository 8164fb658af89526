"""Speed of ltrfeat.experiments.stats on a report-sized comparison: 2,000 queries, 10,000 resamples.

Baseline (same process): the textbook per-resample Python loop for the same randomisation
test and bootstrap. Prints seconds and the speed-up ratio; writes results/stats.json.
"""

from __future__ import annotations

from _common import timed, write_results

import numpy as np

from ltrfeat.experiments.stats import bootstrap_ci, compare, randomization_test

N_QUERIES, N_RESAMPLES, LOOP_RESAMPLES = 2_000, 10_000, 1_000


def loop_randomization(d, n_resamples, rng):
    observed, hits = abs(d.mean()), 0
    for _ in range(n_resamples):
        hits += abs((d * rng.choice((-1.0, 1.0), size=len(d))).mean()) >= observed
    return (1 + hits) / (1 + n_resamples)


def loop_bootstrap(x, n_resamples, rng):
    means = [x[rng.integers(0, len(x), len(x))].mean() for _ in range(n_resamples)]
    return np.quantile(means, [0.025, 0.975])


def main():
    rng = np.random.default_rng(0)
    a = rng.random(N_QUERIES)
    b = np.clip(a + 0.01 + 0.1 * rng.standard_normal(N_QUERIES), 0, 1)
    d = b - a
    # the loop baseline runs LOOP_RESAMPLES and is scaled to N_RESAMPLES
    scale = N_RESAMPLES / LOOP_RESAMPLES
    loop_rand = timed(lambda: loop_randomization(d, LOOP_RESAMPLES, np.random.default_rng(0)), repeat=1)[0] * scale
    loop_boot = timed(lambda: loop_bootstrap(d, LOOP_RESAMPLES, np.random.default_rng(0)), repeat=1)[0] * scale
    fast_rand = timed(lambda: randomization_test(a, b, n_resamples=N_RESAMPLES))[0]
    fast_boot = timed(lambda: bootstrap_ci(d, n_resamples=N_RESAMPLES))[0]
    fast_compare = timed(lambda: compare(a, b, seed=0, n_resamples=N_RESAMPLES))[0]
    figures = {
        "n_queries": N_QUERIES,
        "n_resamples": N_RESAMPLES,
        "randomization_s": fast_rand,
        "randomization_loop_s": loop_rand,
        "randomization_speedup": loop_rand / fast_rand,
        "bootstrap_s": fast_boot,
        "bootstrap_loop_s": loop_boot,
        "bootstrap_speedup": loop_boot / fast_boot,
        "compare_s": fast_compare,
    }
    for key, value in figures.items():
        print(f"{key:24s} {value:.4g}")
    print(f"wrote {write_results('stats', figures)}")


if __name__ == "__main__":
    main()
