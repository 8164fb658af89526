"""TREC runs and qrels: reading (hostile files), writing (ties, round trip), evaluation against
ir-measures / pytrec_eval, and the CLI story: a run re-ranked with `ltrfeat rerank` and evaluated."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.errors import LtrfeatError, TextTableError
from ltrfeat.core.trec import evaluate_run, read_qrels, read_run, summarise_run, write_trec_run

ir_measures = pytest.importorskip("ir_measures")
pytrec_eval = pytest.importorskip("pytrec_eval")

DATA = Path(__file__).resolve().parents[2] / "data"
MEASURES = {"ndcg@5": "nDCG@5", "ndcg@10": "nDCG@10", "recall@10": "R@10", "p@5": "P@5", "map": "AP", "mrr": "RR"}


def random_collection(tmp_path, seed: int, *, grades=4):
    """qrels and a run with many tied scores, judged documents the run misses, unjudged retrieved
    documents, a run-only query and a qrels-only query."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(40):
        docs = [f"d{j}" for j in rng.choice(300, 30, replace=False)]
        for d in docs[:20] + [f"x{j}" for j in range(rng.integers(0, 4))]:
            qrels.append(f"q{q} 0 {d} {int(rng.integers(0, grades))}")
        retrieved = docs[5:] if q % 3 else docs
        if q % 5 == 0:  # short runs: fewer documents than the cutoffs
            retrieved = retrieved[: int(rng.integers(1, 8))]
        for d, s in zip(retrieved, rng.integers(0, 6, len(retrieved)) / 2):
            run.append((f"q{q}", d, float(s)))
    run.append(("run-only", "d1", 1.0))
    qrels.append("qrels-only 0 d1 2")
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    write_trec_run(tmp_path / "run", *zip(*run), tag="rnd")
    return tmp_path / "qrels", tmp_path / "run"


def oracle(qrels_path, run_path) -> dict:
    measures = [ir_measures.parse_measure(m) for m in MEASURES.values()]
    per = {}
    for m in ir_measures.iter_calc(
        measures, ir_measures.read_trec_qrels(str(qrels_path)), ir_measures.read_trec_run(str(run_path))
    ):
        per.setdefault(str(m.measure), {})[m.query_id] = m.value
    agg = ir_measures.calc_aggregate(
        measures, ir_measures.read_trec_qrels(str(qrels_path)), ir_measures.read_trec_run(str(run_path))
    )
    return {"per": per, "agg": {str(k): v for k, v in agg.items()}}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_evaluate_run_agrees_with_ir_measures_per_query_and_in_the_mean(tmp_path, seed):
    qrels_path, run_path = random_collection(tmp_path, seed)
    want = oracle(qrels_path, run_path)
    ours = evaluate_run(read_qrels(qrels_path), read_run(run_path), list(MEASURES))  # missing queries -> 0
    assert "run-only" not in ours.index and ours.attrs["skipped"]["run_queries_without_qrels"] == 1
    for name, measure in MEASURES.items():
        theirs = pd.Series(want["per"][measure])
        assert set(theirs.index) == set(ours.index)
        np.testing.assert_allclose(ours[name].to_numpy(float), theirs.reindex(ours.index).to_numpy(), atol=1e-12)
        assert summarise_run(ours)["metrics"][name] == pytest.approx(want["agg"][measure], abs=1e-12)


def test_skip_mode_agrees_with_pytrec_eval(tmp_path):
    qrels_path, run_path = random_collection(tmp_path, 5)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    qrel_dict = {}
    for q, d, g in qrels[["qid", "docid", "label"]].itertuples(index=False):
        qrel_dict.setdefault(q, {})[d] = int(g)
    run_dict = {}
    for q, d, s in run[["qid", "docid", "score"]].itertuples(index=False):
        run_dict.setdefault(q, {})[d] = float(s)
    got = pytrec_eval.RelevanceEvaluator(qrel_dict, {"ndcg_cut_10", "map", "recip_rank", "P_5"}).evaluate(run_dict)
    ours = evaluate_run(qrels, run, "ndcg@10,map,mrr,p@5", missing_queries="skip")
    assert set(ours.index) == set(got) and "qrels-only" not in ours.index
    for name, key in (("ndcg@10", "ndcg_cut_10"), ("map", "map"), ("mrr", "recip_rank"), ("p@5", "P_5")):
        np.testing.assert_allclose(ours[name].to_numpy(float), [got[q][key] for q in ours.index], atol=1e-12)


