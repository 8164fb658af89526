import numpy as np
import pandas as pd
import pytest

from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, TextTableError
from ltrfeat.features.extract import (
    FeatureExtractor,
    available_extractors,
    extract_file,
    extract_pairs,
    extract_ranking,
    lexical_extractors,
)
from ltrfeat.features.lexical import FAMILIES, LexicalExtractor
from ltrfeat.core.letor import read_letor, write_letor

QUERIES = pd.DataFrame({"qid": ["1", "2", "3"], "query": ["red cat", "blue dog", "green mat"]})
DOCS = pd.DataFrame(
    {
        "docid": ["a", "b", "c", "d"],
        "title": ["red cat", "blue dog house", "a green mat", "cat and dog"],
        "body": ["the red cat sat", "", "green mats for cats", "dogs"],
    }
)


def letor_file(tmp_path, rows, name="in.letor"):
    """rows: (qid, docid or None, label); two input features f1 (label) and f7 (row number)."""
    qid, docid, label = zip(*rows)
    X = np.column_stack([np.array(label, dtype=np.float32), np.arange(len(rows), dtype=np.float32)])
    comments = [None if d is None else f"docid = {d}" for d in docid]
    data = RankingSet(qid, label, X, FeatureMap.from_ids([1, 7]), docid=docid, comment=comments)
    path = tmp_path / name
    write_letor(path, data, write_feature_map=False)
    return path


ROWS = [("1", "a", 2), ("1", "b", 0), ("1", "d", 1), ("2", "b", 2), ("2", "d", 1), ("3", "c", 1), ("3", "a", 0)]


def extract(src, out, *, docs=DOCS, extractors=None, **options):
    """:func:`extract_file` with the module's tables, BM25 on titles unless ``extractors`` says otherwise."""
    extractors = lexical_extractors("bm25", fields=["title"]) if extractors is None else extractors
    return extract_file(src, out, queries=QUERIES, docs=docs, extractors=extractors, progress=False, **options)


def test_registry_lists_every_lexical_family_with_a_description():
    reg = available_extractors()
    assert set(FAMILIES) <= set(reg)
    description, factory = reg["bm25"]
    assert "BM25" in description
    ex = factory(fields=["title"], k1=0.9)
    assert isinstance(ex, FeatureExtractor) and ex.k1 == 0.9 and ex.features == ("bm25",)


def test_lexical_extractors_merge_families_and_reject_unknown_names():
    [ex] = lexical_extractors("bm25, coverage", fields=["title"])
    assert ex.features == ("bm25", "coverage")
    assert lexical_extractors("", fields=["title"]) == []
    assert lexical_extractors("all", fields=["title"])[0].features == tuple(FAMILIES)
    with pytest.raises(LtrfeatError, match="bm26"):
        lexical_extractors("bm25,bm26", fields=["title"])


def test_extract_file_appends_named_columns_after_the_largest_id(tmp_path):
    src = letor_file(tmp_path, ROWS)
    out = tmp_path / "out.letor"
    ex = LexicalExtractor(features=["bm25", "coverage"], fields=["title", "body"])
    assert extract(src, out, extractors=[ex]) == len(ROWS)
    data = read_letor(out)
    assert data.feature_map.ids == [1, 7, 8, 9, 10, 11]
    assert data.feature_map.names == ["f1", "f7", "bm25_title", "bm25_body", "coverage_title", "coverage_body"]
    assert [f.source for f in data.feature_map][2:] == ["lexical"] * 4
    assert data.docid.tolist() == [r[1] for r in ROWS]
    np.testing.assert_array_equal(data.X[:, :2], read_letor(src).X)
    # the same values as transforming the joined pairs directly
    pairs = pd.DataFrame(
        {
            "query": QUERIES.set_index("qid").loc[[r[0] for r in ROWS], "query"].to_numpy(),
            **{f: DOCS.set_index("docid").loc[[r[1] for r in ROWS], f].to_numpy() for f in ("title", "body")},
        }
    )
    np.testing.assert_allclose(data.X[:, 2:], ex.transform(pairs), rtol=1e-6)
    assert data.X[0, 4] == 1.0 and data.X[1, 4] == 0.0  # coverage_title of "red cat" in a / b


def test_chunking_does_not_change_the_output(tmp_path):
    src = letor_file(tmp_path, ROWS)
    ex = lexical_extractors("all", fields=["title", "body"])
    extract(src, tmp_path / "one.letor", extractors=ex, chunk_queries=1)
    extract(src, tmp_path / "all.letor", extractors=ex)
    assert (tmp_path / "one.letor").read_bytes() == (tmp_path / "all.letor").read_bytes()


