"""Replay an ablation's encoder fold trainings one at a time, as a pool worker runs them: per-task CPU figures.

Runs ``ltrfeat ablate ARGS`` in this process up to its encoder pool, takes the pool's training tasks instead of running
them (one task: one fold training of one encoder, with its training pairs, options and the rows it scores), and replays
the chosen ones, each in a spawned process of its own at the pool's one torch thread with freed memory kept (as
:func:`ltrfeat.experiments._encoder_pool.run_trainings` runs them; the process's imports are not counted). Prints per
task the CPU-s (user + sys) of the training and scoring, the part spent in teacher distillation, the keep-start record
and a digest of the scores of its folds' rows: equal digests mean bit-identical scores, so an exact change shows the
same digest and a report-changing one a different digest. ``--option KEY=JSON`` adds a training option to every
replayed task (a variant to compare against the same task without it). Give the ablation a fresh ``--cache`` (a copy of
another run's ``teacher`` store is fine): encoders found in the cache are not handed to the pool. A task that continues
another one's training (a MiniLM fine-tuning's ``after``) needs that one replayed first.

    python benchmarks/replay_fold_tasks.py --task 0 -- --pairs data/judged.tsv --encoder clsm:generalized+teacher \\
        --cache /tmp/replay-cache --report /tmp/replay-report
    python benchmarks/replay_fold_tasks.py --task 0 --option distill_batch_size=1024 -- --pairs data/judged.tsv ...
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import multiprocessing
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class _Captured(BaseException):
    """Raised by the stand-in pool once it holds the tasks: ends the ablation (not an ``Exception``, so no handler of
    the command catches it)."""


def capture(ablate_args: list[str]) -> list:
    """The encoder pool's training tasks of ``ltrfeat ablate ABLATE_ARGS`` (the command stops there; with
    ``--encoder-jobs 2`` unless given, so that a small run hands its trainings to the pool too)."""
    from ltrfeat.cli.main import cli
    from ltrfeat.experiments import _encoder_pool

    tasks: list = []

    def take(batch, *, workers, train, on_done):
        tasks.extend(batch)
        raise _Captured

    if "--encoder-jobs" not in ablate_args:
        ablate_args = [*ablate_args, "--encoder-jobs", "2"]
    pool = _encoder_pool.run_trainings
    _encoder_pool.run_trainings = take
    try:
        cli.main(args=["ablate", *ablate_args], prog_name="ltrfeat", standalone_mode=False)
    except _Captured:
        pass
    finally:
        _encoder_pool.run_trainings = pool
    return tasks


def scores_digest(scores: dict) -> str:
    """SHA-256 (16 hex digits) of a task's scores by fold, folds in name order."""
    h = hashlib.sha256()
    for fold in sorted(scores):
        h.update(fold.encode() + b"\x00")
        h.update(scores[fold].tobytes())
    return h.hexdigest()[:16]


def replay(task, options: dict) -> dict:
    """In a fresh process: train and score ``task`` with ``options`` added, as a pool worker does; its CPU-s."""
    from ltrfeat.core.processes import keep_freed_memory
    from ltrfeat.experiments import _encoder_pool
    from ltrfeat.experiments._fold_trainer import train_one
    from ltrfeat.encoders import distill

    keep_freed_memory()
    task.options = {**task.options, **options}
    task.cache = None  # train, never load a cached encoder
    spent = []
    distil = distill.distill

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return distil(*args, **kwargs)
        finally:
            spent.append(time.process_time() - start)

    distill.distill = timed
    before = resource.getrusage(resource.RUSAGE_SELF)
    scores, _, _, _, record = _encoder_pool.fit_task(task, train_one)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "encoder": task.spec.name,
        "pairs": len(task.table),
        "options": task.options,
        "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
        "distill_cpu_s": round(sum(spent), 2),
        "max_rss_mb": round(after.ru_maxrss / 1024),
        "keep_start": record.get("keep_start"),
        "scores": scores_digest(scores),
    }


def _option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--option {text!r}: give KEY=JSON, e.g. distill_batch_size=1024")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value  # a bare word: a string option


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", type=int, action="append", help="task index to replay (repeatable; default: all)")
    parser.add_argument("--option", type=_option, action="append", default=[], help="KEY=JSON added to each task")
    parser.add_argument("ablate_args", nargs=argparse.REMAINDER, help="-- then the ltrfeat ablate arguments")
    args = parser.parse_args(argv)
    ablate_args = args.ablate_args[1:] if args.ablate_args[:1] == ["--"] else args.ablate_args
    tasks = capture(ablate_args)
    if not tasks:
        print("the command handed no training to the encoder pool (trained encoders cached? give a fresh --cache)")
        return 1
    for i, task in enumerate(tasks):
        print(f"task {i}: {task.spec.name}, {len(task.table):,} pairs, options {task.options}")
    chosen = args.task if args.task is not None else range(len(tasks))
    context = multiprocessing.get_context("spawn")
    for i in chosen:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as worker:
            print(json.dumps({"task": i, **worker.submit(replay, tasks[i], dict(args.option)).result()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
