"""``ltrfeat train-ranker / evaluate / rank`` on generated files, plus the real-data checks."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from builders import dataset_path
from ltrfeat.core.letor import read_letor, write_letor
from ltrfeat.rankers.lambdamart import LambdaMART, meta_path
from ltrfeat.core.metrics import evaluate_queries
from builders import synthetic

NAMES = ["bm25_title", "tfidf", "noise_a", "noise_b", "len_title", "clsm_title_cos"]
FAST = [
    "--n-estimators",
    "30",
    "--num-leaves",
    "7",
    "--learning-rate",
    "0.1",
    "--early-stopping-rounds",
    "5",
    "--threads",
    "1",
]


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result


@pytest.fixture
def files(tmp_path):
    paths = {}
    for seed, part in enumerate(["train", "valid", "test"]):
        paths[part] = tmp_path / f"{part}.letor"
        write_letor(paths[part], synthetic(seed=seed, n_features=6, names=NAMES))
    return paths


@pytest.fixture
def trained(files, tmp_path):
    model = tmp_path / "model.txt"
    result = run(
        "train-ranker",
        files["train"],
        "--valid",
        files["valid"],
        "--features",
        "1-2,clsm_title_cos",
        "--out",
        model,
        *FAST,
    )
    assert result.exit_code == 0, result.output
    return model, result


def test_train_ranker_prints_summary_and_writes_model(trained):
    model, result = trained
    out = result.output
    assert "trained lightgbm LambdaMART on 1200 rows, 60 queries, 3 features" in out
    assert "early stopping: best iteration" in out and "valid ndcg@10 = " in out
    assert "feature importance (total gain):" in out and "bm25_title" in out
    meta = json.loads(meta_path(model).read_text())
    assert [f["name"] for f in meta["features"]["features"]] == ["bm25_title", "tfidf", "clsm_title_cos"]
    assert meta["missing_values"]["read_nan_policy"] == "keep"
    assert meta["training"]["train_file"].endswith("train.letor")


def test_evaluate_text_json_and_per_query(trained, files, tmp_path):
    model, _ = trained
    text = run("evaluate", model, files["test"], "--metrics", "ndcg@1,3,10,recall@3,map")
    assert text.exit_code == 0, text.output
    assert "conventions: NDCG gain 2^rel-1" in text.output and "ndcg@10" in text.output
    per_query = tmp_path / "pq.tsv"
    res = run(
        "evaluate",
        model,
        files["test"],
        "--metrics",
        "ndcg@10,top3recall@3,mrr",
        "--json",
        "--per-query",
        per_query,
        "--no-relevant",
        "zero",
        "--gain",
        "linear",
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["conventions"]["no_relevant"] == "zero" and summary["conventions"]["gain"] == "linear"
    data = read_letor(files["test"])
    expected = evaluate_queries(
        data.qid, data.label, LambdaMART.load(model).predict(data), "ndcg@10", gain="linear", no_relevant="zero"
    )
    assert summary["metrics"]["ndcg@10"] == pytest.approx(expected["ndcg@10"].mean(), abs=1e-12)
    assert per_query.read_text().startswith("# conventions: NDCG gain rel (linear)")
    table = pd.read_csv(per_query, sep="\t", comment="#", dtype={"qid": str})
    assert len(table) == 60 and list(table.columns) == ["qid", "ndcg@10", "top3recall@3", "mrr", "n_docs", "n_relevant"]
    np.testing.assert_allclose(table["ndcg@10"], expected["ndcg@10"], atol=1e-12)


def test_rank_scores_and_trec_run(trained, files, tmp_path):
    model, _ = trained
    scores_path = tmp_path / "s.txt"
    res = run("rank", model, files["test"], "--out", scores_path)
    assert res.exit_code == 0, res.output
    data = read_letor(files["test"])
    expected = LambdaMART.load(model).predict(data)
    np.testing.assert_array_equal(np.loadtxt(scores_path), expected)
    trec = tmp_path / "run.trec"
    res = run("rank", model, files["test"], "--out", trec, "--format", "trec", "--run-name", "lm")
    assert res.exit_code == 0, res.output
    lines = [line.split() for line in trec.read_text().splitlines()]
    assert len(lines) == len(data)
    first = [row for row in lines if row[0] == data.qid[0]]
    assert [int(r[3]) for r in first] == list(range(1, 21))
    assert [float(r[4]) for r in first] == sorted((float(r[4]) for r in first), reverse=True)
    assert all(r[1] == "Q0" and r[5] == "lm" for r in lines)


def test_rank_trec_without_docids_fails_cleanly(trained, files, tmp_path):
    model, _ = trained
    data = read_letor(files["test"])
    bare = tmp_path / "bare.letor"
    write_letor(bare, type(data)(data.qid, data.label, data.X, data.feature_map))
    out = tmp_path / "run.trec"
    res = run("rank", model, bare, "--out", out, "--format", "trec")
    assert res.exit_code == 2
    assert "bare.letor: row 1 has no docid" in res.output and not out.exists()


def test_feature_mismatch_is_a_clear_error(trained, files, tmp_path):
    model, _ = trained
    data = read_letor(files["test"])
    other = tmp_path / "other.letor"
    write_letor(other, data.select_features("1-5"))  # lacks clsm_title_cos
    out = tmp_path / "s.txt"
    res = run("rank", model, other, "--out", out)
    assert res.exit_code == 2 and not out.exists()
    assert res.output.startswith(f"error: {other}: the data lacks 1 of the model's 3 features (6:clsm_title_cos)")


def test_bad_inputs_exit_2_without_output(files, tmp_path):
    model = tmp_path / "m.txt"
    data = read_letor(files["train"])
    data.label[4] = 1.5
    frac = tmp_path / "frac.letor"
    write_letor(frac, data)
    res = run("train-ranker", frac, "--out", model, *FAST)
    assert res.exit_code == 2 and "row 5 has 1.5" in res.output and "label mapping" in res.output
    assert not model.exists() and not meta_path(model).exists()

    res = run("train-ranker", files["train"], "--out", model, "--features", "1,nope", *FAST)
    assert res.exit_code == 2 and "no feature named 'nope'" in res.output

    res = run("train-ranker", files["train"], "--out", model, "--param", "oops", *FAST)
    assert res.exit_code == 2 and "KEY=VALUE" in res.output

    res = run("evaluate", tmp_path / "absent.txt", files["test"])
    assert res.exit_code == 2 and "file not found" in res.output


def test_bad_metric_name(trained, files):
    model, _ = trained
    res = run("evaluate", model, files["test"], "--metrics", "ndcg@3,auc")
    assert res.exit_code == 2 and "unknown metric 'auc'" in res.output


def test_non_contiguous_train_file_is_regrouped_with_notice(files, tmp_path):
    data = read_letor(files["train"])
    rows = np.random.default_rng(0).permutation(len(data))
    shuffled = tmp_path / "shuffled.letor"
    # write_letor needs contiguous chunks: write the lines ourselves from a contiguous copy
    write_letor(shuffled, data)
    lines = shuffled.read_text().splitlines(keepends=True)
    shuffled.write_text("".join(lines[i] for i in rows))
    res = run("train-ranker", shuffled, "--out", tmp_path / "m.txt", *FAST)
    assert res.exit_code == 0, res.output
    assert "notice:" in res.output and "regrouped" in res.output
    # rank keeps input row order, so it refuses the file unless --regroup is given
    res = run("rank", tmp_path / "m.txt", shuffled, "--out", tmp_path / "s.txt")
    assert res.exit_code == 2 and "--regroup" in res.output
    assert run("rank", tmp_path / "m.txt", shuffled, "--out", tmp_path / "s.txt", "--regroup").exit_code == 0


def test_xgboost_engine_and_extra_params(files, tmp_path):
    model = tmp_path / "model.json"
    res = run(
        "train-ranker",
        files["train"],
        "--valid",
        files["valid"],
        "--engine",
        "xgboost",
        "--out",
        model,
        "--param",
        "min_child_weight=2",
        "--param",
        "lambdarank_pair_method=mean",
        *FAST,
    )
    assert res.exit_code == 0, res.output
    meta = json.loads(meta_path(model).read_text())
    assert meta["engine_params"]["min_child_weight"] == 2
    assert meta["engine_params"]["lambdarank_pair_method"] == "mean"
    res = run("evaluate", model, files["test"], "--json")
    assert res.exit_code == 0 and json.loads(res.output)["metrics"]["ndcg@10"] > 0.6


def test_help_shows_examples():
    for command in ("train-ranker", "evaluate", "rank"):
        res = run(command, "--help")
        assert res.exit_code == 0 and "Example" in res.output and f"ltrfeat {command} " in res.output


def test_cli_vs_lightgbm_api_parity_on_the_lambdarank_example(tmp_path):
    """LightGBM's examples/lambdarank: our CLI and LightGBM's own API, same parameters, same predictions."""
    raw = dataset_path("lightgbm_lambdarank", "raw")
    model = tmp_path / "model.txt"
    res = run(
        "train-ranker",
        raw / "rank.train",
        "--valid",
        raw / "rank.test",
        "--out",
        model,
        "--n-estimators",
        "100",
        "--threads",
        "1",
    )
    assert res.exit_code == 0, res.output
    assert "rank.test: feature ids 53 never occur; read as 0" in res.output  # an id only rank.train has
    scores = tmp_path / "scores.txt"
    assert run("rank", model, raw / "rank.test", "--out", scores).exit_code == 0

    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [10],
        "learning_rate": 0.05,
        "num_leaves": 31,
        "seed": 0,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": 1,
        "verbosity": -1,
    }
    assert json.loads(meta_path(model).read_text())["engine_params"] == params
    # The same float32 matrices (LightGBM's own text parser would keep float64 values, which can
    # move a split threshold by a rounding step), LightGBM's column j = feature id j.
    train, test = read_letor(raw / "rank.train"), read_letor(raw / "rank.test")
    width = train.feature_map.max_id + 1

    def matrix(data):
        X = np.zeros((len(data), width), dtype=np.float32)
        X[:, data.feature_map.ids] = data.X
        return X

    dtrain = lgb.Dataset(matrix(train), train.label, group=train.group_sizes())
    dvalid = lgb.Dataset(matrix(test), test.label, group=test.group_sizes(), reference=dtrain)
    booster = lgb.train(
        params,
        dtrain,
        num_boost_round=100,
        valid_sets=[dvalid],
        callbacks=[lgb.early_stopping(50, first_metric_only=True, verbose=False)],
    )
    expected = booster.predict(matrix(test), num_iteration=booster.best_iteration)
    np.testing.assert_array_equal(np.loadtxt(scores), expected)


MQ2008_S = ["S1", "S2", "S3", "S4", "S5"]


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_mq2008_five_fold_ndcg10(engine):
    """LETOR rotation (Fold1 = train S1-S3, valid S4, test S5); queries without relevant docs count 0."""
    raw = dataset_path("letor4_mq2008", "raw")
    parts = {s: read_letor(raw / f"{s}.txt") for s in MQ2008_S}

    def concat(names):
        sets = [parts[n] for n in names]
        return type(sets[0])(
            np.concatenate([s.qid for s in sets]),
            np.concatenate([s.label for s in sets]),
            np.vstack([s.X for s in sets]),
            sets[0].feature_map,
        )

    per_fold = []
    for fold in range(5):
        names = [MQ2008_S[(fold + i) % 5] for i in range(5)]
        model = LambdaMART(engine=engine, n_jobs=1).fit(concat(names[:3]), parts[names[3]])
        test = parts[names[4]]
        df = evaluate_queries(test.qid, test.label, model.predict(test), "ndcg@10", no_relevant="zero")
        per_fold.append(float(df["ndcg@10"].mean()))
    print(engine, [round(v, 4) for v in per_fold], round(float(np.mean(per_fold)), 4))
    assert np.mean(per_fold) >= 0.47


def test_evaluate_takes_the_expected_value_over_tied_scores_and_names_the_flag(trained, files, tmp_path):
    import dataclasses

    model, _ = trained
    data = read_letor(files["test"])
    # every document of a query gets the same features, so the model ties them all; sorted by label, best first
    order = np.lexsort((-data.label, pd.factorize(data.qid)[0]))
    tied = dataclasses.replace(
        data.take(order), X=np.repeat(data.take(order).X[:1], len(order), axis=0), docid=None, comment=None
    )
    write_letor(tmp_path / "tied.letor", tied)

    def ndcg(*args):
        res = run("evaluate", model, tmp_path / "tied.letor", "--metrics", "ndcg@1", "--json", *args)
        assert res.exit_code == 0, res.output
        return json.loads(res.output)

    expected = ndcg()
    assert expected["conventions"]["ties"] == "expected"
    assert ndcg("--ties", "input")["metrics"]["ndcg@1"] == 1.0  # what input order made of a file sorted by label
    assert ndcg("--ties", "pessimistic")["metrics"]["ndcg@1"] < expected["metrics"]["ndcg@1"] < 1.0
    res = run("evaluate", model, tmp_path / "tied.letor", "--ties", "docid")
    assert res.exit_code == 2 and "error: --ties docid orders tied scores by docid" in res.output
    assert "tied.letor has rows without one" in res.output and "--ties expected" in res.output
