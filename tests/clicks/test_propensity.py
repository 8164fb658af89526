"""Propensity curves estimated from simulated position-based-model logs against their truth, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.clicks.propensity import estimate_propensity, propensity_from_values, read_propensity_curve
from pbm_logs import pbm_log


@pytest.fixture(scope="module")
def biased():
    return pbm_log(exponent=1.0, n_queries=600, sessions=40, seed=3)


@pytest.mark.parametrize("method", ["harvest", "em"])
def test_the_curve_is_the_simulated_examination_within_its_interval(biased, method):
    curve = estimate_propensity(biased, method=method, resamples=40, seed=1)
    truth = biased.examination
    assert curve.values[0] == 1 and list(curve.positions) == list(range(1, 11))
    assert np.abs(curve.values / truth - 1).max() < 0.1
    # the truth lies inside the 95% interval at most positions (a bootstrap interval, not a guarantee at each)
    inside = (curve.lower <= truth) & (truth <= curve.upper)
    assert inside.sum() >= 8
    assert (curve.lower <= curve.values).all() and (curve.values <= curve.upper).all()


def test_no_bias_gives_a_flat_curve():
    curve = estimate_propensity(pbm_log(exponent=0.0, n_queries=150, seed=2), resamples=0)
    assert np.abs(curve.values - 1).max() < 0.1
    assert (curve.lower == curve.values).all()  # no resamples, no interval


def test_the_bootstrap_is_seeded():
    log = pbm_log(n_queries=60, sessions=10, seed=4)
    one, two = (estimate_propensity(log, resamples=20, seed=7) for _ in range(2))
    assert np.array_equal(one.lower, two.lower) and np.array_equal(one.upper, two.upper)


def test_a_log_without_positions_is_refused():
    log = pbm_log(n_queries=5, sessions=3)
    log.has_positions, log.positioned = False, None
    with pytest.raises(LtrfeatError, match="no positions: position bias cannot be estimated"):
        estimate_propensity(log)


def test_harvesting_needs_pairs_shown_at_two_positions():
    log = pbm_log(n_queries=20, sessions=5, noise=0.0)  # the same order every session: no intervention
    log.positioned = log.positioned.drop_duplicates(["query", "docid"])
    with pytest.raises(LtrfeatError, match="never|no \\(query, document\\) pair"):
        estimate_propensity(log, method="harvest")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"method": "cascade"}, "not a propensity estimator"),
        ({"max_position": 1}, "leaves no curve"),
        ({"level": 1.5}, "not in \\(0, 1\\)"),
    ],
)
def test_bad_settings(options, message):
    with pytest.raises(ParameterError, match=message):
        estimate_propensity(pbm_log(n_queries=5, sessions=3), **options)


def test_em_needs_impressions_at_every_position():
    log = pbm_log(n_queries=20, sessions=5, shown=5)
    with pytest.raises(LtrfeatError, match="no impression at position\\(s\\) 6, 7"):
        estimate_propensity(log, method="em", max_position=8)


def test_a_given_curve_is_read_and_normalised(tmp_path):
    path = tmp_path / "curve.csv"
    path.write_text("position,propensity\n2,0.45\n1,0.9\n3,0.3\n")
    curve = read_propensity_curve(path)
    assert curve.method == "given" and np.allclose(curve.values, [1, 0.5, 1 / 3])
    assert np.allclose(curve.at([1, 3, 7]), [1, 1 / 3, 1 / 3])  # past the end: the last value


@pytest.mark.parametrize(
    "text, message",
    [
        ("position,propensity\n1,1\n3,0.5\n", ":3: position '3' breaks the sequence"),
        ("position,propensity\n1,1\n2,0\n", ":3: propensity '0' is not a probability"),
        ("position,propensity\n1,1\n2,x\n", ":3: propensity 'x' is not a probability"),
        ("position,p\n1,1\n", "no column 'propensity'"),
    ],
)
def test_a_bad_curve_file_names_its_line(tmp_path, text, message):
    path = tmp_path / "curve.csv"
    path.write_text(text)
    with pytest.raises(LtrfeatError, match=message):
        read_propensity_curve(path)


def test_given_values_must_be_positive():
    with pytest.raises(LtrfeatError, match="position 2: a propensity must be a positive number"):
        propensity_from_values([1.0, -0.5])
