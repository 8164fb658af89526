"""Metrics against pytrec_eval (the oracle) and against plain per-query reference loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core import metrics as M


def random_queries(n_queries, seed, max_docs=30, max_label=4):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_docs + 1, n_queries)
    qid = np.repeat([f"q{i}" for i in range(n_queries)], sizes).astype(object)
    label = rng.integers(0, max_label + 1, len(qid)).astype(float)
    score = rng.permutation(len(qid)) / len(qid)  # unique scores
    return qid, label, score


def trec_eval(qid, label, score, measures, docids=None, relevance_level=1):
    docids = docids if docids is not None else [f"d{i:06d}" for i in range(len(qid))]
    qrel, run = {}, {}
    for q, d, lab, s in zip(qid, docids, label, score):
        qrel.setdefault(q, {})[d] = int(lab)
        run.setdefault(q, {})[d] = float(s)
    return pytrec_eval.RelevanceEvaluator(qrel, measures, relevance_level=relevance_level).evaluate(run)


TREC_NAMES = {
    "ndcg@1": "ndcg_cut_1",
    "ndcg@3": "ndcg_cut_3",
    "ndcg@10": "ndcg_cut_10",
    "recall@3": "recall_3",
    "recall@6": "recall_6",
    "recall@10": "recall_10",
    "p@1": "P_1",
    "p@5": "P_5",
    "p@10": "P_10",
    "map": "map",
    "mrr": "recip_rank",
}
TREC_MEASURES = {"ndcg_cut.1,3,10", "recall.3,6,10", "P.1,5,10", "map", "recip_rank"}


def test_oracle_pytrec_eval_linear_gain_1500_queries():
    qid, label, score = random_queries(1500, seed=0)
    df = M.evaluate_queries(qid, label, score, list(TREC_NAMES), gain="linear", no_relevant="zero")
    ref = trec_eval(qid, label, score, TREC_MEASURES)
    assert len(df) == 1500
    for ours, theirs in TREC_NAMES.items():
        expected = np.array([ref[q][theirs] for q in df.index])
        np.testing.assert_allclose(df[ours].to_numpy(), expected, rtol=0, atol=1e-9, err_msg=ours)


def test_oracle_relevance_threshold_matches_trec_relevance_level():
    qid, label, score = random_queries(300, seed=1)
    df = M.evaluate_queries(
        qid, label, score, ["recall@5", "p@5", "map", "mrr"], no_relevant="zero", relevance_threshold=3
    )
    ref = trec_eval(qid, label, score, {"recall.5", "P.5", "map", "recip_rank"}, relevance_level=3)
    for ours, theirs in {"recall@5": "recall_5", "p@5": "P_5", "map": "map", "mrr": "recip_rank"}.items():
        np.testing.assert_allclose(df[ours], [ref[q][theirs] for q in df.index], atol=1e-9)


# Plain per-query reference implementations, written from the textbook formulas.
def ref_order(label, score):
    return sorted(range(len(label)), key=lambda i: (-score[i], i))


def ref_ndcg(label, score, k, gain):
    g = (lambda x: 2.0**x - 1) if gain == "exp2" else (lambda x: x)
    dcg = sum(g(label[i]) / math.log2(r + 2) for r, i in enumerate(ref_order(label, score)[:k]))
    idcg = sum(g(x) / math.log2(r + 2) for r, x in enumerate(sorted(label, reverse=True)[:k]))
    return dcg / idcg


def ref_err(label, score, k, max_label):
    err, p_continue = 0.0, 1.0
    for r, i in enumerate(ref_order(label, score)[:k], start=1):
        stop = (2.0 ** label[i] - 1) / 2.0**max_label
        err += p_continue * stop / r
        p_continue *= 1 - stop
    return err


def ref_top3recall(label, score, k):
    relevant = [i for i in sorted(range(len(label)), key=lambda i: (-label[i], i)) if label[i] >= 1][:3]
    return len(set(relevant) & set(ref_order(label, score)[:k])) / len(relevant)


def test_exp2_ndcg_err_and_top3_recall_match_reference_loops():
    qid, label, score = random_queries(400, seed=2)
    # input order breaks label ties in top-3 recall's set of the 3 best documents, as the reference loop does
    df = M.evaluate_queries(qid, label, score, "ndcg@1,5,10,err@3,10,top3recall@3,6,10", ties="input")
    max_label = label.max()
    for q in df.index[:400]:
        rows = np.flatnonzero(qid == q)
        lab, sc = label[rows].tolist(), score[rows].tolist()
        if max(lab) < 1:
            assert df.loc[q].drop(["n_docs", "n_relevant"]).isna().all()
            continue
        for k in (1, 5, 10):
            assert df.loc[q, f"ndcg@{k}"] == pytest.approx(ref_ndcg(lab, sc, k, "exp2"), abs=1e-12)
        for k in (3, 10):
            assert df.loc[q, f"err@{k}"] == pytest.approx(ref_err(lab, sc, k, max_label), abs=1e-12)
        for k in (3, 6, 10):
            assert df.loc[q, f"top3recall@{k}"] == pytest.approx(ref_top3recall(lab, sc, k), abs=1e-12)
    assert df.attrs["conventions"]["err_max_label"] == 4


def test_per_query_functions_match_batched():
    label = [0, 2, 1, 0, 3, 1]
    score = [0.1, 0.9, 0.3, 0.8, 0.2, 0.5]
    df = M.evaluate_queries(["q"] * 6, label, score, "ndcg@3,recall@2,top3recall@2,p@4,map,mrr,err@5")
    row = df.iloc[0]
    assert M.ndcg_at_k(label, score, 3) == row["ndcg@3"]
    assert M.recall_at_k(label, score, 2) == row["recall@2"] == 0.25
    assert M.top_n_recall_at_k(label, score, 2) == row["top3recall@2"] == pytest.approx(1 / 3)
    assert M.precision_at_k(label, score, 4) == row["p@4"] == 0.75
    assert M.average_precision(label, score) == row["map"]
    assert M.reciprocal_rank(label, score) == row["mrr"] == 1.0
    assert M.err_at_k(label, score, 5) == row["err@5"]
    assert M.ndcg_at_k(label, score, 3, gain="linear") == pytest.approx(ref_ndcg(label, score, 3, "linear"))


def test_ties_conventions_and_trec_eval_docid_descending():
    # Every document ties: input keeps input order, trec_eval orders by docid descending.
    label = np.array([1.0, 0.0, 2.0, 0.0])
    score = np.zeros(4)
    docids = ["a", "b", "c", "d"]
    stable = M.ndcg_at_k(label, score, 2, gain="linear", ties="input")
    assert stable == pytest.approx(ref_ndcg(label.tolist(), score.tolist(), 2, "linear"))
    ref = trec_eval(["q"] * 4, label, score, {"ndcg_cut.2", "recip_rank"}, docids=docids)["q"]
    assert ref["ndcg_cut_2"] != pytest.approx(stable)
    # Feeding rows in docid-descending order makes the input convention reproduce trec_eval.
    rev = np.argsort(docids)[::-1]
    assert M.ndcg_at_k(label[rev], score[rev], 2, gain="linear", ties="input") == pytest.approx(
        ref["ndcg_cut_2"], abs=1e-12
    )
    assert M.reciprocal_rank(label[rev], score[rev], ties="input") == pytest.approx(ref["recip_rank"], abs=1e-12)
    # Optimistic puts relevant documents first, pessimistic last.
    assert M.ndcg_at_k(label, score, 2, ties="optimistic") == 1.0
    assert M.ndcg_at_k(label, score, 2, ties="pessimistic") == 0.0
    assert M.reciprocal_rank(label, score, ties="pessimistic") == 1 / 3


def test_ties_only_reorder_within_equal_scores():
    label = np.array([0.0, 1.0, 2.0, 0.0])
    score = np.array([0.5, 0.5, 0.1, 0.9])
    # ranking: row3 (0.9), then tie rows 0/1, then row2
    assert M.reciprocal_rank(label, score, ties="input") == 1 / 3
    assert M.reciprocal_rank(label, score) == pytest.approx((1 / 2 + 1 / 3) / 2)  # expected: rank 2 or 3
    assert M.reciprocal_rank(label, score, ties="optimistic") == 1 / 2
    assert M.precision_at_k(label, score, 2, ties="optimistic") == 0.5


def test_queries_without_relevant_documents():
    qid = ["a", "a", "b", "b", "b"]
    label = [0, 0, 1, 0, 2]
    score = [0.2, 0.1, 0.3, 0.2, 0.1]
    names = "ndcg@2,recall@2,top3recall@2,p@2,map,mrr,err@2"
    excl = M.evaluate_queries(qid, label, score, names)
    assert excl.loc["a"].drop(["n_docs", "n_relevant"]).isna().all()
    summary = M.summarise_queries(excl)
    assert summary["n_excluded_no_relevant"] == 1 and summary["n_evaluated"] == 1
    assert summary["metrics"]["ndcg@2"] == excl.loc["b", "ndcg@2"]
    assert "excluded" in summary["conventions"]["description"]

    zero = M.evaluate_queries(qid, label, score, names, no_relevant="zero")
    assert (zero.loc["a"].drop(["n_docs", "n_relevant"]) == 0).all()
    assert M.summarise_queries(zero)["metrics"]["map"] == pytest.approx(excl.loc["b", "map"] / 2)
    ref = trec_eval(qid, label, score, {"ndcg_cut.2", "recall.2", "P.2", "map", "recip_rank"})
    assert ref["a"] == {"ndcg_cut_2": 0.0, "recall_2": 0.0, "P_2": 0.0, "map": 0.0, "recip_rank": 0.0}

    one = M.evaluate_queries(qid, label, score, names, no_relevant="one")
    assert (one.loc["a"].drop(["n_docs", "n_relevant"]) == 1).all()
    assert "scored 1" in M.summarise_queries(one)["conventions"]["description"]
    assert math.isnan(M.ndcg_at_k([0, 0], [1, 2], 5))


def test_non_contiguous_qids_equal_grouped():
    qid, label, score = random_queries(200, seed=3)
    perm = np.random.default_rng(0).permutation(len(qid))
    grouped = M.evaluate_queries(qid, label, score, "ndcg@10,map,err@5")
    shuffled = M.evaluate_queries(qid[perm], label[perm], score[perm], "ndcg@10,map,err@5")
    pd_equal = shuffled.loc[grouped.index]
    np.testing.assert_allclose(pd_equal.to_numpy(float), grouped.to_numpy(float), atol=1e-12)


def test_single_document_queries_and_labels_up_to_60():
    assert M.ndcg_at_k([3], [0.0], 10) == 1.0
    assert M.precision_at_k([3], [0.0], 10) == 0.1
    label = np.array([60, 0, 59, 31])
    score = np.array([0.1, 0.4, 0.3, 0.2])
    value = M.ndcg_at_k(label, score, 4)
    assert value == pytest.approx(ref_ndcg(label.tolist(), score.tolist(), 4, "exp2"))
    err = M.err_at_k(label, score, 4)
    assert np.isfinite(err) and 0 < err <= 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.floats(-1e6, 1e6)), min_size=1, max_size=60),
    st.randoms(use_true_random=False),
)
def test_property_bounds_and_row_permutation_invariance(rows, rnd):
    qid = np.array([f"q{q}" for q, _, _ in rows], dtype=object)
    label = np.array([lab for _, lab, _ in rows], dtype=float)
    score = np.array([s for _, _, s in rows])
    names = "ndcg@3,recall@3,top3recall@3,p@3,map,mrr,err@3"
    df = M.evaluate_queries(qid, label, score, names, no_relevant="zero")
    values = df.drop(columns=["n_docs", "n_relevant"]).to_numpy()
    assert ((values >= -1e-12) & (values <= 1 + 1e-12)).all()
    # With optimistic ties the result depends on scores and labels only, not on row order
    # (top-n recall is left out: its ground-truth set breaks label ties by row order).
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    names = "ndcg@3,recall@3,p@3,map,mrr,err@3"
    a = M.evaluate_queries(qid, label, score, names, no_relevant="zero", ties="optimistic")
    b = M.evaluate_queries(qid[perm], label[perm], score[perm], names, no_relevant="zero", ties="optimistic")
    np.testing.assert_allclose(b.loc[a.index].to_numpy(float), a.to_numpy(float), atol=1e-12)


def test_parse_metrics():
    assert M.parse_metrics("ndcg@1,3,10,recall@3,6,10,map") == [
        "ndcg@1",
        "ndcg@3",
        "ndcg@10",
        "recall@3",
        "recall@6",
        "recall@10",
        "map",
    ]
    assert M.parse_metrics(["NDCG@5", "mrr,err@3,4", "top3recall@3"]) == [
        "ndcg@5",
        "mrr",
        "err@3",
        "err@4",
        "top3recall@3",
    ]
    for bad in ("ndcg", "3,ndcg@3", "foo@3", "ndcg@0", ""):
        with pytest.raises(LtrfeatError, match="metric"):
            M.parse_metrics(bad)


def test_bad_inputs():
    with pytest.raises(ValueError, match="NaN"):
        M.evaluate_queries(["a", "a"], [1, 0], [np.nan, 1.0])
    with pytest.raises(ValueError, match=">= 0"):
        M.evaluate_queries(["a"], [-1], [1.0])
    with pytest.raises(ValueError, match="ties"):
        M.evaluate_queries(["a"], [1], [1.0], ties="random")
    with pytest.raises(ValueError, match="equal length"):
        M.evaluate_queries(["a"], [1, 0], [1.0])


def exact_ndcg(labels, scores, k):
    """NDCG@k with exact integer gains 2^rel - 1 (Python ints) and Fractions: no overflow at any label."""
    from fractions import Fraction

    order = sorted(range(len(labels)), key=lambda i: (-scores[i], i))
    ideal = sorted(labels, reverse=True)

    def dcg(labs):
        return sum(Fraction(2 ** int(lab) - 1) * Fraction(1 / math.log2(r + 2)) for r, lab in enumerate(labs[:k]))

    best = dcg(ideal)
    return float(dcg([labels[i] for i in order]) / best) if best else float("nan")


def test_labels_of_1024_and_more_give_exact_ndcg_not_nan():
    # issue 21 item 2: 2^1024 overflowed, the query's NDCG became NaN and vanished from the mean
    df = M.evaluate_queries(["a", "a", "b", "b"], [1024, 0, 0, 1], [0.0, 1.0, 1.0, 0.0], "ndcg@10,err@10")
    assert df["ndcg@10"].tolist() == pytest.approx([1 / math.log2(3)] * 2, rel=1e-12)
    assert df["err@10"]["a"] == pytest.approx(0.5) and np.isfinite(df["err@10"]).all()
    assert M.summarise_queries(df)["n_evaluated"] == 2
    assert M.ndcg_at_k([1e300, 0], [0, 1], 2) == pytest.approx(1 / math.log2(3), rel=1e-12)
    assert M.ndcg_at_k([1e300, 0], [0, 1], 2, gain="linear") == pytest.approx(1 / math.log2(3), rel=1e-12)


def test_nan_metric_is_an_error_never_dropped_from_the_mean():
    df = M.evaluate_queries(["a", "b"], [1, 1], [0.0, 0.0], "ndcg@10")
    df.loc["b", "ndcg@10"] = np.nan  # what the overflow used to produce
    with pytest.raises(LtrfeatError, match="NaN for 1 evaluated queries"):
        M.summarise_queries(df)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2000), st.integers(0, 50)), min_size=1, max_size=40),
    st.sampled_from([1, 3, 10]),
)
def test_property_large_labels_exp2_ndcg_exact_and_linear_matches_pytrec_eval(rows, k):
    qid = np.array([f"q{q}" for q, _, _ in rows], dtype=object)
    label = np.array([lab for _, lab, _ in rows], dtype=float)
    score = np.array([s for _, _, s in rows], dtype=float) + np.arange(len(rows)) * 1e-6  # unique scores
    df = M.evaluate_queries(qid, label, score, f"ndcg@{k}", no_relevant="zero")
    for q in df.index:
        rows_q = qid == q
        expected = exact_ndcg(label[rows_q].tolist(), score[rows_q].tolist(), k)
        assert df.loc[q, f"ndcg@{k}"] == pytest.approx(0.0 if math.isnan(expected) else expected, rel=1e-9, abs=1e-12)
    lin = M.evaluate_queries(qid, label * 1000, score, f"ndcg@{k}", gain="linear", no_relevant="zero")
    ref = trec_eval(qid, label * 1000, score, {f"ndcg_cut.{k}"})
    np.testing.assert_allclose(
        lin[f"ndcg@{k}"].to_numpy(), [ref[q][f"ndcg_cut_{k}"] for q in lin.index], rtol=0, atol=1e-9
    )


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(-3, 3)), min_size=1, max_size=60),
    st.sampled_from(["exclude", "zero"]),
    st.sampled_from(["exp2", "linear"]),
)
def test_property_mean_per_query_is_the_row_mean_of_the_table_bit_for_bit(rows, no_relevant, gain):
    qid = np.array([f"q{q}" for q, _, _ in rows], dtype=object)
    label = np.array([lab for _, lab, _ in rows], dtype=float)
    score = np.array([s for _, _, s in rows], dtype=float)  # ties included
    names = ["ndcg@1", "ndcg@3", "ndcg@10"]
    table = M.evaluate_queries(qid, label, score, names, no_relevant=no_relevant, gain=gain)
    expected = table[names].to_numpy(dtype=np.float64).mean(axis=1)
    got = M.mean_per_query(qid, label, score, names, no_relevant=no_relevant, gain=gain)
    assert got.tobytes() == expected.tobytes()  # NaN (excluded queries) in the same places, every bit equal
