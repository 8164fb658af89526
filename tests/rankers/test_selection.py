"""Model selection: candidates, the one-SE rule, inner cross-validation that never reads test labels,
deterministic tuning, and a verdict that names the single feature a learned ranker cannot beat."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.feature_sets import plan_feature_sets
from ltrfeat.experiments.ablation import run_ablation
from ltrfeat.experiments.summary import summarise
from ltrfeat.rankers.lambdamart import LambdaMART, meta_path
from ltrfeat.core.metrics import evaluate_queries
from ltrfeat.rankers.linear import LinearRanker
from ltrfeat.rankers.models import load_ranker, save_ranker
from ltrfeat.rankers.selection import (
    effective_count,
    Candidates,
    SelectionConfig,
    _choose,
    choose,
    holdout_queries,
    inner_splits,
    recommend,
    select,
)
from ltrfeat.rankers.single import BestSingleFeature, BoostedFromFeature, query_zscore

FAST = {"n_estimators": 40, "early_stopping_rounds": 10, "n_jobs": 1}


def one_feature_world(*, n_queries: int = 150, docs: int = 12, noise: int = 5, seed: int = 0) -> RankingSet:
    """Labels follow ``signal`` (plus a little noise); every other feature is pure noise."""
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    latent = rng.normal(size=n)
    label = np.digitize(latent + rng.normal(scale=0.3, size=n), [0.0, 0.8, 1.6]).astype(float)
    X = np.column_stack([latent + rng.normal(scale=0.2, size=n)] + [rng.normal(size=n) for _ in range(noise)])
    fmap = FeatureMap(Feature(i + 1, name) for i, name in enumerate(["signal"] + [f"noise{k}" for k in range(noise)]))
    return RankingSet(np.repeat([f"q{i:04d}" for i in range(n_queries)], docs), label, X, fmap)


def folds_of(data: RankingSet, k: int = 3) -> list[Fold]:
    queries = data.queries()
    part = {q: i % k for i, q in enumerate(queries.tolist())}
    of = np.array([part[q] for q in data.qid.tolist()])
    return [
        Fold(
            f"Fold{i + 1}", data.take(~np.isin(of, [i, (i + 1) % k])), data.take(of == (i + 1) % k), data.take(of == i)
        )
        for i in range(k)
    ]


@pytest.fixture(scope="module")
def world():
    return one_feature_world()


# -- pieces -------------------------------------------------------------------------------
def test_query_zscore_standardises_within_each_query():
    z = query_zscore(np.array(["a", "a", "a", "b", "b"], dtype=object), np.array([1.0, 2.0, 3.0, 5.0, 5.0]))
    assert z[:3] == pytest.approx([-1.2247449, 0.0, 1.2247449]) and list(z[3:]) == [0.0, 0.0]


def test_best_single_feature_finds_the_signal_and_its_direction(world):
    model = BestSingleFeature().fit(world)
    assert (model.feature_, model.direction_) == ("signal", 1)
    flipped = dataclasses.replace(world, X=-world.X)
    assert (BestSingleFeature().fit(flipped).direction_) == -1


def test_linear_ranker_weights_the_signal_and_round_trips(world, tmp_path):
    model = LinearRanker().fit(world)
    assert np.argmax(np.abs(model.coef_)) == 0 and model.coef_[0] > 0
    save_ranker(model, tmp_path / "lin.json")
    again = load_ranker(tmp_path / "lin.json")
    assert np.array_equal(again.predict(world), model.predict(world))


def test_linear_ranker_reaches_the_optimum_on_correlated_features():
    # near-copies of one feature make the problem ill-conditioned: a gradient-tolerance stop (L-BFGS) ends far
    # from the optimum there; the fitted weights must zero the gradient of C * sum(log-loss) + |w|^2 / 2
    rng = np.random.default_rng(3)
    base = one_feature_world(n_queries=60, docs=10, noise=1)
    X = np.column_stack([base.X, base.X[:, :1] * (1 + rng.normal(scale=1e-3, size=(len(base), 3)))])
    data = RankingSet(base.qid, base.label, X, FeatureMap.dense(X.shape[1]))
    model = LinearRanker(C=10.0, max_pairs_per_query=1000).fit(data)
    label, Z = data.label, model._standardise(data.X.astype(np.float64))
    better, worse = [], []
    for start in range(0, len(data), 10):
        i, j = np.nonzero(label[start : start + 10, None] > label[None, start : start + 10])
        better.append(i + start)
        worse.append(j + start)
    D = Z[np.concatenate(better)] - Z[np.concatenate(worse)]
    assert model.n_pairs_ == len(D)
    margin = D @ model.coef_
    gradient = -10.0 * D.T @ (1 / (1 + np.exp(margin))) + model.coef_
    assert np.abs(gradient).max() < 1e-5 * np.abs(10.0 * D).sum(axis=0).max()  # L-BFGS: 6e-5


def test_boosted_from_feature_round_trips_and_plain_loader_refuses_it(world, tmp_path):
    train, valid = world.subset_queries(world.queries()[:100]), world.subset_queries(world.queries()[100:])
    model = BoostedFromFeature(lambdamart=FAST).fit(train, valid)
    assert model.feature_ == "signal" and model.scale_ == 2.0
    two = BoostedFromFeature(lambdamart=FAST, scales=(1.0, 4.0)).fit(train, valid)
    assert two.scale_ in (1.0, 4.0) and set(two.validation_scores_) == {1.0, 4.0}
    save_ranker(model, tmp_path / "boost.txt", extra={"note": 1})
    again = load_ranker(tmp_path / "boost.txt")
    assert np.array_equal(again.predict(world), model.predict(world))
    with pytest.raises(ModelFileError, match="not a plain LambdaMART"):
        LambdaMART.load(tmp_path / "boost.txt")


def test_best_single_model_round_trips_and_names_a_missing_feature(world, tmp_path):
    model = BestSingleFeature().fit(world)
    save_ranker(model, tmp_path / "single.json")
    again = load_ranker(tmp_path / "single.json")
    assert np.array_equal(again.predict(world), model.predict(world))
    other = world.select_features("2-6")
    with pytest.raises(ModelFileError, match="lacks the model's feature 'signal'"):
        again.predict(other)


def test_selection_config_checks_its_settings():
    with pytest.raises(LtrfeatError, match="unknown candidate 'forest'"):
        SelectionConfig(candidates=("forest",))
    with pytest.raises(LtrfeatError, match="needs a search"):
        SelectionConfig(candidates=("lightgbm-tuned",))
    with pytest.raises(LtrfeatError, match="inner_folds"):
        SelectionConfig(inner_folds=1)
    assert SelectionConfig.default("xgboost", tune="grid").candidates == (
        "xgboost",
        "xgboost-tuned",
        "linear",
        "boost-best",
        "best-single",
    )


def test_one_se_rule_prefers_the_simpler_candidate_when_the_data_cannot_tell():
    rng = np.random.default_rng(0)
    base = rng.random(200)
    noise = rng.normal(scale=0.05, size=200)
    cv = {"lightgbm": base + 0.002 + noise - noise.mean(), "linear": base}  # better by 0.002, SE ~0.0035
    assert choose(cv, "one-se")[0] == "linear"
    assert choose(cv, "best")[0] == "lightgbm"
    clear = {"lightgbm": base + 0.2, "linear": base}
    assert choose(clear, "one-se")[0] == "lightgbm"


def _lead(rng, base, lead_in_se: float, n: int = 200):
    """``base`` plus a noisy lead of about ``lead_in_se`` standard errors of the paired difference."""
    noise = rng.normal(scale=0.05, size=n)
    noise -= noise.mean()
    return base + lead_in_se * noise.std(ddof=1) / np.sqrt(n) + noise


def test_joint_rule_asks_for_a_bigger_lead_only_when_more_close_candidates_compete():
    rng = np.random.default_rng(1)
    base = rng.random(200)
    two = {"lightgbm": _lead(rng, base, 1.5), "linear": base}
    assert choose(two, "joint")[0] == choose(two, "one-se")[0] == "lightgbm"  # 1 SE with one other candidate
    # seven more distinct candidates as good as the simple one: the best of many is noise-inflated, 1.5 SE is not
    # enough
    close = two | {f"lin{k}": _lead(rng, base, 0.0) for k in range(7)}
    order = ["linear"] + [f"lin{k}" for k in range(7)] + ["lightgbm"]
    assert choose(close, "joint", order)[0] == "linear" and _choose(close, "joint", order)[2] > 1.5
    # seven near-copies of the simple one are one chance, not seven: the margin stays near one SE
    near = two | {f"lin{k}": base + rng.normal(scale=0.001, size=200) for k in range(7)}
    assert choose(near, "joint", order)[0] == choose(near, "one-se", order)[0] == "lightgbm"
    assert _choose(near, "joint", order)[2] < 1.1
    # seven clearly dominated candidates do not raise the bar
    dominated = two | {f"bad{k}": base - 0.2 + rng.normal(scale=0.01, size=200) for k in range(7)}
    assert choose(dominated, "joint", ["linear"] + [f"bad{k}" for k in range(7)] + ["lightgbm"])[0] == "lightgbm"


def test_identical_candidates_are_one_hypothesis_and_do_not_raise_the_margin():
    rng = np.random.default_rng(4)
    base = rng.random(200)
    two = {"linear": base, "lightgbm": _lead(rng, base, 1.5)}
    # copies of the simple candidate (a fine-tuning that kept its start scores exactly as its start)
    copies = two | {f"copy{k}": base.copy() for k in range(6)}
    order = ["linear"] + [f"copy{k}" for k in range(6)] + ["lightgbm"]
    assert choose(copies, "joint", order)[0] == choose(two, "joint")[0] == "lightgbm"
    assert _choose(copies, "joint", order)[2] == _choose(two, "joint")[2] == pytest.approx(1.0)
    # as many close but distinct candidates do raise it
    close = two | {f"lin{k}": _lead(rng, base, 0.0) for k in range(6)}
    assert choose(close, "joint", order[:1] + [f"lin{k}" for k in range(6)] + ["lightgbm"])[0] == "linear"
    # copies of the best count for nothing either
    best_copies = two | {f"top{k}": two["lightgbm"].copy() for k in range(6)}
    assert _choose(best_copies, "joint", ["linear", "lightgbm"] + [f"top{k}" for k in range(6)])[2] == pytest.approx(
        1.0
    )


def _used(cv: dict, single: dict | None = None) -> dict:
    """Features each candidate's model uses: a set's best single feature (``single[set]``, default its own first
    column) or, for learned rankers, all of the set's columns (five lexical ones, one more per ``+``)."""
    single = single or {}
    columns = {s: [f"lex{j}" for j in range(5)] + s.split("+")[1:] for s in cv}
    return {s: {c: [single.get(s, columns[s][0])] if c == "best-single" else columns[s] for c in cv[s]} for s in cv}


