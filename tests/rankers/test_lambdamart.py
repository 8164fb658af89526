"""LambdaMART wrapper: groups, labels, features, determinism, save/load, engine parity."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from sklearn.base import clone

from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.rankers.lambdamart import LambdaMART, meta_path
from ltrfeat.core.metrics import evaluate_queries
from builders import synthetic, small

ENGINES = ["lightgbm", "xgboost"]


def ndcg10(model, data):
    return evaluate_queries(data.qid, data.label, model.predict(data), "ndcg@10")["ndcg@10"].mean()


@pytest.mark.parametrize("engine", ENGINES)
def test_fit_predict_learns_signal_and_records_metadata(engine):
    train, valid, test = synthetic(seed=0), synthetic(seed=1), synthetic(seed=2)
    model = small(engine).fit(train, valid)
    random_scores = np.random.default_rng(0).random(len(test))
    random_ndcg = evaluate_queries(test.qid, test.label, random_scores, "ndcg@10")["ndcg@10"].mean()
    assert ndcg10(model, test) > random_ndcg + 0.2
    assert 1 <= model.best_iteration_ <= 40
    top3 = list(model.feature_importance_)[:3]
    assert set(top3) == {"f1", "f2", "f3"}
    meta = model.metadata_
    assert meta["engine"] == engine and meta["features"]["features"][0]["name"] == "f1"
    assert meta["training"]["train_hash"] == train.content_hash()
    assert meta["training"]["valid_hash"] == valid.content_hash()
    assert meta["training"]["best_valid_score"]["ndcg@10"] > 0.5
    assert meta["versions"][engine] == (lgb if engine == "lightgbm" else xgb).__version__
    json.dumps(meta)  # JSON-serialisable


@pytest.mark.parametrize("engine", ENGINES)
def test_rerun_gives_identical_predictions(engine):
    train, valid = synthetic(seed=0), synthetic(seed=1)
    a = (
        small(
            engine, params={"bagging_fraction": 0.7, "bagging_freq": 1} if engine == "lightgbm" else {"subsample": 0.7}
        )
        .fit(train, valid)
        .predict(valid)
    )
    b = (
        small(
            engine, params={"bagging_fraction": 0.7, "bagging_freq": 1} if engine == "lightgbm" else {"subsample": 0.7}
        )
        .fit(train, valid)
        .predict(valid)
    )
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("engine", ENGINES)
def test_save_load_roundtrip_and_file_checks(engine, tmp_path):
    train, valid = synthetic(seed=0), synthetic(seed=1)
    model = small(engine).fit(train, valid)
    path = tmp_path / ("m.txt" if engine == "lightgbm" else "m.json")
    model.save(path)
    loaded = LambdaMART.load(path)
    np.testing.assert_array_equal(loaded.predict(valid), model.predict(valid))
    assert loaded.feature_map_ == model.feature_map_ and loaded.best_iteration_ == model.best_iteration_
    assert loaded.get_params() == model.get_params()
    meta = json.loads(meta_path(path).read_text())
    assert meta["model_file"] == path.name and len(meta["model_sha256"]) == 64
    if engine == "xgboost":
        assert json.loads(path.read_text())["learner"]["objective"]["name"] == "rank:ndcg"
    else:
        assert path.read_text().startswith("tree")

    path.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(ModelFileError, match="does not match its metadata"):
        LambdaMART.load(path)
    meta_path(path).write_text('{\n  "format": oops\n}')
    with pytest.raises(ModelFileError, match=r"m\.\w+\.meta\.json:2: metadata is not valid JSON"):
        LambdaMART.load(path)
    meta_path(path).unlink()
    with pytest.raises(ModelFileError, match="file not found"):
        LambdaMART.load(path)


def test_load_refuses_foreign_metadata(tmp_path):
    path = tmp_path / "m.txt"
    path.write_text("tree\n")
    meta_path(path).write_text(json.dumps({"format": "something/1"}))
    with pytest.raises(ModelFileError, match="not ltrfeat ranker metadata"):
        LambdaMART.load(path)


@pytest.mark.parametrize("engine", ENGINES)
def test_non_contiguous_qids_are_regrouped_with_a_notice(engine):
    train, valid = synthetic(seed=0), synthetic(seed=1)
    perm = np.random.default_rng(0).permutation(len(train))
    shuffled = train.take(perm)
    assert not shuffled.is_contiguous()
    with pytest.warns(UserWarning, match="regrouped"):
        model = small(engine).fit(shuffled, valid)
    assert model.metadata_["training"]["train_regrouped"] is True
    reference = small(engine).fit(shuffled.regroup(), valid)
    np.testing.assert_array_equal(model.predict(valid), reference.predict(valid))


@pytest.mark.parametrize("engine", ENGINES)
def test_single_document_queries(engine):
    train = synthetic(seed=0)
    singles = synthetic(n_queries=10, docs=1, seed=5)
    mixed = RankingSet(
        np.concatenate([train.qid, singles.qid]),
        np.concatenate([train.label, singles.label]),
        np.vstack([train.X, singles.X]),
        train.feature_map,
    )
    model = small(engine).fit(mixed, synthetic(seed=1))
    assert np.isfinite(model.predict(singles)).all()


def test_labels_up_to_60():
    train, valid = synthetic(seed=0, max_label=60), synthetic(seed=1, max_label=60)
    assert train.label.max() == 60
    model = small("lightgbm").fit(train, valid)
    gain = model.engine_params_["label_gain"]
    assert len(gain) == 61 and gain[60] == 2.0**60 - 1
    assert model.metadata_["labels"]["max_label"] == 60
    assert ndcg10(model, valid) > 0.5
    with pytest.warns(UserWarning, match="linear gain"):
        xmodel = small("xgboost").fit(train, valid)
    assert xmodel.engine_params_["ndcg_exp_gain"] is False
    assert "linear" in xmodel.metadata_["labels"]["gain"]
    # below the engines' limits nothing is changed
    plain = small("lightgbm").fit(synthetic(seed=0), synthetic(seed=1))
    assert "label_gain" not in plain.engine_params_


@pytest.mark.parametrize("bad", [0.5, -1.0, np.nan])
def test_bad_labels_are_refused_with_a_fix(bad):
    train = synthetic(seed=0)
    train.label[7] = bad
    with pytest.raises(LtrfeatError, match="row 8 .*label mapping"):
        small("lightgbm").fit(train)


def test_feature_selection_by_ranges_and_names_and_matching_by_name():
    names = ["bm25_title", "tfidf", "noise_a", "noise_b", "len_title", "clsm_title_cos"]
    train, valid = synthetic(seed=0, n_features=6, names=names), synthetic(seed=1, n_features=6, names=names)
    model = small("lightgbm", features="1-2,clsm_title_cos,3").fit(train, valid)
    assert model.feature_map_.names == ["bm25_title", "tfidf", "noise_a", "clsm_title_cos"]
    # a file holding the same features in another column order (and extra ones) predicts the same
    reordered = RankingSet(
        valid.qid, valid.label, valid.X[:, ::-1], FeatureMap(Feature(i + 1, n) for i, n in enumerate(names[::-1]))
    )
    np.testing.assert_array_equal(model.predict(reordered), model.predict(valid))
    with pytest.raises(ModelFileError, match="lacks 1 of the model's 4 features .*6:clsm_title_cos"):
        model.predict(valid.select_features("1-5"))
    with pytest.raises(LtrfeatError, match="no feature named 'nope'"):
        small("lightgbm", features="1,nope").fit(train)


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_values_pass_through_as_nan(engine):
    train, valid = synthetic(seed=0), synthetic(seed=1)
    train.X[::7, 0] = np.nan
    valid.X[::5, 1] = np.nan
    model = small(engine).fit(train, valid)
    assert model.metadata_["missing_values"]["train_nan_cells"] == int(np.isnan(train.X).sum())
    scores = model.predict(valid)
    assert np.isfinite(scores).all()


def test_lightgbm_parity_with_the_engine_api():
    train, valid = synthetic(seed=0), synthetic(seed=1)
    model = small("lightgbm").fit(train, valid)

    def ds(d, ref=None):
        return lgb.Dataset(d.X, d.label, group=d.group_sizes(), reference=ref)

    dtrain = ds(train)
    booster = lgb.train(
        model.engine_params_,
        dtrain,
        num_boost_round=40,
        valid_sets=[ds(valid, dtrain)],
        callbacks=[lgb.early_stopping(10, first_metric_only=True, verbose=False)],
    )
    assert booster.best_iteration == model.best_iteration_
    np.testing.assert_array_equal(booster.predict(valid.X, num_iteration=booster.best_iteration), model.predict(valid))


def test_xgboost_parity_with_the_engine_api():
    train, valid = synthetic(seed=0), synthetic(seed=1)
    model = small("xgboost").fit(train, valid)
    dm = lambda d: xgb.DMatrix(d.X, d.label, group=d.group_sizes())  # noqa: E731
    booster = xgb.train(
        model.engine_params_, dm(train), 40, evals=[(dm(valid), "v")], early_stopping_rounds=10, verbose_eval=False
    )
    assert booster.best_iteration + 1 == model.best_iteration_
    np.testing.assert_array_equal(
        booster.predict(xgb.DMatrix(valid.X), iteration_range=(0, booster.best_iteration + 1)), model.predict(valid)
    )


def test_without_validation_uses_every_round():
    model = small("lightgbm", n_estimators=12).fit(synthetic(seed=0))
    assert model.best_iteration_ == 12 and "valid_hash" not in model.metadata_["training"]


def test_sklearn_conventions_and_parameter_errors():
    est = LambdaMART(engine="nope", n_estimators=-3)  # __init__ validates nothing
    assert est.get_params()["engine"] == "nope"
    assert clone(LambdaMART(num_leaves=15)).num_leaves == 15
    with pytest.raises(LtrfeatError, match="engine must be one of lightgbm, xgboost, got 'nope'"):
        est.fit(synthetic(seed=0))
    with pytest.raises(LtrfeatError, match="n_estimators must be an integer >= 1"):
        LambdaMART(n_estimators=0).fit(synthetic(seed=0))
    with pytest.raises(LtrfeatError, match="not fitted"):
        LambdaMART().predict(synthetic(seed=0))
    with pytest.raises(LtrfeatError, match="no rows"):
        small("lightgbm").fit(synthetic(seed=0).take(np.array([], dtype=int)))
    model = small("lightgbm").fit(synthetic(seed=0))
    assert model.fit(synthetic(seed=0)) is model


def test_rankers_never_import_torch():
    import subprocess
    import sys

    code = "import sys, ltrfeat.rankers.lambdamart, ltrfeat.core.metrics; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_lightgbm_parameters_are_probed_once_per_process(monkeypatch):
    from ltrfeat.core.errors import ParameterError
    from ltrfeat.rankers import model_check

    probes = []
    real = lgb.Booster

    def counting(*args, **kwargs):
        probes.append(args[0] if args else kwargs.get("params"))
        return real(*args, **kwargs)

    monkeypatch.setattr(model_check, "_ACCEPTED", set())
    monkeypatch.setattr(lgb, "Booster", counting)
    params = {"objective": "lambdarank", "num_leaves": 7, "seed": 3}
    for _ in range(3):
        model_check.check_lightgbm_params(params, 4)
    assert len(probes) == 1
    model_check.check_lightgbm_params(params, 5)  # another column count is probed
    assert len(probes) == 2
    for _ in range(2):  # a refused set is never remembered
        with pytest.raises(ParameterError, match="refused the parameters"):
            model_check.check_lightgbm_params(params | {"num_leaves": -4}, 4)
    assert len(probes) == 4