def test_negative_grades_and_relevance_threshold_match_ir_measures(tmp_path):
    (tmp_path / "qrels").write_text("q1 0 a -2\nq1 0 b 1\nq1 0 c 2\nq1 0 z 2\nq2 0 a 0\n")
    write_trec_run(tmp_path / "run", ["q1"] * 3 + ["q2"], ["a", "b", "c", "a"], [3.0, 2.0, 1.0, 1.0])
    qrels, run = read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run")
    ours = evaluate_run(qrels, run, "ndcg@10,map,recall@10")
    want = oracle(tmp_path / "qrels", tmp_path / "run")["per"]
    assert ours.loc["q1", "ndcg@10"] == pytest.approx(want["nDCG@10"]["q1"])
    assert ours.loc["q1", "map"] == pytest.approx(want["AP"]["q1"])
    assert ours.loc["q2", "ndcg@10"] == 0.0  # no relevant document: 0, in the mean
    strict = evaluate_run(qrels, run, "recall@10", relevance_threshold=2)
    theirs = next(
        ir_measures.iter_calc(
            [ir_measures.parse_measure("R(rel=2)@10")],
            ir_measures.read_trec_qrels(str(tmp_path / "qrels")),
            ir_measures.read_trec_run(str(tmp_path / "run")),
        )
    )
    assert strict.loc["q1", "recall@10"] == pytest.approx(theirs.value) == 0.5


# ---- writing --------------------------------------------------------------------------------------


def test_write_trec_run_order_ties_depth_and_exact_scores(tmp_path):
    path = tmp_path / "r.run"
    scores = [0.1, 0.5, 0.5, 1 / 3, 0.5]
    n = write_trec_run(path, ["b", "a", "b", "b", "b"], ["d1", "x", "d2", "d3", "d10"], scores, "tag")
    rows = [line.split() for line in path.read_text().splitlines()]
    assert n == 5 and [r[0] for r in rows] == ["b", "b", "b", "b", "a"]  # queries in order of first appearance
    assert [r[2] for r in rows[:4]] == ["d2", "d10", "d3", "d1"]  # ties by docid descending, as trec_eval
    assert [int(r[3]) for r in rows] == [1, 2, 3, 4, 1] and {r[1] for r in rows} == {"Q0"}
    back = read_run(path)
    assert back.loc[back["docid"] == "d3", "score"].iat[0] == 1 / 3  # 17 significant digits round-trip
    write_trec_run(path, ["b", "b", "b"], ["d1", "d2", "d3"], [1.0, 2.0, 3.0], depth=2)
    assert [line.split()[2] for line in path.read_text().splitlines()] == ["d3", "d2"]


@pytest.mark.parametrize(
    "qid,docid,scores,tag,problem",
    [
        (["q 1"], ["d"], [1.0], "t", "whitespace"),
        (["q"], [""], [1.0], "t", "empty or holds whitespace"),
        (["q"], ["d"], [float("nan")], "t", "not finite"),
        (["q", "q"], ["d", "d"], [1.0, 2.0], "t", "twice"),
        (["q"], ["d"], [1.0], "my run", "tag"),
        (["q"], ["d", "e"], [1.0], "t", "differ in length"),
    ],
)
def test_write_trec_run_refuses_what_a_run_cannot_hold(tmp_path, qid, docid, scores, tag, problem):
    with pytest.raises(LtrfeatError, match=problem):
        write_trec_run(tmp_path / "r.run", qid, docid, scores, tag)
    assert not (tmp_path / "r.run").exists()


# ---- hostile files --------------------------------------------------------------------------------

GOOD = "q1 Q0 d1 1 2.5 t\n"


@pytest.mark.parametrize(
    "text,line,problem",
    [
        (GOOD + "q1 Q0 d2 2 1.5\n", 2, "expected 6 fields, got 5"),
        (GOOD + "\n\nq1 Q0 d2 2 1.5 t extra\n", 4, "expected 6 fields, got 7"),
        (GOOD + "q1 Q0 d2 2 high t\n", 2, "score 'high' is not a finite number"),
        (GOOD + "\nq1 Q0 d2 2 nan t\n", 3, "score 'nan'"),
        (GOOD + "q1 Q0 d2 2 inf t\n", 2, "score 'inf'"),
        (GOOD + "q1 Q0 d2 1.5 1 t\n", 2, "rank '1.5' is not an integer"),
        (GOOD + "q2 Q0 d1 1 1 t\nq1 Q0 d1 3 1 t\n", 3, "lists document 'd1' twice"),
        ("", None, "file is empty"),
        ("\n  \n", None, "file is empty"),
    ],
)
def test_hostile_runs_fail_with_file_and_line(tmp_path, text, line, problem):
    path = tmp_path / "bad.run"
    path.write_text(text)
    with pytest.raises(TextTableError, match=problem) as err:
        read_run(path)
    assert err.value.line == line and str(err.value).startswith(str(path))