def outputs(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out"))


def test_missing_texts_error_lists_ids_and_count_and_writes_nothing(tmp_path):
    rows = ROWS + [("9", "a", 0), ("9", "zz", 1), ("3", "yy", 0)]
    src = letor_file(tmp_path, [r for r in rows if r[0] != "3"] + [r for r in rows if r[0] == "3"])
    with pytest.raises(TextTableError) as err:
        extract(src, tmp_path / "out.letor", chunk_queries=1)
    msg = str(err.value)
    assert msg.startswith(str(src)) and "3 rows have no text" in msg
    assert "1 qids not in the queries table (9)" in msg and "2 docids not in the documents table (zz, yy)" in msg
    assert "--missing nan|zero" in msg and "\n" not in msg
    assert outputs(tmp_path) == []


def test_missing_policies_nan_and_zero(tmp_path):
    src = letor_file(tmp_path, [("1", "a", 1), ("1", "nope", 0), ("1", None, 0)])
    for policy, check in [("nan", np.isnan), ("zero", lambda v: v == 0)]:
        out = tmp_path / f"out_{policy}.letor"
        extract(src, out, missing=policy)
        X = read_letor(out, nan_policy="keep").X
        assert X[0, 2] > 0 and check(X[1, 2]) and check(X[2, 2])


def test_rows_without_docid_comment_are_reported_by_row_number(tmp_path):
    src = letor_file(tmp_path, [("1", "a", 1), ("1", None, 0)])
    with pytest.raises(TextTableError, match=r"1 rows without a '#docid = X' comment \(row numbers\) \(2\)"):
        extract(src, tmp_path / "out.letor")
    assert outputs(tmp_path) == []


def test_name_clash_with_existing_columns_is_an_error(tmp_path):
    src = letor_file(tmp_path, ROWS)
    out = tmp_path / "out.letor"
    extract(src, out)
    with pytest.raises(LtrfeatError, match="duplicate feature names.*bm25_title"):
        extract(out, tmp_path / "out2.letor")
    assert not (tmp_path / "out2.letor").exists()


def test_bad_tables_and_policies(tmp_path):
    src = letor_file(tmp_path, ROWS)
    ex = lexical_extractors("bm25", fields=["title"])
    with pytest.raises(TextTableError, match="repeats docid 'a'"):
        extract(src, tmp_path / "out.letor", docs=pd.concat([DOCS, DOCS.iloc[:1]]), extractors=ex)
    with pytest.raises(TextTableError, match="no column.*abstract"):
        extract(src, tmp_path / "out.letor", extractors=lexical_extractors("bm25", fields=["abstract"]))
    with pytest.raises(LtrfeatError, match="missing-text policy"):
        extract(src, tmp_path / "out.letor", extractors=ex, missing="skip")
    assert outputs(tmp_path) == []


def test_prefitted_extractors_are_not_refitted(tmp_path):
    src = letor_file(tmp_path, ROWS)
    ex = LexicalExtractor(features=["idf"], fields=["title"]).fit(DOCS.iloc[:2])
    stats = ex.corpus_
    extract(src, tmp_path / "out.letor", extractors=[ex])
    assert ex.corpus_ is stats and stats.field_stats["title"].n_docs == 2


def test_extract_pairs_groups_queries_and_records_docids():
    pairs = pd.DataFrame(
        {
            "qid": ["q1", "q2", "q1"],
            "query": ["red cat", "dog", "red cat"],
            "docid": ["a", "b", "c"],
            "doc": ["red cat", "blue dog", "green mat"],
            "label": [2.0, 1.0, 0.0],
        }
    )
    data = extract_pairs(pairs, lexical_extractors("bm25,query_len", fields=["doc"]))
    assert data.qid.tolist() == ["q1", "q1", "q2"] and data.docid.tolist() == ["a", "c", "b"]
    assert data.comment.tolist() == ["docid = a", "docid = c", "docid = b"]
    assert data.feature_map.names == ["bm25_doc", "query_len"] and data.feature_map.ids == [1, 2]
    assert data.X[0, 0] > 0 and data.X[1, 0] == 0 and data.X[:, 1].tolist() == [2, 2, 1]


def test_extract_ranking_missing_texts():
    data = RankingSet(["1", "1"], [1, 0], np.zeros((2, 0)), FeatureMap(()), docid=["a", "zz"])
    with pytest.raises(TextTableError, match="1 docids not in the documents table"):
        extract_ranking(data, lexical_extractors("bm25", fields=["title"]), queries=QUERIES, docs=DOCS)
    out = extract_ranking(
        data, lexical_extractors("bm25", fields=["title"]), queries=QUERIES, docs=DOCS, missing="zero"
    )
    assert out.X.shape == (2, 1) and out.X[1, 0] == 0
