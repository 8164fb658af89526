import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from ltrfeat.core.analysis import Analyzer
from ltrfeat.core.errors import TextTableError
from ltrfeat.features.lexical import LexicalExtractor
from ltrfeat.features.retrieval import BM25Retriever, joined_text

WORDS = ["wing", "flow", "heat", "shock", "wave", "plate", "boundary", "layer", "jet", "nozzle"]


def random_corpus(rng, n_docs, n_queries, vocab=WORDS):
    docs = pd.DataFrame(
        {
            "docid": [f"d{i:03d}" for i in range(n_docs)],
            "title": [" ".join(rng.choice(vocab, size=rng.integers(1, 4))) for _ in range(n_docs)],
            "body": [" ".join(rng.choice(vocab, size=rng.integers(0, 12))) or None for _ in range(n_docs)],
        }
    )
    queries = pd.DataFrame(
        {
            "qid": [f"q{i}" for i in range(n_queries)],
            "query": [" ".join(rng.choice(vocab, size=rng.integers(1, 4))) for _ in range(n_queries)],
        }
    )
    return docs, queries


def brute_force(docs, queries, k, **params):
    """Top-k by the project's bm25 feature over every (query, doc) pair, ties by docid."""
    lex = LexicalExtractor(features=["bm25"], fields=["text"], **params).fit(
        pd.DataFrame({"text": joined_text(docs, ["title", "body"])})
    )
    rows = []
    for qid, query in zip(queries["qid"], queries["query"]):
        pairs = pd.DataFrame({"query": query, "text": joined_text(docs, ["title", "body"])})
        score = lex.transform(pairs)[:, 0].astype(np.float64)
        order = sorted((-s, d) for s, d in zip(score, docs["docid"]) if s > 0)[:k]
        rows += [(qid, d, r + 1) for r, (_, d) in enumerate(order)]
    return pd.DataFrame(rows, columns=["qid", "docid", "rank"])


def test_scores_equal_the_lexical_bm25_feature():
    rng = np.random.default_rng(0)
    docs, queries = random_corpus(rng, 40, 8)
    r = BM25Retriever(fields=["title", "body"], k1=0.9, b=0.4).fit(docs)
    got = r.scores(queries["query"]).toarray()
    lex = LexicalExtractor(features=["bm25"], fields=["text"], k1=0.9, b=0.4).fit(
        pd.DataFrame({"text": joined_text(docs, ["title", "body"])})
    )
    for i, query in enumerate(queries["query"]):
        pairs = pd.DataFrame({"query": query, "text": joined_text(docs, ["title", "body"])})
        np.testing.assert_allclose(got[i], lex.transform(pairs)[:, 0], rtol=1e-6, atol=1e-6)


def test_repeated_query_terms_count_twice():
    docs = pd.DataFrame({"docid": ["a", "b"], "title": ["wing flow", "heat"]})
    r = BM25Retriever().fit(docs)
    once, twice = r.scores(["wing", "wing wing"]).toarray()
    assert twice[0] == pytest.approx(2 * once[0]) and once[1] == 0


def test_retrieve_matches_brute_force_and_ties_go_by_docid():
    rng = np.random.default_rng(1)
    docs, queries = random_corpus(rng, 60, 12)
    got = BM25Retriever(fields=["title", "body"]).fit(docs).retrieve(queries, k=7)
    expected = brute_force(docs, queries, 7)
    pd.testing.assert_frame_equal(got[["qid", "docid", "rank"]], expected, check_dtype=False)
    assert (got.groupby("qid")["score"].apply(lambda s: (np.diff(s.to_numpy()) <= 0).all())).all()


def test_ties_are_broken_by_docid_not_corpus_order():
    docs = pd.DataFrame({"docid": ["z", "b", "m", "a"], "title": ["jet", "jet", "jet", "jet"]})
    q = pd.DataFrame({"qid": ["1"], "query": ["jet"]})
    got = BM25Retriever().fit(docs).retrieve(q, k=2)
    assert got["docid"].tolist() == ["a", "b"] and got["rank"].tolist() == [1, 2]
    shuffled = docs.iloc[[2, 0, 3, 1]]
    assert BM25Retriever().fit(shuffled).retrieve(q, k=2)["docid"].tolist() == ["a", "b"]


