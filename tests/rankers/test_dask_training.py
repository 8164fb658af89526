"""LambdaMART training and ablation runs on a 2-worker LocalCluster."""

import contextlib
import dataclasses
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

distributed = pytest.importorskip("distributed")

from ltrfeat.cli.main import cli  # noqa: E402
from ltrfeat.core import dask_cluster  # noqa: E402
from ltrfeat.core.dataset import FeatureMap, RankingSet  # noqa: E402
from ltrfeat.core.letor import read_letor, write_letor  # noqa: E402
from ltrfeat.experiments.folds import Fold  # noqa: E402
from ltrfeat.experiments.feature_sets import plan_feature_sets  # noqa: E402
from ltrfeat.experiments.ablation import run_ablation  # noqa: E402
from ltrfeat.rankers.dask_training import (  # noqa: E402
    DaskExecutor,
    _lightgbm_ndcg_curve,
    best_iteration,
    fit_dask,
    query_partitions,
)
from ltrfeat.rankers.lambdamart import LambdaMART  # noqa: E402
from ltrfeat.core.metrics import evaluate_queries  # noqa: E402
from builders import dataset_path  # noqa: E402


def ranking(n_queries=120, seed=0, n_features=6, prefix="q"):
    """Queries of very different sizes whose labels follow a noisy function of the features."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 3, 8, 20, 60], size=n_queries)
    qid = np.repeat([f"{prefix}{i}" for i in range(n_queries)], sizes)
    X = rng.random((len(qid), n_features)).astype(np.float32)
    score = 2 * X[:, 0] + X[:, 1] - X[:, 2] + 0.3 * rng.standard_normal(len(qid))
    label = np.digitize(score, [0.8, 1.6, 2.2]).astype(float)
    return RankingSet(qid, label, X, FeatureMap.from_ids(list(range(1, n_features + 1))))


# ---------------------------------------------------------------------------- pure helpers


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=60), st.integers(1, 12))
def test_query_partitions_cover_the_rows_and_cut_only_between_queries(groups, n_parts):
    parts = query_partitions(groups, n_parts)
    ends = np.concatenate([[0], np.cumsum(groups)])
    assert 1 <= len(parts) <= min(n_parts, len(groups))
    assert parts[0][0] == 0 and parts[-1][1] == ends[-1] and parts[-1][3] == len(groups)
    for (a, b, g0, g1), nxt in zip(parts, parts[1:] + [None]):
        assert g0 < g1 and ends[g0] == a and ends[g1] == b  # whole queries, never empty
        if nxt is not None:
            assert nxt[0] == b and nxt[2] == g1


def test_query_partitions_balance_rows():
    parts = query_partitions([10] * 100, 4)
    assert [b - a for a, b, _, _ in parts] == [250, 250, 250, 250]


def test_ndcg_curve_and_best_iteration_follow_lightgbm():
    train, valid = ranking(seed=1), ranking(seed=2)
    valid.label[valid.qid == valid.qid[0]] = 0  # a query without relevant documents counts 1
    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [5],
        "verbosity": -1,
        "num_threads": 1,
        "learning_rate": 0.3,
        "seed": 0,
        "deterministic": True,
        "force_row_wise": True,
    }

    def data(d, reference=None):
        return lgb.Dataset(d.X, d.label, group=d.group_sizes(), reference=reference, free_raw_data=False)

    history = {}
    dtrain = data(train)
    full = lgb.train(params, dtrain, 60, valid_sets=[data(valid, dtrain)], callbacks=[lgb.record_evaluation(history)])
    curve = _lightgbm_ndcg_curve(full, (valid.X, valid.label, valid.group_sizes()), 60, 5, None)
    np.testing.assert_allclose(curve, history["valid_0"]["ndcg@5"], rtol=0, atol=1e-12)
    for patience in (1, 3, 10):
        stopped = lgb.train(
            params,
            dtrain,
            60,
            valid_sets=[data(valid, dtrain)],
            callbacks=[lgb.early_stopping(patience, verbose=False)],
        )
        assert best_iteration(curve, patience) == stopped.best_iteration
    assert best_iteration(curve, None) == 60
    gains = [float(2**i - 1) for i in range(4)]
    np.testing.assert_allclose(
        _lightgbm_ndcg_curve(full, (valid.X, valid.label, valid.group_sizes()), 3, 5, gains), curve[:3]
    )


# ---------------------------------------------------------------------------- training on the cluster

FAST = dict(n_estimators=40, learning_rate=0.1, num_leaves=7, early_stopping_rounds=10)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_dask_ranker_saves_the_local_format_and_agrees_with_local(tmp_path, dask_client, engine):
    train, valid, test = ranking(300, seed=3), ranking(60, seed=4, prefix="v"), ranking(80, seed=5, prefix="t")
    local = LambdaMART(engine=engine, **FAST).fit(train, valid)
    remote = fit_dask(LambdaMART(engine=engine, **FAST), train, valid, client=dask_client)
    info = remote.metadata_["training"]["distributed"]
    assert info["workers"] == 2 and info["partitions"] == 2
    assert 1 <= remote.best_iteration_ <= FAST["n_estimators"]
    remote.save(tmp_path / "model")
    loaded = LambdaMART.load(tmp_path / "model")
    assert loaded.metadata_["format"] == local.metadata_["format"] and loaded.feature_map_ == local.feature_map_
    a, b = local.predict(test), loaded.predict(test)
    np.testing.assert_array_equal(b, remote.predict(test))
    assert spearmanr(a, b).statistic >= 0.9
    ndcg = [evaluate_queries(test.qid, test.label, s, ["ndcg@10"])["ndcg@10"].mean() for s in (a, b)]
    assert abs(ndcg[0] - ndcg[1]) < 0.03


def folds_and_sets():
    data = ranking(90, seed=6)
    bounds = data.query_boundaries()
    take = lambda q0, q1: data.take(np.arange(bounds[q0], bounds[q1]))  # noqa: E731
    folds = [
        Fold("Fold1", take(0, 50), take(50, 60), take(60, 90)),
        Fold("Fold2", take(30, 80), take(80, 90), take(0, 30)),
    ]
    sets = plan_feature_sets(data.feature_map, base="1-4", neural={"g": "5-6"})
    return folds, sets


def test_ablation_on_the_cluster_equals_the_local_run(dask_client):
    folds, sets = folds_and_sets()
    kw = dict(
        seeds=(0, 1),
        ranker_params={"n_estimators": 15, "num_leaves": 7, "params": {"bagging_fraction": 0.8, "bagging_freq": 1}},
        progress=False,
    )
    local = run_ablation(folds, sets, **kw)
    seen = []
    remote = run_ablation(folds, sets, executor=DaskExecutor(dask_client), on_run=seen.append, **kw)
    assert remote.per_query.equals(local.per_query)
    assert [r["best_iteration"] for r in remote.runs] == [r["best_iteration"] for r in local.runs]
    assert [(r["fold"], r["feature_set"], r["seed"]) for r in seen] == [
        (r["fold"], r["feature_set"], r["seed"]) for r in local.runs
    ]
    assert remote.importance == local.importance and remote.seed_effect == local.seed_effect


def test_dask_executor_ships_each_argument_once_and_keeps_order(dask_client):
    big = np.arange(10)
    out = list(DaskExecutor(dask_client).map(lambda a, k: int(a.sum()) * k, [big, big, big], [1, 2, 3]))
    assert out == [45, 90, 135]


def test_dask_executor_reports_a_failing_task(dask_client):
    def fail(x):
        raise ValueError(f"bad {x}")

    with pytest.raises(ValueError, match="bad 1"):
        list(DaskExecutor(dask_client, retries=0).map(fail, [1, 2]))


# ---------------------------------------------------------------------------- CLI


def test_cli_train_ranker_and_ablate_with_dask(tmp_path, dask_client, monkeypatch):
    monkeypatch.setattr(dask_cluster, "dask_client", lambda spec: contextlib.nullcontext(dask_client))
    write_letor(tmp_path / "train.letor", ranking(200, seed=7))
    write_letor(tmp_path / "valid.letor", ranking(40, seed=8, prefix="v"))
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "train-ranker",
            str(tmp_path / "train.letor"),
            "--valid",
            str(tmp_path / "valid.letor"),
            "--n-estimators",
            "20",
            "--dask",
            "local:2",
            "--out",
            str(tmp_path / "m.txt"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert LambdaMART.load(tmp_path / "m.txt").metadata_["training"]["distributed"]["workers"] == 2
    folds, _ = folds_and_sets()
    for fold in folds:
        for part in ("train", "valid", "test"):
            write_letor(tmp_path / "folds" / fold.name / f"{part}.letor", getattr(fold, part))
    result = runner.invoke(
        cli,
        [
            "ablate",
            "--folds",
            str(tmp_path / "folds"),
            "--base",
            "1-4",
            "--neural",
            "g=5-6",
            "--quick",
            "--dask",
            "local:2",
            "--report",
            str(tmp_path / "report"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report" / "report.md").exists()
    assert "--dask local:2" in runner.invoke(cli, ["train-ranker", "--help"]).output
    assert "--dask SCHEDULER|local[:N]" in runner.invoke(cli, ["ablate", "--help"]).output  # examples: docs/ablate.md
    assert "--dask local:2" in (Path(__file__).resolve().parents[2] / "docs" / "ablate.md").read_text()


# ---------------------------------------------------------------------------- real data


@pytest.mark.slow
def test_mq2008_fold1_dask_lightgbm_matches_local(dask_client):
    raw = dataset_path("letor4_mq2008", "raw")
    parts = [read_letor(raw / f"S{i}.txt") for i in (1, 2, 3)]
    train = dataclasses.replace(
        parts[0],
        qid=np.concatenate([p.qid for p in parts]),
        label=np.concatenate([p.label for p in parts]),
        X=np.concatenate([p.X for p in parts]),
        comment=np.concatenate([p.comment for p in parts]),
        docid=None,
    )
    valid, test = read_letor(raw / "S4.txt"), read_letor(raw / "S5.txt")
    # a fixed number of trees: with early stopping on the small S4, which of two nearly equal
    # validation scores wins moves the comparison more than the training does
    params = dict(n_estimators=100, learning_rate=0.05, n_jobs=1, early_stopping_rounds=0)
    local = LambdaMART(**params).fit(train, valid)
    remote = fit_dask(LambdaMART(**params), train, valid, client=dask_client)
    a, b = local.predict(test), remote.predict(test)
    assert spearmanr(a, b).statistic >= 0.95
    ndcg = [evaluate_queries(test.qid, test.label, s, ["ndcg@10"])["ndcg@10"].mean() for s in (a, b)]
    assert abs(ndcg[0] - ndcg[1]) <= 0.01, ndcg