def test_recommend_joint_chooses_once_among_all_configurations_simplest_first():
    rng = np.random.default_rng(2)
    base = rng.random(300)
    cv = {
        "lexical": {"best-single": base - 0.1, "linear": base, "lightgbm": base + 0.001},
        "lexical+x": {"best-single": base + 0.002, "linear": base + 0.003, "lightgbm": _lead(rng, base, 1.2, 300)},
    }
    rec = recommend(cv, "joint", ["lexical", "lexical+x"], used=_used(cv))
    # a single feature within the margin of the best beats every learned ranker
    assert (rec["feature_set"], rec["candidate"]) == ("lexical+x", "best-single")
    assert rec["n_configurations"] == 6 and rec["best"] in rec["stats"] and rec["margin_z"] >= 1.0
    # the one-SE rule picks per set first, then among the sets
    old = recommend(cv, "one-se", ["lexical", "lexical+x"], used=_used(cv))
    assert set(old["stats"]) == {"lexical", "lexical+x"} and old["margin_z"] == 1.0
    assert old["candidate"] == choose(cv[old["feature_set"]], "one-se")[0]
    # adding a dominated feature set leaves the recommendation alone
    more = cv | {"lexical+noise": {k: v - 0.3 for k, v in cv["lexical"].items()}}
    again = recommend(more, "joint", ["lexical", "lexical+x", "lexical+noise"], used=_used(more))
    assert (again["feature_set"], again["candidate"]) == (rec["feature_set"], rec["candidate"])


