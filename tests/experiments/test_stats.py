import itertools
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.experiments.stats import (
    bootstrap_ci,
    bootstrap_cis,
    compare,
    compare_many,
    holm,
    paired_ttest,
    randomization_test,
    randomization_tests,
    relative_improvement,
    win_tie_loss,
)


def pair(n, seed=0, shift=0.02):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    return a, np.clip(a + shift + 0.1 * rng.standard_normal(n), 0, 1)


# ---- t-test ------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,seed", [(2, 0), (5, 1), (30, 2), (500, 3)])
def test_ttest_equals_scipy(n, seed):
    a, b = pair(n, seed)
    t, p = paired_ttest(a, b)
    ref = scipy.stats.ttest_rel(b, a)
    assert t == pytest.approx(ref.statistic, rel=1e-12) and p == pytest.approx(ref.pvalue, rel=1e-10)


def test_ttest_zero_variance():
    assert paired_ttest([0.5, 0.2, 0.1], [0.5, 0.2, 0.1]) == (0.0, 1.0)
    assert paired_ttest([0.0, 0.25, 0.5], [0.5, 0.75, 1.0]) == (math.inf, 0.0)
    assert paired_ttest([0.5, 0.75], [0.0, 0.25]) == (-math.inf, 0.0)


@pytest.mark.parametrize(
    "a,b,problem",
    [([1.0], [1.0], "at least 2"), ([1, 2], [1], "shapes"), ([], [], "empty"), ([1, np.nan], [1, 2], "NaN")],
)
def test_ttest_bad_input(a, b, problem):
    with pytest.raises(ValueError, match=problem):
        paired_ttest(a, b)


# ---- randomisation test ------------------------------------------------------------------------


def brute_force_p(a, b):
    d = np.asarray(b, float) - np.asarray(a, float)
    observed = abs(d.mean())
    tol = 1e-12 * np.abs(d).mean()  # the documented tie tolerance
    flips = [abs(np.mean(np.array(s) * d)) for s in itertools.product((-1, 1), repeat=len(d))]
    return sum(f >= observed - tol for f in flips) / len(flips)


@pytest.mark.parametrize("n,seed", [(1, 0), (3, 1), (8, 2), (12, 3)])
def test_randomization_exact_matches_enumeration(n, seed):
    a, b = pair(n, seed, shift=0.05)
    assert randomization_test(a, b) == pytest.approx(brute_force_p(a, b), abs=1e-15)


def test_randomization_exact_matches_scipy_permutation_test():
    a, b = pair(10, 7, shift=0.05)
    ref = scipy.stats.permutation_test(
        (b, a),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert randomization_test(a, b) == pytest.approx(ref.pvalue, rel=1e-12)


def test_randomization_handles_ties_exactly():
    # deltas +1, -1, +1, +1: flipped sums are -4, -2, 0, 2, 4 with counts 1, 4, 6, 4, 1;
    # observed |sum| = 2 -> 10 of 16 assignments reach it
    assert randomization_test([0, 1, 0, 0], [1, 0, 1, 1]) == 10 / 16
    assert randomization_test([0.3, 0.3, 0.4], [0.4, 0.4, 0.5]) == 2 / 8  # constant delta
    assert randomization_test([1, 2, 3], [1, 2, 3]) == 1.0


def test_randomization_monte_carlo_seeded_add_one_and_close_to_exact():
    a, b = pair(16, 4, shift=0.04)
    exact = randomization_test(a, b)
    mc = randomization_test(a, b, exact_max_n=0, n_resamples=20_000, seed=1)
    assert mc == randomization_test(a, b, exact_max_n=0, n_resamples=20_000, seed=1)
    assert abs(mc - exact) < 0.015
    assert mc * 20_001 == pytest.approx(round(mc * 20_001))  # (1 + hits) / (1 + R)
    a, b = pair(200, 5, shift=0.3)
    assert randomization_test(a, b, n_resamples=99) == pytest.approx(1 / 100)  # never 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=10))
def test_randomization_exact_property(rows):
    a, b = np.array(rows).T
    p = randomization_test(a, b)
    assert 0 < p <= 1
    assert p == pytest.approx(brute_force_p(a, b), abs=1e-12)
    assert p == pytest.approx(randomization_test(b, a), abs=1e-12)  # two-sided: symmetric


# ---- bootstrap ---------------------------------------------------------------------------------


def test_bootstrap_seeded_and_near_scipy():
    x = np.random.default_rng(0).normal(0.3, 0.2, 400)
    lo, hi = bootstrap_ci(x, seed=3)
    assert (lo, hi) == bootstrap_ci(x, seed=3)
    assert (lo, hi) != bootstrap_ci(x, seed=4)
    assert lo < x.mean() < hi
    ref = scipy.stats.bootstrap((x,), np.mean, method="percentile", n_resamples=10_000, random_state=0)
    assert lo == pytest.approx(ref.confidence_interval.low, abs=0.004)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=0.004)
    width = 2 * 1.96 * x.std(ddof=1) / math.sqrt(len(x))
    assert hi - lo == pytest.approx(width, rel=0.05)


