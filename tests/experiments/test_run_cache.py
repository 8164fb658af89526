"""The ablation's ranker-run store: exact round trips, keys that follow the inputs, equal results."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.feature_sets import plan_feature_sets
from ltrfeat.experiments.ablation import run_ablation
from ltrfeat.experiments._run_cache import RunStore, _pack, _unpack
from ltrfeat.rankers.selection import SelectionConfig
from builders import synthetic

NAMES = ["bm25_title", "len_title", "tfidf_title", "clsm_title_cos", "dssm_title_cos", "noise"]


def _folds(seed=0):
    def part(n, s):
        return synthetic(n_queries=n, docs=10, n_features=len(NAMES), seed=s, names=NAMES)

    return [
        Fold(f"Fold{i}", part(24, seed + 10 * i), part(8, seed + 10 * i + 1), part(8, seed + 10 * i + 2))
        for i in range(2)
    ]


def test_pack_round_trips_exactly():
    frame = pd.DataFrame(
        {"n_docs": np.array([3, 4], np.int64), "ndcg@1": [0.5, np.nan]},
        index=pd.Index(np.array(["q1", "q2"], dtype=object), name="qid"),
    )
    value = {
        "a": np.array([0.1, 1e-300, np.inf], np.float64),
        "b": (np.array(["x", None], dtype=object), [1, 2.5]),
        "c": frame,
        "d": np.float32(0.25),
        "e": {1: "int key"},
        "__nd__": "a tag as a key",
        "f": None,
    }
    back = _unpack(json.loads(json.dumps(_pack(value))))
    np.testing.assert_array_equal(back["a"], value["a"])
    assert back["a"].dtype == np.float64 and isinstance(back["b"], tuple) and back["b"][0].dtype == object
    assert back["b"][0].tolist() == ["x", None] and back["b"][1] == [1, 2.5]
    pd.testing.assert_frame_equal(back["c"], frame)
    assert back["d"] == np.float32(0.25) and back["d"].dtype == np.float32
    assert back["e"] == {1: "int key"} and back["__nd__"] == "a tag as a key" and back["f"] is None
    with pytest.raises(TypeError):
        _pack(object())


def _same_contributions(a, b) -> None:
    assert a.contributions.keys() == b.contributions.keys() and a.contributions
    for name, folds in a.contributions.items():
        for fold, x in folds.items():
            y = b.contributions[name][fold]
            assert (x is None) == (y is None)
            if x is not None:
                assert x["names"] == y["names"] and x["mean_abs"] == y["mean_abs"]
                np.testing.assert_array_equal(x["top"], y["top"])
                np.testing.assert_array_equal(x["top_values"], y["top_values"])


def _result_view(result):
    runs = [{k: v for k, v in r.items() if k != "seconds"} for r in result.runs]
    return result.per_query, runs, result.config, result.importance


@pytest.mark.parametrize("selection", [None, SelectionConfig(candidates=("lightgbm", "linear"), inner_folds=2)])
def test_cached_runs_equal_fresh_ones_and_only_changed_sets_rerun(tmp_path, selection):
    folds = _folds()
    fmap = folds[0].train.feature_map
    names = fmap.names
    sets = plan_feature_sets(fmap, base=",".join(names[:3]), neural={"n": names[3]})
    kw = {
        "seeds": [0, 1],
        "ranker_params": {"n_estimators": 10, "num_leaves": 7},
        "progress": False,
        "selection": selection,
    }
    fresh = run_ablation(folds, sets, **kw)
    store = RunStore(tmp_path)
    first = run_ablation(folds, sets, **kw, cache=store)
    assert store.hits == 0 and store.misses > 0
    again = RunStore(tmp_path)
    second = run_ablation(folds, sets, **kw, cache=again)
    assert again.misses == 0 and again.hits == store.misses
    for a, b in ((fresh, first), (first, second)):
        pa, ra, ca, ia = _result_view(a)
        pb, rb, cb, ib = _result_view(b)
        pd.testing.assert_frame_equal(pa, pb)
        assert ra == rb and ca == cb and ia == ib
        for name in a.test_scores:
            for fold in a.test_scores[name]:
                for x, y in zip(a.test_scores[name][fold]["scores"], b.test_scores[name][fold]["scores"]):
                    np.testing.assert_array_equal(x, y)
        _same_contributions(a, b)
    # one more neural feature: the base set's runs come from the store, the others run
    grown = plan_feature_sets(fmap, base=",".join(names[:3]), neural={"n": names[3], "m": names[4]})
    third = RunStore(tmp_path)
    run_ablation(folds, grown, **kw, cache=third)
    assert third.hits > 0 and third.misses > 0
    # other data: nothing matches
    fourth = RunStore(tmp_path)
    run_ablation(_folds(seed=99), sets, **kw, cache=fourth)
    assert fourth.hits == 0


def test_torn_or_foreign_files_are_recomputed(tmp_path):
    folds = _folds()
    names = folds[0].train.feature_map.names
    sets = plan_feature_sets(folds[0].train.feature_map, base=",".join(names[:3]), neural={"n": names[3]})
    kw = {"seeds": [0], "ranker_params": {"n_estimators": 5}, "progress": False}
    first = run_ablation(folds, sets, **kw, cache=RunStore(tmp_path))
    files = sorted(tmp_path.glob("*.json"))
    files[0].write_text(files[0].read_text()[:50])
    files[1].write_text(json.dumps({"format": 1, "key": "someone else's", "result": {}}))
    store = RunStore(tmp_path)
    second = run_ablation(folds, sets, **kw, cache=store)
    assert store.misses == 2
    pd.testing.assert_frame_equal(first.per_query, second.per_query)
    assert not list(tmp_path.glob(".*.tmp"))


def _twin_folds():
    """Folds whose column ``twin`` holds exactly the values of ``clsm_title_cos`` (as a fine-tuned MiniLM
    that kept its zero-shot start beside ``sbert``)."""
    folds = []
    for i in range(2):
        parts = [
            synthetic(n_queries=n, docs=10, n_features=len(NAMES) + 1, seed=10 * i + k, names=[*NAMES, "twin"])
            for k, n in enumerate((24, 8, 8))
        ]
        for part in parts:
            part.X[:, -1] = part.X[:, NAMES.index("clsm_title_cos")]
        folds.append(Fold(f"Fold{i}", *parts))
    return folds


class _Counting:
    """Runs in this process and records which (fold, set) ran."""

    def __init__(self):
        self.ran = []

    def map(self, fn, *columns):
        for args in zip(*columns):
            self.ran.append((args[0].name, args[1].name))
            yield fn(*args)


def _set_view(result, name):
    rows = result.per_query[result.per_query.feature_set.str.startswith(name)].reset_index(drop=True)
    runs = [{k: v for k, v in r.items() if k != "seconds"} for r in result.runs if r["feature_set"].startswith(name)]
    chosen = {f: c.get(name) for f, c in result.config.get("selection", {}).get("chosen", {}).items()}
    scores = {s: v for s, v in result.test_scores.items() if s.startswith(name)}
    return rows, runs, chosen, result.importance.get(name), scores


@pytest.mark.parametrize(
    "selection", [None, SelectionConfig(candidates=("lightgbm", "linear", "best-single"), inner_folds=2)]
)
def test_runs_that_differ_only_in_feature_names_fit_once(tmp_path, selection):
    folds = _twin_folds()
    fmap = folds[0].train.feature_map
    base = ",".join(NAMES[:3])
    both = plan_feature_sets(fmap, base=base, neural={"n": "clsm_title_cos", "t": "twin"})
    only_twin = plan_feature_sets(fmap, base=base, neural={"t": "twin"})
    kw = {"seeds": [0, 1], "ranker_params": {"n_estimators": 10, "num_leaves": 7}, "progress": False}
    kw["selection"] = selection
    counting = _Counting()
    shared = run_ablation(folds, both, **kw, executor=counting)
    ran = {s for _, s in counting.ran}
    assert "lexical+n" in ran and "clsm_title_cos" in ran and not {"lexical+t", "twin"} & ran
    alone = run_ablation(folds, only_twin, **kw)  # "lexical+t" fitted on its own
    for name in ("lexical+t", "twin"):
        a, b = _set_view(shared, name), _set_view(alone, name)
        pd.testing.assert_frame_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        assert a[4].keys() == b[4].keys()
        for s in a[4]:
            for fold in a[4][s]:
                for x, y in zip(a[4][s][fold]["scores"], b[4][s][fold]["scores"], strict=True):
                    np.testing.assert_array_equal(x, y)
    assert "twin" in shared.importance["lexical+t"] and "clsm_title_cos" not in shared.importance["lexical+t"]
    for fold in shared.contributions["lexical+t"].values():  # the contributions too, under the twin's names
        assert "twin" in fold["names"] and "twin" in fold["mean_abs"] and "clsm_title_cos" not in fold["names"]
    if selection is not None:  # linear weights and the best single feature under the twin's own names
        chose = [r["chose"] for r in shared.runs if r["feature_set"].startswith("lexical+t/")]
        text = json.dumps(chose)
        assert "twin" in text and "clsm_title_cos" not in text

    # the store holds each run under its own key and names: a run without the original reads the twin's
    store = RunStore(tmp_path)
    cached = run_ablation(folds, both, **kw, cache=store)
    assert store.shared == len(folds) * ((len(kw["seeds"]) if selection is None else 1) + 1)  # lexical+t, twin
    pd.testing.assert_frame_equal(cached.per_query, shared.per_query)
    later = RunStore(tmp_path)
    again = run_ablation(folds, only_twin, **kw, cache=later)
    # only the best-single baseline (over other columns now) runs
    assert later.misses == (0 if selection is None else len(folds)) and later.shared == 0
    pd.testing.assert_frame_equal(again.per_query, alone.per_query)
    assert again.importance == alone.importance


def test_display_positions_are_part_of_a_runs_key():
    from ltrfeat.experiments._run_cache import value_key

    fold = _folds()[0]
    sets = plan_feature_sets(fold.train.feature_map, base="1-3", neural={"clsm": "clsm_title_cos"})
    clicks = Fold(fold.name, dataclasses.replace(fold.train, position=np.ones(len(fold.train))), fold.valid, fold.test)
    assert value_key(fold, sets[0], seed=0) != value_key(clicks, sets[0], seed=0)  # the engines train otherwise