def test_recommend_tiered_prefers_a_sets_single_feature_unless_a_ranker_leads_by_the_margin():
    rng = np.random.default_rng(3)
    base = rng.random(300)
    order = ["lexical", "lexical+x"]
    # lexical needs its linear ranker; on lexical+x the new feature alone is as good (the sample world's MiniLM)
    cv = {
        "lexical": {"best-single": base - 0.2, "linear": base, "lightgbm": base - 0.01},
        "lexical+x": {"best-single": _lead(rng, base, 0.5, 300), "linear": _lead(rng, base, 0.6, 300)},
    }
    assert choose(cv["lexical"], "one-se")[0] == "linear" and choose(cv["lexical+x"], "one-se")[0] == "best-single"
    rec = recommend(cv, "tiered", order, used=_used(cv))
    assert (rec["feature_set"], rec["candidate"]) == ("lexical+x", "best-single")
    assert rec["complexity"] == {"lexical": 5, "lexical+x": 1}
    # a learned ranker that leads the single feature by more than the margin wins
    cv["lexical"]["linear"] = _lead(rng, cv["lexical+x"]["best-single"], 4.0, 300)
    rec = recommend(cv, "tiered", order, used=_used(cv))
    assert (rec["feature_set"], rec["candidate"]) == ("lexical", "linear")


