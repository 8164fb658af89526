"""Scorer: online features equal the offline extraction; load-time and request errors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ltrfeat.features.dataset import FeatureMap, RankingSet
from ltrfeat.features.errors import LtrfeatError
from ltrfeat.features.extract import extract_ranking, lexical_extractors
from ltrfeat.features.neural import EncoderExtractor
from ltrfeat.rankers.lambdamart import LambdaMART
from ltrfeat.serving.scorer import CandidateError, Scorer

WORDS = ("cheap flights london hotel river bike tyre repair fox quick brown garden chair table lamp red blue "
         "shoes running trail coffee beans grinder").split()


def build_world(root, *, n_queries=30, per_query=10, seed=0, encoder=True):
    """Docs, queries, corpus stats, a CLSM encoder and a ranker trained on extracted columns.

    Returns a dict of paths and tables; shared by the serving tests and the benchmark."""
    import torch

    from ltrfeat.features.encoders import Encoder, TwoTowerModel, model_config
    from ltrfeat.features.hashing import TrigramHasher

    rng = np.random.default_rng(seed)
    n_docs = n_queries * per_query
    docs = pd.DataFrame({"docid": [f"d{i}" for i in range(n_docs)],
                         "title": [" ".join(rng.choice(WORDS, size=rng.integers(2, 7))) for _ in range(n_docs)],
                         "body": [" ".join(rng.choice(WORDS, size=rng.integers(5, 20))) for _ in range(n_docs)]})
    queries = pd.DataFrame({"qid": [f"q{i}" for i in range(n_queries)],
                            "query": [" ".join(rng.choice(WORDS, size=rng.integers(1, 4))) for _ in range(n_queries)]})
    qid = np.repeat(queries.qid.to_numpy(dtype=object), per_query)
    docid = rng.permutation(docs.docid.to_numpy(dtype=object))[: len(qid)]
    qtext = dict(zip(queries.qid, queries["query"]))
    ttext = dict(zip(docs.docid, docs.title))
    label = np.array([len(set(qtext[q].split()) & set(ttext[d].split())) for q, d in zip(qid, docid)], dtype=float)
    base = RankingSet(qid=qid, label=np.minimum(label, 3), X=np.zeros((len(qid), 0), np.float32),
                      feature_map=FeatureMap(), docid=docid)
    extractors = lexical_extractors(["bm25", "tf", "coverage", "query_len"], fields=["title", "body"])
    paths = {"corpus": root / "corpus.npz", "ranker": root / "ranker.txt", "encoder": root / "clsm.ltrenc"}
    if encoder:
        torch.manual_seed(seed)
        hasher = TrigramHasher().fit(list(docs.title) + list(queries["query"]))
        model = TwoTowerModel(model_config("clsm", hasher.n_features_, conv=32, out=16))
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.3)
        Encoder(hasher, model.eval()).save(paths["encoder"])
        extractors.append(EncoderExtractor(name="clsm", path=str(paths["encoder"]), field="title"))
    data = extract_ranking(base, extractors, queries=queries, docs=docs)
    extractors[0].corpus_.save(paths["corpus"])
    ranker = LambdaMART(n_estimators=30, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(data)
    ranker.save(paths["ranker"])
    return {"docs": docs, "queries": queries, "data": data, "model": ranker, **paths}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("world"))


def candidates_of(world, qid):
    data, docs = world["data"], world["docs"].set_index("docid")
    rows = np.flatnonzero(data.qid == qid)
    return rows, [{"docid": d, "title": docs.loc[d, "title"], "body": docs.loc[d, "body"]} for d in data.docid[rows]]


def assert_scores_equal_offline(scorer, world, qids, *, features_tol: float, scores_tol: float):
    """The scorer's features and scores of each query's candidates equal the offline extraction and ranker."""
    offline = world["model"].predict(world["data"])
    qtext = dict(zip(world["queries"].qid, world["queries"]["query"]))
    for qid in qids:
        rows, cands = candidates_of(world, qid)
        np.testing.assert_allclose(scorer.features(qtext[qid], cands), world["data"].X[rows], atol=features_tol,
                                   rtol=features_tol)
        np.testing.assert_allclose(scorer.score(qtext[qid], cands), offline[rows], atol=scores_tol)


def test_scores_equal_offline_extraction(world):
    scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    assert scorer.fields == ("title", "body")
    assert scorer.feature_names == world["data"].feature_map.names
    assert_scores_equal_offline(scorer, world, ("q0", "q7", "q29"), features_tol=1e-6, scores_tol=1e-9)


def test_onnx_encoder_gives_the_same_scores(world, tmp_path):
    pytest.importorskip("onnxruntime")
    from ltrfeat.features.encoders import Encoder
    from ltrfeat.features.encoders.onnx_export import export_onnx

    export_onnx(Encoder.load(world["encoder"]), tmp_path / "onnx")
    torch_scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    onnx_scorer = Scorer.load(world["ranker"], encoders={"clsm": tmp_path / "onnx"}, corpus_stats=world["corpus"])
    _, cands = candidates_of(world, "q3")
    np.testing.assert_allclose(onnx_scorer.features("cheap london", cands),
                               torch_scorer.features("cheap london", cands), atol=1e-5)


def test_extra_candidate_keys_ignored_and_empty_list(world):
    scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    _, cands = candidates_of(world, "q1")
    extra = [dict(c, price=3, docid=i) for i, c in enumerate(cands)]  # int docids are accepted
    np.testing.assert_allclose(scorer.score("river hotel", extra), scorer.score("river hotel", cands))
    assert scorer.score("river hotel", []).shape == (0,)


@pytest.mark.parametrize("query, cands, message", [
    ("q", [{"title": "a", "body": "b"}], "needs a string 'docid'"),
    ("q", [{"docid": "x", "title": "a"}], "needs text field 'body'"),
    ("q", [{"docid": "x", "title": 3, "body": "b"}], "got int"),
    ("q", ["just a string"], "not an object"),
    (None, [], "query must be a string"),
    ("q", {"docid": "x"}, "must be a list"),
])
def test_bad_candidates(world, query, cands, message):
    scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    with pytest.raises(CandidateError, match=message):
        scorer.score(query, cands)


def test_load_fails_when_a_feature_cannot_be_produced(world):
    with pytest.raises(LtrfeatError, match="cannot compute: clsm_title_cos.*given: none"):
        Scorer.load(world["ranker"], corpus_stats=world["corpus"])
    with pytest.raises(LtrfeatError, match="no --corpus-stats"):
        Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]})
    with pytest.raises(LtrfeatError, match="unknown lexical parameter"):
        Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"],
                    lexical_params={"k3": 1})


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
