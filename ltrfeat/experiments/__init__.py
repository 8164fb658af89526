"""Experiments: cross-fitted encoders, the worker pool, ablation runs, statistics, verdict, reports and caches.

The only layer that uses both :mod:`ltrfeat.features` and :mod:`ltrfeat.rankers`."""

__all__ = [  # the public modules
    "ablate",
    "ablation",
    "click_training",
    "compare_runs",
    "cost_plan",
    "crossfit",
    "crossfit_traits",
    "defaults",
    "demo",
    "event_log",
    "fold_contributions",
    "fold_plans",
    "folds",
    "html_report",
    "in_words",
    "interleave_report",
    "interleaving",
    "mlflow_model",
    "pairs_input",
    "report",
    "set_kind",
    "span_settings",
    "stats",
    "tracking_runs",
    "user_simulation",
    "verdict",
]