def test_bootstrap_level_and_constant_input():
    x = np.random.default_rng(1).random(100)
    lo90, hi90 = bootstrap_ci(x, level=0.9)
    lo99, hi99 = bootstrap_ci(x, level=0.99)
    assert lo99 < lo90 < hi90 < hi99
    assert bootstrap_ci([0.5] * 7) == (0.5, 0.5)
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci(x, level=95)
    with pytest.raises(ValueError, match="non-empty"):
        bootstrap_ci([])


# ---- Holm --------------------------------------------------------------------------------------


def test_holm_hand_computation():
    # sorted: 0.01*4=0.04, 0.02*3=0.06, 0.03*2=0.06, 0.5*1=0.5; in input order:
    np.testing.assert_allclose(holm([0.03, 0.5, 0.01, 0.02]), [0.06, 0.5, 0.04, 0.06])
    # monotonicity: 0.01*3=0.03, 0.04*2=0.08, 0.045*1=0.045 -> raised to 0.08
    np.testing.assert_allclose(holm([0.045, 0.01, 0.04]), [0.08, 0.03, 0.08])
    np.testing.assert_allclose(holm([0.4, 0.9]), [0.8, 0.9])
    np.testing.assert_allclose(holm([0.6, 0.7]), [1.0, 1.0])
    assert holm([]).shape == (0,)
    with pytest.raises(ValueError):
        holm([0.1, 1.5])