def test_tiered_takes_the_better_single_feature_whichever_set_offered_it():
    """Issue 55's folds: every set's pick is its best single feature; lexical's (BM25) trails MiniLM's cosine,
    offered by lexical+sbert and lexical+all, by 1.4 SE. Both picks use one feature, so the higher mean wins; the
    sets whose pick is the same feature (the same model) count once and do not widen the margin."""
    rng = np.random.default_rng(55)
    n = 300
    bm25 = rng.random(n)
    step = rng.normal(size=n)
    sbert = bm25 + 0.0236 + 0.0173 * np.sqrt(n) * (step - step.mean()) / step.std(ddof=1)
    order = ["lexical", "lexical+clsm", "lexical+dssm", "lexical+sbert", "lexical+all"]
    ranker = {"linear": bm25 - 0.05, "lightgbm": bm25 - 0.04}
    # the CLSM and DSSM sets pick their own cosines, as good as BM25: distinct close models widen the margin
    own = {s: _lead(rng, bm25, 0.0, n) for s in order[1:3]}
    cv = {s: {"best-single": own.get(s, sbert if "sbert" in s or "all" in s else bm25).copy()} | ranker for s in order}
    single = {s: "sbert_cos" if "sbert" in s or "all" in s else "bm25_title" for s in order} | {
        s: f"{s[8:]}_cos" for s in own
    }
    assert all(choose(cv[s], "tiered")[0] == "best-single" for s in order)
    rec = recommend(cv, "tiered", order, used=_used(cv, single))
    # (the rule that charged a set's size kept lexical here: its lead of 1.4 SE was within 1.62 SE)
    assert (rec["feature_set"], rec["candidate"]) == ("lexical+sbert", "best-single")
    assert rec["complexity"] == dict.fromkeys(order, 1)
    # equally complex picks go by plan order unless a later one leads by more than one SE: here it does (1.4 SE)
    assert choose({s: cv[s]["best-single"] for s in order}, "joint", order, rec["complexity"])[0] == "lexical+sbert"
    # the same single feature offered by two sets is one model: lexical+all adds nothing to the margin
    without = {s: cv[s] for s in order if s != "lexical+all"}
    again = recommend(without, "tiered", list(without), used=_used(without, single))
    assert rec["margin_z"] == pytest.approx(again["margin_z"])
    # a lexical ranker on five features must lead the single feature by more than the margin, not merely lead
    cv["lexical"]["linear"] = _lead(rng, sbert, 0.5, n)
    assert choose(cv["lexical"], "tiered")[0] == "linear"
    assert recommend(cv, "tiered", order, used=_used(cv, single))["feature_set"] == "lexical+sbert"


