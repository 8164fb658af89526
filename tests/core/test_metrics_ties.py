"""Tied scores: the expected value over every order of the ties (the default), against brute force; the other
tie conventions against pytrec_eval; row order never changes a default figure; the bounds hold."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.core import metrics as M
from ltrfeat.core.errors import LtrfeatError
from tests.core.test_metrics import TREC_MEASURES, TREC_NAMES, random_queries, trec_eval

ALL = "ndcg@1,3,5,recall@2,p@3,top3recall@2,top2recall@3,map,mrr,err@2,4"
BRUTE = "ndcg@1,3,5,recall@2,p@3,map,mrr,err@2,4"  # top-n recall has its own brute force below


@pytest.mark.parametrize("ties", M.TIES)
def test_every_tie_mode_equals_pytrec_eval_without_ties(ties):
    qid, label, score = random_queries(800, seed=11)
    docid = [f"d{i:06d}" for i in range(len(qid))]
    df = M.evaluate_queries(
        qid, label, score, list(TREC_NAMES), gain="linear", no_relevant="zero", ties=ties, docid=docid
    )
    ref = trec_eval(qid, label, score, TREC_MEASURES, docids=docid)
    for ours, theirs in TREC_NAMES.items():
        np.testing.assert_allclose(df[ours], [ref[q][theirs] for q in df.index], rtol=0, atol=1e-9, err_msg=ours)


def test_docid_ties_equal_pytrec_eval_with_many_ties():
    # trec_eval sorts by score descending, then docno descending (strcmp)
    rng = np.random.default_rng(12)
    qid, label, _ = random_queries(800, seed=12)
    score = rng.integers(0, 3, len(qid)).astype(float)
    docid = [f"{rng.choice(['x', 'D', 'd', 'é'])}{rng.integers(0, 10**6)}-{i}" for i in range(len(qid))]
    df = M.evaluate_queries(
        qid, label, score, list(TREC_NAMES), gain="linear", no_relevant="zero", ties="docid", docid=docid
    )
    ref = trec_eval(qid, label, score, TREC_MEASURES, docids=docid)
    for ours, theirs in TREC_NAMES.items():
        np.testing.assert_allclose(df[ours], [ref[q][theirs] for q in df.index], rtol=0, atol=1e-9, err_msg=ours)
    with pytest.raises(LtrfeatError, match="ties='docid' needs"):
        M.evaluate_queries(qid, label, score, "map", ties="docid")


def _cases(n_cases, seed):
    """Small queries with many ties: (labels, scores, relevance threshold)."""
    rng = np.random.default_rng(seed)
    for case in range(n_cases):
        n = int(rng.integers(1, 7))
        yield rng.integers(0, 4, n).astype(float), rng.integers(0, 3, n).astype(float), 1 + case % 2


def _every_order(cases):
    """One query per (case, order of its rows): ties broken by that order, each order of the tie groups
    appearing equally often. Returns qid, label, score, threshold per row and the case of each query."""
    qid, label, score, threshold, case_of = [], [], [], [], []
    for c, (lab, sc, thr) in enumerate(cases):
        perms = np.array(list(itertools.permutations(range(len(lab))))).ravel()
        queries = np.repeat(np.arange(len(perms) // len(lab)), len(lab)) + len(case_of)
        qid.append(queries)
        label.append(lab[perms])
        score.append(sc[perms])
        threshold.append(np.full(len(perms), thr))
        case_of += [c] * (len(perms) // len(lab))
    return [np.concatenate(x) for x in (qid, label, score, threshold)] + [np.array(case_of)]


def test_expected_ties_equal_the_mean_over_every_order_of_the_tied_documents():
    cases = list(_cases(3000, seed=13))
    names = M.parse_metrics(BRUTE)
    for threshold in (1, 2):  # relevance threshold 2 leaves label 1 irrelevant
        mine = [c for c in cases if c[2] == threshold]
        qid, label, score, _, case_of = _every_order(mine)
        brute = M.evaluate_queries(
            qid, label, score, names, no_relevant="zero", ties="input", relevance_threshold=threshold
        )[names]
        brute = brute.groupby(case_of).mean().to_numpy(float)
        one = np.concatenate([np.full(len(lab), c) for c, (lab, _, _) in enumerate(mine)])
        got = M.evaluate_queries(
            one,
            np.concatenate([lab for lab, _, _ in mine]),
            np.concatenate([sc for _, sc, _ in mine]),
            names,
            no_relevant="zero",
            relevance_threshold=threshold,
        )[names].to_numpy(float)
        # ERR's within-query cumulative sums over a million rows round at ~1e-11
        np.testing.assert_allclose(got, brute, rtol=0, atol=1e-10)


def _top_n_recall_brute_force(label, score, n, k):
    """top-n recall@k averaged over every order of the score ties and, independently, of the label ties that
    decide which documents are T, the query's n best relevant ones."""
    rows = range(len(label))
    values = []
    for order in itertools.permutations(rows):
        ranked = sorted(order, key=lambda i: -score[i])[:k]
        for label_order in itertools.permutations(rows):
            best = [i for i in sorted(label_order, key=lambda i: -label[i]) if label[i] >= 1][:n]
            values.append(len(set(best) & set(ranked)) / len(best))
    return np.mean(values)


