"""Paired significance statistics over per-query metric values.

Every function takes per-query values of a base system ``a`` and a variant ``b`` over the
same queries in the same order (pool the test queries of all folds first). Deltas are
``d_i = b_i - a_i``, so positive means the variant is better.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _scipy_stats

_CHUNK_CELLS = 2_000_000  # resamples x queries held in memory at once (16 MB of float64)


def _paired(a, b) -> np.ndarray:
    """Validated deltas ``b - a``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"paired inputs need two 1-D arrays of one length, got shapes {a.shape} and {b.shape}")
    if len(a) == 0:
        raise ValueError("paired inputs are empty: no queries to compare")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("paired inputs contain NaN or infinite values; give every query a finite metric value")
    return b - a


def _chunks(n_resamples: int, n: int):
    step = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, n_resamples, step):
        yield min(step, n_resamples - start)


def paired_ttest(a, b) -> tuple[float, float]:
    """Two-sided paired t-test of ``mean(b - a) = 0``.

    ``t = mean(d) / (sd(d) / sqrt(n))`` with ``sd`` the sample standard deviation
    (``ddof=1``) and ``p = 2 * P(T_{n-1} >= |t|)``; equals ``scipy.stats.ttest_rel(b, a)``.
    Zero-variance deltas are handled explicitly: all deltas 0 gives ``(0.0, 1.0)``; a
    constant non-zero delta gives ``(±inf, 0.0)``. Needs at least 2 queries.
    """
    d = _paired(a, b)
    n = len(d)
    if n < 2:
        raise ValueError("the paired t-test needs at least 2 queries")
    mean = d.mean()
    if np.all(d == 0):
        return 0.0, 1.0
    sd = d.std(ddof=1)
    if sd == 0 or sd <= 1e-14 * abs(mean):
        return math.copysign(math.inf, mean), 0.0
    t = mean / (sd / math.sqrt(n))
    return float(t), float(2 * _scipy_stats.t.sf(abs(t), n - 1))


def randomization_test(a, b, *, n_resamples: int = 10_000, seed: int = 0, exact_max_n: int = 16) -> float:
    """Two-sided paired randomisation (sign-flip permutation) test of ``mean(b - a) = 0``.

    Under the null each delta's sign is exchangeable, so with statistic ``T(s) = |mean(s * d)|``
    over sign vectors ``s in {-1, +1}^n``:

    * ``n <= exact_max_n``: exact enumeration of all ``2^n`` sign vectors,
      ``p = #{s : T(s) >= T(1)} / 2^n``;
    * otherwise Monte-Carlo with ``R = n_resamples`` random sign vectors (seeded) and the
      add-one correction ``p = (1 + #{r : T(s_r) >= T(1)}) / (1 + R)`` (Phipson & Smyth
      2010), which counts the observed assignment and never returns 0.

    Ties are judged with ``T(s) >= T(1) - 1e-12 * sum|d| / n`` so float round-off does not break them.
    All deltas 0 gives ``p = 1``.
    """
    d = _paired(a, b)
    return float(randomization_tests(d[:, None], n_resamples=n_resamples, seed=seed, exact_max_n=exact_max_n)[0])


def randomization_tests(deltas, *, n_resamples: int = 10_000, seed: int = 0, exact_max_n: int = 16) -> np.ndarray:
    """:func:`randomization_test` of every column of ``deltas`` (queries x comparisons), all columns
    under the same sign vectors -- the ones each column alone would draw with this seed, so column ``c``
    gets the p-value of ``randomization_test`` on it. Drawing and expanding the signs once for many
    comparisons over the same queries is what makes a report's dozens of tests cheap."""
    d = np.asarray(deltas, dtype=np.float64)
    n = d.shape[0]
    total = d.sum(axis=0)
    threshold = np.abs(total) - 1e-12 * np.abs(d).sum(axis=0)
    hits = np.zeros(d.shape[1], dtype=np.int64)
    if n <= exact_max_n:
        bits = (np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1  # row k: binary digits of k
        flipped = total - 2 * (bits @ d)  # sum of s*d with s = -1 where the bit is set
        p = np.count_nonzero(np.abs(flipped) >= threshold, axis=0) / 2**n
    else:
        rng = np.random.default_rng(seed)
        for size in _chunks(n_resamples, n):
            # one random bit per sign: 8 signs per random byte is far cheaper than one float each
            negate = np.unpackbits(rng.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8), axis=1, count=n)
            flipped = total - 2 * (negate.astype(np.float64) @ d)
            hits += np.count_nonzero(np.abs(flipped) >= threshold, axis=0)
        p = (1 + hits) / (1 + n_resamples)
    return np.where((d == 0).all(axis=0), 1.0, p)


