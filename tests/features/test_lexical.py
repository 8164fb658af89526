import math

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import TfidfVectorizer

from ltrfeat.core.analysis import Analyzer
from ltrfeat.features.corpus import CorpusStats, word_trigrams
from ltrfeat.core.errors import ModelFileError, TextTableError
from ltrfeat.features.lexical import FAMILIES, LexicalExtractor
from builders import dataset_path

# N = 3 documents, |C| = 10; df: a 1, b 2, c 2, d 1, e 1; cf: a 2, b 2, c 4, d 1, e 1.
DOCS = pd.DataFrame({"docid": ["d1", "d2", "d3"], "title": ["A b a c", "b, d", "c c-c e"], "body": ["x", "", "a"]})


def pairs(query, docids=("d1", "d2", "d3")):
    d = DOCS.set_index("docid").loc[list(docids)].reset_index()
    return d.assign(qid="q", query=query)


def features(query, names, docids=("d1", "d2", "d3"), **params):
    ex = LexicalExtractor(features=names, fields=("title",), **params).fit(DOCS)
    return pd.DataFrame(ex.transform(pairs(query, docids)).astype(np.float64), columns=ex.feature_names())


def test_tfidf_and_idf_by_hand():
    got = features("a c z", ["tf", "idf", "tfidf"]).iloc[0]
    idf_a, idf_c, idf_z = math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5), math.log(1 + 3.5 / 0.5)
    assert got["tf_sum_title"] == 3 and got["tf_min_title"] == 0 and got["tf_max_title"] == 2
    assert got["tf_mean_title"] == pytest.approx(1.0)
    assert got["idf_sum_title"] == pytest.approx(idf_a + idf_c + idf_z, rel=1e-6)
    assert got["idf_max_title"] == pytest.approx(idf_z, rel=1e-6)
    assert got["tfidf_sum_title"] == pytest.approx(2 * idf_a + idf_c, rel=1e-6)


def test_lm_dirichlet_by_hand_skips_terms_unseen_in_the_collection():
    got = features("a c z", ["lm_dirichlet"], mu=2.0)["lm_dirichlet_title"]
    # p(a|C) = 0.2, p(c|C) = 0.4; z has cf 0 and is skipped
    assert got[0] == pytest.approx(math.log(2.4 / 6) + math.log(1.8 / 6), rel=1e-6)
    assert got[1] == pytest.approx(math.log(0.4 / 4) + math.log(0.8 / 4), rel=1e-6)
    assert got[2] == pytest.approx(math.log(0.4 / 6) + math.log(3.8 / 6), rel=1e-6)


def test_jelinek_mercer_and_absolute_discounting_by_hand():
    got = features("a c", ["lm_jm", "lm_absdisc"], docids=("d1",), jm_lambda=0.5, ad_delta=0.5).iloc[0]
    assert got["lm_jm_title"] == pytest.approx(math.log(0.5 * 2 / 4 + 0.1) + math.log(0.5 / 4 + 0.2), rel=1e-6)
    # d1 has 3 distinct terms: P(w|d) = max(tf - .5, 0)/4 + .5 * 3/4 * p(w|C)
    assert got["lm_absdisc_title"] == pytest.approx(math.log(1.5 / 4 + 0.075) + math.log(0.5 / 4 + 0.15), rel=1e-6)


def test_bm25_by_hand():
    got = features("a c z", ["bm25"], docids=("d1",), k1=1.2, b=0.75).iloc[0, 0]
    norm = 1.2 * (0.25 + 0.75 * 4 / (10 / 3))
    expected = math.log(1 + 2.5 / 1.5) * 2 / (2 + norm) + math.log(1 + 1.5 / 2.5) * 1 / (1 + norm)
    assert got == pytest.approx(expected, rel=1e-6)