def test_expected_top_n_recall_equals_the_mean_over_the_orders_of_score_and_label_ties():
    rng = np.random.default_rng(14)
    for _ in range(400):
        n = int(rng.integers(1, 5))
        label = rng.integers(0, 3, n).astype(float)
        if label.max() < 1:
            continue
        score = rng.integers(0, 2, n).astype(float)
        for top, k in ((1, 1), (2, 2), (3, 2), (2, 4)):
            got = M.evaluate_queries(["q"] * n, label, score, f"top{top}recall@{k}")[f"top{top}recall@{k}"].iloc[0]
            assert got == pytest.approx(_top_n_recall_brute_force(label, score, top, k), abs=1e-12)


def test_expected_ties_in_big_groups_stay_exact():
    # one tie group of 3,000 documents, 7 relevant: closed forms, no overflow of the binomials
    label = np.zeros(3000)
    label[:7] = 1
    df = M.evaluate_queries(["q"] * 3000, label, np.zeros(3000), "mrr,map,p@10,recall@100,err@20")
    t, m = 7, 3000
    assert df["p@10"].iloc[0] == pytest.approx(t / m)
    assert df["recall@100"].iloc[0] == pytest.approx(100 / m)
    # E[RR] = sum_j C(m-j, t-1) / C(m, t) / j; E[AP] = (1/t) sum_j (t/m)(1 + (j-1)(t-1)/(m-1)) / j
    from math import comb

    rr = sum(comb(m - j, t - 1) / j for j in range(1, m - t + 2)) / comb(m, t)
    ap = sum((1 + (j - 1) * (t - 1) / (m - 1)) / j for j in range(1, m + 1)) / m
    assert df["mrr"].iloc[0] == pytest.approx(rr, rel=1e-9)
    assert df["map"].iloc[0] == pytest.approx(ap, rel=1e-9)
    # ERR@20 with R = 1/2 for the relevant documents: rank r holds one with chance t/m, after h ~ hypergeometric
    # relevant ones above it, each halving the chance to get there
    err = sum(
        t
        / m
        / r
        / 2
        * sum(comb(t - 1, h) * comb(m - t, r - 1 - h) / 2**h for h in range(min(t, r)))
        / comb(m - 1, r - 1)
        for r in range(1, 21)
    )
    assert df["err@20"].iloc[0] == pytest.approx(err, rel=1e-9)


def _rows(draw_rows):
    qid = np.array([f"q{q}" for q, _, _ in draw_rows], dtype=object)
    label = np.array([lab for _, lab, _ in draw_rows], dtype=float)
    score = np.array([s for _, _, s in draw_rows], dtype=float)
    return qid, label, score


ROWS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(-2, 2)), min_size=1, max_size=50)


