"""One scorer, many requests: who computes next.

The scorer runs one step at a time (in a worker thread, off the event loop). A large request is
scored in steps of about :data:`STEP_CHARS` characters of candidate text, and between steps the scorer
goes to the waiting request whose connection has used the least scoring time lately (its seconds,
halved every :data:`HALF_LIFE` seconds; the first to wait among equals). A small request therefore waits
for at most one step of a large one, and a connection sending request after request goes after the
others, instead of everyone waiting for whole computations in arrival order.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import OrderedDict

from fastapi.concurrency import run_in_threadpool

STEP_CHARS = 4096  # candidate text per scoring step (a few ms with lexical + CLSM features)
HALF_LIFE = 2.0  # seconds over which a connection's scoring time counts half
CONNECTIONS = 4096  # connections whose recent scoring time is remembered (least recently scored dropped first)


class Turns:
    """Runs one function at a time in a worker thread; the next turn goes to the least-served waiting connection."""

    def __init__(self):
        self._busy = False
        self._waiting: list[tuple[float, int, asyncio.Future]] = []
        self._order = itertools.count()
        self._recent: OrderedDict[object, tuple[float, float]] = OrderedDict()  # connection -> (seconds, when)

    def _used(self, client, now: float, add: float = 0.0) -> float:
        seconds, when = self._recent.pop(client, (0.0, now))
        seconds = seconds * math.exp2((when - now) / HALF_LIFE) + add
        self._recent[client] = (seconds, now)
        if len(self._recent) > CONNECTIONS:
            self._recent.popitem(last=False)
        return seconds

    async def run(self, client, fn, *args):
        """``fn(*args)`` in a worker thread once it is the turn of ``client`` (a connection's address)."""
        if self._busy:
            turn = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (self._used(client, time.monotonic()), next(self._order), turn))
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():  # handed the scorer just as it was cancelled
                    self._next()
                raise
        self._busy = True
        start = time.monotonic()
        try:
            return await run_in_threadpool(fn, *args)
        finally:
            now = time.monotonic()
            self._used(client, now, now - start)
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