def test_coverage_lengths_phrase_and_bigrams_by_hand():
    got = features("a c a z", ["coverage", "field_len", "query_len", "phrase_match", "bigram_match"])
    assert got["coverage_title"].tolist() == pytest.approx([2 / 3, 0, 1 / 3])  # distinct terms a, c, z
    assert got["field_len_title"].tolist() == [4, 2, 4]
    assert got["query_len"].tolist() == [4, 4, 4]
    got = features("b a", ["phrase_match", "bigram_match"])
    assert got["phrase_match_title"].tolist() == [1, 0, 0] and got["bigram_match_title"].tolist() == [1, 0, 0]
    got = features("c a b", ["phrase_match", "bigram_match"])  # "a b" adjacent in d1 but "c a" is not
    assert got["phrase_match_title"].tolist() == [0, 0, 0] and got["bigram_match_title"].tolist() == [1, 0, 0]
    got = features("c c", ["phrase_match"])
    assert got["phrase_match_title"].tolist() == [0, 0, 1]
    got = features("d", ["phrase_match"])
    assert got["phrase_match_title"].tolist() == [0, 1, 0]


def test_empty_query_and_out_of_vocabulary_terms_give_zeros():
    ex = LexicalExtractor(features="all", fields=("title", "body")).fit(DOCS)
    X = ex.transform(pairs("?!", ["d1", "d2"]))
    assert X.shape == (2, len(ex.feature_names())) and X.dtype == np.float32
    lengths = [ex.feature_names().index(n) for n in ("field_len_title", "field_len_body")]
    assert np.count_nonzero(np.delete(X, lengths, axis=1)) == 0
    X = ex.transform(pairs("zzz", ["d1"]))
    assert np.isfinite(X).all()


def test_column_names_are_stable_and_query_len_has_no_field():
    ex = LexicalExtractor(features=["bm25", "query_len", "tf"], fields=["title", "body"]).fit(DOCS)
    assert ex.feature_names() == [
        "bm25_title",
        "bm25_body",
        "query_len",
        "tf_sum_title",
        "tf_min_title",
        "tf_max_title",
        "tf_mean_title",
        "tf_sum_body",
        "tf_min_body",
        "tf_max_body",
        "tf_mean_body",
    ]
    assert len(
        LexicalExtractor(features="all", fields=["t"]).fit(DOCS.rename(columns={"title": "t"})).feature_names()
    ) == sum(len(stems) for stems in [v[1] for v in FAMILIES.values()])


def test_sklearn_conventions_and_validation():
    ex = LexicalExtractor(features=["bm25"], k1=2.0)
    assert ex.get_params()["k1"] == 2.0 and not hasattr(ex, "corpus_")
    assert clone(ex).k1 == 2.0
    with pytest.raises(NotFittedError):
        ex.transform(pairs("a"))
    with pytest.raises(ValueError, match="unknown lexical"):
        LexicalExtractor(features=["bm26"]).fit(DOCS)
    with pytest.raises(ValueError, match="b=1.5"):
        LexicalExtractor(b=1.5).fit(DOCS)
    with pytest.raises(TextTableError, match="no column"):
        LexicalExtractor(fields=["abstract"]).fit(DOCS)
    with pytest.raises(TextTableError, match="no column"):
        LexicalExtractor().fit(DOCS).transform(pairs("a").drop(columns="title"))


def test_results_do_not_depend_on_batching_or_row_order():
    ex = LexicalExtractor(features="all", fields=("title", "body")).fit(DOCS)
    p = pd.concat([pairs("a c", ["d1", "d3"]), pairs("b x", ["d2", "d1", "d3"])], ignore_index=True)
    whole = ex.transform(p)
    parts = np.vstack([ex.transform(p.iloc[[i]]) for i in range(len(p))])
    np.testing.assert_allclose(whole, parts, rtol=1e-6)
    assert np.array_equal(ex.transform(p.iloc[::-1]), whole[::-1])