@settings(max_examples=150, deadline=None)
@given(ROWS, st.randoms(use_true_random=False), st.sampled_from(["exclude", "zero"]))
def test_property_row_order_never_changes_a_default_figure(rows, rnd, no_relevant):
    qid, label, score = _rows(rows)
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    a = M.evaluate_queries(qid, label, score, ALL, no_relevant=no_relevant)
    b = M.evaluate_queries(qid[perm], label[perm], score[perm], ALL, no_relevant=no_relevant)
    np.testing.assert_allclose(b.loc[a.index].to_numpy(float), a.to_numpy(float), rtol=0, atol=1e-12)
    criterion = M.parse_metrics("ndcg@1,3,10,top3recall@3")
    mean_a = pd_series(M.mean_per_query(qid, label, score, criterion), a.index)
    mean_b = pd_series(M.mean_per_query(qid[perm], label[perm], score[perm], criterion), b.index)
    np.testing.assert_allclose(mean_b.loc[a.index], mean_a, rtol=0, atol=1e-12)


def pd_series(values, index):
    import pandas as pd

    return pd.Series(values, index=index)


@settings(max_examples=80, deadline=None)
@given(ROWS)
def test_property_pessimistic_expected_optimistic_are_ordered(rows):
    qid, label, score = _rows(rows)
    low, mid, high = (
        M.evaluate_queries(qid, label, score, ALL, no_relevant="zero", ties=t).to_numpy(float)
        for t in ("pessimistic", "expected", "optimistic")
    )
    assert (low <= mid + 1e-12).all() and (mid <= high + 1e-12).all()
    for ties in ("input", "docid"):
        other = M.evaluate_queries(
            qid, label, score, ALL, no_relevant="zero", ties=ties, docid=[str(i) for i in range(len(qid))]
        ).to_numpy(float)
        assert (low <= other + 1e-12).all() and (other <= high + 1e-12).all()


def test_a_file_sorted_by_label_no_longer_scores_one():
    # the case: every document of a query ties, the relevant one first in the file
    qid = np.repeat(["a", "b"], 4)
    label = np.tile([2.0, 0.0, 0.0, 0.0], 2)
    score = np.zeros(8)
    df = M.evaluate_queries(qid, label, score, "ndcg@1,mrr")
    assert df["ndcg@1"].tolist() == [0.25, 0.25]
    assert df["mrr"].tolist() == pytest.approx([(1 + 1 / 2 + 1 / 3 + 1 / 4) / 4] * 2)
    assert M.evaluate_queries(qid, label, score, "ndcg@1", ties="input")["ndcg@1"].tolist() == [1.0, 1.0]


def test_conventions_of_old_reports_read_as_input_order():
    old = M.Conventions(ties="input").to_dict() | {"ties": "stable"}
    assert M.Conventions.from_dict(old).ties == "input"
    assert "every order of the tied documents" in M.Conventions().describe()


def test_expected_err_is_the_same_whether_groups_are_computed_together_or_label_by_label(monkeypatch):
    rng = np.random.default_rng(15)
    qid = np.repeat(np.arange(300), rng.integers(1, 40, 300))
    label = rng.integers(0, 5, len(qid)).astype(float)
    score = rng.integers(0, 4, len(qid)).astype(float)
    together = M.evaluate_queries(qid, label, score, "err@1,5,20")
    monkeypatch.setattr(M, "_SMALL_TIE_GROUP", 0)
    by_label = M.evaluate_queries(qid, label, score, "err@1,5,20")
    np.testing.assert_allclose(by_label.to_numpy(float), together.to_numpy(float), rtol=0, atol=1e-12)


def test_expected_ndcg_equals_scikit_learns_tie_averaged_ndcg():
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(16)
    for _ in range(300):
        n = int(rng.integers(2, 30))
        label = rng.integers(0, 4, n).astype(float)
        if label.max() == 0:
            continue
        score = rng.integers(0, 4, n).astype(float)
        for k in (1, 3, 10):
            ours = M.ndcg_at_k(label, score, k, gain="linear")
            assert ours == pytest.approx(ndcg_score([label], [score], k=k), abs=1e-12)
