"""How many worker processes a batch of independent runs gets: encoder trainings of a cross-fitting
(:mod:`ltrfeat.experiments._encoder_pool`) and ranker runs of an ablation (:func:`ltrfeat.experiments.ablation.
run_ablation`) are planned by the same rule."""

from __future__ import annotations

MIN_ROWS = 20_000  # below this many training rows in all, starting workers (~3 s each) costs more than it saves
# ranker fits are cheaper per row than encoder trainings: an ablation's fits together must read this many rows
# (about 20 s of one-thread LightGBM at 5,000 rows a fit) before worker processes (3.3 CPU s each to start) pay
MIN_FIT_ROWS = 200_000


def plan_workers(
    jobs: int | None, *, rows: int, cores: int, tasks: int | None = None, threads: int = 1, min_rows: int = MIN_ROWS
) -> int:
    """Worker processes for ``tasks`` independent runs (None: any number) over ``rows`` training rows in all,
    at ``threads`` threads each: ``jobs`` when given (0: as many as the cores hold); None: as many as the cores
    hold when the runs read ``min_rows`` rows or more, else 1 (run in this process). At most one per task."""
    if jobs is None:
        if rows < min_rows:
            return 1
        jobs = 0
    wanted = jobs or max(1, cores // threads)
    return wanted if tasks is None else max(1, min(wanted, tasks))
