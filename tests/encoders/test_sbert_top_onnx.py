"""A fine-tuned MiniLM's top layers on ONNX Runtime give the torch pass's vectors over the kept frozen states."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")

from ltrfeat.encoders import sbert_onnx, sbert_prefix, sbert_top_onnx  # noqa: E402
from ltrfeat.encoders._sbert_finetuned import SbertFinetuned, encode_with_prefix  # noqa: E402
from ltrfeat.encoders.sbert_training import _transformer, frozen_key  # noqa: E402
from builders import tiny_sbert_dir  # noqa: E402

LONG = "a very long product description with many words " * 10  # beyond 32 tokens: truncated
TEXTS = ["red drill", "cordless hammer drill 18v", LONG, "x", "paint brush set", "door", "blue saw blade 24 in."]
TOLERANCE = 1e-5  # float rounding: the two engines add in other orders


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from sentence_transformers import SentenceTransformer

    base = str(tiny_sbert_dir(tmp_path_factory.mktemp("tiny")))
    model = SentenceTransformer(base, device="cpu")
    model.eval()
    return model, base


def _prefix(model, base):
    sbert_prefix.clear()
    key = frozen_key(model, 1, base=base, max_seq_length=32)
    return sbert_prefix.FrozenPrefix(model, 1, key=key, transformer=_transformer(model, base))


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_onnx_top_vectors_equal_the_torch_top_vectors(tiny, batch_size):
    prefix = _prefix(*tiny)
    expected = encode_with_prefix(prefix, TEXTS, batch_size=batch_size)
    top = sbert_top_onnx.OnnxTop.export(prefix, threads=1)
    got = top.encode(TEXTS, batch_size=batch_size)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=TOLERANCE)


def test_the_engine_choice_picks_the_pass(tiny, monkeypatch):
    """A fine-tuned encoder with kept states scores on ONNX Runtime when the MiniLM engine is onnx, or auto with
    onnxruntime installed (torch, or auto without it: torch); the export is made once per encoder and the vectors
    are the same."""
    model, base = tiny
    prefix = _prefix(model, base)
    encoder = SbertFinetuned({"shared": model}, max_seq_length=32, prefixes={"shared": prefix})
    exports = []
    export = sbert_top_onnx.OnnxTop.export
    monkeypatch.setattr(sbert_top_onnx.OnnxTop, "export", lambda p, **kw: exports.append(p) or export(p, **kw))
    with sbert_onnx.engine("torch"):
        by_torch = encoder.similarity(TEXTS, TEXTS[::-1])
    with sbert_onnx.engine("auto"), monkeypatch.context() as without:
        without.setattr(sbert_onnx, "available", lambda: False)
        assert np.array_equal(encoder.similarity(TEXTS, TEXTS[::-1]), by_torch)
    assert exports == []
    for choice in ("auto", "onnx"):
        with sbert_onnx.engine(choice):
            by_onnx = encoder.similarity(TEXTS, TEXTS[::-1])
            encoder.similarity(TEXTS[:2], TEXTS[:2])
        np.testing.assert_allclose(by_onnx, by_torch, atol=TOLERANCE)
        assert exports == [prefix], choice


def test_bf16_and_other_heads_stay_on_torch(tiny):
    prefix = _prefix(*tiny)
    assert sbert_top_onnx.top_supported(prefix)
    prefix.precision = "bf16"
    assert not sbert_top_onnx.top_supported(prefix)


def test_the_pool_task_scores_on_the_ablation_engine(monkeypatch):
    """The workers score a fine-tuning's rows on the engine the ablation chose (``sbert.engine``), not their own
    default."""
    from ltrfeat.experiments import _encoder_pool
    from ltrfeat.experiments._training_task import TrainingTask

    seen = []
    monkeypatch.setattr(_encoder_pool, "fold_scores", lambda *a: seen.append(sbert_onnx.chosen()) or {})
    task = TrainingTask(None, None, {"threads": 1}, 0, None, None, None, {}, minilm_engine="onnx")
    _encoder_pool.fit_task(task, lambda *a, **k: (object(), False))
    assert seen == ["onnx"] and sbert_onnx.chosen() == "auto"
