"""Click labels with the position bias corrected: against the simulated attractiveness, their invariants, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ltrfeat.core.errors import LtrfeatError, LtrfeatWarning, ParameterError
from ltrfeat.clicks.debias import click_labels, ipw_weights
from ltrfeat.clicks.propensity import propensity_from_values
from pbm_logs import pbm_log


@pytest.fixture(scope="module")
def biased():
    return pbm_log(exponent=1.5, n_queries=300, sessions=30, seed=5)


def _truth(log):
    truth = log.attraction.set_index(["query", "docid"])["attraction"]
    return truth.reindex(pd.MultiIndex.from_frame(log.totals[["query", "docid"]])).to_numpy()


def test_uncorrected_labels_are_the_click_counts(biased):
    labels = click_labels(biased, debias="none")
    assert labels.soft_labels == "clicks"
    assert labels.pairs["label"].tolist() == biased.totals["clicks"].tolist()
    assert labels.record["debias"] == "none" and labels.record["has_positions"] is True
    assert labels.pairs.attrs["clicks"] == labels.record


def _top_to_bottom(log, estimate):
    """How much more the estimate credits the attractiveness of pairs shown near the top (mean position <= 2.5) than
    of pairs shown low (mean position >= 6): 1 when it is unbiased."""
    rows = log.positioned.assign(at=lambda f: f["position"] * f["impressions"])
    mean_position = (
        rows.groupby(["query", "docid"], sort=True)["at"].sum()
        / log.totals.set_index(["query", "docid"])["impressions"]
    ).to_numpy()
    truth = _truth(log)
    top, bottom = mean_position <= 2.5, mean_position >= 6
    return (estimate[top].sum() / truth[top].sum()) / (estimate[bottom].sum() / truth[bottom].sum())


@pytest.mark.parametrize("debias", ["ipw", "pbm"])
def test_corrected_labels_credit_low_and_high_positions_alike(biased, debias):
    labels = click_labels(biased, debias=debias)
    impressions = biased.totals["impressions"].to_numpy(np.float64)
    raw = _top_to_bottom(biased, biased.totals["clicks"].to_numpy() / impressions)
    estimate = labels.pairs["label"].to_numpy() / (impressions if debias == "ipw" else 1)
    assert raw > 4  # clicks credit the top several times over (examination 1 vs <= 6^-1.5)
    assert 0.75 < _top_to_bottom(biased, estimate) < 1.33
    assert labels.record["debias"] == debias and labels.record["propensity"]["values"][0] == 1


def test_ipw_weights_are_clipped_inverse_propensities_of_mean_one_per_click():
    rows = pd.DataFrame({"position": [1, 2, 3, 3], "clicks": [4, 2, 1, 0]})
    curve = propensity_from_values([1.0, 0.5, 0.01])  # position 3 clipped at 0.05: weight 20, not 100
    weights = ipw_weights(rows, curve, clip=0.05)
    raw = np.array([1, 2, 20, 20])
    assert np.allclose(weights, raw * 7 / (4 * 1 + 2 * 2 + 1 * 20))
    assert np.isclose((weights * rows["clicks"]).sum(), rows["clicks"].sum())
    assert np.allclose(ipw_weights(rows, propensity_from_values(np.ones(3))), 1)


def test_ipw_keeps_the_total_and_changes_nothing_without_bias():
    flat = pbm_log(exponent=0.0, n_queries=40, sessions=10, seed=1)
    labels = click_labels(flat, debias="ipw", propensity=propensity_from_values(np.ones(10)))
    assert np.allclose(labels.pairs["label"], flat.totals["clicks"])
    biased = pbm_log(exponent=1.0, n_queries=40, sessions=10, seed=1)
    labels = click_labels(biased, debias="ipw", clip=0.2)
    assert np.isclose(labels.pairs["label"].sum(), biased.totals["clicks"].sum())
    # clipped: one click weighs at most 1/clip times another
    per_click = labels.pairs["label"] / biased.totals["clicks"]
    per_click = per_click[biased.totals["clicks"] > 0]
    assert per_click.max() / per_click.min() <= 5 + 1e-9


@pytest.mark.parametrize("debias", ["ipw", "pbm"])
def test_the_softmax_loss_gets_weights_on_the_clicked_pairs(biased, debias):
    labels = click_labels(biased, debias=debias, loss="softmax")
    clicked = biased.totals["clicks"].to_numpy() > 0
    assert labels.pairs["label"].tolist() == biased.totals["clicks"].tolist()  # the same samples as uncorrected
    weight = labels.pairs["weight"].to_numpy()
    assert np.isclose(weight[clicked].mean(), 1) and (weight[~clicked] == 0).all() and (weight[clicked] > 0).all()


def test_a_log_without_positions_trains_uncorrected_with_a_warning():
    log = pbm_log(n_queries=10, sessions=5)
    log.has_positions, log.positioned = False, None
    with pytest.warns(LtrfeatWarning, match="no positions, so position bias cannot be corrected"):
        labels = click_labels(log, debias="ipw")
    assert labels.record["debias"] == "none" and labels.record["requested"] == "ipw"
    assert labels.pairs["label"].tolist() == log.totals["clicks"].tolist()


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"debias": "dbn"}, ParameterError, "not a correction"),
        ({"loss": "hinge"}, ParameterError, "the hinge loss takes no click correction"),
        ({"clip": 0}, ParameterError, "clip 0 is not a propensity"),
    ],
)
def test_bad_settings(options, error, message):
    with pytest.raises(error, match=message):
        click_labels(pbm_log(n_queries=5, sessions=3), **options)


def test_a_log_without_document_texts_is_refused():
    log = pbm_log(n_queries=5, sessions=3)
    log.totals = log.totals.drop(columns="doc")
    with pytest.raises(LtrfeatError, match="does not give the documents' texts"):
        click_labels(log)


def test_a_log_of_few_positions_is_corrected_with_its_own_curve():
    log = pbm_log(n_queries=60, n_docs=6, shown=4, sessions=10, seed=2)
    labels = click_labels(log, debias="ipw")
    assert labels.record["propensity"]["positions"] == [1, 2, 3, 4]
