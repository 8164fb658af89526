"""Who trains a cross-fitting's encoders: the :class:`FoldTrainer` protocol, the real :class:`EncoderTrainer` (the
shared MiniLM pass first, then worker processes, a Dask cluster or this process) and what every trainer shares:
:class:`FoldRun` (one run's settings, progress and bookkeeping) and :func:`train_here` (trainings in this process).
Tests inject a double that implements the protocol (``tests/builders.py``)."""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ltrfeat.core.cores import available_cores
from ltrfeat.core.fileio import write_checked
from ltrfeat.core.processes import freed_memory_kept
from ltrfeat.core.stages import StageProfile
from ltrfeat.experiments import _encoder_pool
from ltrfeat.experiments._encoder_cache import cache_key, cached_encoder, save_scores
from ltrfeat.experiments._minilm_pass import frozen_groups, keep_frozen, share_minilm, teacher_vectors_on
from ltrfeat.experiments._starting_points import ContinuedStart, StartingPoint, distils_in_folds
from ltrfeat.experiments._training_plan import Training, check_trainings
from ltrfeat.experiments._training_task import TrainingTask, fold_scores, training_record
from ltrfeat.experiments._workers import plan_workers
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.crossfit_traits import traits


class FoldTrainer(Protocol):
    """What trains the encoders of a cross-fitting (:attr:`~ltrfeat.experiments.crossfit.CrossFitConfig.trainer`).

    :func:`~ltrfeat.experiments.crossfit.crossfit_columns` calls ``prepare`` once the trainings are planned and the
    cached ones set aside (before the zero-shot columns are scored), then ``train_elsewhere`` (the trainings it
    returns run here, through ``train``: :func:`train_here`)."""

    train: Callable[..., tuple[Any, bool]]
    """``train(spec, table, *, options, seed, cache, key, start, start_scores)``: the encoder of ``spec`` trained on
    ``table`` and whether it came from the cache (as :func:`train_one`)."""

    def prepare(self, run: FoldRun, todo: list[Training], zero_shot: list[EncoderSpec]) -> Any:
        """Whatever must happen before the zero-shot columns are scored; returns what ``train_elsewhere`` gets."""
        ...

    def train_elsewhere(self, run: FoldRun, todo: list[Training], prepared: Any) -> list[Training]:
        """Train what may run outside this process; returns the trainings left for this one."""
        ...


@dataclasses.dataclass(eq=False)
class FoldRun:
    """One cross-fitting run as its trainers see it: the ``config`` (a
    :class:`~ltrfeat.experiments.crossfit.CrossFitConfig`), the specs, the judged pairs and the table the
    encoders train on, the cache directory, the stage profile and the progress bar."""

    config: Any
    specs: list[EncoderSpec]
    pairs: pd.DataFrame
    train_table: pd.DataFrame
    cache: Path | None
    profile: StageProfile | None
    bar: Any

    @property
    def queries(self) -> list:
        return self.pairs["query"].tolist()

    @property
    def docs(self) -> list:
        return self.pairs[self.config.field].tolist()

    def finish(
        self,
        job: Training,
        scores: dict,
        train_seconds: float,
        score_seconds: float,
        cached: bool,
        record: dict | None = None,
        where: str = "this process",
    ) -> None:
        """Keep (and cache) what one training scored and recorded; count it in the profile and the bar."""
        for fold, values in scores.items():
            if job.kept.get(fold) is None:
                job.kept[fold] = values
                if fold in job.paths:
                    save_scores(job.paths[fold], values)
        if record is not None and job.record is None:
            job.record = record
            if job.record_path is not None:
                write_checked(job.record_path, json.dumps(record).encode("utf-8"))
        if self.profile is not None:
            self.profile.encoder(
                job.spec.name,
                job.job,
                train_seconds=train_seconds,
                score_seconds=score_seconds,
                cached=cached,
                where=where,
            )
        self.bar.update()


