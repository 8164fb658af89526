"""The verdict's lighter alternative: when the recommended set holds a transformer encoder's column, the feature set
without one that the folds' selection could not tell from their picks."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from builders import StubTrainer, write_judged_pairs
from ltrfeat.experiments.ablate import AblateSettings, PairsSource, ablate_pairs
from ltrfeat.experiments.feature_sets import FeatureSet
from ltrfeat.experiments.in_words import summary_in_words
from ltrfeat.experiments.verdict import _lighter, verdict_lines
from ltrfeat.encoders.registry import encoder_kind, register_encoder
from ltrfeat.rankers.selection import SelectionConfig

SETS = ["lexical", "lexical+dssm", "lexical+sbert", "lexical+all"]
COLUMNS = {
    "lexical": ["bm25_doc"],
    "lexical+dssm": ["bm25_doc", "dssm_doc_cos"],
    "lexical+sbert": ["bm25_doc", "sbert_doc_cos"],
    "lexical+all": ["bm25_doc", "dssm_doc_cos", "sbert_doc_cos"],
}
MEANS = {(s, "ndcg@10"): v for s, v in zip(SETS, (0.80, 0.83, 0.84, 0.845))} | {("recommended", "ndcg@10"): 0.842}


def _result(sbert_is_transformer: bool = True):
    encoders = {
        "dssm": {"spec": "dssm:softmax", "trained": True, "transformer": False},
        "sbert": {"spec": "sbert", "trained": False, "transformer": sbert_is_transformer},
    }
    sets = [FeatureSet(s, COLUMNS[s], "ranker") for s in SETS]
    sets.append(FeatureSet("sbert_doc_cos", ["sbert_doc_cos"], "alone"))
    return SimpleNamespace(config={"cross_fitting": {"encoders": encoders}}, feature_sets=sets)


def _fold(best: str, gaps: dict, se: float = 0.01, z: float = 1.5) -> dict:
    stats = {s: {"mean": 0.8 - gaps.get(s, 0.0), "gap_to_best": gaps.get(s, 0.0), "se": se} for s in SETS}
    return {"feature_set": best, "candidate": "linear", "stats": stats, "margin_z": z}


def test_it_names_the_light_set_kept_within_the_margin_in_the_most_folds():
    per_fold = {
        "fold1": _fold("lexical+sbert", {"lexical": 0.03, "lexical+dssm": 0.01, "lexical+all": 0.0}),
        "fold2": _fold("lexical+sbert", {"lexical": 0.01, "lexical+dssm": 0.014, "lexical+all": 0.001}),
        "fold3": _fold("lexical+sbert", {"lexical": 0.05, "lexical+dssm": 0.02, "lexical+all": 0.002}),
    }
    got = _lighter(_result(), per_fold, "lexical+sbert", MEANS, ["ndcg@10"])
    # lexical+dssm: 0.01 and 0.014 are within 1.5 x 0.01, 0.02 is not; lexical only in fold2
    assert got == {"feature_set": "lexical+dssm", "kept_in_folds": 2, "n_folds": 3, "means": {"ndcg@10": 0.83}}


def test_a_set_measured_aside_the_choice_can_be_named():
    result = _result()
    result.feature_sets.append(FeatureSet("lexical+light", COLUMNS["lexical+dssm"], offered=False))
    per_fold = {}
    for fold, gap in (("fold1", 0.005), ("fold2", 0.01)):
        per_fold[fold] = _fold("lexical+sbert", {"lexical": 0.05, "lexical+dssm": 0.04, "lexical+all": 0.03})
        per_fold[fold]["aside"] = {"lexical+light": {"mean": 0.8 - gap, "gap_to_best": gap, "se": 0.01}}
    means = MEANS | {("lexical+light", "ndcg@10"): 0.838}
    got = _lighter(result, per_fold, "lexical+sbert", means, ["ndcg@10"])
    assert got == {"feature_set": "lexical+light", "kept_in_folds": 2, "n_folds": 2, "means": {"ndcg@10": 0.838}}


def test_equal_counts_go_to_the_first_set_in_plan_order():
    per_fold = {"fold1": _fold("lexical+all", {"lexical": 0.001, "lexical+dssm": 0.0})}
    got = _lighter(_result(), per_fold, "lexical+all", MEANS, ["ndcg@10"])
    assert got["feature_set"] == "lexical" and got["kept_in_folds"] == 1


def test_nothing_when_the_recommendation_is_light_or_no_light_set_is_close():
    close = {"fold1": _fold("lexical+dssm", {"lexical": 0.0})}
    assert _lighter(_result(), close, "lexical+dssm", MEANS, ["ndcg@10"]) is None  # already light
    assert _lighter(_result(sbert_is_transformer=False), close, "lexical+sbert", MEANS, ["ndcg@10"]) is None
    far = {"fold1": _fold("lexical+sbert", {"lexical": 0.05, "lexical+dssm": 0.04})}
    assert _lighter(_result(), far, "lexical+sbert", MEANS, ["ndcg@10"]) is None
    no_cross_fitting = SimpleNamespace(config={}, feature_sets=_result().feature_sets)
    assert _lighter(no_cross_fitting, close, "lexical+sbert", MEANS, ["ndcg@10"]) is None


def test_rule_joint_names_configurations_set_slash_candidate():
    stats = {
        "lexical+sbert/linear": {"mean": 0.8, "gap_to_best": 0.0, "se": 0.0},
        "lexical+dssm/lightgbm": {"mean": 0.79, "gap_to_best": 0.01, "se": 0.01},
        "lexical+dssm/linear": {"mean": 0.75, "gap_to_best": 0.05, "se": 0.01},
        "lexical/linear": {"mean": 0.7, "gap_to_best": 0.1, "se": 0.01},
    }
    per_fold = {"fold1": {"feature_set": "lexical+sbert", "candidate": "linear", "stats": stats, "margin_z": 1.2}}
    got = _lighter(_result(), per_fold, "lexical+sbert", MEANS, ["ndcg@10"])
    assert got["feature_set"] == "lexical+dssm" and got["kept_in_folds"] == 1


def test_the_verdict_lines_and_the_summary_in_words_say_it():
    lighter = {"feature_set": "lexical+dssm", "kept_in_folds": 2, "n_folds": 3, "means": {"ndcg@10": 0.83}}
    verdict = {
        "recommended": "lexical+sbert / linear",
        "chosen_in_folds": 3,
        "n_folds": 3,
        "per_fold": {},
        "all_choices": {"lexical+sbert / linear": 3},
        "untuned": "lexical/lightgbm",
        "best_single_features": {"sbert_doc_cos": 3},
        "metrics": [
            {
                "metric": "ndcg@10",
                "recommended": 0.842,
                "untuned": 0.8,
                "best_single": 0.82,
                "p_holm_vs_untuned": 0.01,
                "p_holm_vs_best_single": 0.2,
            }
        ],
        "warnings": [],
        "level": 0.05,
        "rule": "tiered",
        "encoders": None,
        "lighter": lighter,
    }
    (line,) = [x for x in verdict_lines(verdict) if x.startswith("  lighter:")]
    assert "`lexical+dssm` needs no transformer encoder" in line and "in 2 of 3 folds" in line
    assert "ndcg@10 0.8300 vs 0.8420 recommended" in line
    assert not any(x.startswith("  lighter:") for x in verdict_lines(verdict | {"lighter": None}))
    data = {"verdict": verdict, "comparisons": [], "config": {"metrics": ["ndcg@10"]}, "results": []}
    assert "Lighter to serve: `lexical+dssm` needs no transformer encoder" in summary_in_words(data)
    assert "0.8300 against 0.8420" in summary_in_words(data)


@pytest.mark.parametrize("name, heavy", [("sbert", True), ("sbert-ft", True), ("clsm", False), ("dssm", False)])
def test_the_transformer_kinds_are_minilm_and_its_fine_tuning(name, heavy):
    assert encoder_kind(name).transformer is heavy


class _Oracle:
    """A stub encoder that scores each pair by its judged label: two of them make equally good feature sets."""

    def __init__(self, labels: dict):
        self.labels = labels

    def similarity(self, queries, docs):
        return np.array([self.labels[(q, d)] for q, d in zip(queries, docs)], dtype=np.float32)


@pytest.fixture
def clsm_as_transformer():
    original = encoder_kind("clsm")
    register_encoder(dataclasses.replace(original, transformer=True), replace=True)
    yield
    register_encoder(original, replace=True)


def test_an_ablation_names_the_light_twin_of_a_heavy_recommendation(tmp_path, clsm_as_transformer):
    pairs = write_judged_pairs(tmp_path / "pairs.tsv", n_queries=24)
    table = pd.read_csv(pairs, sep="\t")
    oracle = _Oracle({(q, d): float(y) for q, d, y in zip(table["query"], table["doc"], table["label"])})
    source = PairsSource(pairs, encoders=("clsm:softmax", "dssm:softmax"), k_folds=3)
    settings = AblateSettings(
        report_dir=tmp_path / "r", quick=True, selection=SelectionConfig(inner_folds=2), progress=False
    )
    done = ablate_pairs(source, settings, say=lambda _: None, trainer=StubTrainer(lambda spec, t: oracle))
    verdict = done.summary.verdict
    assert done.result.config["cross_fitting"]["encoders"]["clsm-softmax"]["transformer"] is True
    # the twins score the same in every fold; plan order puts the (heavy) CLSM first, so it is recommended
    assert verdict["recommended"].startswith("lexical+clsm-softmax")
    lighter = verdict["lighter"]
    assert lighter["feature_set"] == "lexical+dssm-softmax" and lighter["kept_in_folds"] == lighter["n_folds"] == 3
    assert lighter["means"] == {m["metric"]: m["recommended"] for m in verdict["metrics"]}
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["verdict"]["lighter"] == lighter
    assert "Lighter to serve: `lexical+dssm-softmax` needs no transformer encoder" in report["summary"]
    assert "lighter: `lexical+dssm-softmax`" in (tmp_path / "r" / "report.md").read_text()


def _three_encoder_ablation(tmp_path, name: str):
    pairs = write_judged_pairs(tmp_path / "pairs.tsv", n_queries=24)
    table = pd.read_csv(pairs, sep="\t")
    oracle = _Oracle({(q, d): float(y) for q, d, y in zip(table["query"], table["doc"], table["label"])})
    source = PairsSource(pairs, encoders=("clsm:softmax", "dssm:softmax", "dssm:generalized"), k_folds=3)
    settings = AblateSettings(
        report_dir=tmp_path / name, quick=True, selection=SelectionConfig(inner_folds=2), progress=False
    )
    return ablate_pairs(source, settings, say=lambda _: None, trainer=StubTrainer(lambda spec, t: oracle))


def test_the_light_set_is_measured_beside_the_choice_and_never_moves_it(tmp_path, clsm_as_transformer, monkeypatch):
    done = _three_encoder_ablation(tmp_path, "with")
    sets = {s.name: s for s in done.result.feature_sets if s.kind == "ranker"}
    light = sets["lexical+light"]
    assert not light.offered and all(s.offered for n, s in sets.items() if n != "lexical+light")
    assert [c for c in light.columns if c not in sets["lexical"].columns] == [
        "dssm-softmax_doc_cos",
        "dssm-generalized_doc_cos",
    ]
    per_fold = done.result.config["selection"]["recommended"]
    for rec in per_fold.values():
        assert rec["feature_set"] != "lexical+light" and "lexical+light" not in rec["stats"]
        aside = rec["aside"]["lexical+light"]  # against the best offered set, as its own stats are
        assert aside["gap_to_best"] == pytest.approx(rec["stats"][rec["best"]]["mean"] - aside["mean"])
    report = json.loads((tmp_path / "with" / "report.json").read_text())
    assert "lexical+light" in {r["feature_set"] for r in report["results"]}

    # the same ablation without the light set recommends the same configurations, with the same test scores
    from ltrfeat.experiments import ablate as ablate_module

    plan = ablate_module.plan_feature_sets
    monkeypatch.setattr(ablate_module, "plan_feature_sets", lambda *a, light=(), **k: plan(*a, **k))
    without = _three_encoder_ablation(tmp_path, "without")
    assert "lexical+light" not in {s.name for s in without.result.feature_sets}
    strip = [{k: v for k, v in r.items() if k != "aside"} for r in per_fold.values()]
    assert strip == list(without.result.config["selection"]["recommended"].values())
    rows = [
        t[t["feature_set"] == "recommended"].reset_index(drop=True)
        for t in (done.result.per_query, without.result.per_query)
    ]
    pd.testing.assert_frame_equal(*rows)
