"""Dot-product scoring (DSE): raw vectors, training and validation on the dot, bundles (and bundles
written before the option existed), specs and column names, explain, ONNX and serving."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from builders import StubTrainer, train_until_interrupted
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.crossfit import crossfit_columns
from ltrfeat.experiments.fold_plans import plan_folds
from ltrfeat.encoders import Encoder, TwoTowerModel, model_config
from ltrfeat.encoders.training_pairs import prepare_pairs
from ltrfeat.encoders.validation import ndcg_at
from ltrfeat.encoders.training import train_encoder
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.features.explain import explain, format_explanation
from ltrfeat.encoders.hashing import TrigramHasher
from ltrfeat.features.neural import EncoderExtractor
from builders import make_pairs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXTS = ["cordless drill 18v", "red garden hose", "ceiling fan", "", "unseen zzz words"]
QUICK = dict(
    model="dssm",
    sizes={"hidden": [48], "out": 24},
    epochs=4,
    batch_size=32,
    lr=1e-2,
    val_fraction=0.25,
    patience=4,
    progress=False,
    threads=1,
    seed=0,
)


def tiny(arch="dssm", score="dot", seed=0):
    hasher = TrigramHasher().fit(TEXTS)
    torch.manual_seed(seed)
    sizes = {"hidden": [16], "out": 8} if arch == "dssm" else {"conv": 16, "out": 8}
    model = TwoTowerModel(model_config(arch, hasher.n_features_, score=score, **sizes))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return Encoder(hasher, model.eval())


@pytest.mark.parametrize("arch", ["dssm", "clsm"])
def test_dot_encoder_returns_raw_vectors_and_their_dot(arch):
    dot, cos = tiny(arch, "dot"), tiny(arch, "cosine")
    assert dot.score == "dot" and cos.score == "cosine"
    q, d = dot.encode(TEXTS, side="query"), dot.encode(TEXTS[::-1], side="doc")
    np.testing.assert_allclose(cos.encode(TEXTS), q / np.linalg.norm(q, axis=1, keepdims=True), atol=1e-6)
    assert not np.allclose(np.linalg.norm(q, axis=1), 1.0)
    np.testing.assert_allclose(dot.similarity(TEXTS, TEXTS[::-1]), np.einsum("ij,ij->i", q, d), rtol=1e-6)
    assert np.abs(q).max() <= 1.0  # tanh outputs: |dot| <= dim


def test_unknown_score_is_refused():
    with pytest.raises(ValueError, match="score must be one of"):
        model_config("dssm", 10, score="euclid")
    with pytest.raises(ValueError, match="score must be one of"):
        train_encoder(make_pairs(n_queries=12), **{**QUICK, "epochs": 1}, score="l2")


@pytest.fixture(scope="module")
def trained():
    pairs = make_pairs()
    return pairs, {score: train_encoder(pairs, loss="hinge", score=score, **QUICK) for score in ("dot", "cosine")}


def test_hinge_dot_training_lowers_the_loss_and_learns(trained):
    _, runs = trained
    encoder, history = runs["dot"]
    losses = [h["train_loss"] for h in history[1:]]
    assert losses[-1] < 0.5 * losses[0]
    assert encoder.training["params"]["score"] == "dot" and encoder.model.config["score"] == "dot"
    assert encoder.training["validation"]["ndcg@10"] > history[0]["val_ndcg@10"] + 0.1
    cosine, _ = runs["cosine"]
    assert "score" not in cosine.training["params"]  # cosine runs keep their old parameter record


def test_validation_ndcg_is_the_ndcg_of_the_dot(trained):
    pairs, runs = trained
    encoder, _ = runs["dot"]
    data = prepare_pairs(pairs, how="linear", click_scale=1.0, val_fraction=0.25, seed=0)
    val = np.flatnonzero(~data.train)
    scores = encoder.similarity(pairs["query"].iloc[val].tolist(), pairs["doc"].iloc[val].tolist())
    assert ndcg_at(scores, data.rel[val], data.q_idx[val]) == pytest.approx(
        encoder.training["validation"]["ndcg@10"], abs=1e-6
    )


def test_softmax_and_generalized_train_with_dot_and_default_gamma():
    pairs = make_pairs(n_queries=24)
    for loss in ("softmax", "generalized"):
        encoder, history = train_encoder(pairs, loss=loss, score="dot", **{**QUICK, "epochs": 2})
        assert encoder.training["params"]["gamma"] == 1.0 and np.isfinite(history[-1]["train_loss"])
    cosine, _ = train_encoder(pairs, loss="softmax", **{**QUICK, "epochs": 1})
    assert cosine.training["params"]["gamma"] == 10.0


def test_bundle_round_trip_keeps_the_score(tmp_path):
    enc = tiny("dssm", "dot")
    enc.save(tmp_path / "dot.ltrenc")
    again = Encoder.load(tmp_path / "dot.ltrenc")
    assert again.score == "dot"
    np.testing.assert_array_equal(again.encode(TEXTS), enc.encode(TEXTS))


def test_bundle_written_before_dot_scoring_loads_as_cosine():
    """The fixture was written by the ltrfeat of commit 7595e8b (no score in its config)."""
    expected = json.loads((FIXTURES / "dssm_before_dot.json").read_text())
    old = Encoder.load(FIXTURES / "dssm_before_dot.ltrenc")
    assert "score" not in old.model.config and old.score == "cosine"
    np.testing.assert_allclose(old.encode(expected["texts"]), expected["query"], atol=1e-6)
    np.testing.assert_allclose(
        old.similarity(expected["texts"], expected["texts"][::-1]), expected["similarity"], atol=1e-6
    )
    ex = EncoderExtractor(name="dssm", path=str(FIXTURES / "dssm_before_dot.ltrenc"), field="title").fit()
    assert ex.feature_names() == ["dssm_title_cos"]


def test_damaged_score_in_a_bundle_is_refused(tmp_path):
    enc = tiny("dssm", "dot")
    header = enc.header()
    header["model"] = {**header["model"], "score": "manhattan"}
    from ltrfeat.encoders.bundle import write_bundle

    write_bundle(tmp_path / "bad.ltrenc", kind="encoder", header=header, tensors=enc.model.state_dict())
    with pytest.raises(ModelFileError, match="score must be one of"):
        Encoder.load(tmp_path / "bad.ltrenc")


def test_checkpoint_resume_with_dot_equals_uninterrupted(tmp_path, monkeypatch):
    pairs = make_pairs(n_queries=24)
    opts = dict(loss="hinge", score="dot", **{**QUICK, "epochs": 3})
    full, full_history = train_encoder(pairs, **opts)
    train_until_interrupted(
        monkeypatch, epoch=1, train=lambda: train_encoder(pairs, **opts, checkpoint=tmp_path / "c.ckpt")
    )
    resumed, history = train_encoder(pairs, **opts, resume=tmp_path / "c.ckpt")
    assert [h["val_ndcg@10"] for h in history] == [h["val_ndcg@10"] for h in full_history]
    for name, value in full.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name
    with pytest.raises(ModelFileError, match="other training data or options"):
        train_encoder(pairs, **{**opts, "score": "cosine"}, resume=tmp_path / "c.ckpt")


# -- specs, columns, explain ------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, name, suffix, score",
    [
        ("dssm:hinge", "dssm-hinge", "cos", "cosine"),
        ("dssm:hinge+rbm", "dssm-hinge-rbm", "dot", "dot"),
        ("dssm:hinge@dot", "dssm-hinge-dot", "dot", "dot"),
        ("dssm:hinge+rbm@cosine", "dssm-hinge-rbm-cosine", "cos", "cosine"),
        ("clsm:softmax@dot", "clsm-softmax-dot", "dot", "dot"),
        ("deepmatch", "deepmatch", "score", None),
        ("sbert", "sbert", "cos", None),
    ],
)
def test_spec_scores_names_and_suffixes(text, name, suffix, score):
    spec = EncoderSpec.parse(text)
    assert (spec.name, spec.column_suffix, spec.resolved_score) == (name, suffix, score)


@pytest.mark.parametrize("text", ["deepmatch@dot", "sbert@dot", "dssm:hinge@l2"])
def test_bad_spec_scores_are_refused(text):
    with pytest.raises(LtrfeatError, match="score"):
        EncoderSpec.parse(text)


def test_crossfit_trains_the_spec_score_and_names_the_column(tmp_path):
    pairs = make_pairs(n_queries=18).rename(columns={"doc": "title"})
    pairs["docid"] = pairs["title"]
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    seen = []

    def fake_train(spec, table):
        seen.append(spec.resolved_score)
        return tiny("dssm", spec.resolved_score)

    specs = [EncoderSpec.parse("dssm:hinge+rbm"), EncoderSpec.parse("dssm:hinge")]
    columns = crossfit_columns(pairs, plans, specs, field="title", progress=False, trainer=StubTrainer(fake_train))
    assert list(columns["fold1"]) == ["dssm-hinge-rbm_title_dot", "dssm-hinge_title_cos"]
    assert set(seen) == {"dot", "cosine"}
    with pytest.raises(LtrfeatError, match="@dot"):
        crossfit_columns(
            pairs,
            plans,
            specs,
            field="title",
            options={"score": "dot"},
            progress=False,
            trainer=StubTrainer(fake_train),
        )


def test_crossfit_training_uses_the_spec_score_and_keys_the_cache_by_it(tmp_path):
    from ltrfeat.experiments._encoder_cache import cache_key
    from ltrfeat.experiments._fold_trainer import train_one

    table = make_pairs(n_queries=12)
    options = {"sizes": {"hidden": [8], "out": 4}, "epochs": 1, "batch_size": 16, "threads": 1}
    dot, _ = train_one(EncoderSpec.parse("dssm:hinge@dot"), table, options=options, seed=0, cache=tmp_path)
    assert dot.score == "dot" and Encoder.load(next((tmp_path / "encoders").glob("dssm-hinge-dot-*"))).score == "dot"
    keys = {
        text: cache_key(EncoderSpec.parse(text), options, table, 0)
        for text in ("dssm:hinge", "dssm:hinge@cosine", "dssm:hinge@dot", "dssm:hinge+rbm", "dssm:hinge+rbm@cosine")
    }
    assert keys["dssm:hinge"] == keys["dssm:hinge@cosine"]  # unchanged for cosine: old caches stay valid
    assert len({keys["dssm:hinge"], keys["dssm:hinge@dot"], keys["dssm:hinge+rbm"], keys["dssm:hinge+rbm@cosine"]}) == 4


def test_extract_emits_dot_columns(tmp_path):
    tiny("dssm", "dot").save(tmp_path / "dot.ltrenc")
    ex = EncoderExtractor(name="dssm", path=str(tmp_path / "dot.ltrenc"), field=("title", "body")).fit()
    assert ex.feature_names() == ["dssm_title_dot", "dssm_body_dot"]
    pairs = pd.DataFrame({"query": TEXTS, "title": TEXTS[::-1], "body": TEXTS})
    np.testing.assert_allclose(ex.transform(pairs)[:, 0], ex.encoder_.similarity(TEXTS, TEXTS[::-1]), rtol=1e-6)


@pytest.mark.parametrize("arch", ["dssm", "clsm"])
def test_explain_says_dot(arch):
    enc = tiny(arch, "dot")
    ex = explain(enc, "cordless drill", "red garden hose", top=2)
    assert ex.score == "dot" and ex.similarity == pytest.approx(
        float(enc.similarity(["cordless drill"], ["red garden hose"])[0])
    )
    text = format_explanation(ex, query="cordless drill", doc="red garden hose")
    assert text.startswith(f"{arch} dot('cordless drill', 'red garden hose') = ") and "cosine" not in text
    if arch == "dssm":  # occlusion drops are differences of raw dot products
        assert "lowers the dot most" in text


def test_cli_train_encoder_score_dot_and_explain(tmp_path):
    path = tmp_path / "pairs.tsv"
    make_pairs(n_queries=24).to_csv(path, sep="\t", index=False)
    base = [
        "train-encoder",
        str(path),
        "--model",
        "dssm",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--threads",
        "1",
        "--loss",
        "hinge",
    ]
    result = CliRunner().invoke(cli, [*base, "--score", "dot", "--out", str(tmp_path / "dot.ltrenc")])
    assert result.exit_code == 0, result.output
    assert Encoder.load(tmp_path / "dot.ltrenc").score == "dot"
    result = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "cos.ltrenc")])
    assert result.exit_code == 0 and Encoder.load(tmp_path / "cos.ltrenc").score == "cosine"
    shown = CliRunner().invoke(cli, ["explain", str(tmp_path / "dot.ltrenc"), "drill", "cordless drill"])
    assert shown.exit_code == 0 and shown.output.startswith("dssm dot(")
    bad = CliRunner().invoke(cli, [*base, "--score", "l2", "--out", str(tmp_path / "x.ltrenc")])
    assert bad.exit_code == 2 and not (tmp_path / "x.ltrenc").exists()


# -- ONNX --------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["dssm", "clsm"])
def test_onnx_export_of_a_dot_encoder_is_unnormalised(tmp_path, arch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from ltrfeat.export.onnx import SIDECAR, OnnxEncoder, export_onnx

    enc = tiny(arch, "dot")
    sidecar = export_onnx(enc, tmp_path / "onnx")
    assert sidecar["score"] == "dot"
    onnx = OnnxEncoder.load(tmp_path / "onnx", threads=1)
    assert onnx.score == "dot"
    for side in ("query", "doc"):
        np.testing.assert_allclose(onnx.encode(TEXTS, side=side), enc.encode(TEXTS, side=side), atol=1e-5)
    # an export written before the score key existed is a cosine export
    data = json.loads((tmp_path / "onnx" / SIDECAR).read_text())
    del data["score"]
    (tmp_path / "onnx" / SIDECAR).write_text(json.dumps(data))
    assert OnnxEncoder.load(tmp_path / "onnx").score == "cosine"
    data["score"] = "l1"
    (tmp_path / "onnx" / SIDECAR).write_text(json.dumps(data))
    with pytest.raises(ModelFileError, match="unknown score"):
        OnnxEncoder.load(tmp_path / "onnx")


# -- serving -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served_world(tmp_path_factory):
    """A ranker over lexical columns, a dot-scored DSSM's ``dssm_title_dot`` and ``deepmatch_title_score``."""
    from ltrfeat.encoders._deepmatch import train_deepmatch
    from ltrfeat.features.extract import extract_ranking
    from ltrfeat.rankers.lambdamart import LambdaMART
    from builders import TINY
    from builders import build_world

    root = tmp_path_factory.mktemp("served")
    w = build_world(root, n_queries=16, encoder=False)
    texts = list(w["docs"].title) + list(w["queries"]["query"])
    hasher = TrigramHasher().fit(texts)
    torch.manual_seed(0)
    for score in ("dot", "cosine"):
        model = TwoTowerModel(model_config("dssm", hasher.n_features_, score=score, hidden=[16], out=8))
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.3)
        Encoder(hasher, model.eval()).save(root / f"{score}.ltrenc")
    data = w["data"]
    qtext, ttext = dict(zip(w["queries"].qid, w["queries"]["query"])), dict(zip(w["docs"].docid, w["docs"].title))
    pairs = pd.DataFrame(
        {
            "qid": data.qid,
            "query": [qtext[q] for q in data.qid],
            "doc": [ttext[d] for d in data.docid],
            "label": data.label,
        }
    )
    dm, _ = train_deepmatch(pairs, seed=0, **{**TINY, "epochs": 1})
    dm.save(root / "dm.ltrenc")
    extractors = [
        EncoderExtractor(name="dssm", path=str(root / "dot.ltrenc"), field="title"),
        EncoderExtractor(name="deepmatch", path=str(root / "dm.ltrenc"), field="title"),
    ]
    data = extract_ranking(data, extractors, queries=w["queries"], docs=w["docs"])
    assert data.feature_map.names[-2:] == ["dssm_title_dot", "deepmatch_title_score"]
    ranker = LambdaMART(n_estimators=20, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(data)
    ranker.save(root / "ranker.txt")
    return {**w, "data": data, "model": ranker, "ranker": root / "ranker.txt", "root": root}


def test_scorer_serves_dot_and_deepmatch_columns(served_world):
    from ltrfeat.serving.scorer import Scorer
    from builders import assert_scores_equal_offline

    w = served_world
    scorer = Scorer.load(
        w["ranker"],
        corpus_stats=w["corpus"],
        encoders={"dssm": w["root"] / "dot.ltrenc", "deepmatch": w["root"] / "dm.ltrenc"},
    )
    assert_scores_equal_offline(scorer, w, ("q0", "q5", "q15"), features_tol=1e-5, scores_tol=1e-6)


def test_scorer_refuses_an_encoder_of_the_other_score(served_world):
    from ltrfeat.serving.scorer import Scorer

    w = served_world
    with pytest.raises(LtrfeatError, match="is not the bundle the ranker.s dssm_title_dot was extracted with"):
        Scorer.load(
            w["ranker"],
            corpus_stats=w["corpus"],
            encoders={"dssm": w["root"] / "cosine.ltrenc", "deepmatch": w["root"] / "dm.ltrenc"},
        )
    # without the bundle the ranker's record names (moved away), its column cannot be computed
    recorded, away = w["root"] / "dm.ltrenc", w["root"] / "dm.ltrenc.away"
    recorded.rename(away)
    try:
        with pytest.raises(LtrfeatError, match="cannot compute: deepmatch_title_score"):
            Scorer.load(w["ranker"], corpus_stats=w["corpus"], encoders={"dssm": w["root"] / "dot.ltrenc"})
    finally:
        away.rename(recorded)


def test_scorer_with_a_dot_onnx_export(served_world, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from ltrfeat.export.onnx import export_onnx
    from ltrfeat.serving.scorer import Scorer
    from builders import candidates_of

    w = served_world
    export_onnx(Encoder.load(w["root"] / "dot.ltrenc"), tmp_path / "onnx")
    encoders = {"dssm": tmp_path / "onnx", "deepmatch": w["root"] / "dm.ltrenc"}
    onnx = Scorer.load(w["ranker"], corpus_stats=w["corpus"], encoders=encoders)
    rows, cands = candidates_of(w, "q3")
    np.testing.assert_allclose(
        onnx.features("river hotel", cands)[:, -2],
        Encoder.load(w["root"] / "dot.ltrenc").similarity(["river hotel"] * len(cands), [c["title"] for c in cands]),
        atol=1e-5,
    )


def test_http_score_with_dot_and_deepmatch(served_world):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from ltrfeat.serving.app import ServiceLimits, create_app
    from ltrfeat.serving.scorer import Scorer
    from builders import candidates_of

    w = served_world
    scorer = Scorer.load(
        w["ranker"],
        corpus_stats=w["corpus"],
        encoders={"dssm": w["root"] / "dot.ltrenc", "deepmatch": w["root"] / "dm.ltrenc"},
    )
    rows, cands = candidates_of(w, "q2")
    query = dict(zip(w["queries"].qid, w["queries"]["query"]))["q2"]
    with TestClient(
        create_app(scorer, limits=ServiceLimits(max_candidates=50, max_bytes=100_000)), base_url="http://localhost"
    ) as client:
        body = client.post("/score", json={"query": query, "candidates": cands}).json()
        assert {"dssm_title_dot", "deepmatch_title_score"} <= set(client.get("/health").json()["features"])
    np.testing.assert_allclose(body["scores"], w["model"].predict(w["data"])[rows], atol=1e-6)