def test_run_tabs_spaces_blank_lines_gzip_and_bad_bytes(tmp_path):
    path = tmp_path / "r.run.gz"
    path.write_bytes(gzip.compress(b"\nq1\tQ0\td1\t1\t2.5\tt\n\n q1  Q0 d2 2 -1e3 t \r\n"))
    run = read_run(path)
    assert run["docid"].tolist() == ["d1", "d2"] and run["score"].tolist() == [2.5, -1000.0]
    assert run.index.tolist() == [2, 4]
    bad = tmp_path / "bad.run"
    bad.write_bytes(b"q1 Q0 d1 1 1 t\nq1 Q0 d\xff 2 1 t\n")
    with pytest.raises(TextTableError, match="UTF-8") as err:
        read_run(bad)
    assert err.value.line == 2
    with pytest.raises(TextTableError, match="file not found"):
        read_run(tmp_path / "absent.run")


@pytest.mark.parametrize(
    "text,line,problem",
    [
        ("q1 0 d1 1\nq1 0 d2 x\n", 2, "not a number"),
        ("q1 0 d1 1\nq1 0 d2 1.5\n", 2, "not an integer"),
        ("q1 0 d1 1\nq1 0 d2 1 9\n", 2, "expected 4 fields"),
        ("q1 0 d1 1\nq1 0 d1 2\n", 2, "different grades"),
    ],
)
def test_hostile_qrels_fail_with_file_and_line(tmp_path, text, line, problem):
    path = tmp_path / "qrels"
    path.write_text(text)
    with pytest.raises(TextTableError, match=problem) as err:
        read_qrels(path)
    assert err.value.line == line


# ---- CLI: evaluate a run, re-rank a run -----------------------------------------------------------


def invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if not isinstance(result.exception, (SystemExit, type(None))):
        raise result.exception
    return result


def test_cli_evaluate_run_matches_library_and_refuses_mixed_modes(tmp_path):
    qrels_path, run_path = random_collection(tmp_path, 3)
    res = invoke(
        "evaluate",
        "--qrels",
        qrels_path,
        "--run",
        run_path,
        "--metrics",
        "ndcg@10,map",
        "--json",
        "--per-query",
        tmp_path / "pq.tsv",
    )
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    want = oracle(qrels_path, run_path)["agg"]
    assert got["metrics"]["ndcg@10"] == pytest.approx(want["nDCG@10"]) and got["metrics"]["map"] == pytest.approx(
        want["AP"]
    )
    assert "docid, descending" in got["conventions"]["description"]
    assert got["skipped"] == {"run_queries_without_qrels": 1, "qrels_queries_without_run": 0}
    assert (tmp_path / "pq.tsv").read_text().startswith("# conventions: trec_eval conventions")
    text = invoke("evaluate", "--qrels", qrels_path, "--run", run_path, "--missing-queries", "skip").output
    assert "1 qrels queries without a run" in text and "ndcg@10" in text
    assert invoke("evaluate", "--qrels", qrels_path).exit_code == 2
    assert invoke("evaluate", "model.txt", "test.letor", "--qrels", qrels_path, "--run", run_path).exit_code == 2


