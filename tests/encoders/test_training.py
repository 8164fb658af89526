"""Training: soft labels, the local NDCG, learning on generated data, determinism, checkpoint/resume."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from builders import train_until_interrupted
from ltrfeat.encoders.negatives import Sampler
from ltrfeat.encoders.training_pairs import map_soft_labels, prepare_pairs
from ltrfeat.encoders.validation import ndcg_at
from ltrfeat.encoders.training import train_encoder
from ltrfeat.core.errors import ModelFileError, TextTableError
from builders import make_pairs

SMALL = {"dssm": {"hidden": [48], "out": 24}, "clsm": {"conv": 48, "out": 24}}


def quick(pairs, **kw):
    arch = kw.pop("model", "dssm")
    opts = dict(
        model=arch,
        sizes=SMALL[arch],
        epochs=6,
        batch_size=32,
        lr=1e-2,
        val_fraction=0.25,
        patience=6,
        progress=False,
        threads=1,
    )
    opts.update(kw)
    return train_encoder(pairs, **opts)


def test_ndcg_matches_sklearn_on_random_inputs():
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(20), rng.integers(1, 15, size=20))
    scores, rels = rng.random(len(groups)), rng.integers(0, 4, len(groups))
    expected = [
        ndcg_score([2.0 ** rels[groups == g] - 1], [scores[groups == g]], k=10)
        for g in range(20)
        if (groups == g).sum() > 1 and rels[groups == g].max() > 0
    ]
    single = [g for g in range(20) if (groups == g).sum() == 1 and rels[groups == g].max() > 0]
    assert np.isclose(ndcg_at(scores, rels, groups, k=10), np.mean(expected + [1.0] * len(single)))
    # groups need not be contiguous, ties keep input order (encoders keep the checkpoints they kept before the
    # reported metrics took the expected value over tie orders), no relevant document -> skipped
    assert ndcg_at([0.5, 0.5, 0.1], [0, 1, 0], ["a", "a", "b"], k=10) == pytest.approx(1 / np.log2(3))
    assert np.isnan(ndcg_at([0.3], [0], [1]))


def test_soft_label_maps():
    assert map_soft_labels(np.array([1.0, 2.0, 3.0]), "linear").tolist() == [0, 0.5, 1]
    clicks = map_soft_labels(np.array([0.0, 1.0, 3.0, 100.0]), "clicks", click_scale=1.0)
    assert clicks[0] == 0 and np.all(np.diff(clicks) > 0) and clicks[-1] < 1
    assert clicks.tolist()[:3] == [0, 0.5, 0.75]
    with pytest.raises(TextTableError, match="at least two"):
        map_soft_labels(np.array([2.0, 2.0]), "linear")
    with pytest.raises(TextTableError, match=r"\[0, 1\]"):
        map_soft_labels(np.array([0.2, 1.5]), "identity")
    with pytest.raises(TextTableError, match=">= 0"):
        map_soft_labels(np.array([-1.0, 2.0]), "clicks")


@pytest.mark.parametrize(
    "arch,loss,extra",
    [
        ("dssm", "softmax", {}),
        ("dssm", "generalized", {}),
        ("dssm", "hinge", {"hard_negatives": 2}),
        ("clsm", "softmax", {"in_batch": False, "hard_negatives": 1}),
        ("clsm", "generalized", {"negatives": 0}),
    ],
)
def test_training_beats_a_random_encoder(arch, loss, extra):
    encoder, history = quick(make_pairs(), model=arch, loss=loss, **extra)
    random_ndcg = history[0]["val_ndcg@10"]
    assert encoder.training["validation"]["ndcg@10"] > random_ndcg + 0.15
    assert encoder.training["best_epoch"] >= 1 and len(history) >= 2
    assert history[1]["train_loss"] > history[-1]["train_loss"]


def test_same_seed_same_encoder_other_seed_differs():
    pairs = make_pairs()
    a, _ = quick(pairs, epochs=2, seed=5)
    b, _ = quick(pairs, epochs=2, seed=5)
    c, _ = quick(pairs, epochs=2, seed=6)
    for key, value in a.model.state_dict().items():
        assert np.array_equal(value.numpy(), b.model.state_dict()[key].numpy())
    assert not np.array_equal(a.encode(["x y"]), c.encode(["x y"]))
    assert a.training["data_sha256"] == b.training["data_sha256"]


def test_resume_equals_an_uninterrupted_run(tmp_path, monkeypatch):
    pairs = make_pairs()
    opts = dict(model="clsm", epochs=4, hard_negatives=1)
    full, full_history = quick(pairs, checkpoint=tmp_path / "full.ckpt", **opts)

    train_until_interrupted(monkeypatch, epoch=2, train=lambda: quick(pairs, checkpoint=tmp_path / "part.ckpt", **opts))
    resumed, history = quick(pairs, checkpoint=tmp_path / "part.ckpt", resume=tmp_path / "part.ckpt", **opts)
    assert [h["val_ndcg@10"] for h in history] == [h["val_ndcg@10"] for h in full_history]
    for key, value in full.model.state_dict().items():
        assert np.array_equal(value.numpy(), resumed.model.state_dict()[key].numpy()), key
    with pytest.raises(ModelFileError, match="other training data or options"):
        quick(pairs, resume=tmp_path / "part.ckpt", **{**opts, "epochs": 5})


def test_early_stopping_keeps_the_best_epoch():
    encoder, history = quick(make_pairs(), epochs=12, patience=1, lr=0.05)
    best = max(h["val_ndcg@10"] for h in history)
    assert encoder.training["validation"]["ndcg@10"] == best
    assert len(history) - 1 - encoder.training["best_epoch"] <= 1


@pytest.mark.parametrize(
    "change,match",
    [
        (lambda p: p.drop(columns="doc"), "lacks column"),
        (lambda p: p.assign(doc=[None] + p["doc"].tolist()[1:]), "row 1: doc text"),
        (lambda p: p.assign(label=["x"] + p["label"].tolist()[1:]), "not a finite number"),
        (lambda p: p.iloc[:0], "empty"),
        (lambda p: p.assign(label=0), "at least two label values"),
    ],
)
def test_bad_tables(change, match):
    with pytest.raises(TextTableError, match=match):
        quick(change(make_pairs()))


def test_bad_options():
    pairs = make_pairs()
    with pytest.raises(ValueError, match="loss"):
        quick(pairs, loss="ranknet")
    with pytest.raises(ValueError, match="no negatives"):
        quick(pairs, negatives=0, in_batch=False)
    with pytest.raises(TextTableError, match="min_positive"):
        quick(pairs, min_positive=2.0)


def test_in_batch_mask_equals_the_pairwise_lookup():
    pairs = make_pairs(seed=3)
    pairs.loc[::7, "label"] = 1  # three grades, so "judged with a label >= y" is not just "judged"
    data = prepare_pairs(pairs, how="linear", click_scale=1.0, val_fraction=0.0, seed=0)
    rows = np.arange(len(pairs))
    sampler = Sampler(data, rows)
    rng = np.random.default_rng(0)
    for _ in range(20):
        batch = rng.choice(rows, 40)  # with repeats: the same document twice in a batch
        q, d, y = data.q_idx[batch], data.d_idx[batch], data.y[batch]
        brute = (d[None, :] == d[:, None]) | sampler.judged_at_least(q[:, None], d[None, :], y[:, None])
        assert np.array_equal(sampler.in_batch_mask(q, d, y), brute)
