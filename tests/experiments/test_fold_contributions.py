"""What an ablation keeps of its test-fold models' contributions: bounded, whole queries, exact for what it keeps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from builders import synthetic
from ltrfeat.experiments.fold_contributions import sampled_rows, summarise_contributions
from ltrfeat.rankers.contributions import contributions
from ltrfeat.rankers.lambdamart import LambdaMART
from ltrfeat.rankers.linear import LinearRanker


@pytest.fixture(scope="module")
def data():
    return synthetic(n_queries=40, docs=10, n_features=5, seed=0), synthetic(
        n_queries=30, docs=10, n_features=5, seed=1
    )


def test_sampled_rows_are_whole_queries_within_the_bound_and_the_same_each_time(data):
    _, test = data
    assert sampled_rows(test, 1000).tolist() == list(range(len(test)))  # all of them when they fit
    rows = sampled_rows(test, 95)
    assert 80 <= len(rows) <= 95 and rows.tolist() == sorted(rows.tolist())
    sizes = pd.Series(test.qid).value_counts()
    picked = pd.Series(test.qid[rows]).value_counts()
    assert all(picked[q] == sizes[q] for q in picked.index)  # whole queries
    assert np.array_equal(sampled_rows(test, 95), rows)  # the same for every set of the fold


@pytest.mark.parametrize("make", [lambda: LinearRanker(), lambda: LambdaMART(n_estimators=20, n_jobs=1)])
def test_summaries_of_a_bounded_sample_are_exact_for_its_queries(data, make):
    """TreeSHAP cost as much as training again: contributions are computed for at most max_rows rows, and what is
    kept of them equals the contributions of those queries alone (per-query standardisation included)."""
    train, test = data
    model = make().fit(train)
    summary = summarise_contributions(model, test, max_rows=95)
    rows = summary["rows"]
    assert len(rows) <= 95 and summary["top"].shape == (len(rows), 3)
    exact = contributions(model, test.take(rows))
    assert summary["names"] == exact.names
    assert summary["mean_abs"] == pytest.approx(exact.mean_abs())
    centred = exact.values - pd.DataFrame(exact.values).groupby(test.qid[rows]).transform("mean").to_numpy()
    got = np.take_along_axis(centred, summary["top"].astype(int), axis=1)
    np.testing.assert_allclose(summary["top_values"], got, rtol=1e-6, atol=1e-6)
    assert (np.abs(got[:, :1]) >= np.abs(centred).max(axis=1, keepdims=True) - 1e-9).all()  # the largest first
