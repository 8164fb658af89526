"""Feature pins (issue 31): the settings that define a column travel from extract to the ranker and
are checked where the columns are computed again; encoders warn about their own training queries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.dataset import Feature, FeatureMap
from ltrfeat.core.errors import LtrfeatWarning
from ltrfeat.core.letor import read_letor
from ltrfeat.features.corpus import CorpusStats
from ltrfeat.encoders.leakage import LeakageGuard, TrainedQueries, trained_queries_record
from ltrfeat.features.lexical import lucene_length

DATA = Path(__file__).resolve().parents[2] / "data"
TEXTS = ["--queries", str(DATA / "queries.tsv"), "--docs", str(DATA / "docs.tsv")]


def run(*args, ok=True):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    """The issue's case: extract with k1 0.5 / b 0.3, save the corpus statistics, train a ranker."""
    d = tmp_path_factory.mktemp("pins")
    lexical = ["--lexical", "bm25,lm_dirichlet,coverage", "--fields", "title", "--no-progress"]
    run("extract", DATA / "train.letor", *TEXTS, *lexical, "--k1", "0.5", "--b", "0.3",
        "--save-corpus-stats", d / "k1.npz", "--out", d / "train.letor")  # fmt: skip
    run("extract", DATA / "test.letor", *TEXTS, *lexical, "--corpus-stats", d / "k1.npz", "--out", d / "test.letor")
    run("train-ranker", d / "train.letor", "--out", d / "ranker.txt", "--n-estimators", "20")
    return d


def test_the_record_travels_from_extract_to_the_ranker(skewed):
    sidecar = json.loads((skewed / "test.letor.features.json").read_text())
    (record,) = sidecar["pipeline"]
    assert record["k1"] == 0.5 and record["b"] == 0.3  # taken from k1.npz, no flag given
    assert record["columns"] == ["bm25_title", "lm_dirichlet_title", "coverage_title"]
    assert record["corpus_sha256"] == CorpusStats.load(skewed / "k1.npz").fingerprint()
    assert CorpusStats.load(skewed / "k1.npz").settings["k1"] == 0.5
    meta = json.loads((skewed / "ranker.txt.meta.json").read_text())
    assert meta["features"]["pipeline"][0]["b"] == 0.3


def test_serve_scores_with_the_recorded_k1_b(skewed):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from ltrfeat.rankers.models import load_ranker
    from ltrfeat.serving.process import served

    data = read_letor(skewed / "test.letor")
    expected = load_ranker(skewed / "ranker.txt").predict(data)
    qid = data.qid[0]
    rows = np.flatnonzero(data.qid == qid)
    docs = pd.read_csv(DATA / "docs.tsv", sep="\t", dtype=str).set_index("docid")
    query = pd.read_csv(DATA / "queries.tsv", sep="\t", dtype=str).set_index("qid").loc[qid, "query"]
    cands = [{"docid": d, "title": docs.loc[d, "title"]} for d in data.docid[rows]]
    with served(["--ranker", skewed / "ranker.txt", "--corpus-stats", skewed / "k1.npz"], startup_timeout=300) as (
        proc,
        http,
    ):
        body = http.post("/score", json={"query": query, "candidates": cands}).json()
    np.testing.assert_allclose(body["scores"], expected[rows], rtol=1e-6)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--k1", "1.2"], "k1 1.2 (--k1) differs from the k1 0.5"),
        (["--bm25-norms", "lucene"], "bm25_norms lucene (--bm25-norms) differs from the bm25_norms exact"),
    ],
)
def test_serve_refuses_a_setting_against_the_record(skewed, args, message):
    result = run("serve", "--ranker", skewed / "ranker.txt", "--corpus-stats", skewed / "k1.npz", *args, ok=False)
    assert result.exit_code == 2 and message in result.output, result.output


