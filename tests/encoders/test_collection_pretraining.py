"""Pre-training on a collection's own text (query-like spans, no judgments) and fine-tuning from it (+init)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from builders import WordTeacher, assert_same_columns, make_pairs
from ltrfeat.cli.main import cli
from ltrfeat.experiments.crossfit import CrossFitConfig, crossfit_columns
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments._encoder_cache import cache_key
from ltrfeat.experiments._starting_points import StartingPoint
from ltrfeat.experiments._fold_trainer import train_one
from ltrfeat.experiments.fold_plans import plan_folds
from ltrfeat.experiments._encoder_options import spec_options
from ltrfeat.core.stages import StageProfile
from ltrfeat.encoders.encoder import Encoder
from ltrfeat.encoders.training import train_encoder
from ltrfeat.encoders.weak import span_pairs
from ltrfeat.core.errors import LtrfeatError, ParameterError, TextTableError


def _docs(pairs: pd.DataFrame) -> pd.DataFrame:
    titles = pairs["doc"].drop_duplicates().tolist()
    return pd.DataFrame({"docid": [f"d{i}" for i in range(len(titles))], "title": titles})


def test_spans_are_short_pieces_of_their_own_document_and_negatives_are_others():
    docs = pd.DataFrame(
        {
            "docid": ["a", "b", "c", "d"],
            "title": ["red cordless drill 18 volt", "blue garden hose", "123 456", "oak table"],
        }
    )
    pairs = span_pairs(docs, per_doc=3, max_words=2, negatives=2, seed=1)
    assert list(pairs.columns) == ["qid", "query", "doc", "label"]
    assert not pairs["qid"].str.startswith("c#").any()  # no letter in "123 456": not a document for spans
    pos, neg = pairs[pairs["label"] == 1], pairs[pairs["label"] == 0]
    own = dict(zip(docs["docid"], docs["title"]))
    for qid, span, doc in pos[["qid", "query", "doc"]].itertuples(index=False):
        assert doc == own[qid.split("#")[0]] and span in doc and 1 <= len(span.split()) <= 2
    assert pos.groupby(pos["qid"].str.split("#").str[0]).size().max() <= 3
    assert len(neg) == 2 * len(pos)
    assert all(doc != own[qid.split("#")[0]] for qid, doc in neg[["qid", "doc"]].itertuples(index=False))
    assert (pairs.groupby("qid", sort=False)["label"].first() == 1).all()  # each span's positive first
    pd.testing.assert_frame_equal(pairs, span_pairs(docs, per_doc=3, max_words=2, negatives=2, seed=1))
    assert not pairs.equals(span_pairs(docs, per_doc=3, max_words=2, negatives=2, seed=2))


def test_span_pairs_refuse_unusable_collections():
    with pytest.raises(TextTableError, match="no column.*body"):
        span_pairs(pd.DataFrame({"docid": ["a"], "title": ["x"]}), field="body")
    with pytest.raises(TextTableError, match="only 1 document"):
        span_pairs(pd.DataFrame({"docid": ["a", "b"], "title": ["red cat", "42"]}))
    with pytest.raises(ValueError, match="per_doc >= 1"):
        span_pairs(pd.DataFrame({"docid": ["a", "b"], "title": ["red cat", "blue dog"]}), per_doc=0)


@pytest.fixture(scope="module")
def pretrained():
    pairs = make_pairs()
    encoder, history = train_encoder(
        span_pairs(_docs(pairs), per_doc=3, seed=0),
        model="clsm",
        epochs=2,
        batch_size=128,
        val_fraction=0.1,
        progress=False,
    )
    return pairs, encoder, history


def test_the_span_task_is_learnt(pretrained):
    _, encoder, history = pretrained
    assert history[-1]["val_ndcg@10"] > history[0]["val_ndcg@10"] + 0.1  # a span finds its own document


def test_fine_tuning_starts_from_the_init_weights_and_vocabulary(pretrained):
    pairs, init, _ = pretrained
    before = {k: v.clone() for k, v in init.model.state_dict().items()}
    tuned, _ = train_encoder(
        pairs, model="clsm", loss="generalized", epochs=1, batch_size=128, init=init, val_fraction=0, progress=False
    )  # no early stopping: the trained weights are kept
    assert tuned.hasher.to_json() == init.hasher.to_json()
    assert all(torch.equal(v, init.model.state_dict()[k]) for k, v in before.items())  # the init is not changed
    assert any(not torch.equal(v, tuned.model.state_dict()[k]) for k, v in before.items())
    _, history = train_encoder(
        pairs, model="clsm", loss="generalized", epochs=1, batch_size=128, init=init, progress=False
    )
    _, scratch_history = train_encoder(
        pairs, model="clsm", loss="generalized", epochs=1, batch_size=128, progress=False
    )
    assert history[0]["val_ndcg@10"] != scratch_history[0]["val_ndcg@10"]  # epoch 0 scores the init's weights
    assert tuned.training["params"]["init"]["data_sha256"] == init.training["data_sha256"]


def test_an_init_that_does_not_fit_the_config_is_refused(pretrained):
    pairs, init, _ = pretrained
    with pytest.raises(ParameterError, match="init encoder has model='clsm' but the config asks for model='dssm'"):
        train_encoder(pairs, model="dssm", init=init, progress=False)
    with pytest.raises(ParameterError, match="score='cosine'"):
        train_encoder(pairs, model="clsm", score="dot", init=init, progress=False)


def test_ablation_spec_fine_tunes_every_fold_from_the_bundle(pretrained, tmp_path):
    pairs, init, _ = pretrained
    init.save(tmp_path / "coll.ltrenc")
    spec = EncoderSpec.parse(f"clsm:generalized+init={tmp_path / 'coll.ltrenc'}")
    assert (spec.model, spec.loss, spec.pretrain, spec.name) == (
        "clsm",
        "generalized",
        "init",
        "clsm-generalized-init-coll",
    )
    options = {"epochs": 1, "batch_size": 128}
    start = StartingPoint(spec, [], options=options, seed=0, cache=None)
    encoder, cached = train_one(spec, pairs, options=options, seed=0, cache=tmp_path / "cache", start=start)
    assert not cached and encoder.hasher.to_json() == init.hasher.to_json()
    assert train_one(spec, pairs, options=options, seed=0, cache=tmp_path / "cache", start=start)[1]
    key = cache_key(spec, {"epochs": 1}, pairs, 0, start.key)
    other = copy.deepcopy(init)
    with torch.no_grad():
        next(other.model.parameters()).add_(1.0)
    other.save(tmp_path / "coll.ltrenc")  # other bytes at the same path: another cache key
    start = StartingPoint(spec, [], options=options, seed=0, cache=None)
    assert cache_key(spec, {"epochs": 1}, pairs, 0, start.key) != key
    with pytest.raises(LtrfeatError, match=r"\+init needs the pre-trained bundle"):
        EncoderSpec.parse("clsm:generalized+init")
    with pytest.raises(LtrfeatError, match="the pre-trainings are"):
        EncoderSpec.parse("deepmatch+init=x")


def test_cli_pretrains_on_spans_then_fine_tunes_from_the_bundle(tmp_path):
    pairs = make_pairs()
    _docs(pairs).to_csv(tmp_path / "docs.tsv", sep="\t", index=False)
    pairs.to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    runner = CliRunner()
    res = runner.invoke(
        cli,
        [
            "train-encoder",
            "--from-docs",
            str(tmp_path / "docs.tsv"),
            "--pair",
            "spans:title",
            "--spans-per-doc",
            "2",
            "--epochs",
            "1",
            "--out",
            str(tmp_path / "coll.ltrenc"),
        ],
    )
    assert res.exit_code == 0, res.output
    coll = Encoder.load(tmp_path / "coll.ltrenc")
    assert coll.training["n_pairs"] == 72 * 2 * 5  # 72 titles x 2 spans x (1 positive + 4 negatives)
    res = runner.invoke(
        cli,
        [
            "train-encoder",
            str(tmp_path / "pairs.tsv"),
            "--init",
            str(tmp_path / "coll.ltrenc"),
            "--loss",
            "generalized",
            "--epochs",
            "1",
            "--out",
            str(tmp_path / "tuned.ltrenc"),
        ],
    )
    assert res.exit_code == 0, res.output
    tuned = Encoder.load(tmp_path / "tuned.ltrenc")
    assert tuned.training["params"]["init"]["data_sha256"] == coll.training["data_sha256"]
    assert np.isfinite(tuned.similarity(["a b"], ["c d"])).all()
    res = runner.invoke(
        cli,
        [
            "train-encoder",
            str(tmp_path / "pairs.tsv"),
            "--init",
            str(tmp_path / "coll.ltrenc"),
            "--model",
            "dssm",
            "--out",
            str(tmp_path / "bad.ltrenc"),
        ],
    )
    assert res.exit_code == 2 and "init encoder has model='clsm'" in res.output
    assert not (tmp_path / "bad.ltrenc").exists()


def test_spans_spec_pretrains_once_on_the_documents_only_then_fine_tunes_every_fold(tmp_path):
    pairs = make_pairs()
    spec = EncoderSpec.parse("clsm:generalized+spans")
    assert (spec.pretrain, spec.name) == ("spans", "clsm-generalized-spans")
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    options = {"epochs": 1, "batch_size": 128, "spans_per_doc": 2, "span_epochs": 2}
    profile = StageProfile()
    first = crossfit_columns(pairs, plans, [spec], options=options, cache=tmp_path, progress=False, profile=profile)
    jobs = profile.encoders["clsm-generalized-spans"]["jobs"]
    assert "span pre-training" in jobs and len(jobs) == 1 + 6
    (bundle,) = (tmp_path / "encoders").glob("clsm-generalized-spans-pretrain-*.ltrenc")
    pretrained = Encoder.load(bundle)
    n_docs = pairs["doc"].nunique()
    assert pretrained.training["n_pairs"] == n_docs * 2 * 5  # 2 spans x (1 positive + 4 negatives) per document
    assert pretrained.training["params"]["loss"] == "softmax" and pretrained.training["params"]["epochs"] == 2
    for path in (tmp_path / "encoders").glob("clsm-generalized-spans-[0-9a-f]*.ltrenc"):
        fold = Encoder.load(path)
        assert fold.hasher.to_json() == pretrained.hasher.to_json()  # fine-tuned from the span pre-training
        assert fold.training["params"]["loss"] == "generalized"
    # the pre-training reads the documents only: other queries and labels leave its key unchanged
    relabelled = pairs.assign(query=pairs["query"] + " x", label=1 - pairs["label"].clip(0, 1))
    key = StartingPoint(spec, pairs["doc"].tolist(), options={}, seed=0, cache=None).key
    assert StartingPoint(spec, relabelled["doc"].tolist(), options={}, seed=0, cache=None).key == key
    assert StartingPoint(spec, (pairs["doc"] + " y").tolist(), options={}, seed=0, cache=None).key != key
    assert StartingPoint(spec, pairs["doc"].tolist(), options={"spans_per_doc": 3}, seed=0, cache=None).key != key
    # a warm run takes every fold encoder's scores from the cache and never touches the pre-training
    profile = StageProfile()
    again = crossfit_columns(pairs, plans, [spec], options=options, cache=tmp_path, progress=False, profile=profile)
    assert "span pre-training" not in profile.encoders["clsm-generalized-spans"]["jobs"]
    for fold in first:
        for name in first[fold]:
            np.testing.assert_array_equal(first[fold][name], again[fold][name])
    with pytest.raises(LtrfeatError, match="clsm takes no path"):
        EncoderSpec.parse("clsm:generalized+spans=docs.tsv")


@pytest.mark.parametrize("n_texts, per_doc", [(800, 16), (5_000, 10), (12_500, 4), (54_667, 4)])
def test_small_collections_get_more_spans_per_document(n_texts, per_doc):
    spec = EncoderSpec.parse("clsm:generalized+spans")
    texts = [f"doc {i}" for i in range(n_texts)]
    assert StartingPoint(spec, texts, options={}, seed=0, cache=None).span_settings["spans_per_doc"] == per_doc
    given = StartingPoint(spec, texts, options={"spans_per_doc": 2}, seed=0, cache=None)
    assert given.span_settings["spans_per_doc"] == 2


@pytest.fixture
def word_teacher(monkeypatch):
    """A fake MiniLM for every teacher spec (counts the texts it encodes); the teacher-vector cache emptied."""
    from ltrfeat.encoders import distill

    teacher = WordTeacher()
    monkeypatch.setattr(distill, "load_teacher", lambda spec: teacher)
    distill.clear_cache()
    yield teacher
    distill.clear_cache()


SPANS_T = {"epochs": 1, "batch_size": 128, "spans_per_doc": 2, "span_epochs": 1, "distill_epochs": 2}
SPANS_T |= {"sizes": {"conv": 32, "out": 16}}


def test_spans_teacher_distils_the_span_pretraining_once_on_its_positive_pairs(tmp_path, word_teacher):
    from ltrfeat.encoders import distill

    pairs = make_pairs()
    spec = EncoderSpec.parse("clsm:generalized+spans+teacher")
    assert (spec.pretrain, spec.name, spec.teacher) == ("spans+teacher", "clsm-generalized-spans-teacher", "sbert")
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    profile = StageProfile()
    first = crossfit_columns(pairs, plans, [spec], options=SPANS_T, cache=tmp_path, progress=False, profile=profile)
    jobs = profile.encoders[spec.name]["jobs"]
    assert "span pre-training" in jobs and len(jobs) == 1 + 6
    (bundle,) = (tmp_path / "encoders").glob(f"{spec.name}-pretrain-*.ltrenc")
    pretrained = Encoder.load(bundle)
    assert pretrained.training["n_pairs"] == pairs["doc"].nunique() * 2 * 5  # 1 positive + 4 negatives per span
    record = pretrained.training["pretrain"]
    assert record["method"] == "distillation" and record["epochs"] == 2
    assert pretrained.training["params"]["distill_rows"] == "positives"
    # the distillation read the positive (span, own document) training pairs only: one per span, no negative ...
    spans = span_pairs(
        pd.DataFrame({"docid": [str(i) for i in range(pairs["doc"].nunique())], "text": pairs["doc"].unique()}),
        field="text",
        per_doc=2,
        negatives=4,
    )
    positives = spans[spans["label"] > 0]
    assert 0.9 * len(positives) <= record["n_pairs"] <= len(positives)  # 2% of the spans validate
    # ... and the teacher encoded each distinct text of those pairs once: the spans and their documents
    queries, docs = distill._VECTORS[("sbert", "query")], distill._VECTORS[("sbert", "doc")]
    assert set(queries) <= set(positives["query"]) and len(queries) == record["n_queries"]
    assert set(docs) <= set(positives["doc"]) and len(docs) == record["n_docs"]
    assert word_teacher.texts == record["n_queries"] + record["n_docs"]
    for path in (tmp_path / "encoders").glob(f"{spec.name}-[0-9a-f]*.ltrenc"):
        fold = Encoder.load(path)
        assert fold.hasher.to_json() == pretrained.hasher.to_json()  # fine-tuned from the distilled pre-training
        assert fold.training["params"]["loss"] == "generalized" and "teacher" not in fold.training["params"]
    # a warm run neither pre-trains nor calls the teacher; the scores are the cold run's
    distill.clear_cache()
    calls, profile = word_teacher.calls, StageProfile()
    again = crossfit_columns(pairs, plans, [spec], options=SPANS_T, cache=tmp_path, progress=False, profile=profile)
    assert word_teacher.calls == calls and "span pre-training" not in profile.encoders[spec.name]["jobs"]
    assert_same_columns(first, again)


def test_spans_teacher_key_names_the_teacher_and_keeps_distillation_out_of_the_folds(tmp_path):
    texts = make_pairs()["doc"].tolist()

    def start(text, **options):
        spec = EncoderSpec.parse(text)
        return StartingPoint(spec, texts, options=spec_options(spec, SPANS_T | options), seed=0, cache=None)

    plain, distilled = start("clsm:generalized+spans"), start("clsm:generalized+spans+teacher")
    assert "distill_epochs" not in plain.options | plain.distill_settings  # +spans has no teacher
    # the given distillation settings over the span pre-training's own defaults
    assert distilled.distill_settings == {
        "distill_epochs": 2,
        "distill_loss": "vector",
        "distill_batch_size": 1024,
        "distill_temperature": 0.1,
    }
    assert "distill_epochs" not in distilled.options
    assert distilled.options == plain.options  # the folds fine-tune with the same settings
    keys = {
        plain.key,
        distilled.key,
        start(f"clsm:generalized+spans+teacher={tmp_path}").key,
        start("clsm:generalized+spans+teacher", distill_epochs=3).key,
        start("clsm:generalized+spans+teacher", distill_temperature=0.2).key,
        start("clsm:generalized+spans+teacher", distill_loss="kl").key,
    }
    assert len(keys) == 6
    assert start("clsm:softmax+spans+teacher").key == distilled.key  # the fold loss is not the pre-training's
    assert EncoderSpec.parse(f"dssm:softmax+spans+teacher={tmp_path}").teacher == f"sbert={tmp_path}"
    with pytest.raises(LtrfeatError, match="the pre-trainings are"):
        EncoderSpec.parse("clsm:generalized+teacher+spans")
    with pytest.raises(LtrfeatError, match="unknown encoder"):
        EncoderSpec.parse("clsm:generalized+spans+")


def test_spans_teacher_pretraining_is_the_distilled_towers_by_default(tmp_path, word_teacher):
    """The distilled towers, at the level of the vectors, as wide as the teacher's (WordTeacher: 16) unless given."""
    spec = EncoderSpec.parse("clsm:generalized+spans+teacher")
    options = {k: v for k, v in SPANS_T.items() if k not in ("span_epochs", "distill_epochs")}
    options["sizes"] = {"conv": 32}
    start = StartingPoint(spec, make_pairs()["doc"].tolist(), options=options, seed=0, cache=tmp_path)
    assert start.span_settings["span_epochs"] == 0 and start.distill_settings["distill_epochs"] == 20  # few pairs
    encoder = start.encoder()
    training = encoder.training
    assert training["params"]["epochs"] == 0 and [h["epoch"] for h in training["history"]] == [0]
    assert training["keep_start"]["kept"] and training["pretrain"]["loss_function"] == "vector"
    assert training["pretrain"]["epochs"] == 20 and training["pretrain"]["batch_size"] == 1024
    assert encoder.model.config["tower"] == {"context": 1, "conv": 32, "out": word_teacher.dim}
    assert encoder.encode(["a b"], side="doc").shape == (1, word_teacher.dim)
    narrow = options | {"sizes": {"conv": 32, "out": 8}}
    with pytest.raises(LtrfeatError, match="towers are 8 wide and the teacher's vectors 16"):
        StartingPoint(spec, make_pairs()["doc"].tolist(), options=narrow, seed=0, cache=None).encoder()
    kl = StartingPoint(spec, make_pairs()["doc"].tolist(), options=options | {"distill_loss": "kl"}, seed=0, cache=None)
    assert kl.encoder().training["pretrain"]["temperature"] == 0.1 and kl.encoder().model.config["tower"]["out"] == 128
    plain = EncoderSpec.parse("clsm:generalized+spans")
    with pytest.raises(LtrfeatError, match="span_epochs=0 leaves the"):
        StartingPoint(plain, ["a b", "c d"], options={"span_epochs": 0}, seed=0, cache=None)