def train_one(
    spec: EncoderSpec,
    table: pd.DataFrame,
    *,
    options: dict,
    seed: int,
    cache: Path | None,
    key: str | None = None,
    start: StartingPoint | ContinuedStart | None = None,
    start_scores: np.ndarray | None = None,
):
    """The trained encoder and whether it came from ``cache`` (``key``: its :func:`~ltrfeat.experiments._encoder_cache.cache_key`, when known;
    ``start``: the weights a +init or +spans encoder, or a continued MiniLM fine-tuning, starts from;
    ``start_scores``: the zero-shot column's scores of ``table``'s rows, for a MiniLM fine-tuning's start)."""
    kind = spec.kind
    path = None
    if cache is not None:
        init_key = None if start is None else start.key
        path = cache / "encoders" / f"{spec.name}-{key or cache_key(spec, options, table, seed, init_key)}.ltrenc"
        encoder = cached_encoder(path, kind.load)
        if encoder is not None:
            return encoder, True
    settings = kind.spec_settings(spec, start) | ({} if start_scores is None else {"start_scores": start_scores})
    if distils_in_folds(spec, options):
        settings["teacher"] = spec.teacher
    encoder, _ = kind.train(table, seed=seed, progress=False, **settings, **options)
    if path is not None:
        encoder.save(path)
    return encoder, False


def run_pooled(
    trainings: list[Training], *, run: Callable, seed: int, cache, bar, finish, frozen: dict[int, tuple]
) -> None:
    """Train ``trainings`` through ``run(tasks, *, train, on_done)``: in worker processes
    (:func:`ltrfeat.experiments._encoder_pool.run_trainings`) or on a Dask cluster
    (:meth:`ltrfeat.experiments._dask_trainings.DaskTrainings.run`); the MiniLM vectors a
    ``+teacher`` training distils, the weights a ``+init`` / ``+spans`` training starts from and the frozen
    MiniLM layers' states of a fine-tuning (``frozen``, see :func:`~ltrfeat.experiments._minilm_pass.keep_frozen`) are made here first and
    handed over by file."""
    import tempfile

    from ltrfeat.encoders import distill, sbert_onnx, sbert_prefix

    with tempfile.TemporaryDirectory(prefix="ltrfeat-pool-") as tmp:
        teacher_dir = None
        distilling = [j for j in trainings if distils_in_folds(j.spec, j.options)]
        teachers = {j.spec.path for j in distilling}
        for path in teachers:
            spec = f"sbert={path}" if path else "sbert"  # MiniLM is loaded only if a vector is not cached
            for side, col in (("query", "query"), ("doc", "doc")):
                texts = pd.unique(pd.concat([j.table[col] for j in distilling if j.spec.path == path])).tolist()
                distill.teacher_vectors(spec, texts, side=side, key=distill.teacher_key(spec), progress=not bar.disable)
        if teachers:
            teacher_dir = str(Path(tmp) / "teacher")
            distill.save_vectors(teacher_dir)
        starts: dict[int, _encoder_pool.FileStart] = {}
        position = {id(j): i for i, j in enumerate(trainings)}
        save_to: dict[int, str] = {}  # inner trainings whose encoder a continued one starts from, by file
        for job in trainings:
            if isinstance(job.start, ContinuedStart) and id(job.start.inner) in position:
                inner_file = job.start.path() or Path(tmp) / f"inner-{position[id(job.start.inner)]}.ltrenc"
                save_to[position[id(job.start.inner)]] = str(inner_file)
                starts[id(job.start)] = _encoder_pool.FileStart(job.start.key, inner_file, model=job.spec.model)
            elif job.start is not None and id(job.start) not in starts:
                start_file = job.start.file(Path(tmp))
                starts[id(job.start)] = _encoder_pool.FileStart(job.start.key, start_file, model=job.spec.model)
                job.start.seconds = 0.0
        frozen_dirs: dict[tuple, str] = {}
        for job in trainings:
            key, texts = frozen.get(id(job), (None, []))
            if key is not None and key not in frozen_dirs:
                frozen_dirs[key] = str(Path(tmp) / f"frozen-{len(frozen_dirs)}")
                sbert_prefix.save(key, texts, frozen_dirs[key])
        tasks = [
            TrainingTask(
                j.spec,
                j.table,
                j.options,
                seed,
                cache,
                j.key,
                start=None if j.start is None else starts[id(j.start)],
                texts=j.texts,
                teacher_dir=teacher_dir if j in distilling else None,
                frozen_dir=frozen_dirs.get(frozen.get(id(j), (None,))[0]),
                save_to=save_to.get(i),
                after=position.get(id(j.start.inner)) if isinstance(j.start, ContinuedStart) else None,
                zero_shot=j.zero_shot,
                start_scores=j.start_scores,
                minilm_engine=sbert_onnx.chosen(),  # crossfit_columns's choice, for the workers too
            )
            for i, j in enumerate(trainings)
        ]
        bar.set_postfix_str(f"{len(tasks)} trainings side by side")
        run(tasks, train=train_one, on_done=lambda i, result: finish(trainings[i], *result))


