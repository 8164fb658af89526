"""``ltrfeat.core.splits``: the one query splitter gives the splits the four callers made before it existed
(frozen copies of their old code below), so folds, caches and reports stay byte-identical."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.core import splits
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.datasets.converters import _output
from ltrfeat.experiments.fold_plans import plan_folds
from ltrfeat.encoders import training_pairs
from ltrfeat.rankers import selection

SEEDS = [0, 1, 7, 123, 2**31 - 1]


def _ids(seed: int, n: int) -> list:
    rng = np.random.default_rng(1000 + seed)
    return list(dict.fromkeys(f"q{v}" for v in rng.integers(0, 10 * n, size=n)))


def old_plan_folds(qids, k, valid_fraction, seed):
    queries = list(dict.fromkeys(qids))
    rng = np.random.default_rng(seed)
    order = [queries[i] for i in rng.permutation(len(queries))]
    outer = [frozenset(order[f::k]) for f in range(k)]
    plans = []
    for test in outer:
        rest = [q for q in order if q not in test]
        rest = [rest[i] for i in rng.permutation(len(rest))]
        n_valid = int(round(valid_fraction * len(rest)))
        plans.append((test, frozenset(rest[n_valid:]), frozenset(rest[:n_valid])))
    return plans


def old_selection_split(qids, fraction, seed):
    qids = np.asarray(qids, dtype=object)
    order = np.random.default_rng(seed).permutation(len(qids))
    n_out = min(max(1, int(round(fraction * len(qids)))), len(qids) - 1) if len(qids) > 1 else 0
    return np.sort(qids[order[n_out:]]), np.sort(qids[order[:n_out]])


def old_inner_folds(queries, inner_folds, seed):
    order = np.random.default_rng(seed).permutation(len(queries))
    return [queries[np.sort(held)] for held in np.array_split(order, inner_folds)]


def old_converter_split(qids, shares, seed):
    qids = list(dict.fromkeys(qids))
    bounds = np.round(np.cumsum(shares)[:-1] * len(qids)).astype(int)
    parts = np.split(np.random.default_rng(seed).permutation(len(qids)), bounds)
    return {qids[i]: name for name, part in zip(_output.SPLITS, parts) for i in part.tolist()}


def old_val_keys(n_keys, val_fraction, seed):
    n_val = int(round(val_fraction * n_keys))
    return np.random.default_rng([seed, 1]).permutation(n_keys)[:n_val]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [6, 31, 200])
def test_crossfit_folds_are_the_old_ones(seed, n):
    qids = _ids(seed, n)
    for k, fraction in ((3, 0.1), (5, 0.25)):
        if n < 2 * k:
            continue
        new = [(p.test, p.train, p.valid) for p in plan_folds(qids + qids[:3], k=k, valid_fraction=fraction, seed=seed)]
        assert new == old_plan_folds(qids + qids[:3], k, fraction, seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [1, 2, 9, 100])
def test_selection_splits_are_the_old_ones(seed, n):
    queries = np.array(sorted(_ids(seed, n)), dtype=object)
    for fraction in (0.0, 0.2, 0.9):
        new, old = selection.holdout_queries(queries, fraction, seed), old_selection_split(queries, fraction, seed)
        assert all(np.array_equal(a, b) for a, b in zip(new, old))
    if len(queries) >= 6:
        pool = RankingSet(
            qid=np.repeat(queries, 2),
            label=np.zeros(2 * len(queries)),
            X=np.zeros((2 * len(queries), 0), dtype=np.float32),
            feature_map=FeatureMap(()),
        )
        config = selection.SelectionConfig.default(seed=seed, inner_folds=3)
        held = [np.unique(h.qid) for _, _, h in selection.inner_splits(pool, config)]
        assert all(np.array_equal(a, b) for a, b in zip(held, old_inner_folds(pool.queries(), 3, seed)))


@pytest.mark.parametrize("seed", SEEDS)
def test_converter_splits_are_the_old_ones(seed):
    qids = _ids(seed, 57)
    for shares in ((0.6, 0.2, 0.2), (0.8, 0.1, 0.1), (1 / 3, 1 / 3, 1 / 3)):
        assert _output.assign_splits(pd.Series(qids * 2), shares, seed) == old_converter_split(qids * 2, shares, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_encoder_validation_queries_are_the_old_ones(seed):
    queries = _ids(seed, 40)
    n = len(queries)
    pairs = pd.DataFrame({"qid": queries * 2, "query": queries * 2, "doc": ["d"] * 2 * n, "label": [1.0, 0.0] * n})
    for fraction in (0.1, 0.3):
        prepared = training_pairs.prepare_pairs(pairs, how="clicks", click_scale=1.0, val_fraction=fraction, seed=seed)
        keys = list(dict.fromkeys(pairs["qid"].astype(str)))
        held = {keys[i] for i in old_val_keys(len(keys), fraction, seed)}
        assert set(pairs["qid"][~prepared.train]) == held


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=60),
    k=st.integers(min_value=1, max_value=7),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    fraction=st.floats(min_value=0, max_value=1),
)
def test_splits_partition_the_ids(n, k, seed, fraction):
    ids = [f"q{i}" for i in range(n)]
    for parts in (
        splits.cut_queries(ids, splits.even_sizes(n, k), seed),
        splits.holdout(ids, fraction, seed),
    ):
        assert sorted(q for p in parts for q in p) == sorted(ids)
    kept, held = splits.holdout(ids, fraction, seed, both_sides=True)
    assert (len(kept) >= 1 and len(held) >= 1) if n > 1 else len(held) == 0
    assert list(splits.shuffled(ids, seed)) == list(splits.shuffled(ids, seed))


def test_split_sizes_must_add_up():
    with pytest.raises(ValueError, match="do not add up"):
        splits.cut_queries(["a", "b"], [1, 2], 0)
