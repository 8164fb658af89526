"""PyTerrier transformers (ltrfeat.serving.pyterrier): pt.Experiment over the demo data gives ltrfeat evaluate's numbers,
without Java. Skipped politely when the pyterrier extra is not installed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pt = pytest.importorskip("pyterrier")

from ltrfeat.core.errors import LtrfeatError  # noqa: E402
from ltrfeat.features.extract import extract_ranking, lexical_extractors  # noqa: E402
from ltrfeat.core.letor import read_letor  # noqa: E402
from ltrfeat.core.text import read_docs, read_queries  # noqa: E402
from ltrfeat.rankers.lambdamart import LambdaMART  # noqa: E402
from ltrfeat.core.metrics import evaluate_queries  # noqa: E402
from ltrfeat.serving import pyterrier as ltr  # noqa: E402

FIELDS = ["title", "description"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("pt")
    queries, docs = read_queries("data/queries.tsv"), read_docs("data/docs.tsv", fields=FIELDS)
    lexical = lexical_extractors(["bm25", "tf", "coverage", "field_len", "query_len"], fields=FIELDS)
    train = extract_ranking(read_letor("data/train.letor"), lexical, queries=queries, docs=docs)
    test = extract_ranking(read_letor("data/test.letor"), lexical, queries=queries, docs=docs)
    model = LambdaMART(n_estimators=30, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(train)
    model.save(root / "ranker.txt")
    lexical[0].corpus_.save(root / "corpus.npz")
    return {"root": root, "queries": queries, "docs": docs, "test": test, "model": model, "lexical": lexical[0]}


def test_experiment_matches_ltrfeat_evaluate_without_java(world):
    from ir_measures import AP, nDCG

    root, test = world["root"], world["test"]
    cands = ltr.candidates("data/test.letor", queries=world["queries"], docs=world["docs"])
    assert list(cands.columns[:4]) == ["qid", "query", "docno", "label"] and "text" in cands
    source = pt.Transformer.from_df(cands.drop(columns=["label"]))
    bm25 = (
        source
        >> ltr.Features(lexical_extractors(["bm25"], fields=["title"]), docs=world["docs"])
        >> ltr.FeatureScore(0)
    )
    lambdamart = (
        source
        >> ltr.Features.for_ranker(root / "ranker.txt", corpus_stats=root / "corpus.npz")
        >> ltr.Ranker(root / "ranker.txt")
    )
    table = pt.Experiment(
        [bm25, lambdamart],
        cands[["qid", "query"]].drop_duplicates(),
        ltr.qrels(cands),
        eval_metrics=[nDCG @ 1, nDCG @ 3, nDCG @ 10, AP(rel=1)],
        names=["bm25", "ltr"],
    )
    assert not pt.java.started()
    metrics = ["ndcg@1", "ndcg@3", "ndcg@10", "map"]
    scores = {"ltr": world["model"].predict(test), "bm25": test.X[:, test.feature_map.names.index("bm25_title")]}
    for name, score in scores.items():
        # the pipeline breaks ties by row order (Ranker/FeatureScore ties="stable"), as ties="input" does
        ours = evaluate_queries(
            test.qid, test.label, score, metrics, gain="linear", no_relevant="zero", ties="input"
        ).mean(numeric_only=True)
        row = table.set_index("name").loc[name]
        np.testing.assert_allclose(
            [row["nDCG@1"], row["nDCG@3"], row["nDCG@10"], row["AP"]],
            [ours[m] for m in metrics],
            atol=1e-9,
            err_msg=name,
        )


def test_features_map_pyterrier_columns_and_append(world):
    res = pd.DataFrame(
        {
            "qid": ["1", "1"],
            "query": ["office chair", "office chair"],
            "docno": ["D00001", "D00002"],
            "text": ["Mesh Office Chair", "Body Filler"],
            "features": [np.ones(1), np.zeros(1)],
        }
    )
    feats = ltr.Features([world["lexical"]], fields={"title": "text", "description": "text"})
    out = feats(res)
    assert len(out["features"].iat[0]) == 1 + len(world["lexical"].feature_names())
    assert out["features"].iat[0][0] == 1.0 and out["features"].iat[0][1] > 0 and out["features"].iat[1][1] == 0
    with pytest.raises(LtrfeatError, match="no column"):
        ltr.Features([world["lexical"]])(res.drop(columns=["text"]))
    with pytest.raises(LtrfeatError, match="columns, the ranker needs"):
        ltr.Ranker(world["model"])(out)


def test_stable_ties_keep_input_order_in_float32():
    scores = ltr.stable_ties(["a", "a", "a", "b", "b"], [1.0, 1.0, 1.0 + 1e-12, 0.5, 0.5])
    assert scores[2] > scores[0] > scores[1] and scores[3] > scores[4]
    assert len(set(np.float32(scores[:3]))) == 3


@pytest.mark.parametrize("kind", ["linear", "boost-best", "best-single"])
def test_every_kind_ranks_in_a_pipeline_as_it_scores_the_file(world, kind, tmp_path):
    """ltr.Ranker and Features.for_ranker read every kind train-ranker --select writes (one loader)."""
    from ltrfeat.rankers.models import save_ranker
    from ltrfeat.rankers.selection import Candidates

    test = world["test"]
    settings = Candidates(test.feature_map.names, {"n_estimators": 10, "n_jobs": 1})
    model = settings.make(kind, seed=0).fit(test)
    save_ranker(model, tmp_path / "m.txt")
    cands = ltr.candidates("data/test.letor", queries=world["queries"], docs=world["docs"])
    pipeline = (
        pt.Transformer.from_df(cands.drop(columns=["label"]))
        >> ltr.Features.for_ranker(tmp_path / "m.txt", corpus_stats=world["root"] / "corpus.npz")
        >> ltr.Ranker(tmp_path / "m.txt", ties="none")
    )
    ranked = pipeline.transform(cands[["qid", "query"]].drop_duplicates())
    expected = dict(zip(zip(test.qid.astype(str), test.docid.astype(str)), model.predict(test)))
    got = [expected[(q, d)] for q, d in zip(ranked.qid, ranked.docno)]
    np.testing.assert_allclose(ranked.score.to_numpy(), got, rtol=1e-12, atol=1e-12)