def test_rerank_a_bm25_run_then_evaluate(tmp_path):
    """The re-ranking story of docs/rankers.md: a first-stage BM25 run, re-ranked by a LambdaMART over lexical features
    (computed from the texts), written as a TREC run and evaluated with trec_eval's conventions."""
    from ltrfeat.features.retrieval import BM25Retriever
    from ltrfeat.core.text import read_docs, read_judged_pairs, read_queries

    out = tmp_path
    res = invoke(
        "extract",
        DATA / "train.letor",
        "--queries",
        DATA / "queries.tsv",
        "--docs",
        DATA / "docs.tsv",
        "--fields",
        "title,description",
        "--lexical",
        "bm25,coverage,lm_dirichlet",
        "--save-corpus-stats",
        out / "corpus.npz",
        "--out",
        out / "train.lex.letor",
    )
    assert res.exit_code == 0, res.output
    res = invoke(
        "train-ranker",
        out / "train.lex.letor",
        "--out",
        out / "ranker.txt",
        "--n-estimators",
        "40",
        "--num-leaves",
        "7",
        "--threads",
        "1",
    )
    assert res.exit_code == 0, res.output
    # first stage: BM25 top 30 of the test queries (a run as Anserini or Pyserini would write it)
    test_qids = {line.split()[1][4:] for line in (DATA / "test.letor").read_text().splitlines()}
    queries = read_queries(DATA / "queries.tsv")
    queries = queries[queries["qid"].isin(test_qids)]
    hits = BM25Retriever(fields=("title",)).fit(read_docs(DATA / "docs.tsv")).retrieve(queries, k=30)
    write_trec_run(out / "bm25.run", hits["qid"], hits["docid"], hits["score"], "bm25")
    pairs = read_judged_pairs(DATA / "judged.tsv")
    (out / "qrels").write_text(
        "".join(f"{q} 0 {d} {int(g)}\n" for q, d, g in pairs[["qid", "docid", "label"]].itertuples(index=False))
    )
    res = invoke(
        "rerank",
        out / "ranker.txt",
        "--run",
        out / "bm25.run",
        "--queries",
        DATA / "queries.tsv",
        "--docs",
        DATA / "docs.tsv",
        "--corpus-stats",
        out / "corpus.npz",
        "--depth",
        "20",
        "--out",
        out / "reranked.run",
        "--run-name",
        "lambdamart",
    )
    assert res.exit_code == 0, res.output
    before, after = read_run(out / "bm25.run"), read_run(out / "reranked.run")
    assert len(after) == len(before) and set(after["tag"]) == {"lambdamart"}
    key = ["qid", "docid"]
    assert after[key].sort_values(key).values.tolist() == before[key].sort_values(key).values.tolist()
    deep = after.merge(before, on=key, suffixes=("", "_bm25"))
    assert (deep.loc[deep["rank_bm25"] > 20, "rank"] > 20).all()  # below --depth: run order kept, after the top 20
    scores = {}
    for name in ("bm25.run", "reranked.run"):
        res = invoke("evaluate", "--qrels", out / "qrels", "--run", out / name, "--metrics", "ndcg@10", "--json")
        assert res.exit_code == 0, res.output
        scores[name] = json.loads(res.output)["metrics"]["ndcg@10"]
        assert scores[name] == pytest.approx(oracle_ndcg10(out / "qrels", out / name))
    assert scores["reranked.run"] > scores["bm25.run"]


def oracle_ndcg10(qrels_path, run_path) -> float:
    measure = ir_measures.parse_measure("nDCG@10")
    return ir_measures.calc_aggregate(
        [measure], ir_measures.read_trec_qrels(str(qrels_path)), ir_measures.read_trec_run(str(run_path))
    )[measure]


def test_rerank_names_texts_it_lacks(tmp_path):
    from ltrfeat.core.trec import write_trec_run as write

    write(tmp_path / "r.run", ["1", "1"], ["D00001", "NOPE"], [2.0, 1.0])
    res = invoke(
        "extract",
        DATA / "train.letor",
        "--queries",
        DATA / "queries.tsv",
        "--docs",
        DATA / "docs.tsv",
        "--fields",
        "title",
        "--lexical",
        "bm25",
        "--save-corpus-stats",
        tmp_path / "c.npz",
        "--out",
        tmp_path / "t.letor",
    )
    assert res.exit_code == 0, res.output
    assert (
        invoke(
            "train-ranker", tmp_path / "t.letor", "--out", tmp_path / "m.txt", "--n-estimators", "5", "--threads", "1"
        ).exit_code
        == 0
    )
    res = invoke(
        "rerank",
        tmp_path / "m.txt",
        "--run",
        tmp_path / "r.run",
        "--queries",
        DATA / "queries.tsv",
        "--docs",
        DATA / "docs.tsv",
        "--corpus-stats",
        tmp_path / "c.npz",
        "--out",
        tmp_path / "o.run",
    )
    assert res.exit_code == 2 and "1 documents of the run have no text" in res.output and "NOPE" in res.output
    assert not (tmp_path / "o.run").exists()
