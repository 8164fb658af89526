import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from ltrfeat.encoders.training import train_encoder
from ltrfeat.encoders.weak import docs_to_pairs, parse_pair
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.text import TextTableWarning

DOCS = pd.DataFrame(
    {
        "docid": ["a", "b", "c", "d"],
        "title": ["red cat", "blue dog", "", "green mat"],
        "body": ["the red cat sat on a mat", "a big blue dog", "orphan body", None],
    }
)


def test_each_document_with_both_fields_is_one_positive_pair():
    with pytest.warns(TextTableWarning, match="2 of 4 documents have an empty title or body"):
        pairs = docs_to_pairs(DOCS)
    assert list(pairs.columns) == ["qid", "query", "doc", "label"]
    assert pairs.to_dict("list") == {
        "qid": ["a", "b"],
        "query": ["red cat", "blue dog"],
        "doc": ["the red cat sat on a mat", "a big blue dog"],
        "label": [1.0, 1.0],
    }


def test_nothing_is_announced_when_every_document_is_usable():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pairs = docs_to_pairs(DOCS.iloc[:2], query_field="body", doc_field="title")
    assert pairs["query"].tolist() == ["the red cat sat on a mat", "a big blue dog"]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 12), negatives=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_negatives_are_other_documents_and_grouped_by_query(n, negatives, seed):
    docs = pd.DataFrame(
        {
            "docid": [f"d{i}" for i in range(n)],
            "title": [f"title {i}" for i in range(n)],
            "body": [f"body {i}" for i in range(n)],
        }
    )
    pairs = docs_to_pairs(docs, negatives=negatives, seed=seed)
    assert len(pairs) == n * (1 + negatives)
    assert (pairs.groupby("qid", sort=False).size() == 1 + negatives).all()
    assert pairs["qid"].tolist() == [f"d{i}" for i in range(n) for _ in range(1 + negatives)]
    pos, neg = pairs[pairs.label == 1], pairs[pairs.label == 0]
    assert (pos["doc"].str[5:] == pos["qid"].str[1:]).all()
    assert (neg["doc"].str[5:] != neg["qid"].str[1:]).all()
    assert pairs.equals(docs_to_pairs(docs, negatives=negatives, seed=seed))


def test_bad_fields_and_too_few_documents_are_errors():
    with pytest.raises(TextTableError, match="no column.*abstract"):
        docs_to_pairs(DOCS, doc_field="abstract")
    with pytest.raises(TextTableError, match="only 1 document"), pytest.warns(TextTableWarning):
        docs_to_pairs(DOCS.iloc[1:])


@pytest.mark.parametrize("spec", ["title", "title:", ":body", "title:title"])
def test_parse_pair_rejects(spec):
    with pytest.raises(TextTableError, match="QUERY_FIELD:DOC_FIELD"):
        parse_pair(spec)


def test_parse_pair():
    assert parse_pair(" title : body ") == ("title", "body")


def test_weak_pairs_train_an_encoder_with_a_meaningful_validation():
    rng = np.random.default_rng(0)
    topics = ["drill", "paint", "lamp", "hose", "saw", "tile", "fan", "door"]
    titles = [f"{t} {rng.integers(100)}" for t in topics for _ in range(8)]
    docs = pd.DataFrame(
        {
            "docid": [str(i) for i in range(len(titles))],
            "title": titles,
            "body": [f"a {t.split()[0]} for the home, model {i}" for i, t in enumerate(titles)],
        }
    )
    pairs = docs_to_pairs(docs, negatives=3, seed=0)
    _, history = train_encoder(
        pairs,
        model="dssm",
        epochs=3,
        batch_size=16,
        val_fraction=0.25,
        seed=0,
        sizes={"hidden": [32], "out": 16},
        threads=1,
        progress=False,
    )
    ndcg = [h["val_ndcg@10"] for h in history]
    # the label-0 pairs give held-out titles other bodies to rank against: NDCG is informative, and it rises
    assert ndcg[0] < 0.9 and ndcg[-1] > ndcg[0] + 0.05


def test_cli_train_encoder_from_docs(tmp_path):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli
    from ltrfeat.encoders.encoder import Encoder

    rows = [f"{i},{t} {i},a {t} for the home number {i}" for i, t in enumerate(["drill", "paint", "hose", "saw"] * 4)]
    (tmp_path / "docs.csv").write_text("docid,title,body\n" + "\n".join(rows) + "\n99,,orphan body\n")
    out = tmp_path / "weak.ltrenc"
    res = CliRunner().invoke(
        cli,
        [
            "train-encoder",
            "--from-docs",
            str(tmp_path / "docs.csv"),
            "--pair",
            "title:body",
            "--model",
            "dssm",
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--threads",
            "1",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "warning:" in res.output and "1 rows" in res.output
    assert Encoder.load(out).training["n_pairs"] == 16 * 5  # one positive + 4 validation negatives per document
    both = CliRunner().invoke(
        cli, ["train-encoder", str(tmp_path / "docs.csv"), "--from-docs", str(tmp_path / "docs.csv"), "--out", str(out)]
    )
    assert both.exit_code == 2 and "not both" in both.output
