"""The ranker registry: kinds described once, and a new kind (docs/new-ranker.md's worked example) registered
in one line goes through ablate (as a selection candidate), serve and export-ranker."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from builders import build_world, candidates_of
from ltrfeat.cli.main import cli
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.rankers import registry

ROOT = Path(__file__).resolve().parents[2]


def test_builtin_kinds_are_the_candidates_in_simplicity_order():
    assert registry.names() == (
        "lightgbm",
        "xgboost",
        "lightgbm-tuned",
        "xgboost-tuned",
        "linear",
        "boost-best",
        "best-single",
    )
    assert registry.simplicity_order()[:3] == ("best-single", "linear", "boost-best")
    assert registry.deployable("opensearch-ltr") == tuple(n for n in registry.names() if n != "boost-best")
    assert [n for n in registry.names() if registry.seed_free(n)] == ["best-single"]
    assert [registry.get(n).tunes for n in ("lightgbm-tuned", "xgboost-tuned", "lightgbm")] == [
        "lightgbm",
        "xgboost",
        None,
    ]
    with pytest.raises(LtrfeatError, match="unknown ranker kind 'nope'"):
        registry.get("nope")
    with pytest.raises(LtrfeatError, match="cannot name a ranker kind"):
        registry.register_ranker(registry.RankerKind("lambdamart", object(), 1))


def test_every_builtin_model_follows_the_protocol(planted):
    from ltrfeat.rankers.selection import Candidates

    fold = planted[0]
    settings = Candidates(fold.train.feature_map.names, {"n_estimators": 5, "n_jobs": 1})
    for name in registry.names():
        if registry.get(name).tunes:
            continue
        model = settings.make(name, seed=0).fit(fold.train, fold.valid)
        assert isinstance(model, registry.RankerModel) and registry.kind_of(model).name == name
        assert len(model.predict(fold.test)) == len(fold.test) and isinstance(model.describe(), dict)


def test_every_kind_round_trips_through_save_and_load(planted, tmp_path):
    """A loaded model reports the kind it was saved as, tuned kinds included (their models look untuned)."""
    from ltrfeat.rankers.models import load_ranker, save_ranker
    from ltrfeat.rankers.selection import Candidates

    fold = planted[0]
    settings = Candidates(fold.train.feature_map.names, {"n_estimators": 5, "n_jobs": 1})
    for name in registry.names():
        tuned = {"num_leaves": 7} if registry.get(name).tunes == "lightgbm" else None
        tuned = {"max_depth": 3} if registry.get(name).tunes == "xgboost" else tuned
        model = settings.make(name, seed=0, tuned=tuned).fit(fold.train, fold.valid)
        save_ranker(model, tmp_path / f"{name}.model", kind=name)
        loaded = load_ranker(tmp_path / f"{name}.model")
        assert registry.kind_of(loaded).name == name and registry.kind_of(model).name == name
        np.testing.assert_allclose(loaded.predict(fold.test), model.predict(fold.test), rtol=1e-6, atol=1e-6)
        save_ranker(loaded, tmp_path / f"{name}.again")  # no kind given: the loaded one is kept
        assert registry.kind_of(load_ranker(tmp_path / f"{name}.again")).name == name


@pytest.fixture
def feature_sum():
    """docs/new-ranker.md's module, run as written (it registers ``feature-sum``)."""
    text = (ROOT / "docs" / "new-ranker.md").read_text(encoding="utf-8")
    module = re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    namespace = {"__name__": "feature_sum"}
    exec(compile(module, "docs/new-ranker.md", "exec"), namespace)
    yield namespace
    registry.unregister("feature-sum")


def test_a_registered_kind_goes_through_ablate_serve_and_export(feature_sum, planted, tmp_path):
    from fastapi.testclient import TestClient

    from ltrfeat.experiments.feature_sets import plan_feature_sets
    from ltrfeat.experiments.ablation import run_ablation
    from ltrfeat.rankers.models import load_ranker, save_ranker
    from ltrfeat.rankers.selection import Candidates, SelectionConfig
    from ltrfeat.serving.app import create_app
    from ltrfeat.serving.scorer import Scorer

    # ablate: a candidate of the selection, scored on every test fold and fitted once (seed-free)
    sets = plan_feature_sets(planted[0].train.feature_map, base="1-3", neural={"clsm": "clsm_title_cos"})
    config = SelectionConfig(candidates=("feature-sum", "linear"), inner_folds=2)
    result = run_ablation(
        planted, sets, seeds=[0, 1], ranker_params={"n_estimators": 5}, progress=False, selection=config
    )
    picks = {sel["chosen"] for per_set in result.config["selection"]["chosen"].values() for sel in per_set.values()}
    assert picks <= {"feature-sum", "linear"}
    toy = [r for r in result.runs if r["feature_set"].endswith("/feature-sum")]
    assert toy and all(
        r["seed"] is None and r["chose"] == {"features": 3} for r in toy if r["feature_set"] == "lexical/feature-sum"
    )
    assert set(result.per_query["feature_set"]) >= {"lexical/feature-sum", "lexical+clsm/feature-sum"}
    # serve: a saved feature-sum model scores requests as it scores the extracted file
    world = build_world(tmp_path, n_queries=8, encoder=False)
    settings = Candidates(world["data"].feature_map.names, {})
    model = settings.make("feature-sum", seed=0).fit(world["data"])
    save_ranker(model, tmp_path / "fs.txt")
    assert type(load_ranker(tmp_path / "fs.txt")).__name__ == "FeatureSum"
    scorer = Scorer.load(tmp_path / "fs.txt", corpus_stats=world["corpus"])
    rows, cands = candidates_of(world, "q3")
    query = dict(zip(world["queries"].qid, world["queries"]["query"]))["q3"]
    with TestClient(create_app(scorer), base_url="http://localhost") as client:
        body = client.post("/score", json={"query": query, "candidates": cands}).json()
    np.testing.assert_allclose(body["scores"], model.predict(world["data"])[rows], rtol=0, atol=1e-9)
    # export: refused with the reason, exit 2, nothing written
    out = CliRunner().invoke(
        cli, ["export-ranker", str(tmp_path / "fs.txt"), "--to", "es-ltr", "--out", str(tmp_path / "m.json")]
    )
    assert out.exit_code == 2 and "cannot run a feature-sum ranker" in out.output
    assert "names no LTR engine" in out.output and not (tmp_path / "m.json").exists()
