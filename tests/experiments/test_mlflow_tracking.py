"""--mlflow on ablate, train-ranker and train-encoder, read back offline from a local SQLite store with MLflow's
own client: parameters, metrics (MLflow-legal names), artifacts, pins, and a registered ranker that scores."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from builders import make_pairs, planted_folds, write_folds
from ltrfeat.cli.main import cli
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.tracking import mlflow_name

mlflow = pytest.importorskip("mlflow")
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
FAST = ["--n-estimators", "20", "--num-leaves", "7", "--learning-rate", "0.1"]


def run(*args, cwd=None):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One SQLite store for the module (creating its tables takes seconds) and MLflow's client on it; run from
    its directory, where MLflow puts the artifacts (./mlruns)."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        yield uri, mlflow.MlflowClient(tracking_uri=uri)
    assert (root / "mlruns").is_dir()


def _only_run(client, command):
    experiment = client.get_experiment_by_name(f"ltrfeat {command}")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    return runs[0]


def _artifacts(client, run_id, folder=None) -> set[str]:
    return {a.path for a in client.list_artifacts(run_id, folder)}


def test_mlflow_names_map_what_mlflow_refuses():
    assert mlflow_name("ndcg@10") == "ndcg_at_10"
    assert mlflow_name("lex+clsm/fold_Fold1/top3recall@3") == "lex_plus_clsm/fold_Fold1/top3recall_at_3"
    assert mlflow_name("a:b,c") == "a_b_c"


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """The sample data's train/vali/test with lexical columns (pins recorded), and the test file extracted with
    another BM25 k1 (same column names, other pins)."""
    out = tmp_path_factory.mktemp("lex")
    common = ["--queries", DATA / "queries.tsv", "--docs", DATA / "docs.tsv", "--fields", "title"]
    common += ["--lexical", "bm25,coverage,query_len"]
    run("extract", DATA / "train.letor", *common, "--save-corpus-stats", out / "c.npz", "--out", out / "train.letor")
    for part in ("vali", "test"):
        run("extract", DATA / f"{part}.letor", *common, "--corpus-stats", out / "c.npz", "--out", out / f"{part}.letor")
    k1 = ["--k1", "2.0", "--save-corpus-stats", out / "k1.npz", "--out", out / "k1.letor"]
    run("extract", DATA / "test.letor", *common, *k1)
    return out


def test_train_ranker_select_is_tracked_and_registered_as_a_model_that_checks_pins(store, extracted, tmp_path):
    uri, client = store
    model = tmp_path / "ranker.txt"
    args = ["train-ranker", extracted / "train.letor", "--valid", extracted / "vali.letor", "--select", *FAST]
    result = run(*args, "--out", model, "--mlflow", uri, "--mlflow-register", "shop-ranker")
    assert "mlflow: run" in result.stderr
    record = _only_run(client, "train-ranker")
    meta = json.loads(Path(f"{model}.meta.json").read_text())
    assert record.data.params["kind"] == meta["kind"]
    assert record.data.params["ranker.num_leaves"] == "7" and record.data.params["select.inner_folds"] == "3"
    assert {f"inner_cv/{c}" for c in meta["selection"]["stats"]} <= set(record.data.metrics)
    assert record.data.tags["model_sha256"] == meta["model_sha256"]
    pins = {k: json.loads(v) for k, v in record.data.tags.items() if k.startswith("pin.")}
    assert pins and all(p["kind"] == "lexical" for p in pins.values())
    assert _artifacts(client, record.info.run_id, "model_files") == {
        "model_files/ranker.txt",
        "model_files/ranker.txt.meta.json",
    }
    assert "metric_names.json" in _artifacts(client, record.info.run_id)

    loaded = mlflow.pyfunc.load_model("models:/shop-ranker/1")
    scores = loaded.predict(pd.DataFrame({"letor": [str(extracted / "test.letor")]}))
    run("rank", model, extracted / "test.letor", "--out", tmp_path / "s")
    np.testing.assert_allclose(scores, np.loadtxt(tmp_path / "s"), rtol=0, atol=1e-12)
    with pytest.raises(LtrfeatError, match="k1"):  # same column names, made with another BM25 k1: refused
        loaded.predict(pd.DataFrame({"letor": [str(extracted / "k1.letor")]}))


def test_register_needs_a_tracking_uri(tmp_path):
    result = CliRunner().invoke(
        cli, ["train-ranker", "x.letor", "--out", str(tmp_path / "m"), "--mlflow-register", "a"]
    )
    assert result.exit_code == 2 and "--mlflow-register needs --mlflow" in result.output


def test_ablate_logs_metrics_per_fold_and_pooled_and_the_report(store, tmp_path):
    uri, client = store
    write_folds(tmp_path / "folds", planted_folds(n_folds=3, queries_per_fold=20), ext=".letor", sidecars=True)
    report = tmp_path / "report"
    args = ["ablate", "--folds", tmp_path / "folds", "--base", "1-3", "--neural", "clsm=clsm_title_cos"]
    run(*args, "--seeds", "0", "--resamples", "200", "--no-select", *FAST, "--report", report, "--mlflow", uri)
    record = _only_run(client, "ablate")
    summary = json.loads((report / "report.json").read_text())
    assert record.data.params["engine"] == "lightgbm" and record.data.params["seeds"] == "[0]"
    metrics = record.data.metrics
    pooled = {(r["feature_set"], r["metric"]): r["mean"] for r in summary["results"]}
    for (fs, metric), mean in pooled.items():
        if mean == mean:
            assert metrics[mlflow_name(f"{fs}/{metric}")] == pytest.approx(mean)
    names = json.loads(
        Path(client.download_artifacts(record.info.run_id, "metric_names.json", str(tmp_path))).read_text()
    )
    assert names["mlflow_to_ltrfeat"]["lexical_plus_clsm/ndcg_at_10"] == "lexical+clsm/ndcg@10"
    folds = [k for k in metrics if "/fold_" in k and k.startswith("lexical/") and k.endswith("ndcg_at_10")]
    assert len(folds) == 3
    history = client.get_metric_history(record.info.run_id, folds[0])
    assert len(history) == 1
    artifacts = _artifacts(client, record.info.run_id, "report")
    assert {"report/report.html", "report/report.json", "report/timings.json"} <= artifacts
    assert _artifacts(client, record.info.run_id, "report/plots")
    fold = planted_folds(n_folds=3, queries_per_fold=20)[0]
    assert record.data.tags["data_hash.Fold1.test"] == fold.test.content_hash()


def test_train_encoder_logs_settings_epochs_and_the_bundle(store, tmp_path):
    uri, client = store
    pairs = tmp_path / "pairs.tsv"
    make_pairs().to_csv(pairs, sep="\t", index=False)
    out = tmp_path / "m.ltrenc"
    fast = ["--epochs", "2", "--batch-size", "32", "--threads", "1", "--val-fraction", "0.25"]
    run("train-encoder", pairs, "--model", "dssm", *fast, "--out", out, "--mlflow", uri)
    record = _only_run(client, "train-encoder")
    assert record.data.params["model"] == "dssm" and record.data.params["epochs"] == "2"
    assert "val_ndcg_at_10" in record.data.metrics
    assert len(client.get_metric_history(record.info.run_id, "train_loss")) == 2
    import hashlib

    assert record.data.tags["bundle_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert _artifacts(client, record.info.run_id, "encoder") == {"encoder/m.ltrenc"}


@pytest.mark.parametrize("command", ["train-ranker", "ablate", "train-encoder"])
def test_a_bad_tracking_uri_stops_the_command_before_its_work(extracted, tmp_path, command):
    args = {
        "train-ranker": ["train-ranker", extracted / "train.letor", "--out", tmp_path / "m.txt"],
        "ablate": ["ablate", "--folds", tmp_path, "--base", "1-3", "--report", tmp_path / "r"],
        "train-encoder": ["train-encoder", DATA / "judged.tsv", "--out", tmp_path / "e.ltrenc"],
    }[command]
    result = CliRunner().invoke(cli, [str(a) for a in args] + ["--mlflow", "nosuch://x"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: --mlflow nosuch://x: cannot open the tracking store")
    assert len(result.stderr.strip().splitlines()) == 1 and sorted(p.name for p in tmp_path.iterdir()) == []


def test_without_mlflow_installed_the_option_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)
    result = CliRunner().invoke(cli, ["train-ranker", "x.letor", "--out", str(tmp_path / "m"), "--mlflow"])
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == "error: --mlflow needs MLflow, which is not installed; pip install 'ltrfeat[mlflow]'"
    )