def test_spans_teacher_folds_distil_their_own_training_pairs_from_the_pretraining(tmp_path, word_teacher):
    """fold_distill_epochs: every fold training distils the teacher's vectors of its own training pairs (validation
    queries held out, test queries never in its table) from the span pre-training, then fine-tunes; the pre-training
    itself is the one without it (same key, made once)."""
    pairs = make_pairs()
    spec = EncoderSpec.parse("clsm:generalized+spans+teacher")
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    starts: dict = {}
    plain = crossfit_columns(pairs, plans, [spec], options=SPANS_T, cache=tmp_path, progress=False, starts=starts)
    assert starts[spec.name]["start"] == "the span pre-training distilled from MiniLM"
    options = SPANS_T | {"fold_distill_epochs": 2}
    distilled = crossfit_columns(pairs, plans, [spec], options=options, cache=tmp_path, progress=False, starts=starts)
    assert (
        starts[spec.name]["start"] == "the span pre-training distilled from MiniLM, then on the fold's training pairs"
    )
    (bundle,) = (tmp_path / "encoders").glob(f"{spec.name}-pretrain-*.ltrenc")
    pretrained = Encoder.load(bundle)
    folds = [Encoder.load(p) for p in (tmp_path / "encoders").glob(f"{spec.name}-[0-9a-f]*.ltrenc")]
    with_teacher = [f for f in folds if "teacher" in f.training["params"]]
    assert len(folds) == 12 and len(with_teacher) == 6  # six fold trainings of each run
    for fold in with_teacher:
        params, record = fold.training["params"], fold.training["pretrain"]
        assert params["init"]["data_sha256"] == pretrained.training["data_sha256"]
        assert fold.hasher.to_json() == pretrained.hasher.to_json()
        assert params["distill_epochs"] == 2 and params["distill_loss"] == "vector"
        assert record["loss_function"] == "vector" and record["epochs"] == 2 and record["batch_size"] == 1024
        # the distillation read the training split's pairs only: the validation ones are held out
        assert 0 < record["n_pairs"] <= fold.training["n_train_pairs"] < fold.training["n_pairs"]
    assert not np.allclose(
        plain["fold1"][f"{spec.name}_doc_cos"], distilled["fold1"][f"{spec.name}_doc_cos"], 0, 0, True
    )
    keys = {
        StartingPoint(spec, pairs["doc"].tolist(), options=spec_options(spec, o), seed=0, cache=None).key
        for o in (SPANS_T, options)
    }
    assert len(keys) == 1
    assert "fold_distill_epochs" not in spec_options(EncoderSpec.parse("clsm:generalized+spans"), options)
    assert "fold_distill_epochs" not in spec_options(EncoderSpec.parse("clsm:generalized+teacher"), options)
    with pytest.raises(ParameterError, match="fold_distill_epochs >= 0"):
        CrossFitConfig(options={"fold_distill_epochs": -1})