def test_serve_refuses_other_corpus_statistics(skewed, tmp_path):
    run("extract", DATA / "vali.letor", *TEXTS, "--lexical", "bm25", "--fields", "title,description",
        "--save-corpus-stats", tmp_path / "other.npz", "--out", tmp_path / "v.letor", "--no-progress")  # fmt: skip
    result = run("serve", "--ranker", skewed / "ranker.txt", "--corpus-stats", tmp_path / "other.npz", ok=False)
    assert result.exit_code == 2 and "are not the ones the ranker's bm25_title was extracted with" in result.output


def test_serve_finds_the_corpus_statistics_the_record_names(skewed):
    """The record keeps where the statistics were saved: serve needs no --corpus-stats while that file holds them."""
    from ltrfeat.serving.scorer import Scorer

    meta = json.loads((skewed / "ranker.txt.meta.json").read_text())
    assert meta["features"]["pipeline"][0]["corpus_file"] == str((skewed / "k1.npz").resolve())
    assert Scorer.load(skewed / "ranker.txt").extractors[0].k1 == 0.5


def _moved(skewed, tmp_path):
    """A copy of the ranker whose recorded statistics file is gone."""
    meta = json.loads((skewed / "ranker.txt.meta.json").read_text())
    meta["features"]["pipeline"][0]["corpus_file"] = str(tmp_path / "moved.npz")
    (tmp_path / "ranker.txt").write_bytes((skewed / "ranker.txt").read_bytes())
    (tmp_path / "ranker.txt.meta.json").write_text(json.dumps(meta))
    return tmp_path / "ranker.txt"


def test_serve_rerank_and_pyterrier_name_the_corpus_statistics_a_ranker_needs(skewed, tmp_path):
    """The recorded file moved and no --corpus-stats: one line names the hash, the recorded settings and the option."""
    from ltrfeat.core.errors import LtrfeatError
    from ltrfeat.serving.scorer import Scorer

    ranker = _moved(skewed, tmp_path)
    needle = "need the corpus statistics they were extracted with (sha256 "
    served = run("serve", "--ranker", ranker, ok=False)
    reranked = run("rerank", ranker, "--run", tmp_path / "none.run", *TEXTS, "--out", tmp_path / "r", ok=False)
    for result in (served, reranked):
        assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
        assert needle in result.output and "k1 0.5, b 0.3" in result.output and "--corpus-stats FILE" in result.output
    assert CorpusStats.load(skewed / "k1.npz").fingerprint()[:12] in served.output
    with pytest.raises(LtrfeatError, match="need the corpus statistics"):
        Scorer.load(ranker)  # what PyTerrier's Features.for_ranker builds
    assert Scorer.load(ranker, corpus_stats=skewed / "k1.npz").extractors[0].k1 == 0.5


def test_extract_refuses_a_setting_against_the_corpus_record(skewed, tmp_path):
    result = run("extract", DATA / "vali.letor", *TEXTS, "--lexical", "bm25", "--fields", "title", "--k1", "1.2",
                 "--corpus-stats", skewed / "k1.npz", "--out", tmp_path / "v.letor", ok=False)  # fmt: skip
    assert result.exit_code == 2 and "k1 1.2 (--k1) differs from the k1 0.5" in result.output
    assert not (tmp_path / "v.letor").exists()


def test_rank_refuses_a_file_extracted_differently(skewed, tmp_path):
    run(
        "extract",
        DATA / "test.letor",
        *TEXTS,
        "--lexical",
        "bm25,lm_dirichlet,coverage",
        "--fields",
        "title",
        "--out",
        tmp_path / "t.letor",
        "--no-progress",
    )  # fmt: skip  (defaults: k1 1.2, its own corpus)
    result = run("rank", skewed / "ranker.txt", tmp_path / "t.letor", "--out", tmp_path / "t.run", ok=False)
    assert result.exit_code == 2
    assert "column bm25_title was extracted with" in result.output and "re-extract" in result.output


