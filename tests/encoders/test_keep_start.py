"""A training that starts from a model worth keeping keeps it unless a trained epoch beats it by more than noise.

The rule (``ltrfeat.encoders.epochs``, "Keeping the starting point"): the best trained epoch replaces the
start only when its mean per-query validation NDCG@10 gain exceeds ``keep_start_margin`` paired standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from builders import make_pairs, train_until_interrupted
from ltrfeat.encoders.bundle import read_bundle
from ltrfeat.encoders.epochs import Loop, begin_run, fit_epochs, keep_start_decision, start_unbeatable
from ltrfeat.encoders.training import train_encoder

CLSM = dict(model="clsm", sizes={"conv": 48, "out": 24}, batch_size=32, val_fraction=0.25, progress=False, threads=1)
# clsm_start ranks all its validation queries but one perfectly: with the default margin 1 no epoch could beat it and
# a training continuing it would run no step (start_unbeatable); margin 0.5 leaves it something to try
BEATABLE = 0.5


# -- the decision ----------------------------------------------------------------------------------------------
def test_decision_follows_the_paired_standard_error():
    start = np.array([0.5, 0.5, 0.5, 0.5, np.nan])
    noisy = np.array([0.9, 0.2, 0.8, 0.3, np.nan])  # mean gain .05, paired SE .18
    steady = np.array([0.6, 0.6, 0.6, 0.7, np.nan])  # mean gain .125, paired SE .025
    kept = keep_start_decision(start, noisy, margin=1.0, trained_epoch=2)
    assert kept["kept"] and kept["queries"] == 4 and kept["best_epoch"] == 2
    diff = noisy[:4] - start[:4]
    assert kept["mean_diff"] == pytest.approx(diff.mean())
    assert kept["se"] == pytest.approx(diff.std(ddof=1) / 2)
    assert not keep_start_decision(start, noisy, margin=0.0, trained_epoch=2)["kept"]  # margin 0: any gain
    moved = keep_start_decision(start, steady, margin=1.0, trained_epoch=1)
    assert not moved["kept"] and moved["best_ndcg@10"] == pytest.approx(0.625) and moved["start_ndcg@10"] == 0.5
    assert keep_start_decision(start, start - 0.1, margin=0.0, trained_epoch=1)["kept"]  # worse: always kept
    assert keep_start_decision(start[:1], steady[:1], margin=0.0, trained_epoch=1)["kept"]  # 1 query: no noise estimate
    assert keep_start_decision(start, None, margin=1.0, trained_epoch=None)["kept"]  # nothing trained


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=30),
    st.floats(0, 3),
)
@example(pairs=[(0.0, 2.225073858507203e-309), (1.0, 1.0)], margin=0.0)  # a gain below the means' resolution
def test_a_kept_start_never_has_a_clear_gain(pairs, margin):
    start, trained = np.array(pairs).T
    out = keep_start_decision(start, trained, margin=margin, trained_epoch=1)
    diff = trained - start
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    gain = diff.mean() > 0 and diff.mean() > margin * se and trained.mean() > start.mean()
    assert out["kept"] == (not gain)
    assert out["kept"] or out["best_ndcg@10"] > out["start_ndcg@10"]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.3, 0.7, 0.95, 1.0, 1.0, 1.0]), min_size=0, max_size=12),
    st.sampled_from([0.0, 0.5, 1.0, 1.5, 3.0]),
    st.lists(st.floats(0, 1), min_size=12, max_size=12),
)
def test_an_unbeatable_start_is_beaten_by_no_scores_and_a_beatable_one_by_some(start, margin, other):
    """``start_unbeatable`` is exact: when it says so no trained scores in [0, 1] beat the start (random ones, and
    the best case: one equal gain on every query the start ranks below 1); otherwise that best case beats it."""
    start = np.array(start)
    below = start < 1
    best = start + below * (1 - start[below]).min(initial=1.0)  # the largest equal gain they can all have
    beaten = not keep_start_decision(start, best, margin=margin, trained_epoch=1)["kept"]
    assert start_unbeatable(start, margin=margin) == (not beaten)
    if not beaten:
        assert keep_start_decision(start, np.array(other[: len(start)]), margin=margin, trained_epoch=1)["kept"]


# -- the epoch loop, with scripted validation scores -------------------------------------------------------
def _scripted(per_epoch: list, *, margin: float | None, val_fraction: float = 0.25, checks: int = 1, patience=9):
    """Run fit_epochs on a one-weight net whose weight counts the mini-batch steps and whose validation scores
    follow ``per_epoch`` (epoch 0 first, then one list per checkpoint; ``checks`` per epoch of ``checks``
    mini-batches); returns the run and the final weight."""
    net = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        net.weight.fill_(0.0)
    opt = torch.optim.SGD(net.parameters(), lr=0.0)
    seen = iter(per_epoch)

    def step(batch):
        with torch.no_grad():
            net.weight.add_(1.0)
        return (net.weight * 0).sum()

    validate = lambda: np.asarray(next(seen), dtype=float)  # noqa: E731
    rng = np.random.default_rng(0)
    run, _ = begin_run(
        net, opt, rng, resume=None, params={}, data_sha="", validate=validate, keep_start=margin is not None
    )
    epochs = -(-(len(per_epoch) - 1) // checks)
    settings = dict(epochs=epochs, batch_size=4, patience=patience, val_fraction=val_fraction, val_per_epoch=checks)
    cfg = type("Cfg", (), settings)
    loop = Loop(net, opt, rng, np.arange(4 * checks), step=step, validate=validate)
    fit_epochs(loop, run, cfg, keep_start=margin)
    return run, float(net.weight.item())


def test_the_loop_keeps_the_start_unless_an_epoch_beats_it_clearly():
    start = [0.5, 0.5, 0.5, 0.5]
    noisy, worse, clear = [0.9, 0.2, 0.8, 0.3], [0.4, 0.4, 0.5, 0.4], [0.7, 0.8, 0.7, 0.8]
    run, weight = _scripted([start, noisy, worse], margin=1.0)
    assert run.kept["kept"] and run.kept["best_epoch"] == 1 and weight == 0.0 and run.best["epoch"] == 0
    run, weight = _scripted([start, noisy, worse], margin=None)  # no rule: the better mean wins
    assert run.kept is None and weight == 1.0 and run.best["epoch"] == 1
    run, weight = _scripted([start, noisy, clear, worse], margin=1.0)
    assert not run.kept["kept"] and run.kept["best_epoch"] == 2 and weight == 2.0 and run.best["epoch"] == 2
    run, weight = _scripted([start, worse, worse], margin=1.0)
    assert run.kept["kept"] and run.kept["best_epoch"] in (1, 2) and weight == 0.0
    run, weight = _scripted([[], [], []], margin=1.0, val_fraction=0.0)  # no validation: every epoch trained
    assert run.kept is None and weight == 2.0


def test_a_training_that_cannot_beat_its_start_stops_after_patience_checkpoints():
    start, slightly_up = [0.5, 0.5, 0.5, 0.5], [0.55, 0.45, 0.6, 0.5]  # a higher mean, within one paired SE
    slightly_down = [0.45, 0.5, 0.5, 0.45]
    run, weight = _scripted([start] + [slightly_down] * 8, margin=1.0, checks=4, patience=2)
    assert [h["step"] for h in run.history[1:]] == [1, 2] and weight == 0.0  # 2 of 8 checkpoints, start kept
    assert run.kept["kept"] and run.kept["best_epoch"] == 0.25
    assert {k: run.kept[k] for k in ("checkpoints", "planned_checkpoints", "steps", "planned_steps")} == {
        "checkpoints": 2,
        "planned_checkpoints": 8,
        "steps": 2,
        "planned_steps": 8,
    }
    # a record mean within the SE restarts the count once: 2 checkpoints after it, the start kept
    run, weight = _scripted([start] + [slightly_up] * 8, margin=1.0, checks=4, patience=2)
    assert [h["step"] for h in run.history[1:]] == [1, 2, 3] and weight == 0.0 and run.kept["kept"]
    run, weight = _scripted([start] + [slightly_up] * 8, margin=None, checks=4, patience=2)  # no start: best mean
    assert len(run.history) == 4 and weight == 1.0


def test_a_start_no_epoch_can_beat_is_kept_without_a_training_step():
    perfect, one_below = [1.0, 1.0, 1.0, 1.0], [1.0, 0.5, 1.0, 1.0]  # at most one query can gain: margin 1 unreachable
    for start in (perfect, one_below):
        run, weight = _scripted([start] + [[1.0] * 4] * 8, margin=1.0, checks=4, patience=2)
        assert len(run.history) == 1 and weight == 0.0 and run.kept["kept"] and run.kept["best_epoch"] is None
        assert (run.kept["checkpoints"], run.kept["steps"], run.kept["planned_steps"]) == (0, 0, 8)
    run, weight = _scripted([one_below] + [[1.0] * 4] * 8, margin=0.5, checks=4, patience=2)  # 0.5 SE: reachable
    assert not run.kept["kept"] and weight > 0


def test_a_validation_that_keeps_rising_trains_on_until_its_gain_is_clear():
    start = [0.5, 0.5, 0.5, 0.5]
    # each checkpoint a higher mean, none clear of the start by one SE before the fifth: the old rule stopped at 2
    creeping = [[0.5 + d, 0.5 - d / 2, 0.5 + d, 0.5] for d in (0.01, 0.02, 0.03, 0.04)]
    clear = [0.6, 0.6, 0.62, 0.61]
    run, weight = _scripted(
        [start, *creeping, clear, creeping[0], creeping[0], creeping[0]], margin=1.0, checks=4, patience=2
    )
    assert len(run.history) == 8 and not run.kept["kept"] and run.kept["best_epoch"] == 1.25 and weight == 5.0


def test_a_training_that_beats_its_start_keeps_training_and_keeps_its_best_checkpoint():
    start = [0.5, 0.5, 0.5, 0.5]
    rising = [[0.5 + 0.05 * i, 0.52 + 0.05 * i, 0.5 + 0.05 * i, 0.52 + 0.05 * i] for i in range(1, 9)]
    run, weight = _scripted([start, *rising], margin=1.0, checks=4, patience=2)
    assert len(run.history) == 9 and not run.kept["kept"] and weight == 8.0 and run.best["epoch"] == 2
    # after a clear gain, checkpoints that do not improve on it stop the training; the best one is kept
    noisy = [0.9, 0.2, 0.8, 0.3]  # a higher mean than the clear checkpoint, not clear of the start
    run, weight = _scripted([start, rising[0], rising[3], noisy, noisy, noisy, noisy], margin=1.0, checks=4, patience=2)
    assert len(run.history) == 5 and not run.kept["kept"] and weight == 2.0 and run.kept["best_epoch"] == 0.5


# -- CLSM / DSSM ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clsm_start():
    encoder, _ = train_encoder(make_pairs(), epochs=4, lr=1e-2, patience=4, **CLSM)
    return encoder


def test_from_scratch_has_no_start_to_keep(clsm_start):
    assert "keep_start" not in clsm_start.training
    assert "keep_start_margin" not in clsm_start.training["params"]


def test_a_continued_clsm_that_only_gets_worse_keeps_its_start_bit_for_bit(clsm_start):
    pairs = make_pairs()
    encoder, history = train_encoder(
        pairs, init=clsm_start, epochs=2, lr=0.5, patience=2, keep_start_margin=BEATABLE, **CLSM
    )
    assert len(history) > 1 and all(h["val_ndcg@10"] < history[0]["val_ndcg@10"] for h in history[1:])  # destructive
    record = encoder.training["keep_start"]
    assert record["kept"] and encoder.training["best_epoch"] == 0 and record["margin"] == BEATABLE
    assert record["start_ndcg@10"] == history[0]["val_ndcg@10"] > record["best_ndcg@10"]
    queries, docs = pairs["query"].tolist(), pairs["doc"].tolist()
    assert np.array_equal(encoder.similarity(queries, docs), clsm_start.similarity(queries, docs))


def test_a_continued_clsm_that_learns_replaces_its_start():
    weak, _ = train_encoder(make_pairs(), epochs=1, lr=1e-3, **CLSM)
    encoder, history = train_encoder(make_pairs(), init=weak, epochs=3, lr=1e-2, patience=3, **CLSM)
    record = encoder.training["keep_start"]
    assert not record["kept"] and encoder.training["best_epoch"] == record["best_epoch"] >= 1
    assert record["mean_diff"] > record["se"] > 0
    assert encoder.training["params"]["keep_start_margin"] == 1.0


def test_resume_keeps_the_start_and_the_decision(clsm_start, tmp_path, monkeypatch):
    pairs = make_pairs()
    # no stop: 2 checks an epoch
    opts = dict(init=clsm_start, epochs=3, lr=0.5, patience=9, val_per_epoch=2, keep_start_margin=BEATABLE, **CLSM)
    full, full_history = train_encoder(pairs, checkpoint=tmp_path / "full.ckpt", **opts)
    train_until_interrupted(
        monkeypatch, epoch=2, train=lambda: train_encoder(pairs, checkpoint=tmp_path / "p.ckpt", **opts)
    )
    resumed, history = train_encoder(pairs, resume=tmp_path / "p.ckpt", **opts)
    assert [h["val_ndcg@10"] for h in history] == [h["val_ndcg@10"] for h in full_history]
    assert resumed.training["keep_start"] == full.training["keep_start"]
    for key, value in full.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[key]), key
    assert read_bundle(tmp_path / "p.ckpt", kind="checkpoint")[0]["start_scores"]


def _counting_steps(monkeypatch) -> list:
    """The mini-batches every BatchLoss computes from now on (their sizes)."""
    from ltrfeat.encoders.two_tower import BatchLoss

    calls: list = []
    compute = BatchLoss.__call__
    monkeypatch.setattr(BatchLoss, "__call__", lambda self, batch: calls.append(len(batch)) or compute(self, batch))
    return calls


def test_a_continued_clsm_that_cannot_help_stops_at_its_first_checkpoints(clsm_start, monkeypatch):
    from ltrfeat.encoders.epochs import validation_points

    calls = _counting_steps(monkeypatch)
    # a destructive rate; the defaults: 4 validation checkpoints an epoch for a training with a start, patience 2
    encoder, history = train_encoder(
        make_pairs(), init=clsm_start, epochs=5, lr=0.5, keep_start_margin=BEATABLE, **CLSM
    )
    record = encoder.training["keep_start"]
    n_batches = record["planned_steps"] // 5
    assert record["kept"] and encoder.training["best_epoch"] == 0 and len(history) == 3
    assert record["checkpoints"] == 2 and record["planned_checkpoints"] == 20
    assert len(calls) == record["steps"] == history[-1]["step"] == validation_points(n_batches, 1, 4)[1] < n_batches
    assert encoder.training["params"]["val_per_epoch"] == 4 and all(h["val_seconds"] >= 0 for h in history[1:])


def test_a_continued_clsm_that_learns_trains_on_and_stops_the_same_way_every_time(monkeypatch):
    weak, _ = train_encoder(make_pairs(), epochs=1, lr=1e-3, **CLSM)
    calls = _counting_steps(monkeypatch)
    encoder, history = train_encoder(make_pairs(), init=weak, epochs=3, lr=1e-2, **CLSM)
    record = encoder.training["keep_start"]
    assert (
        not record["kept"] and record["checkpoints"] > 2 and len(calls) == record["steps"] > record["planned_steps"] / 3
    )
    assert encoder.training["best_epoch"] == record["best_epoch"] > 0 and record["mean_diff"] > record["se"]
    again, again_history = train_encoder(make_pairs(), init=weak, epochs=3, lr=1e-2, **CLSM)
    assert [{k: v for k, v in h.items() if "seconds" not in k} for h in again_history] == [
        {k: v for k, v in h.items() if "seconds" not in k} for h in history
    ]
    for key, value in encoder.model.state_dict().items():
        assert torch.equal(value, again.model.state_dict()[key]), key