def test_only_matching_documents_and_queries_without_match_have_no_rows():
    docs = pd.DataFrame({"docid": ["a", "b", "c"], "title": ["wing flow", "heat", "flow"]})
    q = pd.DataFrame({"qid": ["1", "2", "3"], "query": ["flow", "unknown words", "heat flow"]})
    got = BM25Retriever().fit(docs).retrieve(q, k=100)
    assert got[got["qid"] == "1"]["docid"].tolist() == ["c", "a"]  # the shorter document first
    assert "2" not in set(got["qid"])
    assert sorted(got[got["qid"] == "3"]["docid"]) == ["a", "b", "c"]


def test_batch_size_does_not_change_the_result():
    rng = np.random.default_rng(2)
    docs, queries = random_corpus(rng, 30, 20)
    a = BM25Retriever(fields=["title", "body"], batch_size=1).fit(docs).retrieve(queries, k=5)
    b = BM25Retriever(fields=["title", "body"], batch_size=256).fit(docs).retrieve(queries, k=5)
    pd.testing.assert_frame_equal(a, b)


def test_analyzer_is_used_for_documents_and_queries():
    docs = pd.DataFrame({"docid": ["a", "b"], "title": ["the flows", "heat"]})
    q = pd.DataFrame({"qid": ["1"], "query": ["flow the"]})
    plain = BM25Retriever().fit(docs).retrieve(q, k=5)
    stemmed = BM25Retriever(analyzer=Analyzer(stemmer="english", stopwords="english")).fit(docs).retrieve(q, k=5)
    assert plain["docid"].tolist() == ["a"]  # only via "the"
    assert stemmed["docid"].tolist() == ["a"] and stemmed["score"].iat[0] != plain["score"].iat[0]
    assert BM25Retriever(analyzer=Analyzer(stopwords="english")).fit(docs).retrieve(q, k=5).empty


def test_agrees_with_bm25s_lucene_top_k():
    bm25s = pytest.importorskip("bm25s")
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(300)]
    docs, queries = random_corpus(rng, 500, 30, vocab=vocab)
    ours = BM25Retriever(fields=["title", "body"]).fit(docs).retrieve(queries, k=10)
    tokens = Analyzer().analyze(joined_text(docs, ["title", "body"]))
    oracle = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    oracle.index(tokens, show_progress=False)
    for qid, query in zip(queries["qid"], queries["query"]):
        ids = oracle.get_tokens_ids(Analyzer().tokens(query))
        scores = np.asarray(oracle.get_scores_from_ids(ids), dtype=np.float64)
        expected = np.sort(scores[scores > 0])[::-1][:10]
        np.testing.assert_allclose(ours[ours["qid"] == qid]["score"].to_numpy(), expected, rtol=1e-5)


def test_fit_errors():
    with pytest.raises(TextTableError, match="no column.*body"):
        BM25Retriever(fields=["title", "body"]).fit(pd.DataFrame({"docid": ["a"], "title": ["x"]}))
    with pytest.raises(TextTableError, match="docid 'a' occurs more than once"):
        BM25Retriever().fit(pd.DataFrame({"docid": ["a", "a"], "title": ["x", "y"]}))
    with pytest.raises(TextTableError, match="empty"):
        BM25Retriever().fit(pd.DataFrame({"docid": [], "title": []}))
    with pytest.raises(ValueError, match="batch_size"):
        BM25Retriever(batch_size=0).fit(pd.DataFrame({"docid": ["a"], "title": ["x"]}))
    with pytest.raises(NotFittedError):
        BM25Retriever().retrieve(pd.DataFrame({"qid": ["1"], "query": ["x"]}))
    r = BM25Retriever().fit(pd.DataFrame({"docid": ["a"], "title": ["x"]}))
    with pytest.raises(ValueError, match="k must be"):
        r.retrieve(pd.DataFrame({"qid": ["1"], "query": ["x"]}), k=0)


def test_params_round_trip_sklearn_style():
    r = BM25Retriever(fields=["body"], k1=2.0, b=0.5, batch_size=8)
    assert r.get_params() == {"fields": ["body"], "k1": 2.0, "b": 0.5, "analyzer": None, "batch_size": 8}
    assert not hasattr(r, "weights_")


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n_docs=st.integers(1, 25), k=st.integers(1, 8))
def test_retrieve_equals_brute_force_property(seed, n_docs, k):
    rng = np.random.default_rng(seed)
    docs, queries = random_corpus(rng, n_docs, 4, vocab=WORDS[:4])  # few words: many ties
    got = BM25Retriever(fields=["title", "body"]).fit(docs).retrieve(queries, k=k)
    expected = brute_force(docs, queries, k)
    assert got[["qid", "docid", "rank"]].values.tolist() == expected.values.tolist()
