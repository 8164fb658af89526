"""Ranker export: every format read back by an evaluator written here (or by the engine itself)
and compared with LambdaMART.predict to 1e-5; tampered, truncated and unsupported exports."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import xgboost as xgb

from builders import dataset_path
from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, ModelFileError, ParameterError
from ltrfeat.core.analysis import Analyzer
from ltrfeat.export.ltr_plugin import (
    PluginScoring,
    export_ranker,
    featureset_path,
    index_path,
    load_export,
    manifest_path,
)
from ltrfeat.rankers.lambdamart import LambdaMART

NAMES = ["bm25_title", "tf_sum_title", "query_len", "clsm_title_cos", "f5"]


def _data(n_queries=60, seed=0, nan=False) -> RankingSet:
    rng = np.random.default_rng(seed)
    n = n_queries * 12
    X = rng.normal(size=(n, len(NAMES))).astype(np.float32)
    X[:, 1] = rng.integers(0, 4, size=n)  # integer values sit exactly on split thresholds
    X[:, 2] = np.repeat(rng.integers(1, 6, size=n_queries), 12)
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + X[:, 3] + rng.normal(size=n) * 0.5), 0, 4)
    if nan:
        X[rng.random(n) < 0.1, 0] = np.nan
    fmap = FeatureMap(Feature(i + 1, name) for i, name in enumerate(NAMES))
    return RankingSet(
        qid=np.repeat([f"q{i}" for i in range(n_queries)], 12).astype(object), label=y, X=X, feature_map=fmap
    )


def engine_scale(X):
    """Feature values as the engine logs them: a cosine feature is scored as 1 + cosine (the engines refuse
    negative scores) and the exported model's normalizer takes the 1 off again."""
    X = np.array(X, dtype=np.float32)
    X[:, NAMES.index("clsm_title_cos")] += np.float32(1)
    return X


@pytest.fixture(scope="module", params=["lightgbm", "xgboost"])
def trained(request):
    data = _data()
    model = LambdaMART(engine=request.param, n_estimators=40, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(
        data
    )
    return model, _data(seed=1)


# ------------------------------------------------------------------ independent evaluators


def eval_ranklib(text: str, X: np.ndarray) -> np.ndarray:
    """RankLib semantics: feature ordinal 1-based, float32 x <= float32 threshold -> left, sum weight * output."""
    tokens = re.findall(
        r'<tree id="\d+" weight="([^"]+)">|<feature>\s*(\S+)\s*</feature>|'
        r"<threshold>\s*(\S+)\s*</threshold>|<output>\s*(\S+)\s*</output>",
        text,
    )
    pos = 0

    def parse():
        nonlocal pos
        _, feat, thr, out = tokens[pos]
        pos += 1
        if out:
            return float(np.float32(out))
        t = tokens[pos][2]
        pos += 1
        return (int(feat) - 1, np.float32(t), parse(), parse())

    trees = []
    while pos < len(tokens):
        weight = float(np.float32(tokens[pos][0]))
        pos += 1
        trees.append((weight, parse()))

    def walk(node, x):
        while isinstance(node, tuple):
            f, t, left, right = node
            node = left if x[f] <= t else right
        return node

    X = X.astype(np.float32)
    return np.array([sum(w * walk(tree, x) for w, tree in trees) for x in X])


def eval_xgb_dump(trees: list, names: list, X: np.ndarray) -> np.ndarray:
    """XGBoost dump semantics: float32 x < float32 split_condition -> yes; nodes found by id."""
    col = {n: j for j, n in enumerate(names)}

    def walk(node, x):
        while "leaf" not in node:
            kids = {c["nodeid"]: c for c in node["children"]}
            node = kids[node["yes"] if x[col[node["split"]]] < np.float32(node["split_condition"]) else node["no"]]
        return float(np.float32(node["leaf"]))

    X = X.astype(np.float32)
    return np.array([sum(walk(t, x) for t in trees) for x in X])


def eval_lightgbm_text(text: str, X: np.ndarray) -> np.ndarray:
    """LightGBM text model: x <= double threshold -> left; children < 0 are leaves ~i."""
    trees = []
    for block in re.split(r"\nTree=\d+\n", text)[1:]:
        block = block.split("\nend of trees")[0]
        kv = dict(line.split("=", 1) for line in block.strip().splitlines() if "=" in line)
        leaf = [float(v) for v in kv["leaf_value"].split()]
        if "split_feature" not in kv:
            trees.append((None, leaf))
            continue
        arr = {k: kv[k].split() for k in ("split_feature", "threshold", "left_child", "right_child", "decision_type")}
        assert all(int(d) & 1 == 0 for d in arr["decision_type"])  # numerical splits only
        trees.append(
            (
                [int(v) for v in arr["split_feature"]],
                leaf,
                [float(v) for v in arr["threshold"]],
                [int(v) for v in arr["left_child"]],
                [int(v) for v in arr["right_child"]],
            )
        )

    def walk(tree, x):
        if tree[0] is None:
            return tree[1][0]
        feat, leaf, thr, left, right = tree
        node = 0
        while node >= 0:
            node = left[node] if float(x[feat[node]]) <= thr[node] else right[node]
        return leaf[~node]

    X = X.astype(np.float32)
    return np.array([sum(walk(t, x) for t in trees) for x in X])


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("target", ["es-ltr", "opensearch-ltr"])
def test_plugin_export_matches_predict(trained, target, tmp_path):
    model, test = trained
    out = tmp_path / "model.json"
    manifest = export_ranker(model, out, to=target, name="m1", featureset="fs1", allow_missing_features=True)
    body = json.loads(out.read_text())
    inner = body["model"]["model"]
    assert body["model"]["name"] == "m1"
    fs = json.loads(featureset_path(out).read_text())["featureset"]
    assert fs["name"] == "fs1" and [f["name"] for f in fs["features"]] == NAMES
    assert fs["features"][0]["template"] == {"match": {"title": "{{keywords}}"}}
    assert manifest["features_without_template"] == ["f5"]
    assert fs["features"][1]["template"] == {"match": {"title.tf": "{{keywords}}"}}  # boost x freq similarity
    assert inner["feature_normalizers"] == {"clsm_title_cos": {"standard": {"mean": 1.0, "standard_deviation": 1.0}}}
    ours = model.predict(test)
    if model.engine == "lightgbm":
        assert inner["type"] == "model/ranklib"
        assert inner["definition"].startswith("## LambdaMART")
        theirs = eval_ranklib(inner["definition"], test.X)
    else:
        assert inner["type"] == "model/xgboost+json"
        theirs = eval_xgb_dump(json.loads(inner["definition"]), NAMES, test.X)
    np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0)
    # both plugins serve the feature store under /_ltr (OpenSearch: only stats live under /_plugins/_ltr)
    assert manifest["upload"][1].startswith("PUT _ltr ")
    assert manifest["upload"][2].startswith("PUT _ltr/_featureset/fs1 ")
    assert manifest["upload"][3].startswith("POST _ltr/_featureset/fs1/_createmodel")
    sltr = manifest["search_example"]["body"]["rescore"]["query"]["rescore_query"]["sltr"]
    assert sltr["model"] == "m1" and sltr["params"]["keywords"] == "QUERY TEXT"
    assert manifest["upload"][4].startswith("POST INDEX/_search  <- ")
    np.testing.assert_allclose(load_export(out).predict(engine_scale(test.X)), ours, atol=1e-5, rtol=0)


