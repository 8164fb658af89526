"""The second scoring lane: large requests' features computed in a worker process at lower CPU priority.

A scoring step cannot be interrupted, so in one process a small request waits for the step of a large one
that is under way (a 7,600-character candidate is ~30 ms; a small request ~8 ms). A request holding more
than :data:`LANE_CHARS` characters of text is therefore scored by a worker process of its own (``nice``
+:data:`LANE_NICE`): the service's process scores the small requests alone, and on a busy machine the
operating system gives them the CPU first. The worker loads each ranker with the arguments the service
loaded it with (:attr:`Scorer.load_args <ltrfeat.serving.scorer.Scorer.load_args>`), so its features are
the service's own, and bounds its caches alike; only feature rows cross between the processes (the query's
leakage check and the ranker's scores stay in the service). Should the worker stop, large requests are
scored in the service's process again.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pandas as pd

LANE_CHARS = 4096  # text of a request above which it is scored in the worker (a small request: ~1,000)
LANE_NICE = 10  # the worker's CPU priority below the service's

_log = logging.getLogger("ltrfeat.serve")
_scorers: list = []  # the worker's scorers, in the service's order


def _orphaned(parent: int) -> None:
    """End the worker once the service's process is gone (killed, it shuts no pool down)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _start(load_args: list[dict], threads: int, nice: int, parent: int) -> None:
    """The worker's start: lower priority, Ctrl-C left to the service, the scorers loaded."""
    import torch

    from ltrfeat.serving.scorer import Scorer

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(nice)
    torch.set_num_threads(threads)
    threading.Thread(target=_orphaned, args=(parent,), daemon=True).start()
    with warnings.catch_warnings():  # the service has given its load warnings already
        warnings.simplefilter("ignore")
        _scorers.extend(Scorer.load(**args) for args in load_args)


def _pair_features(which: int, pairs: pd.DataFrame) -> np.ndarray:
    return _scorers[which].pair_features(pairs)


class Lane:
    """A worker process scoring large requests' steps for the scorers loaded with ``load_args`` (in order).

    Parameters
    ----------
    load_args : each scorer's :meth:`Scorer.load <ltrfeat.serving.scorer.Scorer.load>` arguments.
    chars : a request with more text than this (query and candidate fields) goes to the worker.
    threads : the worker's torch threads.
    """

    def __init__(self, load_args: list[dict], *, chars: int = LANE_CHARS, threads: int = 1):
        self.chars = chars
        self._pool: ProcessPoolExecutor | None = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=(load_args, threads, LANE_NICE, os.getpid()),
        )
        self._pool.submit(int)  # starts the worker now: it loads while the service does

    def takes(self, query, candidates: list, fields) -> bool:
        """Whether a request is large enough for the worker."""
        chars = len(query) if isinstance(query, str) else 0
        for candidate in candidates:
            chars += sum(len(v) for f in fields if isinstance(v := candidate.get(f), str))
            if chars > self.chars:
                return True
        return False

    @property
    def running(self) -> bool:
        return self._pool is not None

    def pair_features(self, which: int, pairs: pd.DataFrame) -> np.ndarray:
        """Scorer ``which``'s :meth:`~ltrfeat.serving.scorer.Scorer.pair_features` of ``pairs``, in the worker
        (blocks; :class:`BrokenProcessPool` once the worker has stopped, after which :attr:`running` is false)."""
        if self._pool is None:
            raise BrokenProcessPool("the large-request worker has stopped")
        try:
            return self._pool.submit(_pair_features, which, pairs).result()
        except BrokenProcessPool:
            self._stopped()
            raise

    def _stopped(self) -> None:
        if self._pool is not None:
            _log.error("the large-request worker stopped; large requests are scored in the service's process")
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        """Stop the worker now (it holds nothing to save; a shutdown waited for a worker still loading)."""
        if self._pool is not None:
            workers = list(self._pool._processes.values())  # type: ignore[attr-defined]
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            for worker in workers:
                worker.terminate()
                worker.join(5)