def test_a_ranker_without_the_record_loads_with_a_note(skewed, tmp_path):
    from ltrfeat.serving.scorer import Scorer

    for name in ("ranker.txt", "ranker.txt.meta.json"):
        (tmp_path / name).write_bytes((skewed / name).read_bytes())
    meta = json.loads((tmp_path / "ranker.txt.meta.json").read_text())
    del meta["features"]["pipeline"]
    (tmp_path / "ranker.txt.meta.json").write_text(json.dumps(meta))
    with pytest.warns(LtrfeatWarning, match="records no feature settings.*corpus statistics' record: k1 0.5, b 0.3"):
        scorer = Scorer.load(tmp_path / "ranker.txt", corpus_stats=skewed / "k1.npz")
    assert (scorer.extractors[0].k1, scorer.extractors[0].b) == (0.5, 0.3)


# ---------------------------------------------------------------------------- leakage


@pytest.fixture(scope="module")
def clsm(tmp_path_factory):
    """A CLSM trained (one epoch) on data/judged.tsv: every sample query is one of its training queries."""
    path = tmp_path_factory.mktemp("clsm") / "clsm.ltrenc"
    run("train-encoder", DATA / "judged.tsv", "--model", "clsm", "--epochs", "1", "--out", path)
    return path


def test_extract_warns_about_an_encoders_training_queries(clsm, tmp_path):
    args = ["extract", DATA / "test.letor", *TEXTS, "--encoder", f"clsm={clsm}", "--fields", "title", "--no-progress"]
    result = run(*args, "--out", tmp_path / "t.letor")
    assert "warning: encoder clsm was trained on 48 of the 48 queries scored" in result.output
    sidecar = json.loads((tmp_path / "t.letor.features.json").read_text())
    assert sidecar["pipeline"][0]["trained_queries"] == {"seen": 48, "scored": 48}
    strict = run(*args, "--out", tmp_path / "s.letor", "--strict", ok=False)
    assert strict.exit_code == 2 and "encoder clsm was trained on 48 of the queries to score" in strict.output
    assert not (tmp_path / "s.letor").exists() and not (tmp_path / "s.letor.features.json").exists()
    # train-ranker reads the record of its validation file, evaluate that of its test file
    run("extract", DATA / "train.letor", *TEXTS, "--encoder", f"clsm={clsm}", "--fields", "title", "--no-progress",
        "--out", tmp_path / "tr.letor")  # fmt: skip
    trained = run("train-ranker", tmp_path / "tr.letor", "--valid", tmp_path / "t.letor", "--out", tmp_path / "r.txt")
    assert "were scored by an encoder trained on 48 of the file's 48 queries" in trained.output
    evaluated = run("evaluate", tmp_path / "r.txt", tmp_path / "t.letor")
    assert "clsm_title_cos) were scored by an encoder trained on 48" in evaluated.output
    # serving needs no --encoder: the ranker's record names the bundle (checked by its SHA-256)
    from ltrfeat.serving.scorer import Scorer

    scorer = Scorer.load(tmp_path / "r.txt", strict=True)
    assert [ex.name for ex in scorer.extractors] == ["clsm"]
    with pytest.raises(Exception, match="trained on 1 of the queries"):
        scorer.score("fan oil rubbed bronze", [{"docid": "D1", "title": "a fan"}])
    assert scorer.score("a query nobody asked", [{"docid": "D1", "title": "a fan"}]).shape == (1,)


def test_pyterrier_features_warn_or_refuse_an_encoders_training_queries(clsm):
    """PyTerrier's Features has the CLI's --strict: refuse a frame with a query the encoder was trained on."""
    pytest.importorskip("pyterrier")
    from ltrfeat.core.errors import LtrfeatError
    from ltrfeat.features.neural import EncoderExtractor
    from ltrfeat.serving import pyterrier as ltr

    encoder = EncoderExtractor(name="clsm", path=clsm, field="title").fit()
    frame = pd.DataFrame(
        {"qid": ["1", "1", "2"], "query": ["fan oil rubbed bronze"] * 2 + ["nobody asked this"], "docno": list("abc")}
        | {"title": ["a fan", "oil", "bronze"]}
    )
    with pytest.warns(LtrfeatWarning, match="encoder clsm was trained on 1 of the 2 queries scored"):
        lenient = ltr.Features([encoder]).transform(frame)
    with pytest.raises(LtrfeatError, match="encoder clsm was trained on 1 of the queries to score"):
        ltr.Features([encoder], strict=True).transform(frame)
    held_out = frame.iloc[2:]
    np.testing.assert_array_equal(
        ltr.Features([encoder], strict=True).transform(held_out)["features"].iat[0], lenient["features"].iat[2]
    )