def test_span_options_take_zero_span_epochs_only():
    assert CrossFitConfig(options={"span_epochs": 0, "clsm.spans_per_doc": 1}).options["span_epochs"] == 0
    for bad in ({"spans_per_doc": 0}, {"clsm.span_epochs": -1}, {"span_epochs": 1.5}):
        with pytest.raises(ParameterError, match="the \\+spans settings are whole numbers"):
            CrossFitConfig(options=bad)


def test_zero_epochs_needs_a_teacher():
    from ltrfeat.encoders.training import train_encoder

    with pytest.raises(LtrfeatError, match="epochs=0 trains nothing without a teacher"):
        train_encoder(make_pairs(), epochs=0, progress=False)


@pytest.mark.slow  # worker processes
def test_spans_teacher_fold_trainings_in_workers_start_from_the_pretraining_made_here(tmp_path, word_teacher):
    pairs = make_pairs()
    spec = EncoderSpec.parse("dssm:generalized+spans+teacher")
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    options = SPANS_T | {"sizes": {"hidden": [32], "out": 16}}
    alone = crossfit_columns(pairs, plans, [spec], options=options, progress=False, encoder_jobs=1)
    pooled = crossfit_columns(pairs, plans, [spec], options=options, progress=False, encoder_jobs=2, cache=tmp_path)
    assert_same_columns(alone, pooled)  # the workers never saw the fake teacher: only the made start
