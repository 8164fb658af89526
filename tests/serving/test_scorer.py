"""Scorer: online features equal the offline extraction; load-time and request errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.rankers.lambdamart import LambdaMART
from ltrfeat.serving.scorer import CandidateError, Scorer
from builders import build_world, candidates_of, assert_scores_equal_offline


@pytest.fixture(scope="module")
def world(scorer_world):
    return scorer_world


def test_scores_equal_offline_extraction(world):
    scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    assert scorer.fields == ("title", "body")
    assert scorer.feature_names == world["data"].feature_map.names
    assert_scores_equal_offline(scorer, world, ("q0", "q7", "q29"), features_tol=1e-6, scores_tol=1e-9)


def test_onnx_encoder_gives_the_same_scores(world, tmp_path):
    pytest.importorskip("onnxruntime")
    from ltrfeat.encoders import Encoder
    from ltrfeat.export.onnx import export_onnx

    export_onnx(Encoder.load(world["encoder"]), tmp_path / "onnx")
    torch_scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    onnx_scorer = Scorer.load(world["ranker"], encoders={"clsm": tmp_path / "onnx"}, corpus_stats=world["corpus"])
    _, cands = candidates_of(world, "q3")
    np.testing.assert_allclose(
        onnx_scorer.features("cheap london", cands), torch_scorer.features("cheap london", cands), atol=1e-5
    )


def test_extra_candidate_keys_ignored_and_empty_list(world):
    scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    _, cands = candidates_of(world, "q1")
    extra = [dict(c, price=3, docid=i) for i, c in enumerate(cands)]  # int docids are accepted
    np.testing.assert_allclose(scorer.score("river hotel", extra), scorer.score("river hotel", cands))
    assert scorer.score("river hotel", []).shape == (0,)


@pytest.mark.parametrize(
    "query, cands, message",
    [
        ("q", [{"title": "a", "body": "b"}], "needs a string 'docid'"),
        ("q", [{"docid": "x", "title": "a"}], "needs text field 'body'"),
        ("q", [{"docid": "x", "title": 3, "body": "b"}], "got int"),
        ("q", ["just a string"], "not an object"),
        (None, [], "query must be a string"),
        ("q", {"docid": "x"}, "must be a list"),
    ],
)
def test_bad_candidates(world, query, cands, message):
    scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    with pytest.raises(CandidateError, match=message):
        scorer.score(query, cands)


def test_load_fails_when_a_feature_cannot_be_produced(world, tmp_path):
    # the ranker's record names its encoder bundle: no --encoder needed while the file is there as recorded
    assert [type(ex).__name__ for ex in Scorer.load(world["ranker"], corpus_stats=world["corpus"]).extractors] == [
        "LexicalExtractor",
        "EncoderExtractor",
    ]
    meta = json.loads(Path(f"{world['ranker']}.meta.json").read_text())
    meta["features"].pop("pipeline")  # a ranker from before the records
    (tmp_path / "r.txt").write_bytes(Path(world["ranker"]).read_bytes())
    (tmp_path / "r.txt.meta.json").write_text(json.dumps(meta))
    with pytest.raises(LtrfeatError, match="cannot compute: clsm_title_cos.*given: none"):
        Scorer.load(tmp_path / "r.txt", corpus_stats=world["corpus"])
    with pytest.raises(LtrfeatError, match="no --corpus-stats"):  # no record: the columns it cannot compute
        Scorer.load(tmp_path / "r.txt", encoders={"clsm": world["encoder"]})
    with pytest.raises(LtrfeatError, match=r"need the corpus statistics they were extracted with \(sha256 "):
        Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]})
    with pytest.raises(LtrfeatError, match="unknown lexical parameter"):
        Scorer.load(
            world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"], lexical_params={"k3": 1}
        )


def test_input_letor_features_are_refused(world, tmp_path):
    data = world["data"]
    plain = RankingSet(qid=data.qid, label=data.label, X=data.X, feature_map=FeatureMap.dense(data.n_features))
    LambdaMART(n_estimators=3, early_stopping_rounds=None, n_jobs=1).fit(plain).save(tmp_path / "r.txt")
    with pytest.raises(LtrfeatError, match=r"cannot compute: f1, f2"):
        Scorer.load(tmp_path / "r.txt", corpus_stats=world["corpus"])


def test_lexical_only_ranker_without_encoder(tmp_path):
    w = build_world(tmp_path, n_queries=8, encoder=False)
    scorer = Scorer.load(w["ranker"], corpus_stats=w["corpus"], lexical_params={"k1": 1.2, "b": 0.75})
    rows, cands = candidates_of(w, "q2")
    np.testing.assert_allclose(scorer.score(w["queries"]["query"][2], cands), w["model"].predict(w["data"])[rows])