def test_tiered_keeps_a_simpler_candidate_within_the_margin_whichever_set_offered_it():
    """All of Home Depot, fold 1 (three seeds): within the fine-tuned MiniLM's set the linear ranker led the MiniLM
    cosine alone by 1.45 SE, so that set's one-SE step dropped the cosine, while across sets, with several distinct
    linear rankers close to the best, the margin was 1.57 SE. The same comparison with the same best must get the
    same margin: the cosine is within it and is the least complex configuration."""
    rng = np.random.default_rng(57)
    n = 600
    cosine = rng.random(n)
    best = _lead(rng, cosine, 1.45, n)
    order = ["lexical", "lexical+a", "lexical+b", "lexical+ft"]
    cv = {s: {"best-single": cosine - 0.2, "linear": _lead(rng, best, -0.5, n)} for s in order[:3]}
    cv["lexical+ft"] = {"best-single": cosine, "linear": best}
    assert choose(cv["lexical+ft"], "one-se")[0] == "linear"
    rec = recommend(cv, "tiered", order, used=_used(cv))
    assert rec["margin_z"] > 1.45
    assert (rec["feature_set"], rec["candidate"]) == ("lexical+ft", "best-single")
    # the "how" lines find the configuration's own statistics and complexity
    assert (
        rec["stats"]["lexical+ft/best-single"]["gap_to_best"]
        <= rec["margin_z"] * rec["stats"]["lexical+ft/best-single"]["se"]
    )
    assert rec["complexity"]["lexical+ft/best-single"] == 1 and rec["best"] == "lexical+ft"
    # beyond the margin a linear ranker is recommended (lexical's: as good, fewer features)
    cv["lexical+ft"]["best-single"] = _lead(rng, best, -4.0, n)
    assert recommend(cv, "tiered", order, used=_used(cv))["candidate"] == "linear"


def test_equally_complex_picks_go_by_plan_order_unless_one_leads_by_a_standard_error():
    rng = np.random.default_rng(7)
    base = rng.random(300)
    order = ["lexical+a", "lexical+b", "lexical+c"]
    # three linear rankers on six features each; b and c lead a by a fraction of a standard error (noise)
    cv = {"lexical+a": {"linear": base}}
    cv |= {s: {"linear": _lead(rng, base, 0.6, 300)} for s in order[1:]}
    used = {s: {"linear": [f"f{j}" for j in range(6)]} for s in order}
    assert recommend(cv, "tiered", order, used=used)["feature_set"] == "lexical+a"
    cv["lexical+c"]["linear"] = _lead(rng, base, 3.0, 300)  # a real lead
    assert recommend(cv, "tiered", order, used=used)["feature_set"] == "lexical+c"
    # a single feature is simpler than any linear ranker within the margin, whichever set offered it
    cv["lexical+b"] = {"best-single": _lead(rng, base, 2.5, 300)}
    used["lexical+b"] = {"best-single": ["b_cos"]}
    assert recommend(cv, "tiered", order, used=used)["feature_set"] == "lexical+b"


def test_effective_count_counts_copies_once_and_independent_columns_each():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 6))
    assert effective_count(x) == pytest.approx(6, abs=0.2)
    assert effective_count(np.column_stack([x[:, 0]] * 5)) == pytest.approx(1.0)
    assert effective_count(np.column_stack([x[:, 0], x[:, 0] + 0.01 * x[:, 1]])) < 1.05
    assert effective_count(np.zeros((400, 3))) == 0.0  # copies of the best
    assert effective_count(np.column_stack([np.ones(400), x[:, :2]])) == pytest.approx(3, abs=0.1)


def test_inner_splits_partition_the_training_queries(world):
    config = SelectionConfig(inner_folds=3)
    splits = inner_splits(world, config)
    held = [set(h.queries().tolist()) for _, _, h in splits]
    assert set().union(*held) == set(world.queries().tolist()) and sum(map(len, held)) == world.n_queries
    for (fit, stop, _), queries in zip(splits, held):
        assert not (set(fit.queries().tolist()) | set(stop.queries().tolist())) & queries
    kept, out = holdout_queries(world.queries(), 0.2, 0)
    assert len(out) == 30 and not set(kept) & set(out)