def test_xgboost_json_dump_matches_engine(trained, tmp_path):
    model, test = trained
    out = tmp_path / "model.xgb.json"
    export_ranker(model, out, to="xgboost-json")
    trees = json.loads(out.read_text())
    theirs = eval_xgb_dump(trees, NAMES, test.X)
    if model.engine == "xgboost":  # compare with XGBoost itself, not through LambdaMART
        engine = model.booster_.predict(
            xgb.DMatrix(test.X, feature_names=NAMES), iteration_range=(0, model.best_iteration_)
        )
        np.testing.assert_allclose(theirs, engine, atol=1e-5, rtol=0)
    np.testing.assert_allclose(theirs, model.predict(test), atol=1e-5, rtol=0)
    np.testing.assert_allclose(load_export(out).predict(test.X), theirs, atol=1e-5, rtol=0)


def test_lightgbm_text_export(trained, tmp_path):
    model, test = trained
    out = tmp_path / "model.lgb.txt"
    if model.engine == "xgboost":
        with pytest.raises(LtrfeatError, match="only a LightGBM-trained"):
            export_ranker(model, out, to="lightgbm")
        assert not out.exists()
        return
    export_ranker(model, out, to="lightgbm")
    np.testing.assert_allclose(eval_lightgbm_text(out.read_text(), test.X), model.predict(test), atol=1e-5, rtol=0)
    np.testing.assert_allclose(load_export(out).predict(test.X), model.predict(test), atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["standard", "min_max"])
