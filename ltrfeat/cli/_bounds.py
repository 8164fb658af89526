"""Every numeric option's range, checked by click while it parses the command line (before any work).

``BOUNDS`` maps a parameter name (the same meaning in every command) to the values it accepts, from the
settings that receive it where they state one (:data:`~ltrfeat.core.settings.SEED`,
:data:`~ltrfeat.core.settings.MAX_THREADS`); the upper ends that no setting states are what a run can
finish in, with room (``--resamples`` at most 1,000,000: about a minute per comparison). An option may
stay open only when listed in ``UNBOUNDED`` with the reason. :func:`add_bounds` puts the ranges on every
command; every ``--encoding`` is checked to name a text encoding.
"""

from __future__ import annotations

import numbers

import click

from ltrfeat.core.settings import MAX_THREADS, SEED, Interval

_COUNT = 10_000  # epochs, trials, patience, top-N lists: far beyond any useful run

BOUNDS: dict[str, Interval] = {
    # seeds and parallelism (RankerConfig, SelectionConfig, EncoderConfig, CrossFitConfig)
    "seed": SEED,
    "split_seed": SEED,
    "threads": Interval(numbers.Integral, 0, MAX_THREADS),
    "jobs": Interval(numbers.Integral, 0, MAX_THREADS),
    "encoder_jobs": Interval(numbers.Integral, 0, MAX_THREADS),
    # statistics
    "resamples": Interval(numbers.Integral, 100, 1_000_000),
    "k_folds": Interval(numbers.Integral, 3, 100),
    "inner_folds": Interval(numbers.Integral, 2, 100),
    # rankers
    "n_estimators": Interval(numbers.Integral, 1, 100_000),
    "num_leaves": Interval(numbers.Integral, 2, 131_072),  # LightGBM's own maximum
    "early_stopping_rounds": Interval(numbers.Integral, 0, 100_000),
    "learning_rate": Interval(numbers.Real, 0, 10, closed="right"),
    "tune_trials": Interval(numbers.Integral, 1, _COUNT),
    "eval_at": Interval(numbers.Integral, 1, 100_000),
    "top": Interval(numbers.Integral, 0, _COUNT),
    "shared_top": Interval(numbers.Integral, 1, _COUNT),
    "depth": Interval(numbers.Integral, 1, 1_000_000),
    "top_k": Interval(numbers.Integral, 1, 100_000),
    "relevance_threshold": Interval(numbers.Real, 0, 1_000_000),
    # lexical models (ltrfeat.features.lexical)
    "k1": Interval(numbers.Real, 0, 1000),
    "b": Interval(numbers.Real, 0, 1),
    "mu": Interval(numbers.Real, 0, 1e9),
    "jm_lambda": Interval(numbers.Real, 0, 1),
    "ad_delta": Interval(numbers.Real, 0, 1),
    # serve (ltrfeat.serving.app.ServiceLimits)
    "max_candidates": Interval(numbers.Integral, 1, 1_000_000),
    "max_bytes": Interval(numbers.Integral, 1, 2**31),
    "max_concurrent": Interval(numbers.Integral, 1, 100_000),
    "max_readers": Interval(numbers.Integral, 1, 100_000),
    "client_timeout": Interval(numbers.Real, 0.1, 86_400),
    "max_text_chars": Interval(numbers.Integral, 1, 2**31),
    "min_body_rate": Interval(numbers.Real, 0, 2**31),
    "lane_chars": Interval(numbers.Integral, 0, 2**31),
    # serve --interleave / --event-log (ltrfeat.serving.impressions)
    "interleave_seed": SEED,
    "event_log_segment_bytes": Interval(numbers.Integral, 1024, 2**40),
    "event_log_depth": Interval(numbers.Integral, 1, 10_000),
    "impression_memory": Interval(numbers.Integral, 1_000_000, 2**40),
    # explain-ranker
    "n_features": Interval(numbers.Integral, 1, _COUNT),
    # data
    "chunk_queries": Interval(numbers.Integral, 1, 10_000_000),
    "max_position": Interval(numbers.Integral, 2, 1000),  # clicks propensity: positions of the curve
    "chunk_rows": Interval(numbers.Integral, 1, 100_000_000),
    "n_queries": Interval(numbers.Integral, 3, 10_000_000),
    "n_docs": Interval(numbers.Integral, 1, 100_000_000),
    "n_click_queries": Interval(numbers.Integral, 0, 10_000_000),
    "examination_exponent": Interval(numbers.Real, 0, 5),
    "title_attraction": Interval(numbers.Real, 0, 1),
    # encoder training (EncoderConfig and the trainers)
    "epochs": Interval(numbers.Integral, 1, _COUNT),
    "distill_epochs": Interval(numbers.Integral, 1, _COUNT),
    "patience": Interval(numbers.Integral, 1, _COUNT),
    "distill_patience": Interval(numbers.Integral, 1, _COUNT),
    "val_per_epoch": Interval(numbers.Integral, 1, _COUNT),
    "accumulate": Interval(numbers.Integral, 1, _COUNT),
    "spans_per_doc": Interval(numbers.Integral, 1, _COUNT),
    "patch_words": Interval(numbers.Integral, 1, _COUNT),
    "negatives": Interval(numbers.Integral, 0, _COUNT),
    "hard_negatives": Interval(numbers.Integral, 0, _COUNT),
    "batch_size": Interval(numbers.Integral, 2, 1_000_000),
    "min_count": Interval(numbers.Integral, 1, 1_000_000_000),
    "buckets": Interval(numbers.Integral, 1, 2**31 - 1),
    "freeze_layers": Interval(numbers.Integral, -1, 1000),
    "max_seq_length": Interval(numbers.Integral, 2, 100_000),
    "lr": Interval(numbers.Real, 0, 10, closed="right"),
    "distill_lr": Interval(numbers.Real, 0, 10, closed="right"),
    "distill_weight": Interval(numbers.Real, 0, 1_000_000),
    "gamma": Interval(numbers.Real, 0, 10_000),
    "margin": Interval(numbers.Real, -1_000_000, 1_000_000),
    "keep_start_margin": Interval(numbers.Real, 0, 1_000_000),
    "click_scale": Interval(numbers.Real, 0, 1e12),
    "min_positive": Interval(numbers.Real, -1e12, 1e12),
}

