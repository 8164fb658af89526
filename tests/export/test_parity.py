"""Engine parity (issue 31 item 5): ltrfeat's lexical features against the engine's, simulated and real."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.export.parity import parity_report
from ltrfeat.core.analysis import Analyzer
from ltrfeat.features.corpus import CorpusStats
from ltrfeat.features.lexical import LexicalExtractor

DATA = Path(__file__).resolve().parents[2] / "data"
WORDS = [f"w{i}" for i in range(40)]


def _pairs(n_docs=60, n_queries=12, seed=0) -> pd.DataFrame:
    """Pairs over documents of 0-300 tokens (Lucene's norms are exact below 40 only) and queries that
    repeat terms."""
    rng = np.random.default_rng(seed)
    docs = [" ".join(rng.choice(WORDS, size=int(rng.integers(0, 300)))) for _ in range(n_docs)]
    rows = []
    for q in range(n_queries):
        query = " ".join(rng.choice(WORDS[:10], size=int(rng.integers(1, 5))))
        for d in rng.choice(n_docs, size=10, replace=False):
            rows.append({"qid": str(q), "query": query, "docid": f"d{d}", "title": docs[d]})
    return pd.DataFrame(rows)


def test_lucene_norms_make_bm25_equal_to_the_engine():
    pairs = _pairs()
    names = ["bm25_title", "field_len_title", "phrase_match_title", "lm_dirichlet_title"]
    exact = parity_report(names, pairs, analyzer=Analyzer(), settings={"k1": 0.9, "b": 0.4})
    lucene = parity_report(names, pairs, analyzer=Analyzer(), settings={"k1": 0.9, "b": 0.4, "bm25_norms": "lucene"})
    assert exact["features"]["bm25_title"]["differ"] > 0.3  # long fields: the one-byte norm rounds down
    assert lucene["features"]["bm25_title"] == {"differ": 0.0, "max_relative_difference": pytest.approx(0, abs=1e-6)}
    assert lucene["features"]["field_len_title"]["differ"] == 0.0
    assert "lm_dirichlet_title" in lucene["skipped"] and lucene["rows"] == len(pairs)


def test_export_ranker_writes_the_parity_report(tmp_path):
    def run(*args):
        result = CliRunner().invoke(cli, [str(a) for a in args])
        assert result.exit_code == 0, result.output
        return result

    run("extract", "--pairs", DATA / "judged.tsv", "--lexical", "bm25,coverage,field_len", "--bm25-norms", "lucene",
        "--save-corpus-stats", tmp_path / "c.npz", "--out", tmp_path / "j.letor")  # fmt: skip
    run("train-ranker", tmp_path / "j.letor", "--out", tmp_path / "r.txt", "--n-estimators", "10")
    result = run("export-ranker", tmp_path / "r.txt", "--to", "es-ltr", "--out", tmp_path / "m.json",
                 "--corpus-stats", tmp_path / "c.npz", "--parity", DATA / "judged.tsv")  # fmt: skip
    report = json.loads((tmp_path / "m.json.parity.json").read_text())
    assert report["bm25_norms"] == "lucene" and report["rows"] == 3553
    assert report["features"]["bm25_doc"]["differ"] == 0.0 and report["features"]["field_len_doc"]["differ"] == 0.0
    assert "bm25_doc" in result.output and "extracted with exact field lengths" not in result.output


def _lucene_classpath() -> str | None:
    jars = [sorted(Path("/usr/share/java").glob(f"lucene-{n}*.jar")) for n in ("core", "analyzers-common")]
    if shutil.which("javac") is None or not all(jars):
        return None
    return ":".join(str(found[-1]) for found in jars)


def _lucene_run(tmp_path, *args: str):
    """Compile the Lucene oracle (``fixtures/lucene/LuceneOracle.java``), write 200 analysed titles and 30 analysed queries (seed 1) as TSV and
    run it on them with ``args`` (its mode and settings): the pairs, their documents, the analyzer and the program's tab-separated output lines."""
    classpath = _lucene_classpath()
    if classpath is None:
        pytest.skip("needs javac and Lucene's jars (apt-get install liblucene8-java)")
    source = Path(__file__).resolve().parents[1] / "fixtures" / "lucene" / "LuceneOracle.java"
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path), str(source)], check=True)
    pairs = _pairs(n_docs=200, n_queries=30, seed=1)
    docs = pairs.drop_duplicates("docid")[["docid", "title"]]
    queries = pairs.drop_duplicates("qid")
    analyzer = Analyzer()
    for name, ids, texts in (("docs", docs.docid, docs.title), ("queries", queries.qid, queries["query"])):
        with open(tmp_path / f"{name}.tsv", "w") as fh:
            for key, text in zip(ids, texts):
                fh.write(f"{key}\t{' '.join(analyzer.tokens(text))}\n")
    out = subprocess.run(
        ["java", "-cp", f"{classpath}:{tmp_path}", "LuceneOracle", *args, "docs.tsv", "queries.tsv"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return pairs, docs, analyzer, [line.split("\t") for line in out.splitlines()]


@pytest.mark.slow
def test_bm25_lucene_norms_equal_a_real_lucene(tmp_path):
    """Lucene 8 (Debian's liblucene8-java) indexes the analysed texts; its BM25 is the oracle."""
    k1, b = 0.9, 0.4
    pairs, docs, analyzer, rows = _lucene_run(tmp_path, "bm25", str(k1), str(b))
    lucene = {(q, d): float(s) for q, d, s in rows}
    corpus = CorpusStats.from_docs(docs, fields=["title"], analyzer=analyzer)
    ours = {}
    for norms in ("lucene", "exact"):
        ex = LexicalExtractor(features=("bm25",), fields=("title",), corpus=corpus, k1=k1, b=b, bm25_norms=norms)
        ours[norms] = ex.fit(None).transform(pairs)[:, 0]
    expected = np.array([lucene.get((q, d), 0.0) for q, d in zip(pairs.qid, pairs.docid)])
    assert (expected > 0).mean() > 0.5
    np.testing.assert_allclose(ours["lucene"], expected, rtol=1e-5, atol=1e-6)
    assert np.abs(ours["exact"] - expected).max() > 1e-3  # the exact lengths are not what Lucene scores


@pytest.mark.slow
def test_tf_and_terms_sub_fields_equal_a_real_lucene(tmp_path):
    """The similarities of the exported tf and terms sub-fields, run by Lucene 8 on queries with repeated
    terms: the merged clause's boost gives ltrfeat's tf_sum, and 1 per clause its coverage numerator."""
    from ltrfeat.export import plugin_features as pf

    pairs, docs, analyzer, rows = _lucene_run(tmp_path, "termstats")
    queries = pairs.drop_duplicates("qid")
    assert any(len(set(t)) < len(t) for t in map(analyzer.tokens, queries["query"]))  # repeated terms
    lucene = {(q, d): (float(t), float(c)) for q, d, t, c in rows}
    corpus = CorpusStats.from_docs(docs, fields=["title"], analyzer=analyzer)
    ex = LexicalExtractor(features=("tf", "coverage"), fields=("title",), corpus=corpus).fit(None)
    ours = ex.transform(pairs)
    names = ex.feature_names()
    keys = list(zip(pairs.qid, pairs.docid))
    distinct = np.array([pf.term_counts(q, analyzer)[pf.DISTINCT_TERMS] for q in pairs["query"]])
    assert np.mean([k in lucene for k in keys]) > 0.5
    np.testing.assert_allclose(ours[:, names.index("tf_sum_title")], [lucene.get(k, (0, 0))[0] for k in keys])
    np.testing.assert_allclose(
        ours[:, names.index("coverage_title")] * distinct, [lucene.get(k, (0, 0))[1] for k in keys], rtol=1e-6
    )