@given(st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_holm_properties(p):
    p = np.array(p)
    adj = holm(p)
    assert (adj >= p).all() and (adj <= 1).all()
    order = np.argsort(p, kind="stable")
    assert (np.diff(adj[order]) >= 0).all()


# ---- counts, relative improvement and compare --------------------------------------------------


def test_win_tie_loss_and_relative():
    assert win_tie_loss([0.1, 0.5, 0.3, 0.2], [0.2, 0.5, 0.1, 0.2 + 1e-15]) == (1, 2, 1)
    assert relative_improvement(0.4, 0.5) == pytest.approx(0.25)
    assert math.isnan(relative_improvement(0.0, 0.1))


def test_compare_contract():
    a, b = pair(300, 9, shift=0.03)
    out = compare(a, b, seed=5)
    assert set(out) == {
        "delta",
        "relative",
        "p_ttest",
        "p_randomization",
        "ci95_delta",
        "wins",
        "ties",
        "losses",
        "n_queries",
    }
    assert out["delta"] == pytest.approx(np.mean(b - a))
    assert out["relative"] == pytest.approx((b.mean() - a.mean()) / a.mean())
    assert out["p_ttest"] == pytest.approx(scipy.stats.ttest_rel(b, a).pvalue)
    assert out["ci95_delta"][0] < out["delta"] < out["ci95_delta"][1]
    assert out["wins"] + out["ties"] + out["losses"] == out["n_queries"] == 300
    assert out == compare(a, b, seed=5)
    # a clear improvement is significant, a null one is not
    assert out["p_randomization"] < 0.01 and out["p_ttest"] < 0.01
    null = compare(a, a + np.random.default_rng(1).normal(0, 0.01, 300), seed=0)
    assert null["p_randomization"] > 0.01


def test_compare_single_query():
    out = compare([0.2], [0.3])
    assert math.isnan(out["p_ttest"]) and out["p_randomization"] == 1.0 and out["n_queries"] == 1


# ---- many comparisons at once ------------------------------------------------------------------


def _reference_randomization(d, *, n_resamples=10_000, seed=0):
    """The one-column Monte-Carlo test written out directly (sign draws as randomization_test makes them)."""
    rng = np.random.default_rng(seed)
    n, hits, done = len(d), 0, 0
    step = max(1, 2_000_000 // n)
    while done < n_resamples:
        size = min(step, n_resamples - done)
        negate = np.unpackbits(rng.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8), axis=1, count=n)
        flipped = d.sum() - 2 * (negate.astype(np.float64) @ d)
        hits += int(np.count_nonzero(np.abs(flipped) >= abs(d.sum()) - 1e-12 * np.abs(d).sum()))
        done += size
    return (1 + hits) / (1 + n_resamples)


def _reference_bootstrap(x, *, n_resamples=10_000, seed=0):
    """The percentile bootstrap by gathering each resample (what bootstrap_cis computes by counts)."""
    rng = np.random.default_rng(seed)
    n, means, done = len(x), [], 0
    step = max(1, 2_000_000 // n)
    while done < n_resamples:
        size = min(step, n_resamples - done)
        means.append(x[rng.integers(0, n, size=(size, n), dtype=np.int32)].mean(axis=1))
        done += size
    return np.quantile(np.concatenate(means), [0.025, 0.975])


@pytest.mark.parametrize("n", [12, 700, 3001])
def test_many_at_once_equals_one_at_a_time(n):
    rng = np.random.default_rng(n)
    base = rng.integers(0, 4, size=(n, 5)) / 3.0  # graded-like values: many tied deltas
    variant = np.clip(base + (rng.random((n, 5)) < 0.3) * rng.integers(-1, 2, size=(n, 5)) / 3.0, 0, 1)
    variant[:, 4] = base[:, 4]  # an all-zero delta column
    many = compare_many(base, variant, seed=7, n_resamples=3_000)
    for c, out in enumerate(many):
        one = compare(base[:, c], variant[:, c], seed=7, n_resamples=3_000)
        # the same draws; the matrix product may sum a column in another order (last bit of an interval)
        np.testing.assert_allclose(out.pop("ci95_delta"), one.pop("ci95_delta"), rtol=0, atol=1e-14)
        assert out == one
        d = variant[:, c] - base[:, c]
        if n > 16 and c < 4:
            assert out["p_randomization"] == _reference_randomization(d, n_resamples=3_000, seed=7)
            np.testing.assert_allclose(
                compare_many(base, variant, seed=7, n_resamples=3_000)[c]["ci95_delta"],
                _reference_bootstrap(d, n_resamples=3_000, seed=7),
                rtol=0,
                atol=1e-14,
            )
    assert many[4]["p_randomization"] == 1.0
    p = randomization_tests(variant - base, seed=7, n_resamples=3_000)
    assert p.tolist() == [o["p_randomization"] for o in many]
    cis = bootstrap_cis(base, seed=2, n_resamples=500)
    np.testing.assert_allclose(cis, [bootstrap_ci(base[:, c], seed=2, n_resamples=500) for c in range(5)], atol=1e-14)


def test_compare_many_checks_its_input():
    with pytest.raises(ValueError, match="2-D arrays of one shape"):
        compare_many(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="NaN"):
        compare_many(np.array([[0.1], [np.nan]]), np.zeros((2, 1)))
    assert compare_many(np.zeros((3, 0)), np.zeros((3, 0))) == []
