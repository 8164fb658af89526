"""DSE pre-training: the CD-1 update by hand, RBM training, loading a stack into a DSSM tower, and
``train_encoder(pretrain="rbm")`` / ``train-encoder --pretrain rbm``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.encoders._dssm import DssmTower
from ltrfeat.encoders.model import TwoTowerModel, model_config
from ltrfeat.encoders._rbm import RBM, CD1Settings, cd1_gradients, load_stack, pretrain_dssm, train_rbm
from ltrfeat.encoders.training import train_encoder
from ltrfeat.encoders.hashing import TrigramHasher

W = [[0.5, -1.0], [0.25, 0.75], [-0.5, 0.0]]
B_VIS, C_HID = [0.1, -0.2, 0.3], [0.0, 0.5]


def sig(x):
    return 1 / (1 + math.exp(-x))


def tiny_rbm(gaussian):
    return RBM(
        torch.tensor(W, dtype=torch.float64),
        torch.tensor(B_VIS, dtype=torch.float64),
        torch.tensor(C_HID, dtype=torch.float64),
        gaussian,
    )


def test_binary_cd1_update_matches_a_hand_computation():
    v0, noise = [1.0, 0.0, 1.0], [0.2, 0.9]
    # by hand: p(h0|v0), the sample, the reconstruction, p(h1|v1)
    p0 = [sig(C_HID[j] + sum(v0[i] * W[i][j] for i in range(3))) for j in range(2)]  # 0.5, 0.3775
    h0 = [1.0 if noise[j] < p0[j] else 0.0 for j in range(2)]  # [1, 0]
    v1 = [sig(B_VIS[i] + sum(W[i][j] * h0[j] for j in range(2))) for i in range(3)]
    p1 = [sig(C_HID[j] + sum(v1[i] * W[i][j] for i in range(3))) for j in range(2)]
    expected_w = [[v0[i] * p0[j] - v1[i] * p1[j] for j in range(2)] for i in range(3)]
    dw, db, dc, err = cd1_gradients(
        tiny_rbm(False), torch.tensor([v0], dtype=torch.float64), torch.tensor([noise], dtype=torch.float64)
    )
    assert h0 == [1.0, 0.0]
    np.testing.assert_allclose(dw.numpy(), expected_w, rtol=1e-12)
    np.testing.assert_allclose(db.numpy(), [v0[i] - v1[i] for i in range(3)], rtol=1e-12)
    np.testing.assert_allclose(dc.numpy(), [p0[j] - p1[j] for j in range(2)], rtol=1e-12)
    assert err == pytest.approx(sum((v0[i] - v1[i]) ** 2 for i in range(3)))


def test_gaussian_cd1_update_matches_a_hand_computation():
    v0, noise = [0.0, 1.0, 1.0], [0.3, -1.2]
    m0 = [C_HID[j] + sum(v0[i] * W[i][j] for i in range(3)) for j in range(2)]  # linear mean, unit variance
    h0 = [m0[j] + noise[j] for j in range(2)]
    v1 = [sig(B_VIS[i] + sum(W[i][j] * h0[j] for j in range(2))) for i in range(3)]
    m1 = [C_HID[j] + sum(v1[i] * W[i][j] for i in range(3)) for j in range(2)]
    dw, db, dc, _ = cd1_gradients(
        tiny_rbm(True), torch.tensor([v0], dtype=torch.float64), torch.tensor([noise], dtype=torch.float64)
    )
    np.testing.assert_allclose(dw.numpy(), [[v0[i] * m0[j] - v1[i] * m1[j] for j in range(2)] for i in range(3)])
    np.testing.assert_allclose(dc.numpy(), [m0[j] - m1[j] for j in range(2)])


def test_cd1_statistics_average_over_the_batch():
    rbm = tiny_rbm(False)
    v = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], dtype=torch.float64)
    noise = torch.tensor([[0.2, 0.9], [0.7, 0.1]], dtype=torch.float64)
    both = cd1_gradients(rbm, v, noise)
    one, two = cd1_gradients(rbm, v[:1], noise[:1]), cd1_gradients(rbm, v[1:], noise[1:])
    for k in range(3):
        torch.testing.assert_close(both[k], (one[k] + two[k]) / 2)


def test_training_an_rbm_lowers_reconstruction_error():
    gen = torch.Generator().manual_seed(0)
    prototypes = torch.tensor([[1, 1, 1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1]], dtype=torch.float32)
    data = prototypes[torch.randint(0, 2, (256,), generator=gen)]

    def batches():
        return iter(data.split(32))

    settings = CD1Settings(epochs=15, lr=0.1)
    _, errors = train_rbm(batches, 8, 4, gaussian=False, settings=settings, generator=gen, visible_mean=data.mean(0))
    assert errors[-1] < 0.5 * errors[0]


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"epochs": 0}, "epochs must be an integer >= 1"),
        ({"lr": 0.0}, "lr must be a number > 0"),
        ({"momentum": 1.0}, r"momentum must be a number in \[0, 1\)"),
        ({"weight_decay": -1e-4}, "weight_decay must be a number >= 0"),
    ],
)
def test_cd1_settings_refuse_bad_values(bad, match):
    with pytest.raises(ValueError, match=match):
        CD1Settings(**({"epochs": 1, "lr": 0.05} | bad))
    assert CD1Settings(epochs=1, lr=0.05) == CD1Settings(1, 0.05, momentum=0.9, weight_decay=1e-4)


def test_loaded_tower_reproduces_the_rbm_stack():
    gen = torch.Generator().manual_seed(1)
    tower = DssmTower(12, hidden=[6, 5], out=3)
    sizes = [(12, 6, False), (6, 5, False), (5, 3, True)]
    stack = [
        RBM(torch.randn(v, h, generator=gen), torch.zeros(v), torch.randn(h, generator=gen), g) for v, h, g in sizes
    ]
    load_stack(tower, stack)
    ids = np.array([2, 5, 7, 3, 11], dtype=np.int64)  # two texts, no repeated trigram, no unknown id
    batch = type("Bag", (), {"ids": ids, "offsets": np.array([0, 3], dtype=np.int64)})()
    with torch.no_grad():
        out = tower(batch)
    v = torch.zeros(2, 12)
    v[0, ids[:3]] = v[1, ids[3:]] = 1.0
    p = v
    for rbm in stack[:-1]:
        p = rbm.hidden_mean(p)
    torch.testing.assert_close(out, torch.tanh(stack[-1].hidden_mean(p)), rtol=1e-5, atol=1e-5)
    assert torch.count_nonzero(tower.trigrams.weight[0]) == 0


TEXTS = [f"{a} {b}" for a in ("red drill", "blue saw", "green hammer", "white paint") for b in ("kit", "set", "pro")]


def test_pretrain_dssm_initialises_both_towers_reproducibly():
    hasher = TrigramHasher().fit(TEXTS)

    def run():
        torch.manual_seed(0)
        net = TwoTowerModel(model_config("dssm", hasher.n_features_, hidden=[8], out=4))
        record = pretrain_dssm(net, hasher, TEXTS, epochs=2, batch_size=4, seed=3, progress=False)
        return net, record

    net, record = run()
    again, _ = run()
    assert [layer["hidden"] for layer in record["layers"]] == [8, 4]
    assert [layer["gaussian"] for layer in record["layers"]] == [False, True]
    for name, value in net.state_dict().items():
        torch.testing.assert_close(value, again.state_dict()[name])
    torch.testing.assert_close(net.query_tower.trigrams.weight, net.doc_tower.trigrams.weight)
    with pytest.raises(ValueError, match="DSSM"):
        pretrain_dssm(TwoTowerModel(model_config("clsm", hasher.n_features_, conv=8, out=4)), hasher, TEXTS)


def judged_pairs():
    rows = [
        (f"q{i}", TEXTS[i], TEXTS[j], 2 if i // 3 == j // 3 else 0)
        for i in range(12)
        for j in range(12)
        if i != j and (i // 3 == j // 3 or (i + j) % 4 == 0)
    ]
    return pd.DataFrame(rows, columns=["qid", "query", "doc", "label"])


def test_train_encoder_with_rbm_pretraining():
    opts = dict(
        model="dssm",
        loss="hinge",
        sizes={"hidden": [8], "out": 4},
        epochs=2,
        batch_size=8,
        val_fraction=0.25,
        progress=False,
        threads=1,
        seed=0,
    )
    encoder, _ = train_encoder(judged_pairs(), pretrain="rbm", **opts)
    assert encoder.training["params"]["pretrain"] == "rbm"
    assert [layer["hidden"] for layer in encoder.training["pretrain"]["layers"]] == [8, 4]
    plain, _ = train_encoder(judged_pairs(), **opts)
    assert "pretrain" not in plain.training and "pretrain" not in plain.training["params"]
    assert not np.allclose(encoder.encode(TEXTS), plain.encode(TEXTS))
    with pytest.raises(ValueError, match="pretrain"):
        train_encoder(judged_pairs(), **{**opts, "model": "clsm", "sizes": {"conv": 8, "out": 4}}, pretrain="rbm")


def test_cli_pretrain_rbm(tmp_path):
    path = tmp_path / "pairs.tsv"
    judged_pairs().to_csv(path, sep="\t", index=False)
    base = ["train-encoder", str(path), "--epochs", "1", "--batch-size", "8", "--threads", "1"]
    ok = CliRunner().invoke(
        cli, [*base, "--model", "dssm", "--loss", "hinge", "--pretrain", "rbm", "--out", str(tmp_path / "dse.ltrenc")]
    )
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(cli, [*base, "--model", "clsm", "--pretrain", "rbm", "--out", str(tmp_path / "x.ltrenc")])
    assert bad.exit_code == 2 and "pretrain" in bad.output and not (tmp_path / "x.ltrenc").exists()
