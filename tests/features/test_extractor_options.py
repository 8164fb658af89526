"""The extractors an extraction asks for: lexical settings not given come from saved corpus statistics, by the one
rule scoring uses too (``ltrfeat.features.pins.with_corpus_record``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.dataset import Feature, FeatureMap
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.features.corpus import CorpusStats
from ltrfeat.features.extractor_options import build_extractors
from ltrfeat.features.pins import lexical_settings

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    """Corpus statistics saved by an extraction with k1 0.5."""
    d = tmp_path_factory.mktemp("corpus")
    result = CliRunner().invoke(cli, [
        "extract", str(DATA / "train.letor"), "--queries", str(DATA / "queries.tsv"), "--docs", str(DATA / "docs.tsv"),
        "--lexical", "bm25", "--fields", "title", "--k1", "0.5", "--no-progress",
        "--save-corpus-stats", str(d / "k1.npz"), "--out", str(d / "train.letor"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return d / "k1.npz"


def _build(corpus_path, **given):
    return build_extractors(
        lexical="bm25", fields=["title"], stem=None, stopwords=None, corpus_path=str(corpus_path), lexical_params=given
    )


def test_a_setting_not_given_comes_from_the_corpus_record(corpus_path):
    (extractor,) = _build(corpus_path, k1=None, b=None)
    assert extractor.k1 == 0.5 and extractor.b == CorpusStats.load(corpus_path).settings["b"]


def test_extraction_and_scoring_refuse_a_contradicting_setting_in_the_same_words(corpus_path):
    """One rule: extract's and the scorers' refusal (a ranker without records) read alike and name the file."""
    with pytest.raises(LtrfeatError) as extracting:
        _build(corpus_path, k1=1.2)
    with pytest.raises(LtrfeatError) as scoring:
        lexical_settings(
            FeatureMap([Feature(1, "bm25_title")]),
            {"bm25_title": "bm25"},
            corpus=CorpusStats.load(corpus_path),
            given={"k1": 1.2},
        )
    assert str(extracting.value) == str(scoring.value)
    assert str(extracting.value).startswith(f"{corpus_path}: k1 1.2 (--k1) differs from the k1 0.5")