def test_the_guard_counts_distinct_queries_by_normalised_text():
    pairs = pd.DataFrame({"qid": ["1", "2"], "query": ["Wiper  Blades", "fan"], "doc": ["a", "b"], "label": [1, 0]})
    record = trained_queries_record(pairs)["trained_queries"]
    assert record["n_queries"] == 2 and len(record["query_hashes"]) == 24  # two 8-byte hashes, base64

    class Extractor:
        name = "clsm"
        trained_queries_ = TrainedQueries.of(type("E", (), {"training": {"trained_queries": record}})())

        def feature_names(self):
            return ["clsm_title_cos"]

    guard = LeakageGuard([Extractor()])
    guard.add(["a", "b", "a", "c"], ["wiper blades", "new query", "wiper blades", "FAN"])
    assert {k: len(v) for k, v in guard.seen.items()} == {"clsm": 2} and len(guard.scored) == 3
    assert "trained on 2 of the 3 queries scored" in guard.messages()[0]
    strict = LeakageGuard([Extractor()], strict=True)
    strict.add(["x"], ["unseen"])
    with pytest.raises(Exception, match="trained on 1 of the queries to score"):
        strict.add(["y"], ["Fan"])


# ---------------------------------------------------------------------------- the map and the corpus


def test_feature_map_pipeline_round_trip_and_select():
    fmap = FeatureMap([Feature(1, "a")]).append(["b", "c"], "lexical", {"kind": "lexical", "k1": 0.5})
    again = FeatureMap.from_json(json.loads(json.dumps(fmap.to_json())))
    assert again.record_of("c") == {"kind": "lexical", "k1": 0.5, "columns": ["b", "c"]}
    assert again.select([0, 2]).pipeline == ({"kind": "lexical", "k1": 0.5, "columns": ["c"]},)
    assert again.select([0]).pipeline == () and "pipeline" not in again.select([0]).to_json()
    assert again == FeatureMap([Feature(1, "a"), Feature(2, "b", "lexical"), Feature(3, "c", "lexical")])


def test_corpus_fingerprint_survives_save_and_load(tmp_path):
    docs = pd.DataFrame({"docid": ["1", "2", "3"], "title": ["red fan", "blue fan", ""]})
    stats = CorpusStats.from_docs(docs, fields=["title"])
    stats.save(tmp_path / "c.npz", settings={"k1": 0.9})
    loaded = CorpusStats.load(tmp_path / "c.npz")
    assert loaded.fingerprint() == stats.fingerprint() and loaded.settings == {"k1": 0.9}
    assert loaded.field_stats["title"].n_with_field == 2
    other = CorpusStats.from_docs(docs.iloc[:2], fields=["title"])
    assert other.fingerprint() != stats.fingerprint()


def test_lucene_length_matches_smallfloat():
    assert [lucene_length(n) for n in (0, 39, 40, 41, 47, 48, 100, 1000)] == [0, 39, 40, 40, 46, 48, 96, 984]


def test_serve_checks_the_interleaved_rankers_pins_too(skewed, tmp_path):
    run("extract", DATA / "vali.letor", *TEXTS, "--lexical", "bm25", "--fields", "title,description",
        "--save-corpus-stats", tmp_path / "other.npz", "--out", tmp_path / "v.letor", "--no-progress")  # fmt: skip
    run("train-ranker", tmp_path / "v.letor", "--out", tmp_path / "b.txt", "--n-estimators", "5")
    args = ["serve", "--ranker", skewed / "ranker.txt", "--corpus-stats", skewed / "k1.npz"]
    result = run(*args, "--interleave", tmp_path / "b.txt", "--event-log", tmp_path / "log", ok=False)
    assert result.exit_code == 2 and "were extracted with" in result.output and "b.txt" in result.output, result.output
    assert not (tmp_path / "log").exists()
