"""LambdaMART on click labels with display positions: each engine's own unbiased lambdarank (LightGBM Dataset
``position``, XGBoost ``lambdarank_unbiased``), checked against judgments, against the engines called directly,
through the CLI, and on bad input."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.letor import letor_summary, position_path_of, read_letor, write_letor
from ltrfeat.core.metrics import evaluate_queries
from ltrfeat.rankers.lambdamart import LambdaMART, meta_path

ENGINES = ["lightgbm", "xgboost"]
SHOWN = 10  # results per shown list


def _judged(rng, n_queries: int):
    """Features, graded relevance (0..3, from features 1 and 2) and a logging ranker that mostly follows
    feature 3, which says nothing about relevance."""
    X = rng.normal(size=(n_queries, SHOWN, 4)).astype(np.float32)
    grade = np.digitize(X[..., 0] + 0.5 * X[..., 1], [-0.5, 0.5, 1.5])
    logging_score = X[..., 2] + 0.3 * X[..., 0]
    return X, grade, logging_score


def click_world(*, n_queries=300, sessions=4, exponent=1.5, seed=0):
    """Click logs of a position-biased world: every session shows one query's results in the logging ranker's
    (slightly shuffled) order; a result at position r is examined with probability r^-exponent and clicked when
    examined with a probability rising with its grade. Returns (clicks with positions, judged test queries)."""
    rng = np.random.default_rng(seed)
    X, grade, logging_score = _judged(rng, n_queries)
    rows, clicks, qids = [], [], []
    attract = 0.05 + 0.95 * (2.0**grade - 1) / 7
    examine = np.arange(1, SHOWN + 1, dtype=float) ** -exponent
    for q in range(n_queries):
        for s in range(sessions):
            order = np.argsort(-(logging_score[q] + rng.normal(scale=0.5, size=SHOWN)))
            clicks.append((rng.random(SHOWN) < examine * attract[q][order]).astype(float))
            rows.append(X[q][order])
            qids += [f"q{q}s{s}"] * SHOWN
    train = RankingSet(
        np.array(qids, dtype=object),
        np.concatenate(clicks),
        np.concatenate(rows),
        FeatureMap.dense(4),
        position=np.tile(np.arange(1, SHOWN + 1), n_queries * sessions),
    )
    Xt, gt, _ = _judged(rng, 200)
    test = RankingSet(
        np.repeat([f"t{q}" for q in range(200)], SHOWN), gt.reshape(-1), Xt.reshape(-1, 4), train.feature_map
    )
    return train, test


def _ndcg(model, test) -> float:
    return float(evaluate_queries(test.qid, test.label, model.predict(test), ["ndcg@10"])["ndcg@10"].mean())


def _model(engine, **kw):
    return LambdaMART(
        **{"engine": engine, "n_estimators": 120, "num_leaves": 7, "learning_rate": 0.1, "n_jobs": 1} | kw
    )


@pytest.fixture(scope="module")
def world():
    return click_world()


@pytest.mark.parametrize("engine", ENGINES)
def test_unbiased_lambdarank_ranks_judged_queries_better_than_the_naive_one(world, engine):
    train, test = world
    naive = _model(engine).fit(RankingSet(train.qid, train.label, train.X, train.feature_map))
    unbiased = _model(engine).fit(train)
    assert "position_bias" not in naive.metadata_
    assert unbiased.metadata_["position_bias"]["positions"] == {"min": 1, "max": SHOWN}
    # measured (NDCG@10 on the judged queries, seeds 0, 1, 2): lightgbm .881 -> .970, .904 -> .965, .907 -> .956;
    # xgboost .881 -> .927, .904 -> .933, .915 -> .933
    assert _ndcg(unbiased, test) > _ndcg(naive, test) + 0.02


def _small_clicks(seed=0, n=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n * SHOWN, 3)).astype(np.float32)
    label = (rng.random(n * SHOWN) < 0.8 / np.tile(np.arange(1, SHOWN + 1), n)).astype(float)
    position = np.concatenate([rng.permutation(SHOWN) + 1 for _ in range(n)])  # rows not in position order
    qid = np.repeat([f"s{i}" for i in range(n)], SHOWN)
    return RankingSet(qid, label, X, FeatureMap.dense(3), position=position)


def test_lightgbm_gets_the_positions_in_its_dataset(monkeypatch):
    data = _small_clicks()
    seen = []
    real = lgb.Dataset.__init__

    def spy(self, *args, position=None, **kwargs):
        seen.append(None if position is None else np.asarray(position).copy())
        real(self, *args, position=position, **kwargs)

    monkeypatch.setattr(lgb.Dataset, "__init__", spy)
    model = _model("lightgbm", n_estimators=10).fit(data)
    given = [p for p in seen if p is not None]  # the training Dataset (parameter checks and validation have none)
    assert len(given) == 1
    np.testing.assert_array_equal(given[0], data.position)
    # the model is exactly what lightgbm.train makes from the same Dataset with positions
    monkeypatch.setattr(lgb.Dataset, "__init__", real)
    direct = lgb.train(
        model.engine_params_,
        lgb.Dataset(data.X, label=data.label, group=data.group_sizes(), position=data.position),
        num_boost_round=10,
    )
    np.testing.assert_allclose(model.predict(data), direct.predict(data.X), rtol=1e-6)
    blind = _model("lightgbm", n_estimators=10).fit(RankingSet(data.qid, data.label, data.X, data.feature_map))
    assert not np.allclose(model.predict(data), blind.predict(data))


def test_xgboost_gets_rows_in_position_order_and_lambdarank_unbiased():
    data = _small_clicks()
    model = _model("xgboost", n_estimators=10).fit(data)
    assert model.engine_params_["lambdarank_unbiased"] is True
    bounds = data.query_boundaries()
    order = np.lexsort((data.position, np.repeat(bounds[:-1], np.diff(bounds))))
    direct = xgb.train(
        model.engine_params_,
        xgb.DMatrix(data.X[order], label=data.label[order], group=data.group_sizes()),
        num_boost_round=10,
    )
    np.testing.assert_allclose(model.predict(data), direct.predict(xgb.DMatrix(data.X)), rtol=1e-6)
    # the engine learns from the positions: the same rows in their given (unsorted) order train another model
    unsorted = xgb.train(
        model.engine_params_, xgb.DMatrix(data.X, label=data.label, group=data.group_sizes()), num_boost_round=10
    )
    assert not np.allclose(model.predict(data), unsorted.predict(xgb.DMatrix(data.X)))


@pytest.mark.parametrize("engine", ENGINES)
def test_arrays_api_takes_positions_like_a_ranking_set(engine):
    data = _small_clicks()
    a = _model(engine, n_estimators=10).fit(data)
    b = _model(engine, n_estimators=10).fit(data.X, data.label, group=data.group_sizes(), position=data.position)
    np.testing.assert_allclose(a.predict(data.X), b.predict(data.X))
    assert b.metadata_["position_bias"] == a.metadata_["position_bias"]


@pytest.mark.parametrize(
    ("position", "message"),
    [
        (lambda p: np.where(np.arange(len(p)) == 7, 0, p), "train position 0 at row 8 is below 1"),
        (lambda p: np.where(np.arange(len(p)) == 3, 2.5, p), "position must hold integers; row 4 has 2.5"),
        (lambda p: np.where(np.arange(len(p)) == 3, np.nan, p), "position must hold integers; row 4 has nan"),
        (lambda p: p[:-1], "has shape"),
    ],
)
def test_bad_positions_in_the_api(position, message):
    data = _small_clicks()
    with pytest.raises(LtrfeatError, match=message.replace("(", r"\(")):
        _model("lightgbm", n_estimators=5).fit(
            data.X, data.label, group=data.group_sizes(), position=position(data.position.astype(float))
        )


def test_xgboost_refuses_a_list_that_is_not_positions_1_to_n():
    data = _small_clicks()
    position = data.position.copy()
    position[SHOWN + 2] = 11  # query s1 now skips a position
    bad = RankingSet(data.qid, data.label, data.X, data.feature_map, position=position)
    with pytest.raises(LtrfeatError, match=r"train query 's1' has positions .*needs positions 1\.\.10 once each"):
        _model("xgboost", n_estimators=5).fit(bad)
    _model("lightgbm", n_estimators=5).fit(bad)  # LightGBM takes any positions


def test_positions_round_trip_through_letor_files(tmp_path):
    data = _small_clicks()
    path = tmp_path / "clicks.letor"
    write_letor(path, data)
    assert position_path_of(path).read_text().split("\n")[:3] == [str(p) for p in data.position[:3]]
    back = read_letor(path)
    np.testing.assert_array_equal(back.position, data.position)
    assert letor_summary(path)["positioned"] is True
    write_letor(path, RankingSet(data.qid, data.label, data.X, data.feature_map))  # no positions: the old file goes
    assert not position_path_of(path).exists() and read_letor(path).position is None


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


FAST = ["--n-estimators", "10", "--num-leaves", "7", "--learning-rate", "0.1", "--threads", "1"]


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_trains_what_the_api_trains(tmp_path, engine):
    data = _small_clicks()
    path = tmp_path / "clicks.letor"
    write_letor(path, data)
    out = tmp_path / "model.txt"
    res = run("train-ranker", path, "--engine", engine, "--out", out, *FAST)
    assert res.exit_code == 0, res.output
    assert "position bias: corrected on" in res.output
    api = LambdaMART(engine=engine, n_estimators=10, num_leaves=7, learning_rate=0.1, n_jobs=1).fit(read_letor(path))
    np.testing.assert_allclose(LambdaMART.load(out).predict(data), api.predict(data))
    meta = json.loads(meta_path(out).read_text())
    assert meta["position_bias"] == json.loads(json.dumps(api.metadata_["position_bias"]))


def test_cli_positions_option_and_the_naive_ranker(tmp_path):
    data = _small_clicks()
    path, positions = tmp_path / "clicks.letor", tmp_path / "shown.txt"
    write_letor(path, RankingSet(data.qid, data.label, data.X, data.feature_map))
    positions.write_text("".join(f"{p}\n" for p in data.position))
    out, naive = tmp_path / "m.txt", tmp_path / "naive.txt"
    assert run("train-ranker", path, "--positions", positions, "--out", out, *FAST).exit_code == 0
    assert json.loads(meta_path(out).read_text())["position_bias"]["rows"] == len(data)
    res = run("train-ranker", path, "--positions", positions, "--position-bias", "ignore", "--out", naive, *FAST)
    assert res.exit_code == 0 and "warning: " in res.output and "uncorrected" in res.output
    meta = json.loads(meta_path(naive).read_text())
    assert meta["position_bias"] == {"correction": "none (--position-bias ignore)", "positions_given": True}
    blind = LambdaMART(n_estimators=10, num_leaves=7, learning_rate=0.1, n_jobs=1).fit(read_letor(path))
    np.testing.assert_allclose(LambdaMART.load(naive).predict(data), blind.predict(data))


@pytest.mark.parametrize(
    ("positions", "args", "message"),
    [
        ("1\n2\n0\n", [], "shown.txt:3: position 0 is not positive; positions are 1-based"),
        ("1\n2\n", [], "shown.txt: 2 positions for 400 rows; write one position per data row"),
        ("1\n2\nthree\n", [], "shown.txt:3: position 'three' is not an integer"),
        (None, ["--position-bias", "ignore"], "--position-bias ignore needs positions"),
        ("ok", ["--select"], "--select cannot train on clicks with positions"),
        ("ok", ["--engine", "xgboost", "--positions-dup"], "needs positions 1..10 once each"),
    ],
)
def test_cli_bad_positions_exit_2_with_one_line_and_no_model(tmp_path, positions, args, message):
    data = _small_clicks()
    path, shown = tmp_path / "clicks.letor", tmp_path / "shown.txt"
    write_letor(path, RankingSet(data.qid, data.label, data.X, data.feature_map))
    position = data.position.copy()
    if "--positions-dup" in args:
        args = [a for a in args if a != "--positions-dup"]
        position[0] = position[1]
    if positions == "ok":
        positions = "".join(f"{p}\n" for p in position)
    extra = [] if positions is None else ["--positions", shown]
    if positions is not None:
        shown.write_text(positions)
    out = tmp_path / "m.txt"
    res = run("train-ranker", path, *extra, *args, "--out", out, *FAST)
    assert res.exit_code == 2, res.output
    assert message in res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and res.output.count("\n") <= 2, res.output
    assert not out.exists() and not meta_path(out).exists()