def bootstrap_ci(x, *, level: float = 0.95, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(x)``.

    Draws ``n_resamples`` samples of size ``n`` with replacement (seeded), takes their means
    ``m_r`` and returns the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of ``m_r``
    (linear interpolation). Use it on per-query values for the interval of a mean, or on
    deltas ``b - a`` for the interval of the mean difference.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError("bootstrap_ci needs a non-empty 1-D array of finite values")
    lo, hi = bootstrap_cis(x[:, None], level=level, n_resamples=n_resamples, seed=seed)[0]
    return float(lo), float(hi)


def bootstrap_cis(values, *, level: float = 0.95, n_resamples: int = 10_000, seed: int = 0) -> np.ndarray:
    """:func:`bootstrap_ci` of every column of ``values`` (queries x columns) as a (columns, 2) array,
    all columns resampled with the same draws (those each column alone would get with this seed). A
    resample's mean is ``counts @ x / n`` with ``counts`` how often each query was drawn."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or len(x) == 0 or not np.isfinite(x).all():
        raise ValueError("bootstrap_ci needs a non-empty 1-D array of finite values")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    n = len(x)
    means = []
    for size in _chunks(n_resamples, n):
        drawn = rng.integers(0, n, size=(size, n), dtype=np.int32)
        offsets = (np.arange(size, dtype=np.int64) * n)[:, None]
        counts = np.bincount((drawn + offsets).ravel(), minlength=size * n).reshape(size, n)
        means.append(counts.astype(np.float64) @ x / n)
    return np.quantile(np.concatenate(means), [(1 - level) / 2, (1 + level) / 2], axis=0).T


def holm(pvalues) -> np.ndarray:
    """Holm step-down adjusted p-values, in input order.

    With ``p_(1) <= ... <= p_(m)`` sorted ascending, the adjusted value of the ``i``-th
    smallest is ``max_{j <= i} min(1, (m - j + 1) * p_(j))``: monotone in ``p`` and capped
    at 1. Rejecting where the adjusted value is ``<= alpha`` controls the family-wise error.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or not np.all((p >= 0) & (p <= 1)):
        raise ValueError("holm needs a 1-D array of p-values in [0, 1]")
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted_sorted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = adjusted_sorted
    return adjusted


def win_tie_loss(a, b, *, tol: float = 1e-12) -> tuple[int, int, int]:
    """Per-query counts of ``b - a > tol`` (wins), ``|b - a| <= tol`` (ties), ``b - a < -tol`` (losses)."""
    d = _paired(a, b)
    wins = int(np.count_nonzero(d > tol))
    losses = int(np.count_nonzero(d < -tol))
    return wins, len(d) - wins - losses, losses


def relative_improvement(base_mean: float, variant_mean: float) -> float:
    """``(variant_mean - base_mean) / base_mean``; NaN when ``base_mean`` is 0."""
    if base_mean == 0:
        return math.nan
    return (variant_mean - base_mean) / base_mean


def compare(base, variant, *, seed: int = 0, n_resamples: int = 10_000) -> dict:
    """All paired statistics of ``variant`` against ``base`` (per-query values, same order).

    Returns ``delta`` (mean of ``variant - base``), ``relative`` (see
    :func:`relative_improvement`), ``p_ttest``, ``p_randomization``, ``ci95_delta``
    (bootstrap percentile interval of the mean delta), ``wins``, ``ties``, ``losses`` and
    ``n_queries``. An ablation's summary adds ``p_holm``, Holm-adjusted across the report (:func:`holm`).
    """
    _paired(base, variant)
    return compare_many(np.asarray(base)[:, None], np.asarray(variant)[:, None], seed=seed, n_resamples=n_resamples)[0]


def compare_many(base, variant, *, seed: int = 0, n_resamples: int = 10_000) -> list[dict]:
    """:func:`compare` of every column of ``variant`` against the same column of ``base`` (both queries x
    comparisons): the same numbers as one :func:`compare` per column, with the randomisation signs and
    bootstrap draws made once for all columns (:func:`randomization_tests`, :func:`bootstrap_cis`)."""
    base = np.asarray(base, dtype=np.float64)
    variant = np.asarray(variant, dtype=np.float64)
    if base.ndim != 2 or base.shape != variant.shape:
        raise ValueError(f"compare_many needs two 2-D arrays of one shape, got {base.shape} and {variant.shape}")
    deltas = [_paired(base[:, c], variant[:, c]) for c in range(base.shape[1])]
    if not deltas:
        return []
    d = np.stack(deltas, axis=1)
    p_random = randomization_tests(d, n_resamples=n_resamples, seed=seed)
    intervals = bootstrap_cis(d, level=0.95, n_resamples=n_resamples, seed=seed)
    out = []
    for c in range(d.shape[1]):
        a, b = base[:, c], variant[:, c]
        _, p_t = paired_ttest(a, b) if len(a) >= 2 else (math.nan, math.nan)
        wins, ties, losses = win_tie_loss(a, b)
        out.append(
            {
                "delta": float(d[:, c].mean()),
                "relative": relative_improvement(float(a.mean()), float(b.mean())),
                "p_ttest": p_t,
                "p_randomization": float(p_random[c]),
                "ci95_delta": (float(intervals[c, 0]), float(intervals[c, 1])),
                "wins": wins,
                "ties": ties,
                "losses": losses,
                "n_queries": len(a),
            }
        )
    return out
