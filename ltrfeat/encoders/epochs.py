"""The epoch loop every encoder trainer shares: validation checkpoints, early stopping, the keep-start rule.

A trainer (:mod:`~ltrfeat.encoders.trainer` runs the steps) calls :func:`begin_run` (a fresh run or a
checkpoint to resume) and :func:`fit_epochs` over a :class:`Loop` (network, optimizer, generator, rows,
``step(batch) -> loss``, ``validate() -> NDCG@10``), which keeps the best checkpoint's weights and writes a resumable
checkpoint (:func:`~ltrfeat.encoders.checkpoints.write_checkpoint`) after every epoch.

Validation and early stopping
-----------------------------
``val_fraction`` of the queries (by ``qid`` when given, else by query text) are held out. At every
validation checkpoint -- ``val_per_epoch`` per epoch, evenly spaced over its optimizer steps, the last
at its end (default one: after every epoch) -- the model's score, used alone as a ranker, is scored by
mean NDCG@10 over the held-out queries (:mod:`~ltrfeat.encoders.validation`). Training stops
after ``patience`` checkpoints in a row without improvement and the best checkpoint's weights are kept;
the history has one entry per checkpoint (``epoch`` a fraction inside an epoch, ``step`` the mini-batches
so far, ``val_seconds`` the validation's cost).

Keeping the starting point
--------------------------
A training that starts from a model worth keeping (MiniLM fine-tuning, a CLSM/DSSM continued from ``+init`` /
``+spans`` weights or distilled from a ``+teacher``, an outer training continuing an inner one) passes
``keep_start`` = the margin ``m`` (the configs' ``keep_start_margin``, default 1) to :func:`fit_epochs`. Epoch 0
is the starting model's validation score; the best trained epoch (by mean NDCG@10) replaces it only when it
beats it by more than ``m`` paired standard errors over the validation queries:
``d_i = NDCG@10_epoch(q_i) - NDCG@10_start(q_i)`` over the n validation queries with a positive grade,
``mean(d) > m * sd(d) / sqrt(n)`` (sample standard deviation, ``ddof=1``; with fewer than 2 queries the start
is kept). ``m = 0`` keeps any epoch better on average. Early stopping works against the start: a checkpoint
counts as the best only when it beats the start by this rule (and the best such checkpoint so far by mean);
the patience count restarts at every checkpoint whose mean beats all earlier ones, the start's included (a
validation still rising -- one not yet a standard error clear of the start after a quarter epoch -- trains on),
so a training that cannot beat its start stops ``patience`` checkpoints after its last record
-- with several per epoch (MiniLM's ``val_per_epoch`` 8, a started CLSM/DSSM's 4), a fraction of an epoch --
and keeps it; the record adds
the ``checkpoints`` and mini-batch ``steps`` run of the ``planned_checkpoints`` / ``planned_steps``. The decision is the training record's ``keep_start``
(:func:`keep_start_decision`). A start no trained epoch could beat, whatever its scores (:func:`start_unbeatable`:
with the default margin, one that ranks all validation queries but at most one perfectly), is kept without a
training step. A from-scratch model has no start worth keeping: its random epoch 0 takes no part in the rule.

Reproducibility: the seed fixes the initial weights and every sampled negative; with the same
seed, data and thread count the result is bit-identical, also when resumed from a checkpoint.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from ltrfeat.core.errors import ModelFileError
from ltrfeat.core.logs import get_logger
from ltrfeat.encoders.checkpoints import read_checkpoint, write_checkpoint
from ltrfeat.encoders.validation import finite_mean

__all__ = ["Loop", "Run", "begin_run", "fit_epochs", "keep_start_decision", "start_unbeatable", "validation_points"]

_log = get_logger("train")


@dataclass
class Run:
    """Progress of an epoch loop: history, best epoch, its weights, and the next epoch to run; for a training
    that may keep its start (``keep_start``), the starting weights and per-query validation NDCG@10, the best
    trained epoch (``trained``: its ``epoch`` and per-query ``scores``) and, after :func:`fit_epochs`, the
    decision (``kept``, :func:`keep_start_decision`)."""

    history: list
    best: dict
    best_state: dict
    start: int
    start_state: dict | None = None
    start_scores: np.ndarray | None = None
    trained: dict | None = None
    kept: dict | None = None


def _scored(value) -> tuple[float, np.ndarray | None]:
    """A ``validate()`` result -- a mean NDCG@10 or per-query values -- as (mean, per-query values or None)."""
    if np.ndim(value) == 0:
        return float(value), None
    per_query = np.asarray(value, dtype=np.float64)
    return finite_mean(per_query), per_query


def _clone(net) -> dict:
    return {k: v.clone() for k, v in net.state_dict().items()}


def begin_run(
    net, opt, rng, *, resume, params: dict, data_sha: str, validate, seconds: float = 0.0, keep_start: bool = False
):
    """A fresh run (epoch 0 = validation of the initial weights) or the state of ``resume``. ``keep_start``: keep
    the starting weights and their per-query scores (``validate`` then returns per-query values) for the rule
    of :func:`fit_epochs`.

    Returns ``(run, checkpoint header or None)``.
    """
    if resume is not None:
        state, best_state, start_state = read_checkpoint(
            resume, params=params, data_sha=data_sha, model=net, optimizer=opt
        )
        rng.bit_generator.state = state["numpy_rng"]
        run = Run(state["history"], state["best"], best_state, state["epoch"] + 1)
        if keep_start:
            if start_state is None or "start_scores" not in state:
                raise ModelFileError("checkpoint lacks the starting weights", path=resume, fix="train from scratch")
            run.start_state = start_state
            run.start_scores = np.asarray(state["start_scores"], dtype=np.float64)
            if state.get("trained") is not None:
                run.trained = {**state["trained"], "scores": np.asarray(state["trained"]["scores"])}
        return run, state
    first, per_query = _scored(validate())
    run = Run(
        [{"epoch": 0, "train_loss": None, "val_ndcg@10": first, "seconds": seconds}],
        {"epoch": 0, "val_ndcg@10": first, "stale": 0},
        _clone(net),
        1,
    )
    if keep_start:
        if per_query is None:
            raise ValueError("keep_start needs a validate() that returns per-query scores")
        run.start_state, run.start_scores = run.best_state, per_query
    return run, None


def keep_start_decision(start_scores, trained_scores, *, margin: float, trained_epoch: int | None) -> dict:
    """Whether a training keeps its starting weights (see "Keeping the starting point" in the module docstring).

    ``start_scores`` / ``trained_scores``: per-query validation NDCG@10 of epoch 0 and of the best trained epoch
    ``trained_epoch`` (by mean; None: no epoch trained). Returns the training record's ``keep_start``:
    ``kept``, ``margin``, ``start_ndcg@10``, ``best_epoch`` and ``best_ndcg@10`` (the best trained epoch),
    ``mean_diff``, ``se`` (its paired standard error) and ``queries`` (the paired queries).
    """
    start = np.asarray(start_scores, dtype=np.float64)
    best = start if trained_scores is None else np.asarray(trained_scores, dtype=np.float64)
    both = np.isfinite(start) & np.isfinite(best)
    diff = best[both] - start[both]
    n = int(both.sum())
    mean_diff = float(diff.mean()) if n else float("nan")
    se = float(diff.std(ddof=1) / np.sqrt(n)) if n >= 2 else float("nan")
    start_mean, best_mean = finite_mean(start), finite_mean(best)
    # the means compared too: a gain below their float resolution (a subnormal difference) is no gain
    beats = (
        trained_epoch is not None and n >= 2 and mean_diff > 0 and mean_diff > margin * se and best_mean > start_mean
    )
    return {
        "kept": not beats,
        "margin": float(margin),
        "start_ndcg@10": start_mean,
        "best_epoch": trained_epoch,
        "best_ndcg@10": best_mean,
        "mean_diff": mean_diff,
        "se": se,
        "queries": n,
    }


def start_unbeatable(start_scores, *, margin: float) -> bool:
    """Whether no trained epoch can beat the start by the keep-start rule (:func:`keep_start_decision`), whatever
    its per-query NDCG@10. Each score is at most 1, so only the k of the n paired queries the start ranks below 1
    can gain; for gains bounded so, the paired t (mean over standard error) is largest with one equal gain on those
    k and none on the rest, where it is sqrt(k (n - 1) / (n - k)); the start is beaten only if that exceeds
    ``margin``: k (n - 1) > margin² (n - k), and n >= 2."""
    start = np.asarray(start_scores, dtype=np.float64)
    start = start[np.isfinite(start)]
    n, k = len(start), int((start < 1.0).sum())
    return n < 2 or k == 0 or not k * (n - 1) > margin**2 * (n - k)


@dataclass
class Loop:
    """What an epoch loop trains: the network and its optimizer, the generator shuffling the training ``rows``,
    ``step(batch) -> loss`` per mini-batch and ``validate() -> score`` per epoch."""

    net: torch.nn.Module
    opt: torch.optim.Optimizer
    rng: np.random.Generator
    rows: np.ndarray
    step: Callable
    validate: Callable


def validation_points(n_batches: int, accumulate: int, per_epoch: int) -> list[int]:
    """The mini-batch counts after which an epoch of ``n_batches`` validates: ``per_epoch`` points evenly spaced
    over its optimizer steps (every ``accumulate`` mini-batches; at most one per step), the last at the end."""
    n_steps = -(-n_batches // accumulate)
    per_epoch = max(1, min(per_epoch, n_steps))
    return [min(n_batches, accumulate * (n_steps * c // per_epoch)) for c in range(1, per_epoch + 1)]


def _validated(loop: Loop, run: Run, *, at, loss: float, step: int, seconds: float, stopping: bool, margin, desc: str):
    """Score a validation checkpoint (``at``: epochs done, a fraction inside an epoch) into ``run``: its history
    entry (``val_seconds``: the validation's cost), and the best checkpoint so far (and its weights; with
    ``stopping`` off every checkpoint is the best). With a start to keep (``margin``: the keep-start rule's), a
    checkpoint is better only when it also beats the start by that rule, and ``run.trained`` follows the best
    checkpoint the rule would keep (before there is one, the best trained by mean); the patience count restarts
    at every checkpoint whose mean beats all earlier ones (the start's included, ``run.best["record"]``), so a
    training whose validation keeps rising trains on before its gain is clear of the start."""
    t0 = time.perf_counter()
    val_score, per_query = _scored(loop.validate())
    val_seconds = time.perf_counter() - t0
    run.history.append(
        {
            "epoch": at,
            "train_loss": loss,
            "val_ndcg@10": val_score,
            "step": step,
            "seconds": round(seconds + val_seconds, 3),
            "val_seconds": round(val_seconds, 3),
        }
    )
    _log.info("%s %g: train loss %.4f, validation NDCG@10 %.4f (%.1f s)", desc, at, loss, val_score, seconds)
    better = not stopping or np.isnan(run.best["val_ndcg@10"]) or val_score > run.best["val_ndcg@10"]
    rising = False
    if stopping and run.start_state is not None and margin is not None:
        record = run.best.get("record", run.history[0]["val_ndcg@10"])
        rising = bool(np.isnan(record) or val_score > record)
        run.best["record"] = val_score if rising else record
        beats = not keep_start_decision(run.start_scores, per_query, margin=margin, trained_epoch=at)["kept"]
        better = better and beats
        trained = run.trained
        if trained is None or beats > bool(trained.get("beats")):
            replace = True
        else:
            best_mean = finite_mean(trained["scores"])
            replace = beats == bool(trained.get("beats")) and (np.isnan(best_mean) or val_score > best_mean)
        if replace:
            run.trained = {"epoch": at, "scores": per_query, "beats": beats}
    if better:
        run.best = {**run.best, "epoch": at, "val_ndcg@10": val_score, "stale": 0}
        run.best_state = _clone(loop.net)
    else:
        run.best["stale"] = 0 if rising else run.best["stale"] + 1


def fit_epochs(
    loop: Loop,
    run: Run,
    cfg,
    *,
    checkpoint=None,
    header=None,
    desc: str = "epoch",
    progress: bool = False,
    keep_start: float | None = None,
) -> None:
    """The epoch loop every trainer shares.

    Each epoch shuffles the rows, calls ``step`` per mini-batch of ``cfg.batch_size`` and steps the optimizer
    every ``cfg.accumulate`` (default 1) mini-batches; ``cfg.val_per_epoch`` (default 1) times per epoch, evenly
    spaced over its optimizer steps (the last at its end), it scores ``validate()`` (a mean NDCG@10, or per-query
    values): a validation checkpoint. When ``cfg.val_fraction`` holds out validation pairs, the best checkpoint's
    weights are kept and training stops after ``cfg.patience`` checkpoints in a row without improvement on the best
    so far (epoch 0 included). A resumable checkpoint is rewritten after every epoch (and at a stop). Ends with the
    best weights in ``net``. ``keep_start``: the margin of the rule that keeps the starting weights (the run began
    with ``begin_run(keep_start=True)``; see "Keeping the starting point" in the module docstring), applied when
    validation pairs are held out: a checkpoint improves only when it also beats the start by that rule, so a
    training that does not stops ``patience`` checkpoints in, and one that cannot (:func:`start_unbeatable`) runs
    none; the decision is ``run.kept``, with the checkpoints and mini-batch steps run and planned.
    """
    net, opt, rng, rows = loop.net, loop.opt, loop.rng, loop.rows
    epochs, batch_size, patience = cfg.epochs, cfg.batch_size, cfg.patience
    early_stopping, accumulate = cfg.val_fraction > 0, getattr(cfg, "accumulate", 1)
    n_batches = -(-len(rows) // batch_size)
    points = validation_points(n_batches, accumulate, getattr(cfg, "val_per_epoch", 1))
    step = int(run.history[-1].get("step", (run.start - 1) * n_batches))
    hopeless = keep_start is not None and early_stopping and start_unbeatable(run.start_scores, margin=keep_start)
    if hopeless:
        _log.info("%s: no trained epoch can beat the start by the keep-start rule; it is kept untrained", desc)
    for epoch in range(run.start, epochs + 1 if not hopeless else run.start):
        if run.best["stale"] >= patience and early_stopping:
            break
        t0 = time.perf_counter()
        order = rng.permutation(rows)
        total, done = 0.0, 0
        bar = tqdm(
            total=len(order),
            desc=f"{desc} {epoch}/{epochs}",
            unit="pair",
            disable=not progress,
            file=sys.stderr,
            leave=False,
        )
        opt.zero_grad(set_to_none=True)
        for end in points:
            for b in range(done, end):
                batch = order[b * batch_size : (b + 1) * batch_size]
                step_loss = loop.step(batch)
                (step_loss / accumulate if accumulate > 1 else step_loss).backward()
                if (b + 1) % accumulate == 0 or b + 1 == n_batches:
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                total += step_loss.item()
                bar.update(len(batch))
                bar.set_postfix(loss=f"{total / (b + 1 - done):.4f}", val_ndcg10=f"{run.best['val_ndcg@10']:.4f}")
            step += end - done
            at = epoch if end == n_batches else round(epoch - 1 + end / n_batches, 3)
            loss, seconds = total / (end - done), time.perf_counter() - t0
            _validated(
                loop,
                run,
                at=at,
                loss=loss,
                step=step,
                seconds=seconds,
                stopping=early_stopping,
                margin=keep_start,
                desc=desc,
            )
            total, done, t0 = 0.0, end, time.perf_counter()
            if run.best["stale"] >= patience and early_stopping:
                break
        bar.close()
        if checkpoint is not None:
            _save(checkpoint, loop, run, header={**header, "epoch": epoch})
    if keep_start is not None and early_stopping:
        _decide_start(
            run,
            keep_start,
            steps=step,
            planned_checkpoints=epochs * len(points),
            planned_steps=epochs * n_batches,
        )
    net.load_state_dict(run.best_state)
    net.eval()


def _save(path, loop: Loop, run: Run, *, header: dict) -> None:
    """Rewrite the resumable checkpoint at ``path`` (``header``: the training's, with the epoch just run)."""
    kept = {}
    if run.start_state is not None and run.start_scores is not None:
        kept = {
            "start_scores": run.start_scores.tolist(),
            "trained": None if run.trained is None else {**run.trained, "scores": run.trained["scores"].tolist()},
        }
    write_checkpoint(
        path,
        model=loop.net,
        best_state=run.best_state,
        optimizer=loop.opt,
        rng=loop.rng,
        header={**header, "history": run.history, "best": run.best, **kept},
        start_state=run.start_state,
    )


def _decide_start(run: Run, margin: float, *, steps: int, planned_checkpoints: int, planned_steps: int) -> None:
    """``run.kept``, the keep-start decision with the checkpoints and mini-batch steps run and planned; a kept start
    becomes the best checkpoint."""
    run.kept = keep_start_decision(
        run.start_scores,
        None if run.trained is None else run.trained["scores"],
        margin=margin,
        trained_epoch=None if run.trained is None else run.trained["epoch"],
    )
    run.kept.update(
        checkpoints=len(run.history) - 1,
        planned_checkpoints=planned_checkpoints,
        steps=steps,
        planned_steps=planned_steps,
    )
    if run.kept["kept"] and run.start_state is not None:
        run.best = {"epoch": 0, "val_ndcg@10": run.history[0]["val_ndcg@10"], "stale": run.best["stale"]}
        run.best_state = run.start_state
