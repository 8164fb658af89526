"""The one settings policy (ltrfeat.core.settings): constraints, ParameterError, plain values and files."""

from __future__ import annotations

import json
import math
from numbers import Integral, Real

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.settings import Interval, OneOf, check_value
from ltrfeat.experiments.ablation import AblationConfig
from ltrfeat.experiments.crossfit import CrossFitConfig
from ltrfeat.experiments.fold_plans import plan_folds
from ltrfeat.rankers.config import RankerConfig
from ltrfeat.rankers.selection import SelectionConfig


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.booleans())
def test_an_interval_accepts_exactly_its_finite_numbers(value):
    closed = Interval(Real, 0, 1, closed="left")
    expected = not isinstance(value, bool) and math.isfinite(value) and 0 <= value < 1
    assert closed.accepts(value) == expected
    whole = Interval(Integral, -1, None)
    assert whole.accepts(value) == (isinstance(value, int) and not isinstance(value, bool) and value >= -1)


def test_constraints_read_in_words():
    assert str(Interval(Real, 0, 1, closed="left")) == "a number in [0, 1)"
    assert str(Interval(Integral, 2, None)) == "an integer >= 2"
    assert str(Interval(Real, 0, None, closed="neither")) == "a number > 0"
    assert str(OneOf("exp2", "linear")) == "one of exp2, linear"
    assert Interval(Integral, 1, None).accepts(np.int64(3)) and not OneOf(1, 2).accepts(True)
    with pytest.raises(ParameterError, match=r"^k must be an integer >= 3 or None, got 2.5; e\.g\. 5$") as err:
        check_value("k", 2.5, [Interval(Integral, 3, None), None], fix="e.g. 5")
    assert isinstance(err.value, ValueError) and isinstance(err.value, LtrfeatError) and err.value.param == "k"


def test_cross_fitting_with_two_folds_is_refused_where_it_is_built():
    with pytest.raises(ParameterError, match="at least 3 folds"):
        CrossFitConfig(k=2)
    with pytest.raises(ParameterError, match="at least 3 folds"):
        CrossFitConfig().replace(k=2)
    with pytest.raises(ParameterError, match="at least 3 folds"):
        plan_folds([f"q{i}" for i in range(20)], k=2)  # the library function keeps the same check


def test_nested_settings_round_trip_through_json():
    config = AblationConfig(seeds=[3, 1], metrics=["ndcg@10"], selection=SelectionConfig(tune="grid", seed=4))
    values = json.loads(json.dumps(config.to_dict()))
    assert values["selection"]["candidates"] == ["lightgbm", "linear", "boost-best", "best-single"]
    assert AblationConfig.from_dict(values) == config and config.seeds == (3, 1)
    with pytest.raises(ParameterError, match="model selection has no setting 'rules'; use one of candidates,"):
        AblationConfig.from_dict(values | {"selection": {"rules": "best"}})


def test_build_and_replace_check_like_a_new_config():
    config = RankerConfig.build(None, {"num_leaves": 7})
    assert config.replace(seed=2) == RankerConfig(num_leaves=7, seed=2)
    with pytest.raises(ParameterError, match="LambdaMART has no setting 'leaves'"):
        config.replace(leaves=3)
    with pytest.raises(ParameterError, match="engine must be one of lightgbm, xgboost, got 'catboost'"):
        config.replace(engine="catboost")
    with pytest.raises(TypeError, match="RankerConfig"):
        RankerConfig.build(SelectionConfig())


def test_a_settings_file_error_names_the_file(tmp_path):
    path = tmp_path / "ranker.toml"
    path.write_text("[ranker]\nnum-leaves = 1\n")
    with pytest.raises(ParameterError, match=r"ranker\.toml: num_leaves must be an integer >= 2, got 1; e\.g\."):
        RankerConfig.from_file(path, table="ranker")
    path.write_text("[ranker]\nnum-leaves = 7\n")
    assert RankerConfig.from_file(path, table="ranker") == RankerConfig(num_leaves=7)
