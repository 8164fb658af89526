import json

import numpy as np
import pytest

from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet
from ltrfeat.core.errors import LetorFormatError


def _set(qids, n_features=3):
    n = len(qids)
    return RankingSet(
        qid=np.array(qids, dtype=object),
        label=np.arange(n) % 3,
        X=np.arange(n * n_features, dtype=np.float32).reshape(n, n_features),
        feature_map=FeatureMap.dense(n_features),
        docid=np.array([f"d{i}" for i in range(n)], dtype=object),
    )


def test_feature_map_rejects_bad_ids_and_duplicate_names():
    with pytest.raises(ValueError, match="increasing"):
        FeatureMap([Feature(2, "a"), Feature(1, "b")])
    with pytest.raises(ValueError, match="increasing"):
        FeatureMap([Feature(0, "a")])
    with pytest.raises(ValueError, match="duplicate"):
        FeatureMap([Feature(1, "a"), Feature(2, "a")])


def test_resolve_ranges_names_and_order():
    fm = FeatureMap.dense(5).append(["bm25_title", "clsm_title_cos"], source="lexical")
    assert fm.ids == [1, 2, 3, 4, 5, 6, 7]
    assert fm.resolve("2-4,clsm_title_cos") == [1, 2, 3, 6]
    assert fm.resolve("bm25_title,1,1") == [5, 0]
    assert fm.resolve(None) == list(range(7))
    with pytest.raises(KeyError, match="no feature named"):
        fm.resolve("nope")
    with pytest.raises(KeyError, match="no feature ids in range"):
        fm.resolve("10-12")
    with pytest.raises(KeyError, match="empty id range"):
        fm.resolve("4-2")


def test_resolve_selects_a_source_group_unless_a_column_has_that_name():
    fm = FeatureMap.dense(2).append(["bm25_doc", "tf_doc"], source="lexical")
    fm = fm.append(["clsm-x_doc_cos"], source="encoder:clsm-x").append(["sbert_doc_cos"], source="encoder:sbert")
    assert fm.resolve("lexical,encoder:sbert") == [2, 3, 5]
    assert fm.resolve("encoder:sbert,bm25_doc,lexical") == [5, 2, 3]
    named = FeatureMap([Feature(1, "lexical", source="input"), Feature(2, "b", source="lexical")])
    assert named.resolve("lexical") == [0]  # a column's name wins over a source
    with pytest.raises(KeyError, match="no feature named"):
        fm.resolve("encoder:nope")


def test_feature_map_json_round_trip(tmp_path):
    fm = FeatureMap.from_ids([1, 5, 9]).append(["bm25_title"], source="lexical:bm25")
    path = tmp_path / "x.features.json"
    fm.save(path)
    assert FeatureMap.load(path) == fm
    assert json.loads(path.read_text())["features"][-1] == {"id": 10, "name": "bm25_title", "source": "lexical:bm25"}


def test_feature_map_load_errors(tmp_path):
    bad = tmp_path / "bad.features.json"
    bad.write_text("{not json")
    with pytest.raises(LetorFormatError, match=r"bad.features.json:1: feature map is not valid JSON"):
        FeatureMap.load(bad)
    bad.write_text('{"features": []}')
    with pytest.raises(LetorFormatError, match="not a feature map"):
        FeatureMap.load(bad)


def test_regroup_is_stable_and_contiguity_detected():
    rs = _set(["b", "a", "b", "c", "a"])
    assert not rs.is_contiguous()
    with pytest.raises(ValueError, match="regroup"):
        rs.group_sizes()
    g = rs.regroup()
    assert g.qid.tolist() == ["b", "b", "a", "a", "c"]
    assert g.docid.tolist() == ["d0", "d2", "d1", "d4", "d3"]
    assert g.group_sizes().tolist() == [2, 2, 1]
    assert g.regroup() is g


def test_select_and_append_columns():
    rs = _set(["q1", "q1", "q2"], n_features=4)
    sub = rs.select_features("3,1")
    assert sub.feature_map.ids == [1, 3]
    np.testing.assert_array_equal(sub.X, rs.X[:, [0, 2]])
    out = rs.with_columns(["cos"], np.array([0.1, 0.2, 0.3]), source="encoder")
    assert out.feature_map.names[-1] == "cos" and out.feature_map.ids[-1] == 5
    assert out.X.dtype == np.float32 and out.X.shape == (3, 5)


def test_subset_queries_and_hash_changes_with_content():
    rs = _set(["q1", "q1", "q2", "q3"])
    assert rs.subset_queries(["q3", "q1"]).qid.tolist() == ["q1", "q1", "q3"]
    other = _set(["q1", "q1", "q2", "q3"])
    assert rs.content_hash() == other.content_hash()
    other.X[0, 0] += 1
    assert rs.content_hash() != other.content_hash()


def test_shape_validation():
    with pytest.raises(ValueError, match="columns"):
        RankingSet(["q"], [1.0], np.zeros((1, 2)), FeatureMap.dense(3))
    with pytest.raises(ValueError, match="docid"):
        RankingSet(["q"], [1.0], np.zeros((1, 1)), FeatureMap.dense(1), docid=["a", "b"])
