"""``ltrfeat.experiments._workers``: one rule for the worker processes of encoder trainings and ranker runs."""

from __future__ import annotations

import pytest

from ltrfeat.experiments._workers import MIN_ROWS, plan_workers


@pytest.mark.parametrize(
    "jobs, tasks, rows, cores, threads, expected",
    [
        (None, 18, 100_000, 2, 1, 2),
        (None, 18, 100_000, 8, 1, 8),
        (None, 18, 100_000, 8, 2, 4),  # --encoder-option threads=2: half as many workers
        (3, 18, 100_000, 8, 1, 3),
        (None, 1, 100_000, 2, 1, 1),  # one training: in this process
        (1, 18, 100_000, 2, 1, 1),
        (None, 18, 1_000, 2, 1, 1),  # too small to pay for starting workers
        (2, 18, 1_000, 8, 1, 2),  # a count given is a count kept
        (0, 18, 1_000, 4, 1, 4),  # 0: one per core, whatever the size
        (None, None, MIN_ROWS, 2, 1, 2),  # ranker runs: no task limit
        (None, None, MIN_ROWS - 1, 2, 1, 1),
        (3, None, 10, 2, 1, 3),
        (5, 0, 10**6, 2, 1, 1),  # nothing to run: no worker started
    ],
)
def test_plan_workers(jobs, tasks, rows, cores, threads, expected):
    assert plan_workers(jobs, rows=rows, cores=cores, tasks=tasks, threads=threads) == expected


def test_ranker_fits_have_their_own_threshold():
    from ltrfeat.experiments._workers import MIN_FIT_ROWS

    assert plan_workers(None, rows=MIN_FIT_ROWS - 1, cores=2, min_rows=MIN_FIT_ROWS) == 1
    assert plan_workers(None, rows=MIN_FIT_ROWS, cores=2, min_rows=MIN_FIT_ROWS) == 2
