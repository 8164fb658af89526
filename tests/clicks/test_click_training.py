"""Encoders trained on corrected click labels: sample weights reach the loss, the correction reaches the bundle."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ltrfeat.clicks.debias import click_labels
from ltrfeat.core.errors import ParameterError, TextTableError
from ltrfeat.encoders import training_pairs
from ltrfeat.encoders.encoder import Encoder
from ltrfeat.encoders.training import train_encoder
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
    assert training_pairs.data_hash(labels.pairs) != training_pairs.data_hash(unweighted)
    one, _ = train_encoder(labels.pairs, loss="softmax", soft_labels="clicks", threads=1, **TINY)
    two, _ = train_encoder(unweighted, loss="softmax", soft_labels="clicks", threads=1, **TINY)
    assert not np.allclose(one.encode(["q1"], side="query"), two.encode(["q1"], side="query"))
    ones = unweighted.assign(weight=1.0)  # weights all 1 train exactly as no weights
    three, _ = train_encoder(ones, loss="softmax", soft_labels="clicks", threads=1, **TINY)
    assert np.allclose(two.encode(["q1"], side="query"), three.encode(["q1"], side="query"), atol=1e-6)


def test_the_hinge_loss_weighs_its_triples_too(log):
    labels = click_labels(log, debias="ipw", loss="softmax")
    one, _ = train_encoder(labels.pairs, loss="hinge", soft_labels="clicks", threads=1, **TINY)
    two, _ = train_encoder(labels.pairs.drop(columns="weight"), loss="hinge", soft_labels="clicks", threads=1, **TINY)
    assert not np.allclose(one.encode(["q1"], side="query"), two.encode(["q1"], side="query"))


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "heavy"])
def test_a_bad_weight_names_its_row(log, bad):
    pairs = click_labels(log, debias="ipw", loss="softmax").pairs.astype({"weight": object})
    pairs.loc[3, "weight"] = bad
    with pytest.raises(TextTableError, match="row 4: weight .* is not a finite number >= 0"):
        train_encoder(pairs, loss="softmax", soft_labels="clicks", **TINY)


def test_deepmatch_refuses_weights(log):
    from ltrfeat.encoders._deepmatch import train_deepmatch

    pairs = click_labels(log, debias="ipw", loss="softmax").pairs
    with pytest.raises(ParameterError, match="DeepMatch takes no sample weights"):
        train_deepmatch(pairs)


def test_the_extracted_columns_pin_the_correction(tmp_path, log):
    from ltrfeat.features.neural import EncoderExtractor

    labels = click_labels(log, debias="pbm", loss="generalized")
    encoder, _ = train_encoder(labels.pairs, loss="generalized", soft_labels=labels.soft_labels, threads=1, **TINY)
    encoder.save(tmp_path / "m.ltrenc")
    record = EncoderExtractor(name="dssm", path=str(tmp_path / "m.ltrenc"), field="doc").fit().pipeline_record()
    assert record["debias"] == "pbm"
    plain = pd.DataFrame({c: labels.pairs[c].tolist() for c in ("query", "doc", "label")})  # no reader's record
    judged, _ = train_encoder(plain, loss="generalized", soft_labels="identity", threads=1, **TINY)
    judged.save(tmp_path / "j.ltrenc")  # not click labels: no debias key, the records of before
    assert (
        "debias"
        not in EncoderExtractor(name="dssm", path=str(tmp_path / "j.ltrenc"), field="doc").fit().pipeline_record()
    )


@pytest.mark.parametrize("debias", ["ipw", "pbm"])
def test_ablate_gives_each_encoder_the_click_labels_of_its_own_loss(log, debias):
    from ltrfeat.experiments.click_training import click_train_table, spec_table

    table, record = click_train_table(
        log, ["softmax", "generalized", "softmax"], debias=debias, method="harvest", clip=0.05, seed=0
    )
    assert record["debias"] == debias and table.attrs["clicks"] == record
    for loss in ("softmax", "generalized"):
        own, options = spec_table(table, loss, {"epochs": 1})
        labels = click_labels(log, debias=debias, loss=loss)
        pd.testing.assert_frame_equal(own, labels.pairs[list(own.columns)], check_dtype=False)
        assert options == {"epochs": 1, "soft_labels": labels.soft_labels} and not own.attrs
    with pytest.raises(ParameterError, match="drop --encoder-option soft_labels"):
        spec_table(table, "generalized", {"soft_labels": "identity" if debias == "ipw" else "clicks"})
    judged = pd.DataFrame({"query": ["q"], "doc": ["d"], "label": [1]})
    own, options = spec_table(judged, "softmax", {})  # any other table trains as given
    assert own is judged and options == {}