# -- selection never reads the test queries; tuning is deterministic ----------------------
def _poisoned(fold: Fold, seed: int) -> Fold:
    rng = np.random.default_rng(seed)
    test = dataclasses.replace(fold.test, label=rng.integers(0, 4, len(fold.test)).astype(float))
    return dataclasses.replace(fold, test=test)


@pytest.mark.parametrize("tune", ["grid", "optuna"])
def test_selection_ignores_test_labels_and_is_deterministic(world, tune):
    pytest.importorskip("optuna") if tune == "optuna" else None
    fold = folds_of(world.subset_queries(world.queries()[:90]))[0]
    config = SelectionConfig.default("lightgbm", tune=tune, tune_trials=4)
    candidates = Candidates(world.feature_map.names, FAST | {"engine": "lightgbm"})
    first = select(fold.train, fold.valid, candidates, config)
    poisoned = _poisoned(fold, 1)
    again = select(poisoned.train, poisoned.valid, candidates, config)
    assert first["chosen"] == again["chosen"] and first["tuned"] == again["tuned"]
    assert first["stats"] == again["stats"]
    assert first["trials"]["lightgbm-tuned"] == again["trials"]["lightgbm-tuned"]


def test_ablation_choices_do_not_depend_on_test_labels(world):
    folds = folds_of(world.subset_queries(world.queries()[:90]))
    sets = plan_feature_sets(world.feature_map, base="2-6", neural={"sig": "signal"})
    config = SelectionConfig.default("lightgbm")
    clean = run_ablation(folds, sets, seeds=[0], ranker_params=FAST, progress=False, selection=config)
    poisoned = run_ablation(
        [_poisoned(f, 7) for f in folds], sets, seeds=[0], ranker_params=FAST, progress=False, selection=config
    )
    assert clean.config["selection"]["chosen"] == poisoned.config["selection"]["chosen"]
    assert clean.config["selection"]["recommended"] == poisoned.config["selection"]["recommended"]


@pytest.mark.parametrize("rule", ["tiered", "joint"])
def test_a_dominated_feature_set_leaves_the_recommendation_alone_and_the_verdict_says_how(world, rule):
    from ltrfeat.experiments.feature_sets import FeatureSet
    from ltrfeat.experiments.verdict import verdict_lines

    folds = folds_of(world.subset_queries(world.queries()[:90]))
    sets = plan_feature_sets(world.feature_map, base="2-6", neural={"sig": "signal"})
    config = SelectionConfig.default("lightgbm", rule=rule)
    runs = [
        run_ablation(folds, offered, seeds=[0], ranker_params=FAST, progress=False, selection=config)
        for offered in (sets, sets[:2] + [FeatureSet("noise", ["noise0", "noise1"])] + sets[2:])
    ]
    picks = [
        {f: (r["feature_set"], r["candidate"]) for f, r in run.config["selection"]["recommended"].items()}
        for run in runs
    ]
    assert picks[0] == picks[1] and all(s == "lexical+sig" for s, _ in picks[0].values())
    lines = verdict_lines(summarise(runs[1], n_resamples=500).verdict)
    assert any(line.startswith(f"  how: rule {rule}: ") for line in lines)
    assert any("selection cost at ndcg@1: the procedure's expected score" in line for line in lines)


# -- the verdict on a world where one feature is (almost) the label -----------------------
@pytest.fixture(scope="module")
def one_feature_ablation(world):
    # base: the signal and four noise columns; the "neural" group adds one more noise column
    sets = plan_feature_sets(world.feature_map, base="1-5", neural={"extra": "noise4"}, alone="signal")
    result = run_ablation(
        folds_of(world),
        sets,
        seeds=[0, 1],
        ranker_params=FAST | {"params": {"bagging_fraction": 0.8, "bagging_freq": 1}},
        progress=False,
        selection=SelectionConfig.default("lightgbm"),
    )
    return result, summarise(result, n_resamples=2000)


