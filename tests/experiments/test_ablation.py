"""Ablation engine: feature-set planning, fold checks, paired runs, the planted-signal lift, fold loading."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.experiments.ablation import AblationConfig, run_ablation
from ltrfeat.experiments.feature_sets import FeatureSet, plan_feature_sets
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.summary import head_to_head, summarise
from ltrfeat.experiments.letor_folds import load_letor_folds
from ltrfeat.rankers.lambdamart import LambdaMART
from ltrfeat.core.metrics import evaluate_queries
from builders import NAMES, FAST, planted_folds, write_folds


@pytest.fixture(scope="module")
def folds(planted):
    return planted


@pytest.fixture(scope="module")
def sets(folds):
    return plan_feature_sets(folds[0].train.feature_map, base="1-3", neural={"clsm": "clsm_title_cos"})


@pytest.fixture(scope="module")
def result(folds, sets):
    return run_ablation(folds, sets, seeds=(0, 1), ranker_params=FAST, progress=False)


# -- planning -----------------------------------------------------------------------------
def _map(names):
    return FeatureMap(Feature(i + 1, n) for i, n in enumerate(names))


def test_plan_has_base_each_group_all_and_alone_sets():
    fmap = _map(["bm25_title", "bm25_body", "tfidf", "clsm_cos", "dssm_cos", "dssm_body"])
    sets = plan_feature_sets(fmap, base="1-3", neural={"clsm": "clsm_cos", "dssm": ["dssm_cos", 6]})
    assert [(s.name, s.kind) for s in sets] == [
        ("lexical", "ranker"),
        ("lexical+clsm", "ranker"),
        ("lexical+dssm", "ranker"),
        ("lexical+all", "ranker"),
        ("clsm_cos", "alone"),
        ("dssm_cos", "alone"),
        ("dssm_body", "alone"),
        ("bm25_title", "alone"),
        ("bm25_body", "alone"),
    ]
    by_name = {s.name: s.columns for s in sets}
    assert by_name["lexical"] == ["bm25_title", "bm25_body", "tfidf"]
    assert by_name["lexical+dssm"] == ["bm25_title", "bm25_body", "tfidf", "dssm_cos", "dssm_body"]
    assert by_name["lexical+all"] == fmap.names


def test_plan_adds_the_light_set_beside_a_heavy_group_and_does_not_offer_it():
    fmap = _map(["bm25_title", "tfidf", "clsm_cos", "sbert_cos", "dssm_cos"])
    neural = {"clsm": "clsm_cos", "sbert": "sbert_cos", "dssm": "dssm_cos"}
    sets = plan_feature_sets(fmap, base="1-2", neural=neural, light=["clsm", "dssm"])
    ranker = [(s.name, s.offered) for s in sets if s.kind == "ranker"]
    assert ranker[-2:] == [("lexical+all", True), ("lexical+light", False)] and len(ranker) == 6
    assert {s.name: s.columns for s in sets}["lexical+light"] == ["bm25_title", "tfidf", "clsm_cos", "dssm_cos"]
    # one light group is lexical+GROUP already; every group light is lexical+all; unknown names are ignored
    for light in (["clsm"], ["clsm", "sbert", "dssm"], ["clsm", "bert"], []):
        names = [s.name for s in plan_feature_sets(fmap, base="1-2", neural=neural, light=light)]
        assert "lexical+light" not in names


def test_plan_single_group_has_no_all_set_and_alone_spec():
    fmap = _map(["bm25_title", "tfidf", "clsm_cos"])
    sets = plan_feature_sets(fmap, base="bm25_title,tfidf", neural={"clsm": "3"}, alone="tfidf", base_name="lex")
    assert [s.name for s in sets] == ["lex", "lex+clsm", "clsm_cos", "tfidf"]
    every = plan_feature_sets(fmap, base="1-2", neural={"clsm": "3"}, alone="all")
    assert [s.name for s in every if s.kind == "alone"] == ["clsm_cos", "bm25_title", "tfidf"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["bm25", "tf", "idf", "len", "clsm", "dssm", "pr"]), min_size=2, max_size=7, unique=True
    ).flatmap(
        lambda names: st.tuples(
            st.just(names),
            st.integers(1, len(names) - 1),
            st.lists(st.integers(0, 2), min_size=len(names), max_size=len(names)),
        )
    )
)
def test_plan_invariants(case):
    names, n_base, group_of = case
    fmap = _map(names)
    groups = {}
    for name, g in zip(names[n_base:], group_of[n_base:]):
        groups.setdefault(f"g{g}", []).append(name)
    if not groups:
        return
    sets = plan_feature_sets(fmap, base=f"1-{n_base}", neural=groups)
    base = sets[0].columns
    rankers = [s for s in sets if s.kind == "ranker"]
    assert base == names[:n_base] and len({s.name for s in sets}) == len(sets)
    assert len(rankers) == 1 + len(groups) + (len(groups) > 1)
    for s in rankers:
        assert s.columns[:n_base] == base and s.columns == [n for n in names if n in s.columns]
    assert [s.columns[0] for s in sets if s.kind == "alone"] == [n for cols in groups.values() for n in cols] + (
        ["bm25"] if "bm25" in base else []
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"base": "1-3", "neural": {"g": "3"}}, "is also a base feature"),
        ({"base": "1-2", "neural": {"g": "nope"}}, "no feature named 'nope'"),
        ({"base": "9-12", "neural": {"g": "3"}}, "no feature ids in range"),
        ({"base": "1-2", "neural": {}}, "no neural feature group"),
        ({"base": "", "neural": {"g": "3"}}, "base feature selection is empty"),
        ({"base": "1-2", "neural": {"bad name": "3"}}, "neural group name"),
        ({"base": "1-2", "neural": {"g": "3"}, "base_name": "clsm_cos"}, "two feature sets would be named"),
    ],
)
def test_plan_rejects_bad_selections(kwargs, message):
    with pytest.raises(LtrfeatError, match=message):
        plan_feature_sets(_map(["bm25_title", "tfidf", "clsm_cos"]), **kwargs)


# -- the planted signal -------------------------------------------------------------------
def test_planted_signal_is_significant_and_noise_is_not(result):
    summary = summarise(result, n_resamples=2000)
    lift = {c.metric: c for c in summary.comparisons}
    for metric in ("ndcg@1", "ndcg@3", "ndcg@10", "top3recall@3", "map"):
        assert lift[metric].delta > 0.05 and lift[metric].p_holm < 0.01, lift[metric]
        assert lift[metric].wins > lift[metric].losses

    control_folds = planted_folds(signal=False)
    sets = plan_feature_sets(control_folds[0].train.feature_map, base="1-3", neural={"clsm": "clsm_title_cos"})
    control = run_ablation(control_folds, sets, seeds=(0, 1), ranker_params=FAST, progress=False)
    comparisons = summarise(control, n_resamples=2000).comparisons
    assert len(comparisons) == len(control.metrics)
    assert all(c.p_holm > 0.05 for c in comparisons), [(c.metric, c.p_holm) for c in comparisons]
    assert all(c.delta < 0.03 for c in comparisons)


# -- the run ------------------------------------------------------------------------------
def test_runs_are_paired_over_folds_sets_and_seeds(result, folds, sets):
    runs = [(r["fold"], r["feature_set"], r["seed"]) for r in result.runs]
    assert len(runs) == len(folds) * (2 * 2 + 2)
    for fold in folds:
        for s in sets:
            seeds = [seed for f, name, seed in runs if f == fold.name and name == s.name]
            assert seeds == ([0, 1] if s.kind == "ranker" else [None])
    assert all(r["best_iteration"] is None for r in result.runs if r["seed"] is None)
    assert all(1 <= r["best_iteration"] <= 30 for r in result.runs if r["seed"] is not None)
    n_test = sum(f.test.n_queries for f in folds)
    pq = result.per_query
    assert len(pq) == len(sets) * n_test
    assert list(pq.columns[:5]) == ["feature_set", "fold", "qid", "n_docs", "n_relevant"]
    assert pq.groupby("feature_set").size().eq(n_test).all()
    assert result.config["seeds"] == [0, 1] and result.config["engine"] == "lightgbm"
    assert [f["test"]["queries"] for f in result.config["folds"]] == [50, 50, 50]


def test_per_query_values_are_the_seed_average(result, folds, sets):
    fold, fs = folds[1], sets[1]
    scores = [
        LambdaMART(**FAST, seed=s, features=fs.columns).fit(fold.train, fold.valid).predict(fold.test) for s in (0, 1)
    ]
    expected = sum(evaluate_queries(fold.test.qid, fold.test.label, sc, result.metrics)["ndcg@10"] for sc in scores) / 2
    got = result.per_query.query("feature_set == @fs.name and fold == @fold.name").set_index("qid")["ndcg@10"]
    np.testing.assert_allclose(got.loc[expected.index].to_numpy(), expected.to_numpy(), equal_nan=True)


def test_alone_sets_rank_by_raw_value(result, folds):
    fold = folds[0]
    column = fold.test.X[:, fold.test.feature_map.column_of("bm25_title")]
    expected = evaluate_queries(fold.test.qid, fold.test.label, column, result.metrics)["map"]
    got = result.per_query.query("feature_set == 'bm25_title' and fold == 'Fold1'").set_index("qid")["map"]
    np.testing.assert_allclose(got.to_numpy(), expected.to_numpy(), equal_nan=True)


def test_alone_puts_nan_last_and_keeps_ties():
    fmap = _map(["a", "b"])
    X = np.array([[np.nan, 0], [1.0, 0], [1.0, 0], [0.5, 0], [-np.inf, 0]])
    test = RankingSet(["q"] * 5, [2, 0, 1, 0, 0], X, fmap)
    fold = Fold("F", RankingSet([], [], np.zeros((0, 2)), fmap), None, test)
    sets = [FeatureSet("a", ["a"], "alone")]
    ideal = np.array([3, 1, 0, 0, 0]) / np.log2(np.arange(2, 7))
    # ranking: rows 1 and 2 (1.0, tied), row 3, then the NaN and -inf rows (tied last)
    row = run_ablation([fold], sets, seeds=(0,), metrics="ndcg@5,mrr", progress=False).per_query.iloc[0]
    gains = np.array([0.5, 0.5, 0, 1.5, 1.5]) / np.log2(np.arange(2, 7))  # each tie group's mean gain
    assert row["ndcg@5"] == pytest.approx(gains.sum() / ideal.sum())
    assert row["mrr"] == pytest.approx((1 / 1 + 1 / 2) / 2)
    row = run_ablation([fold], sets, seeds=(0,), metrics="ndcg@5,mrr", ties="input", progress=False).per_query.iloc[0]
    gains = np.array([0, 1, 0, 3, 0]) / np.log2(np.arange(2, 7))  # ties kept in input order
    assert row["ndcg@5"] == pytest.approx(gains.sum() / ideal.sum())
    assert row["mrr"] == pytest.approx(1 / 2)


def test_on_run_and_reruns_are_identical(folds, sets):
    seen = []
    kw = dict(
        seeds=(3,),
        ranker_params=FAST | {"params": {"bagging_fraction": 0.7, "bagging_freq": 1}},
        metrics="ndcg@10,map",
        progress=False,
    )
    first = run_ablation(folds[:2], sets[:2], on_run=seen.append, **kw)
    second = run_ablation(folds[:2], sets[:2], **kw)
    assert [(r["fold"], r["feature_set"]) for r in seen] == [(f.name, s.name) for f in folds[:2] for s in sets[:2]]
    assert first.per_query.equals(second.per_query)
    assert summarise(first, n_resamples=500) == summarise(second, n_resamples=500)
    assert first.importance == second.importance


def test_seed_effect_tells_deterministic_training_apart(result, folds, sets):
    assert result.seed_effect == {"lexical": False, "lexical+clsm": False}  # no subsampling: seeds are inert
    bagged = run_ablation(
        folds[:1],
        sets[:1],
        seeds=(0, 1),
        metrics="ndcg@10",
        progress=False,
        ranker_params=FAST | {"params": {"bagging_fraction": 0.5, "bagging_freq": 1}},
    )
    assert bagged.seed_effect == {"lexical": True}


def test_xgboost_engine(folds, sets):
    res = run_ablation(
        folds[:1], sets[:2], engine="xgboost", seeds=(0,), ranker_params=FAST, metrics="ndcg@10", progress=False
    )
    assert res.config["engine_params"]["objective"] == "rank:ndcg"
    means = res.per_query.groupby("feature_set")["ndcg@10"].mean()
    assert means["lexical+clsm"] > means["lexical"]
    assert set(res.importance["lexical+clsm"]) == set(NAMES)
    assert sum(res.importance["lexical+clsm"].values()) == pytest.approx(1.0)


# -- fold checks --------------------------------------------------------------------------
def test_query_tested_in_two_folds_is_an_error(folds, sets):
    twice = [
        folds[0],
        dataclasses.replace(
            folds[1],
            test=folds[0].test,
            valid=None,
            train=folds[1].train.take(~np.isin(folds[1].train.qid, folds[0].test.qid)),
        ),
    ]
    with pytest.raises(LtrfeatError, match=r"query 'q0' is in the test sets of folds 'Fold1' and 'Fold2'"):
        run_ablation(twice, sets, progress=False)


def test_train_test_leak_and_missing_feature_are_errors(folds, sets):
    leaky = dataclasses.replace(folds[0], train=folds[0].test)
    with pytest.raises(LtrfeatError, match="in both the train and the test set of fold 'Fold1'"):
        run_ablation([leaky], sets, progress=False)
    with pytest.raises(LtrfeatError, match="lacks feature 'dssm_cos' of set 'x'"):
        run_ablation(folds, [FeatureSet("x", ["bm25_title", "dssm_cos"])], progress=False)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"engine": "catboost"}, "engine must be one of lightgbm, xgboost, got .catboost."),
        ({"seeds": (1, 1)}, "seeds must be distinct"),
        ({"seeds": ()}, "seeds must be distinct"),
        ({"ranker_params": {"seed": 3}}, "may not set 'seed'"),
        ({"metrics": "ndcg@0"}, "unknown metric"),
        ({"gain": "cubic"}, "gain must be one of"),
    ],
)
def test_bad_run_options(folds, sets, kwargs, message):
    with pytest.raises(ParameterError, match=message):
        run_ablation(folds, sets, progress=False, **kwargs)
    with pytest.raises(ParameterError, match=message):  # refused when the config is made, before any run
        AblationConfig(**kwargs)


def test_a_config_and_the_same_keywords_run_the_same_ablation(folds, sets, result):
    config = AblationConfig(seeds=[0, 1], ranker_params=FAST)
    assert config.seeds == (0, 1)
    same = run_ablation(folds, sets, config, progress=False)
    assert same.per_query.equals(result.per_query) and same.config == result.config
    overridden = run_ablation(folds[:1], sets[:1], config, seeds=(1,), progress=False)
    assert overridden.config["seeds"] == [1]


def test_no_relevant_conventions_change_the_pooled_queries(folds, sets):
    # zero out the labels of one test query: excluded by default, scored 0 with "zero"
    fold = folds[0]
    label = fold.test.label.copy()
    label[fold.test.qid == fold.test.qid[0]] = 0
    fold0 = dataclasses.replace(fold, test=dataclasses.replace(fold.test, label=label))
    alone = [s for s in sets if s.kind == "alone"]
    excluded = summarise(run_ablation([fold0], alone, progress=False), n_resamples=200)
    zero = summarise(run_ablation([fold0], alone, no_relevant="zero", progress=False), n_resamples=200)
    assert excluded.results[0].n_queries == 49 and zero.results[0].n_queries == 50
    with pytest.raises(LtrfeatError, match="no test query has a relevant document"):
        run_ablation(
            [dataclasses.replace(fold, test=dataclasses.replace(fold.test, label=label * 0))], alone, progress=False
        )


# -- summary ------------------------------------------------------------------------------
def test_summary_contract_and_holm_over_all_comparisons(result):
    summary = summarise(result, n_resamples=500, seed=1)
    assert summary.baseline == "lexical"
    assert len(summary.results) == len(result.feature_sets) * len(result.metrics)
    for r in summary.results:
        assert set(r.to_dict()) >= {"feature_set", "metric", "mean", "ci95", "n_queries"}
        assert r.ci95[0] <= r.mean <= r.ci95[1] and r.n_queries <= 150
    keys = {
        "baseline",
        "variant",
        "metric",
        "delta",
        "relative",
        "p_ttest",
        "p_randomization",
        "p_holm",
        "wins",
        "ties",
        "losses",
    }
    for c in summary.comparisons:
        assert set(c.to_dict()) >= keys and c.variant == "lexical+clsm"
        assert c.p_holm >= c.p_randomization
        assert c.wins + c.ties + c.losses == c.n_queries
    smallest = min(c.p_randomization for c in summary.comparisons)
    assert min(c.p_holm for c in summary.comparisons) == pytest.approx(min(1.0, smallest * len(summary.comparisons)))
    reverse = summarise(result, baseline="lexical+clsm", n_resamples=500)
    assert all(c.variant == "lexical" and c.delta < 0 for c in reverse.comparisons[:3])
    with pytest.raises(LtrfeatError, match="not a ranker set"):
        summarise(result, baseline="bm25_title")


# -- reading LETOR folds ------------------------------------------------------------------


def test_load_letor_folds_natural_order_and_padding(tmp_path, folds):
    renamed = [dataclasses.replace(f, name=n) for f, n in zip(folds, ["Fold10", "Fold2", "Fold1"])]
    # a sparse test file where feature 3 is always zero: it must come back as a zero column
    test = renamed[2].test
    X = test.X.copy()
    X[:, 2] = 0
    renamed[2] = dataclasses.replace(renamed[2], test=dataclasses.replace(test, X=X))
    write_folds(tmp_path, renamed, sparse=True)
    (tmp_path / "Fold2" / "vali.txt").unlink()
    (tmp_path / "notes").mkdir()
    loaded = load_letor_folds(tmp_path)
    assert [f.name for f in loaded] == ["Fold1", "Fold2", "Fold10"]
    assert loaded[1].valid is None and loaded[0].valid is not None
    assert all(f.test.feature_map.names == ["f1", "f2", "f3", "f4"] for f in loaded)
    np.testing.assert_array_equal(loaded[0].test.X[:, 2], 0)
    np.testing.assert_allclose(loaded[0].test.X, X, rtol=1e-6)
    assert "test=" in loaded[0].origin and "Fold1" in loaded[0].origin


def test_load_letor_folds_errors(tmp_path, folds):
    with pytest.raises(LtrfeatError, match="no fold directory matches 'Fold\\*'"):
        load_letor_folds(tmp_path)
    write_folds(tmp_path, folds[:1], ext=".letor")
    (tmp_path / "Fold1" / "test.letor").rename(tmp_path / "Fold1" / "tst.letor")
    with pytest.raises(LtrfeatError, match="no test file"):
        load_letor_folds(tmp_path)
    (tmp_path / "Fold1" / "tst.letor").rename(tmp_path / "Fold1" / "test.letor")
    (tmp_path / "Fold1" / "test.txt").write_bytes((tmp_path / "Fold1" / "test.letor").read_bytes())
    with pytest.raises(LtrfeatError, match="2 test files"):
        load_letor_folds(tmp_path)
    (tmp_path / "Fold1" / "test.txt").unlink()
    folds[0].train.feature_map.save(FeatureMap.sidecar_path(tmp_path / "Fold1" / "train.letor"))
    with pytest.raises(LtrfeatError, match="differ from those of"):
        load_letor_folds(tmp_path)
    for part in ("vali.txt", "test.letor"):
        folds[0].train.feature_map.save(FeatureMap.sidecar_path(tmp_path / "Fold1" / part))
    assert load_letor_folds(tmp_path)[0].test.feature_map.names == NAMES
    assert load_letor_folds(tmp_path, fold_glob="Fold1")[0].name == "Fold1"


def test_head_to_head_pairs_queries_by_fold_and_qid_and_skips_excluded_ones():
    rows = []
    for fold in ("f1", "f2"):
        for q in range(5):  # the same qids in both folds are different queries
            for name, value in (("a", 0.5), ("b", 0.5 + 0.1 * (q % 2)), ("c", np.nan if q == 0 else 0.2)):
                rows.append(
                    {"feature_set": name, "fold": fold, "qid": str(q), "n_docs": 3, "n_relevant": 1, "ndcg@1": value}
                )
    per_query = pd.DataFrame(rows)
    ab, ac = head_to_head(per_query, [("a", "b"), ("a", "c")], ["ndcg@1"], n_resamples=200)
    assert ab.n_queries == 10 and ab.delta == pytest.approx(0.04) and (ab.wins, ab.ties) == (4, 6)
    assert ac.n_queries == 8 and ac.delta == pytest.approx(-0.3)  # the NaN (excluded) query of each fold
    assert ab.p_holm >= ab.p_randomization
    with pytest.raises(LtrfeatError, match="'d' is not in this ablation"):
        head_to_head(per_query, [("a", "d")], ["ndcg@1"])


def test_fit_rows_counts_every_fit_of_plain_and_selection_runs(folds, sets):
    from ltrfeat.experiments.ablation import fit_rows
    from ltrfeat.rankers.selection import SelectionConfig

    rows = sum(len(f.train) + (0 if f.valid is None else len(f.valid)) for f in folds)
    rankers = sum(s.kind == "ranker" for s in sets)
    assert fit_rows(folds, sets, AblationConfig(seeds=(0, 1))) == rankers * 2 * rows
    selection = SelectionConfig(candidates=("lightgbm", "linear", "best-single"), inner_folds=3)
    # per ranker set: 3 inner folds x 3 candidates, then lightgbm and linear per seed, best-single once;
    # plus the best-single baseline
    expected = (rankers * (3 * 3 + 2 * 2 + 1) + 1) * rows
    assert fit_rows(folds, sets, AblationConfig(seeds=(0, 1), selection=selection)) == expected


def test_plain_runs_summarise_contributions_of_the_first_seed_only(folds, sets, monkeypatch):
    from ltrfeat.experiments import _ablation_runs

    calls = []
    real = _ablation_runs.summarise_contributions
    monkeypatch.setattr(
        _ablation_runs, "summarise_contributions", lambda model, test: calls.append(model.seed) or real(model, test)
    )
    three = run_ablation(folds[:1], sets, seeds=(3, 1, 2), ranker_params=FAST, progress=False)
    rankers = [fs for fs in sets if fs.kind == "ranker"]
    assert rankers and calls == [3] * len(rankers)  # the drill-down reads the first seed's model only
    one = run_ablation(folds[:1], sets, seeds=(3,), ranker_params=FAST, progress=False)
    for fs in rankers:
        got, want = three.contributions[fs.name][folds[0].name], one.contributions[fs.name][folds[0].name]
        assert got.keys() == want.keys() and np.array_equal(got["mean_abs"], want["mean_abs"])
