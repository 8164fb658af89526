"""The long-query synthetic world (``datasets synth --long-queries``): natural-language needs judged against the
descriptions over BM25 candidate lists; the short world unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.cli.main import cli
from ltrfeat.datasets.synth import PRESETS, generate_world, write_world
from ltrfeat.datasets.synth._catalogue import make_catalogue
from ltrfeat.datasets.synth._judging import CandidateIndex, semantic_grades
from ltrfeat.datasets.synth._lexicon import content_tokens, tokens
from ltrfeat.datasets.synth._queries import make_intent, realise_need
from ltrfeat.features.retrieval import BM25Retriever

SMALL = {"n_queries": 60, "n_docs": 300, "n_click_queries": 30}
DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def long_world():
    return generate_world(seed=0, query_style="long", **SMALL)


@pytest.fixture(scope="module")
def catalogue():
    return make_catalogue(np.random.default_rng(7), 400)


def _intent(text: str) -> dict:
    head, *kinds = text.split(";")
    return {"type": head} | dict(kind.split("=", 1) for kind in kinds)


def test_short_world_is_byte_identical_to_the_committed_sample(tmp_path):
    """The long mode leaves the short world as it was: the committed sample regenerates byte for byte."""
    written = write_world(generate_world(seed=0, **PRESETS["quick"]), tmp_path)
    for name, path in written.items():
        assert path.read_bytes() == (DATA / name).read_bytes(), name


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_need_is_a_long_lower_case_sentence_naming_the_product(catalogue, seed):
    rng = np.random.default_rng(seed)
    record = catalogue.iloc[int(rng.integers(len(catalogue)))].to_dict()
    intent = make_intent(rng, record)
    need = realise_need(rng, intent)
    words = need.split(" ")
    assert need == need.lower() and all(words), need
    assert 5 <= len(words) <= 32, need
    assert len(content_tokens(need)) >= 3


def test_same_seed_same_long_world_and_other_seed_differs(long_world):
    again = generate_world(seed=0, query_style="long", **SMALL)
    for name in ("docs", "queries", "judged", "clicks"):
        pd.testing.assert_frame_equal(getattr(long_world, name), getattr(again, name))
    assert not long_world.judged["query"].equals(generate_world(seed=1, query_style="long", **SMALL).judged["query"])
    # the same catalogue as the short world of the seed
    pd.testing.assert_frame_equal(long_world.docs, generate_world(seed=0, **SMALL).docs)


def test_long_needs_are_judged_against_descriptions(long_world):
    docs, judged = long_world.docs, long_world.judged
    description = dict(zip(docs["docid"], docs["description"]))
    assert (judged["doc"] == judged["docid"].map(description)).all()
    assert long_world.clicks["doc"].isin(docs["description"]).all()
    lengths = long_world.queries["query"].map(lambda q: len(q.split()))
    assert lengths.median() >= 10 and lengths.min() >= 5
    assert long_world.options["query_style"] == "long"
    # not the title's words: most needs share under half their content tokens with the best candidate's title
    title = dict(zip(docs["docid"], docs["title"]))
    best = judged.loc[judged.groupby("qid")["label"].idxmax()]
    share = [
        len(set(content_tokens(q)) & set(content_tokens(title[d]))) / len(set(content_tokens(q)))
        for q, d in zip(best["query"], best["docid"])
    ]
    assert np.mean(np.array(share) < 0.5) > 0.8


def test_candidates_are_the_bm25_top_k_with_at_most_one_matching_product_swapped_in(long_world):
    docs, judged, queries = long_world.docs, long_world.judged, long_world.queries
    index = CandidateIndex(docs)
    row = {d: i for i, d in enumerate(docs["docid"])}
    hits = BM25Retriever(fields=("description",)).fit(docs).retrieve(queries[["qid", "query"]], k=20)
    top = hits.groupby("qid")["docid"].apply(list).to_dict()
    swapped = 0
    for (qid, group), intent in zip(judged.groupby("qid", sort=False), queries["intent"]):
        k = len(group)
        assert 10 <= k <= 20
        outside = set(group["docid"]) - set(top.get(qid, [])[:k])
        assert len(outside) <= 1
        swapped += len(outside)
        grades = semantic_grades(index, np.array([row[d] for d in group["docid"]]), _intent(intent))
        assert grades.max() == 3  # a product matching the whole need is always among the candidates
        if outside:
            assert grades[group["docid"].tolist().index(outside.pop())] == 3
    assert swapped < len(queries) / 2
    # the list's order does not give BM25's ranking (or the labels) away
    first = judged.groupby("qid", sort=False)["docid"].first()
    assert np.mean([first[q] == top[q][0] for q in first.index if q in top]) < 0.5


def test_bm25_candidates_hold_hard_negatives(long_world):
    """Lexically close but wrong: most label-0/1 candidates share content words with the need."""
    judged = long_world.judged
    low = judged[judged["label"] <= 1]
    shared = [bool(set(content_tokens(q)) & set(content_tokens(d))) for q, d in zip(low["query"], low["doc"])]
    assert np.mean(shared) > 0.9
    assert 0.2 < (judged["label"] >= 2).mean() < 0.7


def test_cli_long_queries(tmp_path):
    args = ["datasets", "synth", "--queries", "30", "--docs", "200", "--click-queries", "10", "--long-queries"]
    result = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "w")])
    assert result.exit_code == 0, result.output
    assert "(long queries)" in result.output
    meta = json.loads((tmp_path / "w" / "world.json").read_text())
    assert meta["options"]["query_style"] == "long"
    judged = pd.read_csv(tmp_path / "w" / "judged.tsv", sep="\t")
    assert judged["doc"].str.startswith("This ").all()
    assert tokens(judged["query"].iloc[0])
    result = CliRunner().invoke(cli, [*args, "--control", "--out", str(tmp_path / "c")])
    assert result.exit_code == 2 and "semantic world only" in result.output
    assert not (tmp_path / "c").exists()