def test_recommended_never_falls_significantly_below_the_planted_feature(one_feature_ablation):
    result, summary = one_feature_ablation
    verdict = summary.verdict
    assert verdict["best_single_features"] == {"signal": 3}
    comps = {(c.baseline, c.variant, c.metric): c for c in summary.comparisons}
    for metric in ("ndcg@1", "ndcg@3", "ndcg@10"):
        c = comps[("best-single", "recommended", metric)]
        assert not (c.delta < 0 and c.p_holm < 0.05), c
    means = {(r.feature_set, r.metric): r.mean for r in summary.results}
    assert means[("recommended", "ndcg@10")] >= means[("signal", "ndcg@10")] - 0.01


def test_every_candidate_row_and_the_recommendation_average_every_seed(one_feature_ablation):
    result, _ = one_feature_ablation
    from ltrfeat.rankers import registry

    rows = [s.name for s in result.feature_sets if s.kind == "candidate"]
    assert "lexical/linear" in rows and "lexical/boost-best" in rows
    for name in rows:
        for fold, entry in result.test_scores[name].items():
            free = registry.seed_free(name.rsplit("/", 1)[1])
            assert entry["seeds"] == ([None] if free else [0, 1]), (name, fold)
    # the recommendation's row is its (set, candidate) row, seeds and all
    for fold, rec in result.config["selection"]["recommended"].items():
        source = result.test_scores[f"{rec['feature_set']}/{rec['candidate']}"][fold]
        assert result.test_scores["recommended"][fold] is source


def test_verdict_warns_when_a_ranker_does_not_beat_the_best_single_feature(one_feature_ablation):
    _, summary = one_feature_ablation
    warnings = summary.verdict["warnings"]
    assert any("not significantly better than the best single feature" in w or "BELOW" in w for w in warnings)
    from ltrfeat.experiments.verdict import verdict_lines

    lines = verdict_lines(summary.verdict)
    assert lines[0].startswith("verdict: recommended ") and "signal x3" in "\n".join(lines)
    # ablate --deploy-to: the command that ships keeps the candidates the engine can run
    lines = verdict_lines(summary.verdict | {"deploy_to": "es-ltr"})
    (ship,) = [line for line in lines if "to ship" in line]
    train, export = lines[lines.index(ship) + 1 :][:2]
    assert "--select --deployable es-ltr --out ranker.txt" in train
    assert export == "    ltrfeat export-ranker ranker.txt --to es-ltr --out ltr.json"
    assert "boost-best" not in ship.split("can run (")[1].split(")")[0]


def test_the_selection_cost_has_one_sign_in_the_verdict_and_in_words(one_feature_ablation):
    from ltrfeat.experiments.in_words import summary_in_words
    from ltrfeat.experiments.report import report_json
    from ltrfeat.experiments.verdict import verdict_lines

    result, summary = one_feature_ablation
    verdict = summary.verdict
    lines = "\n".join(verdict_lines(verdict))
    for row in verdict["metrics"]:
        # cost = the best fixed configuration in hindsight minus the procedure: positive when selection lost
        assert row["selection_cost"] == pytest.approx(row["best_fixed"]["mean"] - row["recommended"])
        assert f"(cost {row['selection_cost']:+.4f}; " in lines
    first = verdict["metrics"][0]["selection_cost"]
    assert f"selection cost {first:+.4f}." in summary_in_words(report_json(result, summary))


def test_ablation_without_selection_is_unchanged(world):
    folds = folds_of(world.subset_queries(world.queries()[:60]))
    sets = plan_feature_sets(world.feature_map, base="2-6", neural={"sig": "signal"})
    result = run_ablation(folds, sets, seeds=[0], ranker_params=FAST, progress=False)
    assert "selection" not in result.config and summarise(result, n_resamples=500).verdict is None
    assert set(result.per_query["feature_set"]) == {"lexical", "lexical+sig", "signal"}