UNBOUNDED: dict[str, str] = {  # option -> why it has no upper end
    "verbose": "counts -v flags; beyond -vv nothing changes",
    "max_line_bytes": "a limit the user raises on purpose (its default is the protection)",
    "max_gzip_ratio": "a limit the user raises on purpose (its default is the protection)",
    "max_features": "a limit the user raises on purpose (its default is the protection)",
    "max_model_params": "a limit the user raises on purpose (its default is the protection)",
}


def _range(interval: Interval, current: click.ParamType) -> click.ParamType:
    """The click range of ``interval``; an existing stricter lower end (or open end) of ``current`` is kept."""
    low, low_open = interval.left, interval.closed in ("right", "neither")
    if getattr(current, "min", None) is not None and (low is None or current.min >= low):  # type: ignore[attr-defined]
        low, low_open = current.min, current.min_open  # type: ignore[attr-defined]
    high, high_open = interval.right, interval.closed in ("left", "neither")
    if interval.kind is numbers.Integral:
        return click.IntRange(low, high, min_open=low_open, max_open=high_open)
    return click.FloatRange(low, high, min_open=low_open, max_open=high_open)


class EncodingType(click.ParamType):
    """A text encoding's name (``rot13`` and unknown names are refused while parsing)."""

    name = "encoding"

    def convert(self, value, param, ctx):
        from ltrfeat.core.errors import TextTableError
        from ltrfeat.core.text import text_codec

        try:
            text_codec(value)
        except TextTableError as exc:
            self.fail(f"{exc.problem}; {exc.fix}", param, ctx)
        return value


def numeric(param: click.Parameter) -> bool:
    return isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType))


def add_bounds(command: click.Command) -> None:
    """Put ``BOUNDS`` on every numeric option of ``command`` and the commands under it."""
    for param in command.params:
        if numeric(param) and param.name in BOUNDS:
            param.type = _range(BOUNDS[param.name], param.type)
        elif param.name == "encoding" and param.type is click.STRING:
            param.type = EncodingType()
    for sub in getattr(command, "commands", {}).values():
        add_bounds(sub)
