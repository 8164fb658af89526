"""Cross-fitted CLSM / DSSM / DeepMatch trainings and MiniLM fine-tunings run side by side in worker processes.

One training at 2 threads keeps 2 cores busy only part of the time, while two trainings at 1 thread each
keep both busy (Home Depot, two CLSM trainings on a third of the queries each: 1.6x the throughput; two
MiniLM fine-tunings on 800 queries each: 1.3x). :func:`run_trainings` therefore trains a cross-fitting's independent encoders in
``workers`` spawned processes and hands each finished one back (the scores of its folds' rows, its
seconds). A torch training is deterministic for a given thread count but not across thread counts (a
matrix product split over 2 threads rounds differently in the 7th digit), so every cross-fitted training
of these models runs at :data:`THREADS` torch thread, in a worker or not: the number of workers, the
cores of the machine and whether the pool is used at all do not change the scores (tested).

What a worker needs from the parent comes by file: the MiniLM vectors of every text a ``+teacher``
training distils (:func:`ltrfeat.encoders.distill.save_vectors`, computed once in the parent,
so no worker loads or runs MiniLM) and the starting weights of ``+init`` / ``+spans`` encoders (a
``.ltrenc`` bundle), and the states of MiniLM's frozen lower layers for every text a fine-tuning reads
(:func:`ltrfeat.encoders.sbert_prefix.save`, computed once in the parent, memory-mapped by the
workers). Each worker trains through the same code path as the parent (and writes the
encoder to the cache when there is one).
"""

from __future__ import annotations

import concurrent.futures
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path


from ltrfeat.core.processes import keep_freed_memory, spawn_pool
from ltrfeat.experiments._training_task import TrainingTask, fold_scores, training_record
from ltrfeat.experiments.crossfit_traits import traits

THREADS = 1  # torch threads of every cross-fitted training of a pooled kind (CrossFitTraits.pooled; see above)


class FileStart:
    """A starting point read from a bundle file (the worker side of a ``+init`` / ``+spans`` start, or of
    the inner MiniLM fine-tuning a continued one starts from)."""

    _loaded: dict[str, object] = {}  # path -> encoder, per worker process

    def __init__(self, key: str | None, path: Path, *, model: str = "clsm"):
        self.key, self.path, self.model = key, Path(path), model
        self.seconds = 0.0

    def encoder(self):
        from ltrfeat.encoders.registry import encoder_kind

        name = str(self.path)
        if name not in self._loaded:
            self._loaded[name] = encoder_kind(self.model).load(self.path)
        return self._loaded[name]


_LOADED: set[str] = set()  # teacher-vector and frozen-state directories this worker has read


def fit_task(task: TrainingTask, train: Callable) -> tuple[dict, float, float, bool, dict]:
    """Worker entry (pool or Dask): train one encoder (or load it from the cache), score its folds' rows; returns
    the scores by fold, the training's and the scoring's seconds, whether it came from the cache and its
    :func:`~ltrfeat.experiments._training_task.training_record`."""
    import torch

    from ltrfeat.encoders import distill, sbert_onnx, sbert_prefix

    torch.set_num_threads(task.options["threads"])
    if task.teacher_dir is not None and task.teacher_dir not in _LOADED:
        distill.load_vectors(task.teacher_dir)
        _LOADED.add(task.teacher_dir)
    if task.frozen_dir is not None and task.frozen_dir not in _LOADED:
        sbert_prefix.load(task.frozen_dir)
        _LOADED.add(task.frozen_dir)
    start = time.perf_counter()
    encoder, cached = train(
        task.spec,
        task.table,
        options=task.options,
        seed=task.seed,
        cache=task.cache,
        key=task.key,
        start=task.start,
        start_scores=task.start_scores,
    )
    trained = time.perf_counter()
    if task.save_to is not None and not Path(task.save_to).exists():  # a continued training's start
        encoder.save(task.save_to)
    with sbert_onnx.engine(task.minilm_engine):
        scores = fold_scores(encoder, task.texts, task.zero_shot)
    return scores, trained - start, time.perf_counter() - trained, cached, training_record(encoder)


def _fit(task: TrainingTask, train: Callable) -> tuple[dict, float, float, bool, dict, str]:
    keep_freed_memory()  # a pool process only trains: its step buffers are reused, not paged in afresh
    return (*fit_task(task, train), f"pool process {os.getpid()}")


def run_trainings(
    tasks: list[TrainingTask], *, workers: int, train: Callable, on_done: Callable[[int, tuple], None]
) -> None:
    """Run every task in ``workers`` spawned processes, the costliest ready task first (one whose ``after``
    task has finished); ``train(spec, table, *, options, seed, cache, key, start, start_scores)`` (a module-level function,
    sent by reference) returns ``(encoder, from cache)``. ``on_done(i, (scores by fold, train seconds, score
    seconds, from cache, training record, where it ran))`` is called in this process as task ``i`` finishes. On an error or an interruption
    the workers are stopped at once."""
    waiting = sorted(range(len(tasks)), key=lambda i: -task_cost(tasks[i]))
    finished: set[int] = set()
    pool = spawn_pool(workers)  # spawned (this process runs torch threads); they die with this process
    try:
        running: dict[concurrent.futures.Future, int] = {}
        while waiting or running:
            # one task per free worker, the costliest whose training it continues (``after``) has finished
            ready = [i for i in waiting if tasks[i].after is None or tasks[i].after in finished]
            for i in ready[: workers - len(running)]:
                waiting.remove(i)
                running[pool.submit(_fit, tasks[i], train)] = i
            if not running:
                raise ValueError("encoder trainings wait for each other in a circle")
            done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                i = running.pop(future)
                on_done(i, future.result())
                finished.add(i)
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)


def task_cost(task: TrainingTask) -> float:
    """The relative cost of ``task`` (:meth:`~ltrfeat.experiments.crossfit_traits.CrossFitTraits.training_cost`)."""
    return traits(task.spec.kind).training_cost(len(task.table), task.spec.pretrain)


def _stop(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    processes: Iterable = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
