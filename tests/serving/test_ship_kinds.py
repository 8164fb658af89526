"""Every ranker kind model selection can choose is served and re-ranked with the scores `rank` gives, through
the CLI: `train-ranker --select --candidates KIND` -> `rank` / `rerank` / the `serve` app; and exported (or
refused) by `export-ranker`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from builders import build_world, candidates_of, dataset_path
from ltrfeat.cli.main import cli
from ltrfeat.core.letor import write_letor
from ltrfeat.core.trec import read_run, write_trec_run

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

KINDS = ["lightgbm", "xgboost", "lightgbm-tuned", "xgboost-tuned", "linear", "boost-best", "best-single"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("ship")
    world = build_world(root, n_queries=16, encoder=False)
    write_letor(root / "train.letor", world["data"])
    world["docs"].to_csv(root / "docs.tsv", sep="\t", index=False)
    world["queries"].to_csv(root / "queries.tsv", sep="\t", index=False)
    return world | {"root": root}


def _cli(*args) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def trained(world):
    """KIND -> (model file, the scores `rank` writes for train.letor)."""
    root, out = world["root"], {}
    for kind in KINDS:
        model = root / f"{kind}.model"
        tune = ["--tune", "grid"] if kind.endswith("-tuned") else []
        engine = ["--engine", "xgboost"] if kind.startswith("xgboost") else []
        printed = _cli(
            "train-ranker", root / "train.letor", "--select", "--candidates", kind, *tune, *engine,
            "--inner-folds", "2", "--n-estimators", "20", "--threads", "1", "--out", model,
        )  # fmt: skip
        assert f"saved the {kind} ranker" in printed
        assert json.loads((root / f"{kind}.model.meta.json").read_text())["kind"] == kind
        _cli("rank", model, root / "train.letor", "--out", root / f"{kind}.scores")
        out[kind] = (model, np.loadtxt(root / f"{kind}.scores"))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_serve_and_rerank_score_as_rank(world, trained, kind):
    from fastapi.testclient import TestClient

    from ltrfeat.serving.app import create_app
    from ltrfeat.serving.scorer import Scorer

    model, ranked = trained[kind]
    root, data = world["root"], world["data"]
    scorer = Scorer.load(model, corpus_stats=world["corpus"])
    qtext = dict(zip(world["queries"].qid, world["queries"]["query"]))
    with TestClient(create_app(scorer), base_url="http://localhost") as client:
        for qid in ("q1", "q6"):
            rows, cands = candidates_of(world, qid)
            body = client.post("/score", json={"query": qtext[qid], "candidates": cands}).json()
            np.testing.assert_allclose(body["scores"], ranked[rows], rtol=0, atol=1e-9)
    run = root / f"{kind}.in.run"
    write_trec_run(run, data.qid, data.docid, np.zeros(len(data.qid)))
    _cli(
        "rerank", model, "--run", run, "--queries", root / "queries.tsv", "--docs", root / "docs.tsv",
        "--corpus-stats", world["corpus"], "--out", root / f"{kind}.out.run",
    )  # fmt: skip
    reranked = read_run(root / f"{kind}.out.run")
    expected = dict(zip(zip(data.qid, data.docid), ranked))
    got = np.array([expected[(q, d)] for q, d in zip(reranked.qid, reranked.docid)])
    np.testing.assert_allclose(reranked.score.to_numpy(), got, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_export_every_kind_or_refuse_it(world, trained, kind, tmp_path):
    from ltrfeat.export.ltr_plugin import load_export

    model, ranked = trained[kind]
    result = CliRunner().invoke(cli, ["export-ranker", str(model), "--to", "es-ltr", "--out", str(tmp_path / "m.json")])
    if kind == "boost-best":
        assert result.exit_code == 2
        assert "per-query z-score" in result.output and "--deployable es-ltr" in result.output
        assert not (tmp_path / "m.json").exists()
        return
    assert result.exit_code == 0, result.output
    exported = load_export(tmp_path / "m.json")
    data = world["data"]
    X = data.X[:, [data.feature_map.column_of(n) for n in exported.features]]
    scores = exported.predict(X)
    np.testing.assert_allclose(scores, ranked, rtol=1e-5, atol=1e-5)
    if kind in ("linear", "best-single"):
        assert exported.manifest["model_type"] == "model/linear"


def test_deployable_keeps_the_candidates_the_engine_runs(world, tmp_path):
    root = world["root"]
    printed = _cli(
        "train-ranker", root / "train.letor", "--select", "--candidates", "boost-best,best-single",
        "--deployable", "opensearch-ltr", "--inner-folds", "2", "--n-estimators", "10", "--out", tmp_path / "m.txt",
    )  # fmt: skip
    assert "boost-best" not in printed and "saved the best-single ranker" in printed
    result = CliRunner().invoke(
        cli,
        ["train-ranker", str(root / "train.letor"), "--select", "--candidates", "boost-best", "--deployable",
         "es-ltr", "--out", str(tmp_path / "n.txt")],
    )  # fmt: skip
    assert result.exit_code == 2 and "none of the candidates boost-best can run in es-ltr" in result.output


def test_old_lambdamart_files_still_load(world, tmp_path):
    """Files written before kinds took the candidate names say kind lambdamart, or nothing."""
    from ltrfeat.rankers.lambdamart import LambdaMART, meta_path
    from ltrfeat.rankers.models import load_ranker
    from ltrfeat.rankers.registry import kind_of

    world["model"].save(tmp_path / "old.txt")  # LambdaMART.save writes no kind
    meta = json.loads(meta_path(tmp_path / "old.txt").read_text())
    assert "kind" not in meta
    for stored in (None, "lambdamart"):
        if stored:
            meta_path(tmp_path / "old.txt").write_text(json.dumps(meta | {"kind": stored}))
        model = load_ranker(tmp_path / "old.txt")
        assert isinstance(model, LambdaMART) and kind_of(model).name == "lightgbm"
        np.testing.assert_array_equal(model.predict(world["data"]), world["model"].predict(world["data"]))


@pytest.mark.slow
def test_home_depot_serve_scores_as_rank_for_every_kind(tmp_path):
    """Real queries and product titles (600 Home Depot queries): each kind's served scores equal `rank`'s, and the
    contributions `/explain` and `explain-ranker` give (plus the bias) add up to them to 1e-5."""
    import pandas as pd
    from fastapi.testclient import TestClient

    from ltrfeat.core.letor import read_letor
    from ltrfeat.serving.app import create_app
    from ltrfeat.serving.scorer import Scorer

    raw = pd.read_csv(dataset_path("home_depot", "raw", "train.csv"), encoding="latin-1")
    raw = raw[raw.search_term.isin(raw.search_term.drop_duplicates().iloc[:600])]
    qid, _ = pd.factorize(raw.search_term)
    pairs = pd.DataFrame(
        {"qid": qid + 1, "query": raw.search_term, "docid": "p" + raw.product_uid.astype(str)}
        | {"doc": raw.product_title, "relevance": raw.relevance}
    )
    pairs.to_csv(tmp_path / "hd.tsv", sep="\t", index=False)
    _cli(
        "extract", "--pairs", tmp_path / "hd.tsv", "--columns", "label=relevance", "--label-map", "linear:1:3:7",
        "--conflicts", "first", "--lexical", "bm25,tf,coverage,field_len,phrase_match,query_len",
        "--bm25-norms", "lucene", "--save-corpus-stats", tmp_path / "hd.npz", "--out", tmp_path / "hd.letor",
        "--no-progress",
    )  # fmt: skip
    data = read_letor(tmp_path / "hd.letor")
    titles = dict(zip(pairs.docid, pairs.doc))
    queries = dict(zip(pairs.qid.astype(str), pairs["query"]))
    for kind in KINDS:
        model = tmp_path / f"{kind}.model"
        tune = ["--tune", "grid"] if kind.endswith("-tuned") else []
        engine = ["--engine", "xgboost"] if kind.startswith("xgboost") else []
        _cli(
            "train-ranker", tmp_path / "hd.letor", "--select", "--candidates", kind, *tune, *engine,
            "--inner-folds", "2", "--n-estimators", "30", "--threads", "1", "--out", model,
        )  # fmt: skip
        _cli("rank", model, tmp_path / "hd.letor", "--out", tmp_path / f"{kind}.scores")
        ranked = np.loadtxt(tmp_path / f"{kind}.scores")
        with TestClient(
            create_app(Scorer.load(model, corpus_stats=tmp_path / "hd.npz")), base_url="http://localhost"
        ) as client:
            for q in list(dict.fromkeys(data.qid))[::30]:
                rows = np.flatnonzero(data.qid == q)
                cands = [{"docid": d, "doc": titles[d]} for d in data.docid[rows]]
                body = client.post("/score", json={"query": queries[str(q)], "candidates": cands}).json()
                np.testing.assert_allclose(body["scores"], ranked[rows], rtol=0, atol=1e-9, err_msg=kind)
                why = client.post("/explain", json={"query": queries[str(q)], "candidates": cands}).json()
                _assert_explained(why["documents"], dict(zip(data.docid[rows], ranked[rows])), kind)
        printed = _cli("explain-ranker", model, tmp_path / "hd.letor", "--top", "1000", "--json")
        for query in json.loads(printed)["queries"]:
            rows = np.flatnonzero(data.qid == query["qid"])
            assert len(query["top"]) == len(rows)
            _assert_explained(query["top"], dict(zip(data.docid[rows], ranked[rows])), kind)


def _assert_explained(documents: list[dict], ranked: dict, kind: str) -> None:
    """Each document's contributions plus bias are its score, and that score is the one `rank` wrote, to 1e-5."""
    for doc in documents:
        total = sum(c["contribution"] for c in doc["contributions"]) + doc["bias"]
        assert abs(total - doc["score"]) < 1e-5 and abs(doc["score"] - ranked[doc["docid"]]) < 1e-5, (kind, doc)