def test_trigram_cosine_matches_scikit_learn_tfidf():
    docs = pd.DataFrame({"docid": list("abcd"), "title": ["gas lawn mower", "lawn edger", "microwave oven", "mowers"]})
    queries = ["gas mowe", "miricle grow", "microwave", "lawnmower"]
    an = Analyzer()
    vec = TfidfVectorizer(analyzer=lambda t: [g for tok in an.tokens(t) for g in word_trigrams(tok)]).fit(docs.title)
    ex = LexicalExtractor(features=["trigram_cos"], fields=["title"]).fit(docs)
    p = pd.DataFrame([(q, d) for q in queries for d in docs.title], columns=["query", "title"])
    expected = np.asarray(vec.transform(p["query"]).multiply(vec.transform(p["title"])).sum(axis=1)).ravel()
    np.testing.assert_allclose(ex.transform(p)[:, 0], expected, atol=1e-6)
    assert ex.transform(p)[0, 0] > 0.3  # "mowe" still matches "mower"


def test_corpus_statistics_round_trip_and_reuse(tmp_path):
    an = Analyzer(stemmer="english", stopwords="english")
    stats = CorpusStats.from_docs(DOCS, fields=["title", "body"], analyzer=an)
    stats.save(tmp_path / "c.npz")
    loaded = CorpusStats.load(tmp_path / "c.npz")
    assert loaded.analyzer == an and loaded.vocab == stats.vocab and loaded.trigrams == stats.trigrams
    for f in ("title", "body"):
        a, b = stats.field_stats[f], loaded.field_stats[f]
        assert (a.n_docs, a.total_len) == (b.n_docs, b.total_len)
        assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("df", "cf", "tri_df"))
    p = pairs("a b c", ["d1", "d2"])
    fresh = LexicalExtractor(features="all", fields=["title"], analyzer=an).fit(DOCS)
    reused = LexicalExtractor(features="all", fields=["title"], corpus=loaded).fit(None)
    assert np.array_equal(fresh.transform(p), reused.transform(p))
    with pytest.raises(ModelFileError, match="fitted with"):
        LexicalExtractor(fields=["title"], analyzer=Analyzer(), corpus=loaded).fit(None)
    with pytest.raises(ModelFileError, match="no field"):
        LexicalExtractor(fields=["abstract"], corpus=loaded).fit(None)


def test_corrupt_or_foreign_corpus_files_are_refused(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ModelFileError, match="bad.npz"):
        CorpusStats.load(bad)
    other = tmp_path / "other.npz"
    np.savez(other, meta=np.frombuffer(b'{"format": "x"}', dtype=np.uint8))
    with pytest.raises(ModelFileError, match="unsupported"):
        CorpusStats.load(other)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, meta=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ModelFileError):
        CorpusStats.load(pickled)
    with pytest.raises(ModelFileError, match="not found"):
        CorpusStats.load(tmp_path / "absent.npz")


def _home_depot_sample(n_rows):
    path = dataset_path("home_depot", "raw", "train.csv")
    raw = pd.read_csv(path, encoding="ISO-8859-1", nrows=n_rows, dtype=str)
    docs = raw.drop_duplicates("product_uid")[["product_uid", "product_title"]]
    return raw, docs.rename(columns={"product_uid": "docid", "product_title": "title"})


@pytest.mark.parametrize("k1,b", [(1.2, 0.75), (0.9, 0.4)])
def test_bm25_parity_with_bm25s_lucene_on_real_titles(k1, b):
    import bm25s

    raw, docs = _home_depot_sample(3000)
    an = Analyzer()
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b)
    retriever.index(an.analyze(docs["title"]), show_progress=False)
    position = {d: i for i, d in enumerate(docs["docid"])}
    expected = []
    for query, uid in zip(raw["search_term"], raw["product_uid"]):
        tokens = [t for t in an.tokens(query) if t in retriever.vocab_dict]
        expected.append(retriever.get_scores(tokens)[position[uid]] if tokens else 0.0)
    ex = LexicalExtractor(features=["bm25"], fields=["title"], k1=k1, b=b).fit(docs)
    # a few products were retitled between rows: score each row against the indexed title
    titles = docs.set_index("docid")["title"].loc[raw["product_uid"]].to_numpy()
    got = ex.transform(pd.DataFrame({"query": raw["search_term"], "title": titles}))[:, 0]
    assert np.count_nonzero(got) > 1000
    np.testing.assert_allclose(got, np.asarray(expected), rtol=0, atol=1e-6)
