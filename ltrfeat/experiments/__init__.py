"""Experiments: cross-fitted encoders, the worker pool, ablation runs, statistics, verdict, reports and caches.

The only layer that uses both :mod:`ltrfeat.features` and :mod:`ltrfeat.rankers`."""

__all__ = [  # the public modules
    "ablate",
    "ablation",
    "compare_runs",
    "crossfit",
    "dask_trainings",
    "defaults",
    "encoder_options",
    "encoder_pool",
    "fold_runs",
    "folds",
    "html_report",
    "in_words",
    "plots",
    "report",
    "run_cache",
    "stats",
    "training_task",
    "trec",
    "verdict",
    "workers",
]