def train_here(run: FoldRun, todo: list[Training], trainer: FoldTrainer) -> None:
    """Train ``todo`` one after the other in this process through ``trainer.train``; an outer training that
    continues an inner one gets that encoder as it is trained."""
    for job in todo:
        run.bar.set_postfix_str(f"{job.spec.name} on {len(job.table)} pairs")
        start = time.perf_counter()
        with freed_memory_kept():  # as in a pool worker: a step's buffers reused, not paged in afresh
            encoder, cached = trainer.train(
                job.spec,
                job.table,
                options=job.options,
                seed=run.config.seed,
                cache=run.cache,
                key=job.key,
                start=job.start,
                start_scores=job.start_scores,
            )
            trained = time.perf_counter()
            if job.start is not None and job.start.seconds:  # counted as its own job, not this training's
                start, job.start.seconds = start + job.start.seconds, 0.0
            for other in todo:
                if isinstance(other.start, ContinuedStart) and other.start.inner is job:
                    other.start.set(encoder)
            scores = fold_scores(encoder, job.texts, job.zero_shot)
        run.finish(job, scores, trained - start, time.perf_counter() - trained, cached, training_record(encoder))


class EncoderTrainer:
    """The real trainings (:func:`train_one`): the MiniLM passes the fine-tunings share made first
    (:mod:`~ltrfeat.experiments._minilm_pass`), then the poolable trainings in worker processes or on the
    config's Dask cluster when there are enough of them (:func:`~ltrfeat.experiments._workers.plan_workers`), the
    rest in this process."""

    train = staticmethod(train_one)

    def prepare(self, run: FoldRun, todo: list[Training], zero_shot: list[EncoderSpec]) -> tuple[dict, dict]:
        """Refuse a validation share a training cannot hold; one MiniLM pass for a zero-shot column and the frozen
        layers on its model; with a cluster, the MiniLM vectors every distillation reads made there."""
        check_trainings(todo)
        groups = frozen_groups(todo)
        teachers = [s for s in zero_shot if traits(s.kind).teacher_scorer]
        cluster, profile = run.config.cluster, run.profile
        shared = share_minilm(teachers, groups, run.queries, run.docs, cluster=cluster, profile=profile, bar=run.bar)
        if cluster is not None:
            distilling = [s for s in run.specs if any(distils_in_folds(j.spec, j.options) for j in todo if j.spec is s)]
            field = run.config.field
            teacher_vectors_on(
                cluster, run.specs, run.pairs, run.train_table, field=field, profile=profile, distilling=distilling
            )
        return groups, shared

    def train_elsewhere(self, run: FoldRun, todo: list[Training], prepared: tuple[dict, dict]) -> list[Training]:
        """The frozen MiniLM layers kept; the poolable trainings run in workers or on the cluster."""
        groups, shared = prepared
        cluster, profile = run.config.cluster, run.profile
        frozen = keep_frozen(groups, profile=profile, bar=run.bar, cluster=cluster, shared=shared)
        pooled = [j for j in todo if traits(j.spec.kind).pooled]
        threads = max([j.options["threads"] for j in pooled], default=1)
        workers = plan_workers(
            run.config.encoder_jobs or None,
            rows=sum(len(j.table) for j in pooled),
            cores=available_cores(),
            tasks=len(pooled),
            threads=threads,
        )
        if not pooled or (cluster is None and workers <= 1):
            return todo
        if cluster is not None:
            run_tasks, workers, on = cluster.run, cluster.workers(), "dask"
        else:
            run_tasks, on = functools.partial(_encoder_pool.run_trainings, workers=workers), "pool"
        if profile is not None:
            profile.encoder_pool(trainings=len(pooled), processes=workers, threads=threads, on=on)
        run_pooled(
            pooled, run=run_tasks, seed=run.config.seed, cache=run.cache, bar=run.bar, finish=run.finish, frozen=frozen
        )
        return [j for j in todo if j not in pooled]
