"""Encoders trained on corrected click labels: sample weights reach the loss, the correction reaches the bundle."""

from __future__ import annotations

import numpy as np
import pytest

from ltrfeat.clicks.debias import click_labels
from ltrfeat.core.errors import ParameterError, TextTableError
from ltrfeat.features.encoders import epochs
from ltrfeat.features.encoders.encoder import Encoder
from ltrfeat.features.encoders.training import train_encoder
from pbm_logs import pbm_log

TINY = {"model": "dssm", "sizes": {"hidden": [16], "out": 8}, "epochs": 1, "batch_size": 64, "progress": False}


@pytest.fixture(scope="module")
def log():
    return pbm_log(exponent=1.0, n_queries=40, sessions=10, seed=2)


@pytest.mark.parametrize("loss", ["softmax", "generalized"])
def test_the_correction_and_its_curve_are_recorded_in_the_bundle(tmp_path, log, loss):
    labels = click_labels(log, debias="ipw", loss=loss)
    encoder, _ = train_encoder(labels.pairs, loss=loss, soft_labels=labels.soft_labels, threads=1, **TINY)
    encoder.save(tmp_path / "m.ltrenc")
    record = Encoder.load(tmp_path / "m.ltrenc").training["clicks"]
    assert record["debias"] == "ipw" and record["propensity"]["method"] == "harvest"
    assert record["impressions"] == int(log.totals["impressions"].sum()) and record["has_positions"]


def test_weights_change_the_training_and_its_hash(log):
    labels = click_labels(log, debias="ipw", loss="softmax")
    unweighted = labels.pairs.drop(columns="weight")
    assert epochs.data_hash(labels.pairs) != epochs.data_hash(unweighted)
    one, _ = train_encoder(labels.pairs, loss="softmax", soft_labels="clicks", threads=1, **TINY)
    two, _ = train_encoder(unweighted, loss="softmax", soft_labels="clicks", threads=1, **TINY)
    assert not np.allclose(one.encode(["q1"], side="query"), two.encode(["q1"], side="query"))
    ones = unweighted.assign(weight=1.0)  # weights all 1 train exactly as no weights
    three, _ = train_encoder(ones, loss="softmax", soft_labels="clicks", threads=1, **TINY)
    assert np.allclose(two.encode(["q1"], side="query"), three.encode(["q1"], side="query"), atol=1e-6)


def test_the_hinge_loss_refuses_weights(log):
    labels = click_labels(log, debias="ipw", loss="softmax")
    with pytest.raises(ParameterError, match="the hinge loss takes no sample weights"):
        train_encoder(labels.pairs, loss="hinge", soft_labels="clicks", **TINY)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "heavy"])
def test_a_bad_weight_names_its_row(log, bad):
    pairs = click_labels(log, debias="ipw", loss="softmax").pairs.astype({"weight": object})
    pairs.loc[3, "weight"] = bad
    with pytest.raises(TextTableError, match="row 4: weight .* is not a finite number >= 0"):
        train_encoder(pairs, loss="softmax", soft_labels="clicks", **TINY)


def test_deepmatch_refuses_weights(log):
    from ltrfeat.features.encoders._deepmatch import train_deepmatch

    pairs = click_labels(log, debias="ipw", loss="softmax").pairs
    with pytest.raises(ParameterError, match="DeepMatch takes no sample weights"):
        train_deepmatch(pairs)
