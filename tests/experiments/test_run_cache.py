"""The ablation's ranker-run store: exact round trips, keys that follow the inputs, equal results."""

import json

import numpy as np
import pandas as pd
import pytest

from ltrfeat.experiments.ablation import Fold, plan_feature_sets, run_ablation
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
