"""What an ablation will do and what it will cost, said before it starts (``ablate --plan`` and the first lines of
every run), and the smaller plan that fits a ``--budget``.

:func:`count_work` counts the work of a text-mode ablation without doing any of it: the encoder trainings (and
which of them ``--cache`` already holds), the MiniLM pass, the ranker fits and the statistics' resamples.
:func:`estimate` prices it with :data:`COST_MODEL`, per-unit costs taken from the stage profiles that ablations
record (``report.json`` ``stage_seconds``) in three reference runs of this project on 2 cores: the README's demo
command, the 10k-pair bench and the Home Depot five-encoder command (docs/performance.md, "Cost before the run",
gives the figures and the measured error), scaled by :func:`calibrate`, a 0.1-s probe of how fast this machine
runs one thread now and how much of a core a process gets. :func:`fit_budget` shrinks what the user left at its
default (ranker seeds, boosting rounds, resamples, encoder epochs) until the estimate fits, or refuses with the
cheapest plan.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import time
from typing import Any
from pathlib import Path

import numpy as np

from ltrfeat.core.errors import ParameterError
from ltrfeat.experiments.crossfit_traits import traits
from ltrfeat.experiments.pairs_input import PairsRead
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.encoders.pretraining import Pretraining

# Per-unit costs fitted to the reference runs' stage profiles (benchmarks/results/bench_ablation.json,
# bench_ablation_homedepot.json; the demo's report from docs/performance.md). Seconds of one core. The ranker
# stage's were refitted on quiet runs of the demo, the 10k bench (each with and without the drill-down's
# contributions) and Home Depot's profile (docs/performance.md, "The plan refitted").
COST_MODEL: dict[str, Any] = {
    "start": (4.5, 4.0),  # wall, CPU: process start, imports, the report's files and plots
    "reading": (1.1, 4e-6),  # fixed, per judged pair
    "lexical": 2e-5,  # per judged pair
    "minilm_text": 2.45e-3,  # wall per text of the MiniLM pass at 2 threads (ONNX Runtime), ...
    "minilm_cpu": 1.8,  # ... times this many busy cores
    "minilm_load": 1.5,  # export and session, once per process
    "training": 0.3,  # per CLSM / DSSM training task
    "sbert_ft_training": 1.0,  # per MiniLM fine-tuning task (torch, the model, the start's validation)
    "pool": (2.0, 2.3e-4),  # wall of the encoder pool beyond its tasks: start, hand-over; fixed, per pair
    "pool_cpu": 2.5,  # CPU per pool process (imports torch)
    "ranker_fit": {"quick": 0.033, "full": 0.074},  # per ranker fit, by boosting rounds
    "ranker_row": {"quick": 2.9e-6, "full": 8.6e-6},  # per training row a fit reads, by boosting rounds
    "ranker_worker": (2.0, 1.6),  # wall to start the ranker processes (spawned; imports), CPU of each
    # per test row of each first-seed model the drill-down explains (TreeSHAP / exact terms), by boosting rounds:
    # the README's command and the 10k-pair bench with and without them, paired in one sitting
    "contribution_row": {"quick": 6.6e-5, "full": 1.3e-4},
    "tests": (0.39, 1.3e-7),  # fixed, per test query and resample
}
# Encoder training cost per training pair and epoch by training-table size (log-log between the reference
# runs, constant outside): the runs differ in text length and how early the trainings stop, not only in size.
PAIR_EPOCH = {
    "clsm": ((10_184, 15.4e-6), (74_067, 211e-6)),
    "dssm": ((10_184, 44e-6), (74_067, 132e-6)),
    "teacher": ((10_184, 70.7e-6), (74_067, 220e-6)),  # a CLSM / DSSM distilling MiniLM in every fold
    "sbert-ft": ((10_184, 1.48e-3), (74_067, 8.28e-3)),
}
_PROBE_REFERENCE = 0.037  # CPU seconds of :func:`_probe` on this machine's CPU model (AMD EPYC, AVX2), best of 20
QUICK_ROUNDS = 100  # at most this many boosting rounds: the ranker costs of the --quick reference run


@dataclasses.dataclass
class EncoderWork:
    """One encoder of the ablation: ``trainings`` planned, ``cached`` of them in ``--cache``, and the training pairs
    times epochs (``pair_epochs``) of those to train; ``rates`` names the row of :data:`PAIR_EPOCH` it is priced by
    (None: zero-shot), ``guessed`` when no reference run trained its kind."""

    name: str
    rates: str | None
    trainings: int = 0
    cached: int = 0
    pair_epochs: float = 0.0
    tasks: int = 0
    guessed: bool = False


@dataclasses.dataclass
class Work:
    """What an ablation will do, counted before doing it (see :func:`count_work`)."""

    pairs: int
    queries: int
    folds: int
    encoders: list[EncoderWork]
    minilm_texts: int  # texts the MiniLM pass encodes (not in --cache)
    minilm_cached: int
    ranker_sets: int
    other_sets: int  # sets ranked by one feature
    seeds: int
    n_estimators: int
    inner_folds: int | None  # None: no model selection
    candidates: int
    seeded_candidates: int
    resamples: int
    encoder_workers: int
    cache: str | None
    ranker_jobs: int | None = None  # ``--jobs``
    cores: int = 2
    text_mode: bool = True  # reads judged pairs and makes their lexical features (LETOR mode: folds read already)
    dask: str | None = None  # ``--dask``: the cluster's workers are not priced, this machine's cores are
    # what the ranker runs' inputs depend on besides the ranker settings (text mode with --cache; see ran_sets)
    identity: dict | None = None
    ranker_sets_cached: int = 0  # ranker sets whose every run --cache holds (from an earlier run's record)

    @property
    def fits_per_fold(self) -> int:
        """Ranker fits per fold, as :func:`ltrfeat.experiments.ablation.fit_rows` counts them (sets whose runs
        --cache holds fit nothing)."""
        sets = self.ranker_sets - self.ranker_sets_cached
        if self.inner_folds is None:
            return sets * self.seeds
        final = self.seeded_candidates * self.seeds + self.candidates - self.seeded_candidates
        return sets * (self.inner_folds * self.candidates + final) + (1 if sets else 0)

    @property
    def fit_rows(self) -> int:
        """Training rows all ranker fits read (each fold's ranker rows are the pairs outside its test queries)."""
        return int(self.fits_per_fold * self.pairs * (self.folds - 1))

    @property
    def contribution_rows(self) -> int:
        """Test rows the drill-down's contributions are computed on: the first seed's model of every (fold, ranker
        set, candidate), each on at most :data:`~ltrfeat.experiments.fold_contributions.MAX_ROWS` of its fold's test
        rows."""
        from ltrfeat.experiments.fold_contributions import MAX_ROWS

        models = (self.ranker_sets - self.ranker_sets_cached) * (1 if self.inner_folds is None else self.candidates)
        return self.folds * models * min(MAX_ROWS, self.pairs // max(self.folds, 1))

    @property
    def ranker_workers(self) -> int:
        """Ranker processes, as :func:`~ltrfeat.experiments._workers.plan_workers` gives them to these fits."""
        from ltrfeat.experiments._workers import MIN_FIT_ROWS, plan_workers

        return plan_workers(self.ranker_jobs, rows=self.fit_rows, cores=self.cores, min_rows=MIN_FIT_ROWS)

    @property
    def runs(self) -> int:
        return self.folds * (self.ranker_sets * self.seeds + self.other_sets)


@dataclasses.dataclass
class Stage:
    """One line of the plan: a stage (or one encoder's trainings), what it does, its CPU and wall seconds and how
    many of the run's processes (or threads) it keeps busy at once."""

    name: str
    what: str
    cpu: float
    wall: float
    procs: int = 1


@dataclasses.dataclass
class Machine:
    """This machine now: cores, load, one thread's speed against the reference (``speed`` < 1: slower) and the
    share of a core one process gets beside the other jobs (``share``)."""

    cores: int
    load: float
    speed: float = 1.0
    share: float = 1.0

    def share_of(self, procs: int) -> float:
        """The share of a core each of ``procs`` busy processes of the run gets: the other jobs, as many as
        :attr:`share` says compete for the cores, and the run's own processes take turns."""
        others = self.cores / self.share - 1 if self.share < 0.95 else 0.0
        return min(1.0, self.cores / max(others + procs, 1e-9))


@dataclasses.dataclass
class Plan:
    """The priced plan: its :class:`Work`, :class:`Stage` lines and the machine it was priced for."""

    work: Work
    stages: list[Stage]
    machine: Machine

    @property
    def cpu(self) -> float:
        return sum(s.cpu for s in self.stages)

    @property
    def wall(self) -> float:
        return sum(s.wall for s in self.stages)

    @property
    def dominant(self) -> Stage:
        return max(self.stages, key=lambda s: s.wall)

    def as_dict(self) -> dict:
        """The estimate for ``timings.json``: totals and each stage's wall and CPU seconds, and the machine."""
        return {
            "wall_seconds": round(self.wall, 1),
            "cpu_seconds": round(self.cpu, 1),
            "stages": {s.name: {"wall": round(s.wall, 1), "cpu": round(s.cpu, 1)} for s in self.stages},
            "machine": dataclasses.asdict(self.machine),
        }


def parse_duration(text: str, *, option: str = "--budget") -> float:
    """Seconds of a duration: ``900``, ``900s``, ``15m``, ``1h30m``, ``1h 30m 10s``, ``15:00`` or ``1:30:00``."""
    raw = str(text).strip().lower()
    fix = "give e.g. 900s, 15m, 1h30m or 15:00"
    seconds = None
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        seconds = float(raw)
    elif re.fullmatch(r"\d+(:[0-5]\d){1,2}", raw):
        seconds = float(sum(int(p) * 60**i for i, p in enumerate(reversed(raw.split(":")))))
    elif (
        m := re.fullmatch(r"(?:(\d+(?:\.\d+)?)\s*h)?\s*(?:(\d+(?:\.\d+)?)\s*m)?\s*(?:(\d+(?:\.\d+)?)\s*s)?", raw)
    ) and (raw):
        h, mins, s = (float(g) if g else 0.0 for g in m.groups())
        seconds = h * 3600 + mins * 60 + s
    if seconds is None:
        raise ParameterError(f"{option} {text!r} is not a duration", fix=fix, param="budget")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ParameterError(f"{option} {text!r} leaves no time to run", fix=fix, param="budget")
    return seconds


def duration(seconds: float) -> str:
    """``"42 s"``, ``"7.5 min"``, ``"1 h 05 min"``: an estimate in words."""
    if seconds < 100:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def _probe() -> float:
    """A fixed single-thread workload (numpy, in the shape of the rankers' and encoders' inner loops)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((96, 96))
    total = 0.0
    for _ in range(600):
        a = np.tanh(a @ a.T / 96.0)
        total += float(np.sort(a, axis=None)[::97].sum())
    return total


def calibrate(cores: int | None = None) -> Machine:
    """How this machine runs now: the probe's best CPU time against :data:`_PROBE_REFERENCE` (speed) and the share
    of a core a process gets beside the other jobs (the geometric mean of the probes' median CPU over wall time and
    of the cores over the load average, each at most 1); 0.1 CPU-s."""
    from ltrfeat.core.cores import available_cores
    from threadpoolctl import threadpool_limits

    cores = cores or available_cores()
    cpus, shares = [], []
    with threadpool_limits(1):
        for _ in range(3):
            wall, cpu = time.perf_counter(), time.process_time()
            _probe()
            cpus.append(time.process_time() - cpu)
            shares.append(cpus[-1] / max(time.perf_counter() - wall, 1e-6))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    speed = min(2.0, max(0.25, _PROBE_REFERENCE / max(min(cpus), 1e-6)))
    # the probes see the other jobs for a tenth of a second, the load average for a minute: their geometric mean
    share = max(0.05, math.sqrt(min(1.0, float(np.median(shares))) * min(1.0, cores / max(load, 1e-9))))
    return Machine(cores=cores, load=load, speed=speed, share=share)


def _pair_epoch(rates: str, pairs: int) -> float:
    """Seconds per training pair and epoch of :data:`PAIR_EPOCH` row ``rates`` at ``pairs`` judged pairs."""
    (n0, r0), (n1, r1) = PAIR_EPOCH[rates]
    if pairs <= n0:
        return r0
    if pairs >= n1:
        return r1
    t = math.log(pairs / n0) / math.log(n1 / n0)
    return math.exp(math.log(r0) + t * math.log(r1 / r0))


def rates_of(spec) -> tuple[str | None, bool]:
    """The :data:`PAIR_EPOCH` row an encoder spec is priced by (None: zero-shot) and whether it is a guess."""
    if not spec.trainable:
        return None, False
    if traits(spec.kind).frozen_prefix:
        return "sbert-ft", False
    if spec.teacher is not None and spec.model in ("clsm", "dssm"):
        return "teacher", spec.pretrain != Pretraining.TEACHER
    if spec.model in ("clsm", "dssm"):
        return spec.model, spec.pretrain is not None
    return "clsm", True


def estimate(work: Work, machine: Machine | None = None) -> Plan:
    """The plan of ``work`` with each stage's CPU and wall seconds on ``machine`` (default: the reference)."""
    machine = machine or Machine(cores=2, load=0.0)
    m = COST_MODEL
    stages = [Stage("start", "process start, imports, report files", m["start"][1], m["start"][0])]
    if work.text_mode:
        read = m["reading"][0] + m["reading"][1] * work.pairs + m["lexical"] * work.pairs
        what = f"{work.pairs:,} judged pairs, {work.queries:,} queries"
        stages.append(Stage("reading + lexical", what, read, read))
    if work.minilm_texts:
        wall = m["minilm_load"] + m["minilm_text"] * work.minilm_texts
        cached = f", {work.minilm_cached:,} more from the cache" if work.minilm_cached else ""
        what = f"{work.minilm_texts:,} texts{cached}"
        stages.append(Stage("MiniLM pass", what, wall * m["minilm_cpu"], wall, procs=work.cores))
    stages += _encoder_stages(work)
    stages.append(_ranker_stage(work))
    tests = m["tests"][0] + m["tests"][1] * work.queries * work.resamples
    stages.append(Stage("tests", f"{work.resamples:,} resamples over {work.queries:,} queries", tests, tests))
    for stage in stages:
        stage.cpu /= machine.speed
        stage.wall /= machine.speed * machine.share_of(stage.procs)
    return Plan(work, stages, machine)


def _encoder_stages(work: Work) -> list[Stage]:
    """One stage per trained encoder (its trainings' CPU, side by side in the pool) and the pool's own cost."""
    m = COST_MODEL
    stages, tasks = [], 0
    for enc in work.encoders:
        if enc.rates is None:
            continue
        fixed = m["sbert_ft_training"] if enc.rates == "sbert-ft" else m["training"]
        cpu = enc.tasks * fixed + enc.pair_epochs * _pair_epoch(enc.rates, work.pairs)
        tasks += enc.tasks
        what = f"{enc.trainings} trainings" + (f", {enc.cached} in the cache" if enc.cached else "")
        what += f", {enc.pair_epochs:,.0f} pair-epochs" + (
            " (priced as a CLSM: no reference run)" if enc.guessed else ""
        )
        procs = max(1, min(work.encoder_workers, enc.tasks))
        stages.append(Stage(f"encoder {enc.name}", what, cpu, cpu / procs, procs))
    if tasks and work.encoder_workers > 1:
        wall = m["pool"][0] + m["pool"][1] * work.pairs
        what = f"{work.encoder_workers} processes start and hand over"
        stages.append(Stage("encoder pool", what, m["pool_cpu"] * work.encoder_workers, wall, work.encoder_workers))
    return stages


def _ranker_stage(work: Work) -> Stage:
    m = COST_MODEL
    tier = "quick" if work.n_estimators <= QUICK_ROUNDS else "full"
    fits = work.fits_per_fold * work.folds
    cpu = fits * m["ranker_fit"][tier] + work.fit_rows * m["ranker_row"][tier]
    cpu += work.contribution_rows * m["contribution_row"][tier]
    workers = work.ranker_workers
    wall = cpu / workers + (m["ranker_worker"][0] if workers > 1 else 0.0)
    cpu += m["ranker_worker"][1] * workers if workers > 1 else 0.0
    selection = "plain LambdaMART" if work.inner_folds is None else f"{work.inner_folds}-fold inner model selection"
    seeds = f"{work.seeds} seed{'s' if work.seeds > 1 else ''}"
    cached = f", {work.ranker_sets_cached} of the ranker sets in the cache" if work.ranker_sets_cached else ""
    what = (
        f"{work.runs} runs ({work.folds} folds x {work.ranker_sets} ranker sets x {seeds} + {work.other_sets} "
        f"single-feature sets){cached}, {fits:,} fits, {selection}, {work.n_estimators} rounds, "
        f"{workers} process{'es' if workers > 1 else ''}"
    )
    return Stage("rankers", what, cpu, wall, workers)


def cut_lines(plan: Plan, shrunk: dict[str, Plan]) -> list[str]:
    """What would cut the dominant part of ``plan``: ``shrunk`` holds the plans of the cheaper settings
    (:func:`shrink_steps`) by the option that makes them."""
    top = plan.dominant
    work = plan.work
    lines = []
    if top.name.startswith("encoder ") and top.name != "encoder pool":
        name = top.name.removeprefix("encoder ")
        lines.append(f"--cache DIR: a rerun trains none of {name}'s trainings again (and adds an encoder cheaply)")
        enc = next(e for e in work.encoders if e.name == name)
        if enc.rates == "sbert-ft":
            lines.append(
                "--encoder-option sbert-ft.freeze_layers=5: about half its training (docs/performance.md: -.0027 "
                "NDCG@1 on Home Depot), or a lighter encoder: dssm:generalized+spans+teacher scores 334-486x faster"
            )
        else:
            lines.append("a lighter encoder or fewer epochs (--encoder-option epochs=N)")
        lines.append("--dask ADDRESS: trainings on more cores than this machine's")
    elif top.name == "MiniLM pass":
        lines.append("--cache DIR: MiniLM's vectors are kept, each text is encoded once ever")
        lines.append("--dask ADDRESS: the pass on a cluster")
    else:
        for option, other in shrunk.items():
            lines.append(f"{option}: ~{duration(plan.wall - other.wall)} less")
        if work.cache is None:
            lines.append("--cache DIR: a rerun takes every unchanged ranker run from it")
        lines.append("--dask ADDRESS: the ranker runs on more cores")
    return lines


def plan_lines(plan: Plan, shrunk: dict[str, Plan] | None = None) -> list[str]:
    """The plan in words: one line per stage, the totals, the dominant part and what would cut it."""
    w, mach = plan.work, plan.machine
    lines = [
        f"plan: {w.folds} folds, {len(w.encoders)} encoders, {w.runs} ranker runs; this machine: {mach.cores} cores, "
        f"load {mach.load:.1f}, one thread at {mach.speed:.2f}x the reference speed and {mach.share:.0%} of a core"
    ]
    width = max(len(s.name) for s in plan.stages)
    for s in plan.stages:
        lines.append(f"  {s.name:<{width}}  ~{duration(s.wall):>9} wall  ~{s.cpu:>7,.0f} CPU-s  {s.what}")
    if w.dask:
        lines.append(f"  --dask {w.dask}: priced as if run on this machine's cores (the cluster's are not known here)")
    if w.cache is not None and w.identity is None:
        lines.append(f"  cache {w.cache}: its ranker runs are not counted ahead here (they are taken when found)")
    total = plan.wall
    top = plan.dominant
    lines.append(
        f"estimate: ~{duration(total)} wall, ~{plan.cpu:,.0f} CPU-s (the reference runs within 30%; on a busy "
        "machine the wall time moves with the other jobs: docs/performance.md)"
    )
    cuts = cut_lines(plan, shrunk or {})
    lines.append(f"dominant: {top.name}, {top.wall / total:.0%} of the wall time; cut it with " + "; ".join(cuts))
    return lines


def shrink_steps(work: Work, *, seeds_given: bool, rounds_given: bool, resamples_given: bool, epochs_given: bool):
    """The cheaper settings a budget may take, in the order they are tried (least change to the report first):
    ``[(option in words, change for the settings, work with it)]``; explicit settings are never shrunk."""
    from ltrfeat.experiments.defaults import QUICK, QUICK_ENCODER, ENCODER_DEFAULTS

    steps = []
    if not seeds_given and work.seeds > 1:
        steps.append((f"--seeds {QUICK['seeds'][0]}", {"seeds": QUICK["seeds"]}, dataclasses.replace(work, seeds=1)))
        work = steps[-1][2]
    if not rounds_given and work.n_estimators > QUICK["n_estimators"]:
        change = {"n_estimators": QUICK["n_estimators"]}
        steps.append((f"--n-estimators {QUICK['n_estimators']}", change, dataclasses.replace(work, **change)))
        work = steps[-1][2]
    if not resamples_given and work.resamples > QUICK["resamples"]:
        change = {"resamples": QUICK["resamples"]}
        steps.append((f"--resamples {QUICK['resamples']}", change, dataclasses.replace(work, **change)))
        work = steps[-1][2]
    ratio = QUICK_ENCODER["epochs"] / ENCODER_DEFAULTS["epochs"]
    trained = [e for e in work.encoders if e.rates not in (None, "sbert-ft") and e.pair_epochs]
    if not epochs_given and ratio < 1 and trained:
        encoders = [
            dataclasses.replace(e, pair_epochs=e.pair_epochs * ratio) if e in trained else e for e in work.encoders
        ]
        change = {"encoder_options": dict(QUICK_ENCODER)}  # with its sbert-ft.epochs: an unprefixed key drops it
        option = f"--encoder-option epochs={QUICK_ENCODER['epochs']}"
        # other encoders than the cache keys name: nothing of this run is remembered (identity None)
        steps.append((option, change, dataclasses.replace(work, encoders=encoders, identity=None)))
    return steps


def fit_budget(plan: Plan, budget: float, steps) -> tuple[Plan, list[tuple[str, dict]]]:
    """The plan that fits ``budget`` seconds of wall time: ``plan`` itself, or ``plan`` with the first of
    ``steps`` (:func:`shrink_steps`) taken until it fits; raises :class:`ParameterError` with the cheapest plan
    when even all of them do not fit."""
    taken: list[tuple[str, dict]] = []
    current = plan
    for option, change, work in steps:
        if current.wall <= budget:
            break
        current = estimate(work, plan.machine)
        taken.append((option, change))
    if current.wall > budget:
        options = " ".join(option for option, _ in taken)
        top = current.dominant
        raise ParameterError(
            f"--budget {duration(budget)}: the cheapest plan that answers the question"
            + (f" ({options})" if options else "")
            + f" needs ~{duration(current.wall)} ({top.name} ~{duration(top.wall)})",
            fix=f"give --budget {duration(current.wall * 1.3)} or more, drop an encoder, or rerun with --cache",
            param="budget",
        )
    return current, taken


def count_work(source, settings, *, read: PairsRead, options: dict, ranker: dict) -> Work:
    """The :class:`Work` of ``ablate_pairs(source, settings)`` (a :class:`~ltrfeat.experiments.ablate.PairsSource`
    and :class:`~ltrfeat.experiments.ablate.AblateSettings`) from what the ablation reads of ``source`` (``read``,
    :func:`~ltrfeat.experiments.ablate.read_pairs_source`), its encoder ``options`` and its LambdaMART parameters
    (``ranker``): the encoder trainings are planned (with ``settings.cache``: which are stored), nothing is
    trained (:func:`ltrfeat.experiments.ablate.pairs_work` calls it)."""
    from ltrfeat.core.cores import available_cores
    from ltrfeat.experiments._encoder_pool import THREADS
    from ltrfeat.experiments._training_plan import encoder_table, plan_trainings
    from ltrfeat.experiments.crossfit import CrossFitConfig
    from ltrfeat.experiments.fold_plans import group_pairs, plan_folds
    from ltrfeat.experiments._workers import plan_workers
    from ltrfeat.features.lexical import FAMILIES
    from ltrfeat.rankers import registry

    pairs, specs, collection, train_table = read.pairs, read.specs, read.collection, read.train_table
    pairs = group_pairs(pairs)
    config = CrossFitConfig(
        k=source.k_folds, valid_fraction=source.valid_fraction, seed=source.split_seed, options=options
    )
    plans = plan_folds(pairs["qid"], k=config.k, valid_fraction=config.valid_fraction, seed=config.seed)
    cache = None if settings.cache is None else Path(settings.cache)
    table = encoder_table(pairs, config.field, train_table)
    trainings, _ = plan_trainings(pairs, plans, specs, config, train_table=table, collection=collection, cache=cache)
    encoders = []
    for spec in specs:
        rates, guessed = rates_of(spec)
        jobs = [j for j in trainings if j.spec is spec]
        todo = [j for j in jobs if not j.done]
        epochs = [float(j.options.get("epochs", getattr(spec.kind.config, "epochs", 1))) for j in todo]
        encoders.append(
            EncoderWork(
                spec.name,
                rates,
                trainings=len(jobs),
                cached=len(jobs) - len(todo),
                pair_epochs=sum(len(j.table) * e for j, e in zip(todo, epochs)),
                tasks=len(todo),
                guessed=guessed,
            )
        )
    texts, cached_texts = _minilm_texts(pairs, specs, trainings, table, config.field, cache)
    rows = sum(len(j.table) for j in trainings if not j.done and traits(j.spec.kind).pooled)
    pooled = sum(1 for j in trainings if not j.done and traits(j.spec.kind).pooled)
    encoder_workers = plan_workers(
        source.encoder_jobs or None, rows=rows, cores=available_cores(), tasks=max(pooled, 1), threads=THREADS
    )
    lexical = [n for fam in FAMILIES for n in FAMILIES[fam][1]] if source.lexical == "all" else []
    bm25 = sum(n.startswith("bm25") for n in lexical) or 1
    light = [s for s in specs if not s.kind.transformer]
    ranker_sets = 1 + len(specs) + (len(specs) > 1) + (len(light) >= 2 and len(light) < len(specs))
    selection = settings.selection
    seeds = len(settings.resolved("seeds"))
    work = Work(
        pairs=len(pairs),
        queries=int(pairs["qid"].nunique()),
        folds=config.k,
        encoders=encoders,
        minilm_texts=texts,
        minilm_cached=cached_texts,
        ranker_sets=ranker_sets,
        other_sets=len(specs) + bm25,
        seeds=seeds,
        n_estimators=int(settings.resolved("n_estimators")),
        inner_folds=None if selection is None else selection.inner_folds,
        candidates=0 if selection is None else len(selection.candidates),
        seeded_candidates=0 if selection is None else sum(not registry.seed_free(c) for c in selection.candidates),
        resamples=int(settings.resolved("resamples")),
        encoder_workers=encoder_workers,
        cache=None if cache is None else str(cache),
        ranker_jobs=settings.jobs,
        cores=available_cores(),
        identity=None if cache is None else _identity(pairs, source, specs, trainings),
        dask=settings.dask,
    )
    cached = ran_sets(work, settings, ranker)
    keys = _set_keys(work, settings, ranker)
    return dataclasses.replace(
        work, ranker_sets_cached=sum(kind == SetKind.RANKER and key in cached for kind, key in keys)
    )


def _identity(pairs, source, specs, trainings) -> dict:
    """What the ablation's feature columns depend on: the judged pairs, lexical features and folds, and each
    encoder's trainings (their cache keys) or zero-shot model."""
    import hashlib

    import pandas as pd

    data = hashlib.sha256(pd.util.hash_pandas_object(pairs, index=False).to_numpy().tobytes())
    data.update(json.dumps([source.lexical, source.k_folds, source.valid_fraction, source.split_seed]).encode())
    encoders = {}
    for spec in specs:
        keys = sorted(j.key or "" for j in trainings if j.spec is spec)
        encoders[spec.name] = hashlib.sha256(json.dumps([spec.text, keys]).encode()).hexdigest()[:24]
    light = [s.name for s in specs if not s.kind.transformer]
    return {"data": data.hexdigest()[:24], "encoders": encoders, "light": light}


def _set_keys(work: Work, settings, ranker: dict) -> list[tuple[SetKind, str]]:
    """``(kind, key)`` of every feature set of a text-mode ablation with ``--cache``, keyed by its columns'
    inputs (:func:`_identity`), the ranker settings and LambdaMART parameters (``ranker``): equal keys, equal ranker runs (the run store's keys)."""
    import hashlib

    from ltrfeat.core.versions import library_versions

    if work.identity is None:
        return []
    names = list(work.identity["encoders"])
    common = [
        work.identity["data"],
        settings.engine,
        list(settings.resolved("seeds")),
        ranker,
        settings.metrics,
        [settings.gain, settings.no_relevant, settings.ties, settings.alone, settings.deployable],
        None if settings.selection is None else settings.selection.to_dict(),
        library_versions("numpy", "lightgbm", "xgboost", "scikit-learn"),
    ]
    sets: list[tuple[SetKind, list[str]]] = [(SetKind.RANKER, [])]
    sets += [(SetKind.RANKER, [n]) for n in names] + [(SetKind.ALONE, [n]) for n in names]
    sets += [(SetKind.RANKER, names)] if len(names) > 1 else []
    light = work.identity["light"]
    sets += [(SetKind.RANKER, ["light", *light])] if 2 <= len(light) < len(names) else []
    keys = []
    for kind, members in sets:
        inputs = [work.identity["encoders"].get(n, n) for n in members]
        text = json.dumps([common, kind, inputs], sort_keys=True, default=str)
        keys.append((kind, hashlib.sha256(text.encode()).hexdigest()[:32]))
    return keys


def ran_sets(work: Work, settings, ranker: dict) -> set[str]:
    """The keys (:func:`_set_keys`) of the feature sets whose runs an earlier ablation stored in ``--cache``."""
    if work.cache is None:
        return set()
    return {key for _, key in _set_keys(work, settings, ranker) if (Path(work.cache) / "plans" / key).exists()}


def remember_sets(work: Work, settings, ranker: dict) -> None:
    """Record in ``--cache`` that the ranker runs of ``work``'s feature sets are stored (after the run); ``ranker``:
    the runs' LambdaMART parameters."""
    if work.cache is None:
        return
    from ltrfeat.core.fileio import atomic_output

    for _, key in _set_keys(work, settings, ranker):
        with atomic_output(Path(work.cache) / "plans" / key, binary=True) as fh:
            fh.write(b"")


def _minilm_texts(pairs, specs, trainings, table, field: str, cache: Path | None) -> tuple[int, int]:
    """Texts the MiniLM pass encodes, and those ``--cache`` holds vectors of: every distinct query and document
    when a MiniLM fine-tuning still trains (its frozen layers run over them all), else those of a zero-shot column
    and of the tables a ``+teacher`` training distils that are not cached."""
    wanted: dict[str, dict[str, set]] = {}  # teacher -> side -> texts
    for spec in specs:
        teacher = f"sbert={spec.path}" if spec.path else "sbert"
        if traits(spec.kind).teacher_scorer:
            sides = wanted.setdefault(teacher, {"query": set(), "doc": set()})
            sides["query"].update(pairs["query"])
            sides["doc"].update(pairs[field])
        elif spec.teacher is not None:
            sides = wanted.setdefault(spec.teacher, {"query": set(), "doc": set()})
            sides["query"].update(table["query"])
            sides["doc"].update(table["doc"])
    if any(traits(j.spec.kind).frozen_prefix and not j.done for j in trainings):
        everything = set(pairs["query"]) | set(pairs[field]) | set(table["query"]) | set(table["doc"])
        return len(everything), 0
    total = sum(len(texts) for sides in wanted.values() for texts in sides.values())
    if cache is None or not total:
        return total, 0
    from ltrfeat.encoders import distill

    distill.load_vectors(cache / "teacher")
    missing = sum(
        len(distill.missing_vectors(distill.teacher_key(teacher), side, texts))
        for teacher, sides in wanted.items()
        for side, texts in sides.items()
    )
    return missing, total - missing


def planned(work: Work, source, settings, *, machine: Machine | None = None):
    """``(lines, source, settings, plan)``: the plan of ``ablate_pairs(source, settings)`` (its :func:`count_work`)
    in words (:func:`plan_lines`), the source and settings to run, shrunk to fit ``settings.budget``
    (:func:`priced`), and the :class:`Plan` they run."""
    epochs_given = settings.quick or "epochs" in source.encoder_options
    lines, changes, plan = priced(work, settings, epochs_given=epochs_given, machine=machine)
    options = changes.pop("encoder_options", None)
    if options:
        source = dataclasses.replace(source, encoder_options={**options, **source.encoder_options})
    return lines, source, dataclasses.replace(settings, **changes) if changes else settings, plan


def priced(work: Work, settings, *, epochs_given: bool = True, machine: Machine | None = None):
    """``(lines, changes, plan)``: ``work`` priced on ``machine`` (default: :func:`calibrate`) in words, the changes
    to ``settings`` (and ``encoder_options``) that fit ``settings.budget``, said in the last line, and the
    :class:`Plan` that runs; a budget that even the cheapest plan misses raises :class:`ParameterError`."""
    machine = machine or calibrate(work.cores)
    plan = estimate(work, machine)
    steps = shrink_steps(
        work,
        seeds_given=settings.seeds is not None,
        rounds_given=settings.n_estimators is not None,
        resamples_given=settings.resamples is not None,
        epochs_given=epochs_given,
    )
    shrunk = {option: estimate(w, machine) for option, _, w in steps[:1]}
    if len(steps) > 1:  # every step: what --quick does to the settings left at their defaults
        shrunk["--quick"] = estimate(steps[-1][2], machine)
    lines = plan_lines(plan, shrunk)
    if settings.budget is None:
        return lines, {}, plan
    fitted, taken = fit_budget(plan, settings.budget, steps)
    if not taken:
        lines.append(f"budget {duration(settings.budget)}: the plan fits as it is")
        return lines, {}, plan
    changes: dict = {}
    for _, change in taken:
        changes |= change
    lines.append(
        f"budget {duration(settings.budget)}: runs with {' '.join(option for option, _ in taken)} instead "
        f"(~{duration(fitted.wall)} wall, ~{fitted.cpu:,.0f} CPU-s): fewer seeds widen the seed-averaged "
        "figures' noise, fewer rounds or epochs can lower the trees' and encoders' scores"
    )
    return lines, changes, fitted


def folds_work(folds, sets, settings) -> Work:
    """The :class:`Work` of an ablation of LETOR ``folds`` (read) over feature ``sets`` (planned): rankers and
    tests only."""
    from ltrfeat.core.cores import available_cores
    from ltrfeat.rankers import registry

    selection = settings.selection
    rows = [len(f.train) + (0 if f.valid is None else len(f.valid)) for f in folds]
    queries = sum(len(set(f.test.qid)) for f in folds)
    return Work(
        # fit_rows counts pairs * (folds - 1): the folds' ranker rows are that many here
        pairs=round(sum(rows) / max(len(folds) - 1, 1)),
        queries=queries,
        folds=len(folds),
        encoders=[],
        minilm_texts=0,
        minilm_cached=0,
        ranker_sets=sum(s.kind == SetKind.RANKER for s in sets),
        other_sets=sum(s.kind != SetKind.RANKER for s in sets),
        seeds=len(settings.resolved("seeds")),
        n_estimators=int(settings.resolved("n_estimators")),
        inner_folds=None if selection is None else selection.inner_folds,
        candidates=0 if selection is None else len(selection.candidates),
        seeded_candidates=0 if selection is None else sum(not registry.seed_free(c) for c in selection.candidates),
        resamples=int(settings.resolved("resamples")),
        encoder_workers=1,
        cache=None if settings.cache is None else str(settings.cache),
        ranker_jobs=settings.jobs,
        cores=available_cores(),
        text_mode=False,
        dask=settings.dask,
    )