# -- train-ranker --select: the model a user ships is the one selection picks ------------
def test_train_ranker_select_matches_the_api_and_evaluates(world, tmp_path):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli
    from ltrfeat.core.letor import write_letor

    train, valid = world.subset_queries(world.queries()[:100]), world.subset_queries(world.queries()[100:])
    write_letor(tmp_path / "train.letor", train)
    write_letor(tmp_path / "valid.letor", valid)
    out = tmp_path / "model.txt"
    args = [
        "train-ranker",
        tmp_path / "train.letor",
        "--valid",
        tmp_path / "valid.letor",
        "--select",
        "--threads",
        "1",
        "--n-estimators",
        "40",
        "--early-stopping-rounds",
        "10",
        "--out",
        out,
    ]
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert "<- chosen" in result.output and "saved the" in result.output
    meta = json.loads(meta_path(out).read_text())
    config = SelectionConfig.default("lightgbm")
    ranker = {
        "n_estimators": 40,
        "learning_rate": 0.05,
        "num_leaves": 31,
        "early_stopping_rounds": 10,
        "eval_at": 10,
        "n_jobs": 1,
        "params": None,
        "engine": "lightgbm",
    }
    api = select(train, valid, Candidates(world.feature_map.names, ranker), config)
    assert meta["selection"]["chosen"] == api["chosen"] and meta["kind"] == kind_of_name(api["chosen"])
    model = load_ranker(out)
    evaluated = CliRunner().invoke(cli, ["evaluate", str(out), str(tmp_path / "valid.letor"), "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    expected = evaluate_queries(valid.qid, valid.label, model.predict(valid), ["ndcg@10"])["ndcg@10"].mean()
    assert json.loads(evaluated.output)["metrics"]["ndcg@10"] == pytest.approx(expected)


def kind_of_name(candidate: str) -> str:
    return {"lightgbm": "lambdamart", "linear": "linear", "boost-best": "boost-best", "best-single": "best-single"}[
        candidate
    ]


def test_worker_processes_give_the_serial_result(world):
    folds = folds_of(world.subset_queries(world.queries()[:60]))
    sets = plan_feature_sets(world.feature_map, base="2-6", neural={"sig": "signal"})
    runs = [
        run_ablation(
            folds,
            sets,
            seeds=[0],
            ranker_params=FAST,
            progress=False,
            selection=SelectionConfig.default("lightgbm"),
            jobs=jobs,
        )
        for jobs in (1, 2)
    ]
    assert runs[0].per_query.equals(runs[1].per_query) and runs[0].config == runs[1].config


# -- real data: Home Depot (shared), lexical features of 600 queries ---------------------
def test_home_depot_recommendation_is_never_below_the_best_single_feature(tmp_path):
    import warnings

    from builders import dataset_path
    from ltrfeat.experiments.fold_plans import build_folds, group_pairs, plan_folds
    from ltrfeat.features.extract import extract_pairs, lexical_extractors
    from ltrfeat.core.text import read_judged_pairs

    path = dataset_path("home_depot", "raw", "train.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = read_judged_pairs(
            path,
            columns="query=search_term,doc=product_title,docid=product_uid,label=relevance",
            encoding="latin-1",
            label_map="linear:1:3:7",
        )
        keep = list(dict.fromkeys(pairs["qid"]))[:600]
        pairs = group_pairs(pairs[pairs["qid"].isin(keep)].reset_index(drop=True))
        base = extract_pairs(pairs, lexical_extractors("all", fields=["doc"]), conflicts="first")
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    folds = build_folds(base, plans, {p.name: {} for p in plans})
    names = base.feature_map.names
    sets = plan_feature_sets(
        base.feature_map,
        base=",".join(n for n in names if not n.startswith("trigram")),
        neural={"trigram": [n for n in names if n.startswith("trigram")]},
    )
    result = run_ablation(
        folds, sets, seeds=[0], ranker_params=FAST, progress=False, selection=SelectionConfig.default("lightgbm")
    )
    summary = summarise(result, n_resamples=2000)
    below = [
        c
        for c in summary.comparisons
        if (c.baseline, c.variant) == ("best-single", "recommended") and c.delta < 0 and c.p_holm < 0.05
    ]
    assert not below, below
    assert summary.verdict["n_folds"] == 3
