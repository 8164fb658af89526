"""One scorer, many requests: who computes next.

The scorer runs one step at a time (in a worker thread, off the event loop). A large request is
scored in steps of about :data:`STEP_CHARS` characters of candidate text, and between steps the scorer
goes to the waiting request that has used the least scoring time so far (the first to wait among
equals). A small request therefore waits for at most one step of a large one, whatever large requests
other clients keep sending, instead of for their whole computation.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time

from fastapi.concurrency import run_in_threadpool

STEP_CHARS = 8192  # candidate text per scoring step (one step costs ~10 ms with lexical + CLSM features)


class Turns:
    """Runs one function at a time in a worker thread; the next turn goes to the least-served waiting request."""

    def __init__(self):
        self._busy = False
        self._waiting: list[tuple[float, int, asyncio.Future]] = []
        self._order = itertools.count()

    async def run(self, used: list[float], fn, *args):
        """``fn(*args)`` in a worker thread once it is this request's turn; ``used`` is the request's
        one-item account of scoring seconds, which this adds to."""
        if self._busy:
            turn = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (used[0], next(self._order), turn))
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():  # handed the scorer just as it was cancelled
                    self._next()
                raise
        self._busy = True
        start = time.perf_counter()
        try:
            return await run_in_threadpool(fn, *args)
        finally:
            used[0] += time.perf_counter() - start
            self._next()

    def _next(self) -> None:
        while self._waiting:
            turn = heapq.heappop(self._waiting)[2]
            if not turn.done():
                turn.set_result(None)  # the scorer passes to it, still busy
                return
        self._busy = False


def steps(candidates: list, fields, size: int = STEP_CHARS) -> list[slice]:
    """Consecutive slices of ``candidates`` holding about ``size`` characters of ``fields`` text each (a
    longer candidate is a step of its own)."""
    out, start, chars = [], 0, 0
    for i, candidate in enumerate(candidates):
        length = 1 + sum(len(v) for f in fields if isinstance(v := candidate.get(f), str))
        if chars and chars + length > size:
            out.append(slice(start, i))
            start, chars = i, 0
        chars += length
    out.append(slice(start, len(candidates)))
    return out
