"""RankerConfig: LambdaMART's settings as one validated object, how the estimator and train-ranker use it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.base import clone

import ltrfeat
from builders import synthetic
from ltrfeat.cli.main import cli
from ltrfeat.cli._options import ranker_config
from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.letor import write_letor
from ltrfeat.rankers.config import RankerConfig
from ltrfeat.rankers.lambdamart import LambdaMART, meta_path

TUNED = RankerConfig(
    engine="xgboost", n_estimators=20, learning_rate=0.1, num_leaves=7, early_stopping_rounds=None, n_jobs=1
)


def test_defaults_and_names_are_the_estimators():
    params = LambdaMART().get_params()
    assert RankerConfig().to_dict() == {k: v for k, v in params.items() if k != "features"}
    assert set(RankerConfig.names()) | {"features"} == set(params)
    assert ltrfeat.RankerConfig is RankerConfig


def test_round_trip_through_json():
    config = RankerConfig(engine="xgboost", eval_at=5, seed=3, n_jobs=2, params={"min_child_weight": 2.0})
    values = config.to_dict()
    assert RankerConfig.from_dict(json.loads(json.dumps(values))) == config
    values["params"]["min_child_weight"] = 9.0  # to_dict copies
    assert config.params == {"min_child_weight": 2.0}


def test_unknown_keys_are_refused_with_the_known_ones():
    with pytest.raises(LtrfeatError) as err:
        RankerConfig.from_dict({"n_estimators": 10, "verbose": True}, source="ranker.toml")
    message = str(err.value)
    assert message.startswith("ranker.toml: LambdaMART has no setting 'verbose'; use one of engine, n_estimators,")
    assert "\n" not in message and message.endswith("n_jobs, params")


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"engine": "catboost"}, "engine must be one of lightgbm, xgboost, got 'catboost'"),
        ({"n_estimators": 0}, "n_estimators must be an integer >= 1"),
        ({"eval_at": 2.5}, "eval_at must be an integer >= 1"),
        ({"num_leaves": 1}, "num_leaves must be an integer >= 2"),
        ({"learning_rate": 0.0}, "learning_rate must be a number > 0"),
        ({"learning_rate": float("inf")}, "learning_rate must be a number > 0"),
        ({"early_stopping_rounds": -1}, "0 or None disables early stopping"),
        ({"seed": True}, "seed must be an integer"),
        ({"n_jobs": -2}, "None, 0 or -1 use all cores"),
        ({"params": [("min_data_in_leaf", 5)]}, r"params must be a mapping or None, got \[\('min_data_in_leaf', 5\)\]"),
    ],
)
def test_bad_settings_are_refused_when_made(bad, match):
    with pytest.raises(ParameterError, match=match):
        RankerConfig(**bad)


def test_numpy_integers_and_disabled_early_stopping_are_accepted():
    config = RankerConfig(n_estimators=np.int64(5), early_stopping_rounds=0, n_jobs=-1)
    assert config.n_estimators == 5 and config.early_stopping_rounds == 0


def test_the_estimator_from_a_config_follows_sklearn_conventions():
    model = LambdaMART.from_config(TUNED, features="1-3")
    assert model.get_params() == TUNED.to_dict() | {"features": "1-3"}
    assert clone(model).get_params() == model.get_params()
    assert model.set_params(num_leaves=15).num_leaves == 15
    model.fit(synthetic(seed=0))
    assert model.feature_map_.names == ["f1", "f2", "f3"]
    with pytest.raises(LtrfeatError, match="num_leaves must be an integer >= 2"):
        LambdaMART.from_config(TUNED).set_params(num_leaves=1).fit(synthetic(seed=0))


def test_lightgbm_determinism_is_an_engine_parameter():
    data = synthetic(seed=0)
    plain = LambdaMART.from_config(RankerConfig(n_estimators=5, n_jobs=1)).fit(data)
    assert plain.engine_params_["deterministic"] is True and plain.engine_params_["force_row_wise"] is True
    loose = LambdaMART.from_config(RankerConfig(n_estimators=5, n_jobs=1, params={"deterministic": False})).fit(data)
    assert loose.engine_params_["deterministic"] is False and "force_row_wise" not in loose.engine_params_


def test_model_files_with_the_former_parameters_still_load(tmp_path):
    LambdaMART(n_estimators=5, n_jobs=1).fit(synthetic(seed=0)).save(tmp_path / "m.txt")
    meta = json.loads(meta_path(tmp_path / "m.txt").read_text())
    meta["params"] |= {"deterministic": False, "verbose": True}  # written before both left the estimator
    meta_path(tmp_path / "m.txt").write_text(json.dumps(meta))
    loaded = LambdaMART.load(tmp_path / "m.txt")
    assert loaded.params == {"deterministic": False} and "verbose" not in loaded.get_params()


def test_ranker_config_from_the_cli_options():
    ranker = {
        "engine": "lightgbm",
        "n_estimators": None,
        "learning_rate": 0.05,
        "num_leaves": 31,
        "early_stopping_rounds": 50,
        "threads": 0,
        "params": ("min_data_in_leaf=5",),
    }
    config = ranker_config(ranker, n_estimators=50, eval_at=5, seed=2)
    assert config == RankerConfig(n_estimators=50, eval_at=5, seed=2, params={"min_data_in_leaf": 5})
    with pytest.raises(LtrfeatError, match="n_estimators must be an integer >= 1, got None"):
        ranker_config(ranker)


@pytest.mark.parametrize("select", [False, True])
def test_train_ranker_records_its_ranker_config(tmp_path, select):
    train, out = tmp_path / "train.letor", tmp_path / "model.txt"
    write_letor(train, synthetic(seed=0, n_queries=30))
    args = ["train-ranker", str(train), "--out", str(out), "--n-estimators", "8", "--threads", "1", "--seed", "4"]
    result = CliRunner().invoke(cli, [*args, "--param", "min_data_in_leaf=5", *(["--select"] if select else [])])
    assert result.exit_code == 0, result.output
    recorded = json.loads(meta_path(out).read_text())["ranker_config"]
    expected = RankerConfig(n_estimators=8, seed=4, n_jobs=1, params={"min_data_in_leaf": 5})
    assert RankerConfig.from_dict(recorded) == expected
