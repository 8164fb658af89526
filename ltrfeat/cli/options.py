"""Option parsing shared by several commands."""
from __future__ import annotations

import contextlib
import json
import warnings

import click

from ltrfeat.features.errors import LtrfeatError


def parse_key_values(pairs, *, option: str = "--param", example: str = "min_data_in_leaf=50") -> dict | None:
    """``KEY=VALUE`` pairs; values are JSON when they parse as JSON (numbers, booleans), else strings."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LtrfeatError(f"{option} {pair!r} is not KEY=VALUE", fix=f"e.g. {option} {example}")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params or None


@contextlib.contextmanager
def notices():
    """Show library warnings (regrouped queries, gain changes) once each as one-line notices on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            if not quiet():
                for message in dict.fromkeys(str(w.message) for w in caught):
                    click.echo(f"notice: {message}", err=True)


duplicates_option = click.option(
    "--duplicates", type=click.Choice(["error", "first", "mean", "max"]), default="error", show_default=True,
    help="A (query, document) pair judged on several rows: stop with the count and lines (error), keep the first "
         "row (first), or its texts with the mean grade rounded half up (mean) or the highest grade (max). "
         "The choice and counts are recorded in the outputs.")


def duplicates_line(figures: dict | None) -> str | None:
    """One stderr line about merged repeated judgments, or None when there were none."""
    if not figures or not figures.get("repeated_rows"):
        return None
    return (f"note: --duplicates {figures['policy']}: merged {figures['repeated_rows']} repeated rows into "
            f"{figures['pairs']} judged pairs ({figures['disagreeing_pairs']} had different grades)")


def quiet() -> bool:
    """Whether ``ltrfeat -q`` asked for errors only."""
    import logging

    from ltrfeat.features.logs import logger

    return logger.getEffectiveLevel() > logging.WARNING


def fit_and_save(train, out, checkpoint):
    """Run ``train(ckpt)`` (a trainer writing per-epoch checkpoints to ``ckpt``), save the model to ``out`` and
    drop the default checkpoint ``OUT.ckpt`` afterwards (an explicit ``--checkpoint`` is kept).

    A ``ValueError`` from the trainer (bad option combination) becomes a usage error. Returns ``(model, history)``.
    """
    from pathlib import Path

    ckpt = Path(checkpoint) if checkpoint else Path(f"{out}.ckpt")
    try:
        model, history = train(ckpt)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    model.save(out)
    if checkpoint is None:
        with contextlib.suppress(FileNotFoundError):
            ckpt.unlink()
    return model, history


def selection_options(default_on: bool):
    """The model-selection options shared by ``ablate`` and ``train-ranker`` (see ltrfeat.rankers.selection);
    the command receives them as one ``selection`` keyword (a SelectionConfig, or None when off)."""
    from ltrfeat.rankers.choices import CANDIDATES, RULES, TUNE_METHODS

    def decorator(fn):
        options = [
            click.option("--select/--no-select", "select", default=default_on, show_default=True,
                         help="Choose the ranker among --candidates by inner cross-validation over the training "
                              "queries (never the test queries); --no-select trains plain LambdaMART."),
            click.option("--candidates", default=None, metavar="LIST",
                         help=f"Comma-separated candidates of the selection: {', '.join(CANDIDATES)} "
                              "[default: ENGINE, ENGINE-tuned with --tune, linear, boost-best, best-single]."),
            click.option("--tune", type=click.Choice(TUNE_METHODS), default="none", show_default=True,
                         help="Hyperparameter search of the ENGINE-tuned candidate: a fixed grid of 8 "
                              "configurations or Optuna TPE (--tune-trials); every feature set gets the same budget."),
            click.option("--tune-trials", type=click.IntRange(min=1), default=20, show_default=True,
                         help="Optuna trials per feature set and fold."),
            click.option("--inner-folds", type=click.IntRange(min=2), default=3, show_default=True,
                         help="Query folds of the inner cross-validation."),
            click.option("--select-rule", type=click.Choice(RULES), default="one-se", show_default=True,
                         help="one-se: the simplest candidate within one standard error of the best inner-CV "
                              "score; best: the best score."),
        ]
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorator


def selection_config(engine: str, *, select: bool, candidates, tune: str, tune_trials: int, inner_folds: int,
                     select_rule: str, seed: int = 0):
    """The SelectionConfig the selection options describe (None with --no-select)."""
    from ltrfeat.rankers.selection import SelectionConfig

    if not select:
        return None
    settings = {"tune_trials": tune_trials, "inner_folds": inner_folds, "rule": select_rule, "seed": seed}
    if candidates is None:
        return SelectionConfig.default(engine, tune=tune, **settings)
    names = tuple(c.strip() for c in candidates.split(",") if c.strip())
    return SelectionConfig(candidates=names, tune=tune, **settings)