def test_feature_normalizers_are_carried(kind, tmp_path):
    raw = _data()
    a, b = np.float32(raw.X[:, 0].mean()), np.float32(raw.X[:, 0].std())
    spec = (
        {"mean": float(a), "standard_deviation": float(b)}
        if kind == "standard"
        else {"minimum": float(a), "maximum": float(a + 3 * b)}
    )
    scale = b if kind == "standard" else np.float32(a + 3 * b) - a

    def normalised(data):
        X = data.X.copy()
        X[:, 0] = (X[:, 0] - a) / scale  # float32, as the plugin computes it
        return RankingSet(qid=data.qid, label=data.label, X=X, feature_map=data.feature_map)

    model = LambdaMART(n_estimators=20, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(normalised(raw))
    out = tmp_path / "m.json"
    export_ranker(model, out, to="es-ltr", allow_missing_features=True, normalizers={"bm25_title": {kind: spec}})
    inner = json.loads(out.read_text())["model"]["model"]
    assert inner["feature_normalizers"]["bm25_title"] == {kind: spec}
    test = _data(seed=2)
    np.testing.assert_allclose(
        load_export(out).predict(engine_scale(test.X)), model.predict(normalised(test)), atol=1e-5, rtol=0
    )


def test_bad_normalizers_refused(tmp_path):
    model = LambdaMART(n_estimators=3, early_stopping_rounds=None, n_jobs=1).fit(_data())
    for bad in (
        {"nope": {"standard": {"mean": 0, "standard_deviation": 1}}},
        {"f5": {"standard": {"mean": 0, "standard_deviation": 0}}},
        {"f5": {"zscore": {}}},
    ):
        with pytest.raises(LtrfeatError):
            export_ranker(model, tmp_path / "m.json", to="es-ltr", allow_missing_features=True, normalizers=bad)
    with pytest.raises(LtrfeatError, match="plugin feature"):
        export_ranker(
            model,
            tmp_path / "m.json",
            to="xgboost-json",
            normalizers={"f5": {"standard": {"mean": 0, "standard_deviation": 1}}},
        )
    assert not list(tmp_path.iterdir())


def test_plugin_scoring_reaches_the_featureset_and_index(tmp_path):
    model = LambdaMART(n_estimators=3, early_stopping_rounds=None, n_jobs=1).fit(_data())
    scoring = PluginScoring(dims={"clsm": 16}, analyzer=Analyzer(stemmer="english"), k1=0.9, b=0.4, fill_zero=True)
    export_ranker(model, tmp_path / "m.json", to="es-ltr", allow_missing_features=True, scoring=scoring)
    index = json.loads(index_path(tmp_path / "m.json").read_text())
    assert index["settings"]["similarity"]["ltrfeat_bm25"] == {"type": "BM25", "k1": 0.9, "b": 0.4}
    assert "ltrfeat_stem" in index["settings"]["analysis"]["analyzer"]["ltrfeat"]["filter"]
    assert index["mappings"]["properties"]["clsm_title_vector"]["dims"] == 16
    features = json.loads(featureset_path(tmp_path / "m.json").read_text())["featureset"]["features"]
    assert {f["name"] for f in features if f["template"] == {"match_none": {}}} == {"f5"}


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"k1": -1.0}, "k1 must be a number >= 0"),
        ({"b": 1.5}, r"b must be a number in \[0, 1\]"),
        ({"dims": {"clsm": 0}}, r"dims\['clsm'\] must be an integer >= 1"),
        ({"templates": ["bm25_title"]}, "templates must be a mapping or None"),
        ({"analyzer": "english"}, "analyzer must be an Analyzer or None"),
    ],
)
def test_plugin_scoring_refuses_bad_settings(bad, match):
    with pytest.raises(ParameterError, match=match):
        PluginScoring(**bad)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_nan_trained_model_needs_missing_as_zero(engine, tmp_path):
    model = LambdaMART(engine=engine, n_estimators=15, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(
        _data(nan=True)
    )
    out = tmp_path / "m.json"
    with pytest.raises(LtrfeatError, match="missing-as-zero"):
        export_ranker(model, out, to="es-ltr", allow_missing_features=True)
    assert not out.exists()
    export_ranker(model, out, to="es-ltr", allow_missing_features=True, missing_as_zero=True)
    test = _data(seed=3, nan=True)
    zeroed = RankingSet(qid=test.qid, label=test.label, X=np.nan_to_num(test.X), feature_map=test.feature_map)
    engine = engine_scale(test.X)  # NaN stays NaN, scored as 0 by the export
    np.testing.assert_allclose(load_export(out).predict(engine), model.predict(zeroed), atol=1e-5, rtol=0)


def test_zero_as_missing_is_refused(tmp_path):
    model = LambdaMART(
        n_estimators=5, num_leaves=8, early_stopping_rounds=None, n_jobs=1, params={"zero_as_missing": True}
    ).fit(_data())
    with pytest.raises(LtrfeatError, match="zero_as_missing"):
        export_ranker(model, tmp_path / "m.json", to="es-ltr", allow_missing_features=True)


def test_saved_and_loaded_model_exports_the_same(tmp_path):
    model = LambdaMART(n_estimators=10, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(_data())
    model.save(tmp_path / "r.txt")
    export_ranker(model, tmp_path / "a.json", to="es-ltr", allow_missing_features=True, name="m", featureset="f")
    export_ranker(
        LambdaMART.load(tmp_path / "r.txt"),
        tmp_path / "b.json",
        to="es-ltr",
        allow_missing_features=True,
        name="m",
        featureset="f",
    )
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


# ------------------------------------------------------------------ damaged exports


@pytest.fixture
def exported(tmp_path):
    model = LambdaMART(n_estimators=10, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(_data())
    out = tmp_path / "model.json"
    export_ranker(model, out, to="es-ltr", allow_missing_features=True)
    return out


def test_tampered_export_is_refused(exported):
    text = exported.read_text()
    exported.write_text(text.replace("<threshold> ", "<threshold> 1", 1))
    with pytest.raises(ModelFileError, match="changed or truncated"):
        load_export(exported)


def test_truncated_export_is_refused(exported):
    exported.write_bytes(exported.read_bytes()[:-200])
    with pytest.raises(ModelFileError, match="changed or truncated"):
        load_export(exported)


def test_tampered_featureset_or_missing_manifest_refused(exported):
    fs = featureset_path(exported)
    fs.write_text(fs.read_text().replace("bm25_title", "bm25_body"))
    with pytest.raises(ModelFileError, match="changed"):
        load_export(exported)
    manifest_path(exported).unlink()
    with pytest.raises(ModelFileError, match="no export manifest"):
        load_export(exported)


def test_consistent_but_malformed_export_is_refused(exported):
    """A file rewritten together with its manifest hash still has to parse."""
    manifest = json.loads(manifest_path(exported).read_text())
    body = json.loads(exported.read_text())
    body["model"]["model"]["definition"] = body["model"]["model"]["definition"][:-300]
    raw = json.dumps(body).encode()
    exported.write_bytes(raw)
    import hashlib

    manifest["files"][exported.name] = hashlib.sha256(raw).hexdigest()
    manifest_path(exported).write_text(json.dumps(manifest))
    with pytest.raises(ModelFileError, match="cannot parse"):
        load_export(exported)


def test_unknown_target(tmp_path):
    model = LambdaMART(n_estimators=2, early_stopping_rounds=None, n_jobs=1).fit(_data())
    with pytest.raises(LtrfeatError, match="unknown export target"):
        export_ranker(model, tmp_path / "m", to="onnx")


# ------------------------------------------------------------------ real data


def test_mq2008_fold1_round_trip(tmp_path):
    from ltrfeat.core.letor import read_letor

    raw = dataset_path("letor4_mq2008", "raw")
    train, test = read_letor(raw / "S1.txt"), read_letor(raw / "S2.txt")
    test = test.take(np.arange(1000))  # the evaluators here are plain Python loops
    for engine in ("lightgbm", "xgboost"):
        model = LambdaMART(engine=engine, n_estimators=60, early_stopping_rounds=None, n_jobs=2).fit(train)
        out = tmp_path / f"{engine}.json"
        export_ranker(model, out, to="es-ltr", allow_missing_features=True)
        inner = json.loads(out.read_text())["model"]["model"]
        ours = model.predict(test)
        if engine == "lightgbm":
            theirs = eval_ranklib(inner["definition"], test.X)
        else:
            theirs = eval_xgb_dump(json.loads(inner["definition"]), model.feature_map_.names, test.X)
        np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0)


# ------------------------------------------------------------------ CLI


def test_cli_export_ranker(tmp_path):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli

    model = LambdaMART(n_estimators=8, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(_data())
    model.save(tmp_path / "r.txt")
    (tmp_path / "t.json").write_text(json.dumps({"f5": {"match": {"body": "{{keywords}}"}}}))
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "export-ranker",
            str(tmp_path / "r.txt"),
            "--to",
            "opensearch-ltr",
            "--out",
            str(tmp_path / "m.json"),
            "--featureset",
            "fs",
            "--templates",
            str(tmp_path / "t.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "POST _ltr/_featureset/fs/_createmodel" in result.output and "_plugins" not in result.output
    assert "PUT _ltr  (create the default feature store" in result.output and '"sltr"' in result.output
    assert "no query template" not in result.output
    np.testing.assert_allclose(
        load_export(tmp_path / "m.json").predict(engine_scale(_data(seed=4).X)),
        model.predict(_data(seed=4)),
        atol=1e-5,
        rtol=0,
    )
    (tmp_path / "bad.json").write_text("{oops")
    result = runner.invoke(
        cli,
        [
            "export-ranker",
            str(tmp_path / "r.txt"),
            "--to",
            "es-ltr",
            "--out",
            str(tmp_path / "n.json"),
            "--normalizers",
            str(tmp_path / "bad.json"),
        ],
    )
    assert result.exit_code == 2 and "not valid JSON" in result.output
    assert not (tmp_path / "n.json").exists()
    assert "--to es-ltr" in runner.invoke(cli, ["export-ranker", "--help"]).output
