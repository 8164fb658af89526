"""DSSM / CLSM towers against dense reference computations, padding invariance, and the Encoder API."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ltrfeat.encoders import Encoder, TwoTowerModel, model_config
from ltrfeat.core.errors import TextTableError
from ltrfeat.encoders.hashing import TrigramHasher

CORPUS = ["cordless drill 18v", "red garden hose 50 ft", "ceiling fan with light", "drill bits", "hose"]


def make(arch, *, shared=False, seed=0, **sizes):
    hasher = TrigramHasher().fit(CORPUS)
    torch.manual_seed(seed)
    return Encoder(hasher, TwoTowerModel(model_config(arch, hasher.n_features_, shared=shared, **sizes)))


def dense_counts(hasher, word):
    v = torch.zeros(hasher.n_features_, dtype=torch.float64)
    for i in hasher.word_trigrams(word):
        v[i] += 1
    return v


def test_dssm_equals_dense_feed_forward():
    enc = make("dssm", hidden=[8, 6], out=4)
    tower = enc.model.query_tower.double()
    text = "cordless drill drill 18v"
    x = sum(dense_counts(enc.hasher, w) for w in enc.hasher.words(text))
    h = torch.tanh(x @ tower.trigrams.weight + tower.trigram_bias)
    for layer in tower.layers:
        h = torch.tanh(layer(h))
    with torch.no_grad():
        got = tower(tower.prepare(enc.hasher, [text]))[0]
        assert torch.allclose(got, h, atol=1e-12)


def test_dssm_inference_path_equals_the_training_path():
    enc = make("dssm")
    tower = enc.model.doc_tower
    batch = tower.prepare(enc.hasher, CORPUS + ["", "qqq drill"])
    trained = tower(batch)
    assert trained.requires_grad
    with torch.inference_mode():  # the in-place path
        assert torch.equal(tower(batch), trained.detach())


@pytest.mark.parametrize("context", [0, 1, 2])
def test_clsm_equals_dense_convolution_and_max_pooling(context):
    enc = make("clsm", context=context, conv=7, out=5)
    tower = enc.model.doc_tower.double()
    text = "red garden hose"
    n = 2 * context + 1
    boundary = torch.zeros(enc.hasher.n_features_, dtype=torch.float64)
    boundary[1] = 1  # <s>
    words = [boundary] * context + [dense_counts(enc.hasher, w) for w in enc.hasher.words(text)] + [boundary] * context
    # W_c as one (K, n * V) matrix acting on the concatenated window l_t (CLSM eq. 1-2)
    w = tower.trigrams.weight.view(-1, n, tower.conv)  # (V, n, K)
    w_c = torch.cat([w[:, k, :].T for k in range(n)], dim=1)
    h = torch.stack([torch.tanh(w_c @ torch.cat(words[t : t + n]) + tower.conv_bias) for t in range(3)])
    expected = torch.tanh(tower.semantic(h.max(dim=0).values))
    with torch.no_grad():
        got = tower(tower.prepare(enc.hasher, [text]))[0]
        assert torch.allclose(got, expected, atol=1e-12)


def test_clsm_training_step_is_bit_identical_to_the_out_of_place_computation():
    # the tower adds the convolution bias in place on the (windows, K) matrix: same values, same gradients
    enc = make("clsm", conv=16, out=8)
    tower = enc.model.doc_tower
    texts = CORPUS + ["", "drill drill drill hose"]  # an empty text, and repeated windows (ties in the max)
    batch = tower.prepare(enc.hasher, texts)
    weight = torch.randn(len(texts), 8, generator=torch.Generator().manual_seed(0))
    (tower(batch) * weight).sum().backward()
    got = {name: p.grad.clone() for name, p in tower.named_parameters()}
    tower.zero_grad()
    words = tower.trigrams(torch.from_numpy(batch.word_ids), torch.from_numpy(batch.word_offsets))
    rows = torch.from_numpy(batch.windows) * tower.window + torch.arange(tower.window)
    conv = torch.nn.functional.embedding_bag(rows, words.view(-1, tower.conv), mode="sum") + tower.conv_bias
    pooled = torch.segment_reduce(conv, "max", lengths=torch.from_numpy(batch.lengths), axis=0)
    (torch.tanh(tower.semantic(torch.tanh(pooled))) * weight).sum().backward()
    for name, p in tower.named_parameters():
        assert torch.equal(p.grad, got[name]), name


@pytest.mark.parametrize("arch", ["dssm", "clsm"])
def test_padding_invariance(arch):
    enc = make(arch)
    short = "drill"
    long_texts = ["ceiling fan with light and extra long remote control " * 3, "", "red garden hose 50 ft"]
    for side in ("query", "doc"):
        alone = enc.encode([short], side=side)
        batched = enc.encode(long_texts + [short], side=side)[-1:]
        np.testing.assert_allclose(alone, batched, atol=1e-6, rtol=0)


@pytest.mark.parametrize("arch", ["dssm", "clsm"])
def test_encode_gives_normalised_float32_rows_in_input_order(arch):
    enc = make(arch, out=16)
    texts = ["drill", "hose", "drill", "", "unseen words qqq"]
    vec = enc.encode(texts, side="doc", batch_size=2)
    assert vec.dtype == np.float32 and vec.shape == (5, 16)
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1, atol=1e-6)
    assert np.array_equal(vec[0], vec[2])
    np.testing.assert_allclose(enc.encode(["hose"], side="doc")[0], vec[1], atol=1e-6)


def test_separate_towers_differ_and_shared_tower_is_one():
    enc = make("clsm")
    assert not np.allclose(enc.encode(["drill"], side="query"), enc.encode(["drill"], side="doc"))
    shared = make("clsm", shared=True)
    assert shared.model.tower("doc") is shared.model.tower("query")
    assert not any(k.startswith("doc_tower") for k in shared.model.state_dict())
    np.testing.assert_array_equal(shared.encode(["drill"], side="query"), shared.encode(["drill"], side="doc"))


def test_similarity_is_the_rowwise_cosine():
    enc = make("dssm")
    queries, docs = ["drill", "hose", "drill"], ["cordless drill", "drill bits", "garden hose"]
    expected = (enc.encode(queries, side="query") * enc.encode(docs, side="doc")).sum(1)
    np.testing.assert_allclose(enc.similarity(queries, docs), expected, atol=1e-6)
    with pytest.raises(ValueError, match="aligned"):
        enc.similarity(["a"], ["b", "c"])


def test_bad_inputs():
    enc = make("dssm")
    with pytest.raises(TextTableError, match="not a string"):
        enc.encode(["drill", float("nan")])
    with pytest.raises(ValueError, match="side"):
        enc.encode(["drill"], side="title")
    with pytest.raises(ValueError, match="size option"):
        model_config("dssm", 10, conv=3)
    with pytest.raises(ValueError, match="architecture"):
        model_config("lstm", 10)


def test_unknown_trigram_weights_start_at_zero():
    enc = make("dssm")
    assert torch.count_nonzero(enc.model.query_tower.trigrams.weight[0]) == 0
    np.testing.assert_array_equal(enc.encode(["qqq"]), enc.encode(["zzz"]))
