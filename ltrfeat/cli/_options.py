"""Option parsing shared by several commands."""

from __future__ import annotations

import contextlib
import inspect
import json
import warnings

import click

from ltrfeat.cli._paths import EXISTING_FILE, FILE

from ltrfeat.core.duplicates import POLICIES as DUPLICATE_POLICIES
from ltrfeat.core.errors import LtrfeatError, cli_fixes
from ltrfeat.core.tracking import DEFAULT_URI  # no MLflow import: commands start fast


def resampling_options(fn):
    """``--resamples`` and ``--seed`` of the bootstrap intervals and randomisation tests (``compare``,
    ``compare-runs``)."""
    fn = click.option("--seed", type=int, default=0, help="Seed of the resampling.")(fn)
    return click.option(
        "--resamples",
        type=int,
        default=10_000,
        help="Bootstrap and randomisation-test resamples.",
    )(fn)


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


duplicates_option = click.option(  # see ltrfeat.core.duplicates
    "--duplicates",
    type=click.Choice(DUPLICATE_POLICIES),
    default="error",
    help="A (query, document) pair judged on several rows: stop with the count and lines (error), keep the first "
    "row (first), or its texts with the mean grade rounded half up (mean) or the highest grade (max). "
    "The choice and counts are recorded in the outputs.",
)
LABEL_MAPS = ("none", "round", "linear:LO:HI:GRADES", "threshold:T1,T2,...")  # see ltrfeat.core.text.map_labels


def _pairs_default(name: str):
    """The default of :func:`~ltrfeat.core.text.read_judged_pairs`' parameter ``name``, which the option sets."""
    from ltrfeat.core.text import read_judged_pairs

    return inspect.signature(read_judged_pairs).parameters[name].default


def columns_option(text: str):
    """``--columns ROLE=COLUMN,...``: the pairs table's column mapping; ``text`` is the command's help."""
    return click.option("--columns", default=_pairs_default("columns"), help=text)


def encoding_option(text: str):
    """``--encoding`` of the command's text tables; ``text`` is its help."""
    return click.option("--encoding", default=_pairs_default("encoding"), help=text)


def label_map_option(text: str, *, sep: str = ", "):
    """``--label-map``: raw labels to grades; ``{maps}`` in the help ``text`` lists the forms, ``sep`` apart."""
    return click.option(
        "--label-map",
        default=_pairs_default("label_map"),
        help=text.format(maps=sep.join(LABEL_MAPS)),
    )


def read_pairs_table(path, reading: dict):
    """The judged-pairs table at ``path`` read as the options ``--columns --encoding --label-map --duplicates`` in
    ``reading`` say (a missing column's fix names ``--columns``), with a line on stderr for duplicate pairs."""
    from ltrfeat.core.duplicates import duplicates_line
    from ltrfeat.core.text import read_judged_pairs

    with cli_fixes({"columns": "map it with --columns {role}=<column>"}):
        table = read_judged_pairs(
            path,
            columns=reading["columns"],
            encoding=reading["encoding"],
            label_map=reading["label_map"],
            duplicates=reading["duplicates"],
        )
    if duplicates_line(table.attrs["duplicates"]):
        click.echo(duplicates_line(table.attrs["duplicates"]), err=True)
    return table


def encoders_option(text: str, *, metavar: str = "NAME=PATH", required: bool = False):
    """``--encoder NAME[=PATH]`` (repeatable, received as ``encoders``): the models a command scores with, read by
    :func:`~ltrfeat.encoders.spec.parse_encoder_specs`; ``text`` is the command's help."""
    return click.option("--encoder", "encoders", multiple=True, required=required, metavar=metavar, help=text)


def scoring_options(*, encoder: str, corpus_stats: str, strict: str):
    """What computes a ranker's features from texts (``serve``, ``rerank``): ``--encoder``, ``--corpus-stats`` and
    ``--strict``, received as one ``features`` dict; the arguments are each option's help in the command."""
    return option_group(
        "features",
        encoders_option(encoder),
        click.option("--corpus-stats", type=FILE, help=corpus_stats),
        click.option("--strict", is_flag=True, help=strict),
    )


def click_log_options(*, prefix: str, when: str) -> list:
    """``--clip`` and the query and document tables of a click log (``--{prefix}queries``, ``--{prefix}docs``),
    for ``train-encoder`` and ``ablate``; ``when``: the option the tables go with."""
    from ltrfeat.clicks.debias import DEFAULT_CLIP

    return [
        click.option(
            "--clip",
            type=click.FloatRange(min=0, max=1, min_open=True),
            default=DEFAULT_CLIP,
            help="With --debias ipw: propensities below this count as this (a click weighs at most 1/CLIP).",
        ),
        click.option(
            f"--{prefix}queries",
            type=EXISTING_FILE,
            default=None,
            help=f"With {when}: query table (qid, query) for a log that names queries by qid; UBI: the query records.",
        ),
        click.option(
            f"--{prefix}docs",
            type=EXISTING_FILE,
            default=None,
            help=f"With {when}: documents table (docid and text) giving the texts of a log that has only docids.",
        ),
    ]


def quiet() -> bool:
    """Whether ``ltrfeat -q`` asked for errors only."""
    import logging

    from ltrfeat.core.logs import logger

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


def selection_options(default_on: bool, *, deployable_help: str):
    """The model-selection options shared by ``ablate`` and ``train-ranker`` (see ltrfeat.rankers.selection);
    the command receives them as one ``selecting`` dict, for :func:`selection_config`. ``deployable_help``:
    what ``--deployable TARGET`` does in the command."""
    from ltrfeat.rankers import registry
    from ltrfeat.rankers.choices import OTHER_CANDIDATES, RULES, SELECTION_DEFAULTS, TUNE_METHODS

    def decorator(fn):
        options = [
            click.option(
                "--select/--no-select",
                "select",
                default=default_on,
                help="Choose the ranker among --candidates by inner cross-validation over the training "
                "queries (never the test queries); --no-select trains plain LambdaMART.",
            ),
            click.option(
                "--candidates",
                default=None,
                metavar="LIST",
                help=f"Comma-separated candidates of the selection (ranker kinds): {', '.join(registry.names())} "
                f"[default: ENGINE, ENGINE-tuned with --tune, {', '.join(OTHER_CANDIDATES)}].",
            ),
            click.option(
                "--tune",
                type=click.Choice(TUNE_METHODS),
                default=SELECTION_DEFAULTS["tune"],
                help="Hyperparameter search of the ENGINE-tuned candidate: a fixed grid of 8 "
                "configurations or Optuna TPE (--tune-trials); every feature set gets the same budget.",
            ),
            click.option(
                "--tune-trials",
                type=int,
                default=SELECTION_DEFAULTS["tune_trials"],
                help="Optuna trials per feature set and fold.",
            ),
            click.option(
                "--inner-folds",
                type=int,
                default=SELECTION_DEFAULTS["inner_folds"],
                help="Query folds of the inner cross-validation.",
            ),
            click.option(
                "--select-rule",
                type=click.Choice(RULES),
                default=SELECTION_DEFAULTS["rule"],
                help="tiered: per feature set the simplest candidate within one standard error of the best "
                "inner-CV score, then the least complex of the sets' picks and their simpler candidates (ranker "
                "kind, then the features its model uses) within z standard errors of the best set, z growing with "
                "the distinct picks close to the best; joint: the same among all feature set / candidate pairs at once; one-se: per set as "
                "tiered, then the first set in plan order within one standard error; best: the best score.",
            ),
            click.option(
                "--deployable",
                type=click.Choice(registry.LTR_ENGINES),
                default=None,
                help=deployable_help,
            ),
        ]
        return option_group("selecting", *options)(fn)

    return decorator


def selection_config(
    engine: str,
    *,
    select: bool,
    candidates,
    tune: str,
    tune_trials: int,
    inner_folds: int,
    select_rule: str,
    deployable: str | None = None,
    seed: int = 0,
):
    """The SelectionConfig the selection options describe (None with --no-select); with ``deployable``, only the
    candidates that LTR engine can run."""
    from ltrfeat.rankers.selection import SelectionConfig

    if not select:
        return None
    config = SelectionConfig.default(
        engine, tune=tune, tune_trials=tune_trials, inner_folds=inner_folds, rule=select_rule, seed=seed
    )
    if candidates is not None:
        config = config.replace(candidates=tuple(c.strip() for c in candidates.split(",") if c.strip()))
    return config if deployable is None else config.deployable(deployable)


def config_option() -> click.Option:
    """``--config FILE``: option values from a TOML, YAML or JSON file; options given on the command line win.

    Keys are the command's option names (``epochs``, ``label-map`` or ``label_map``), at the top level or in a
    table named after the command (``[train-encoder]``, ``[datasets.convert]``), so one file can serve several
    commands. Unknown keys are an error naming the file and the key.
    """
    return click.Option(
        ["--config"],
        type=EXISTING_FILE,
        is_eager=True,
        expose_value=False,
        callback=_apply_config_file,
        help="Read option values from a TOML/YAML/JSON file (KEY = VALUE, option names as keys, "
        "optionally in a [COMMAND] table); options given here override it.",
    )


def _apply_config_file(ctx: click.Context, param: click.Parameter, value) -> None:
    from ltrfeat.core.config_files import read_config

    if value is None:
        return
    settings = read_config(value)
    path = ctx.command_path.split()[1:]  # without the program name
    table, where = settings, ""
    if path and isinstance(settings.get(path[0]), dict):
        for part in path:
            inner = table.get(part)
            if not isinstance(inner, dict):
                raise LtrfeatError(
                    f"no [{'.'.join(path)}] table for this command",
                    path=value,
                    fix=f"put the settings of '{' '.join(path)}' in a [{'.'.join(path)}] table",
                )
            table = inner
        where = f"[{'.'.join(path)}] "
    names = {}
    for p in ctx.command.params:
        if p.name is None or p.name == "config" or not p.expose_value:
            continue
        names[p.name] = p.name
        names[p.name.replace("_", "-")] = p.name
        for opt in getattr(p, "opts", []):
            names[opt.lstrip("-")] = p.name
            names[opt.lstrip("-").replace("-", "_")] = p.name
    defaults = {}
    for key, setting in table.items():
        if key in names:
            defaults[names[key]] = setting
            continue
        if not where and isinstance(setting, dict):
            raise LtrfeatError(
                f"no [{'.'.join(path)}] table for this command (the file has [{key}])",
                path=value,
                fix=f"put the settings of '{' '.join(path)}' in a [{'.'.join(path)}] table",
            )
        import difflib

        known = sorted({n for n in names if "_" not in n})
        close = difflib.get_close_matches(str(key), known, n=1)
        raise LtrfeatError(
            f"{where}'{' '.join(path)}' has no option {key!r}",
            path=value,
            fix=f"did you mean {close[0]!r}?"
            if close
            else f"use its option names (without the leading --): {', '.join(known)}",
        )
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta[CONFIG_FILE_KEY] = {"path": str(value), "options": {k.replace("_", "-"): v for k, v in defaults.items()}}


CONFIG_FILE_KEY = "ltrfeat.config_file"


def config_file_record() -> dict | None:
    """The ``--config`` file the current command read and the option values it supplied (for reports), or
    None without one; options given on the command line override these."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(CONFIG_FILE_KEY)


def add_config_option(group: click.Group) -> None:
    """Give every command under ``group`` the ``--config`` option."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            add_config_option(command)
        elif not any(p.name == "config" for p in command.params):
            command.params.append(config_option())


def threads_option(*, default: int, what: str):
    """``--threads N``, with one meaning in every command: CPU threads each model (or request) may use;
    0 means all the cores available to the process (affinity and cgroup quota counted)."""
    return click.option(
        "--threads",
        type=int,
        default=default,
        help=f"CPU threads {what}; 0 = all available cores.",
    )


def ties_option(*, before: str = "", after: str = ""):
    """``--ties MODE`` (default ``expected``), one wording in every command; ``before``/``after`` say where the
    command's own conventions apply (e.g. ``--run`` always takes trec_eval's order)."""
    from ltrfeat.core.metrics import TIES, TIES_HELP, Conventions

    return click.option(
        "--ties",
        type=click.Choice(TIES),
        default=Conventions.ties,
        help=" ".join(filter(None, [before, TIES_HELP, after])),
    )


def threads_value(threads: int) -> int:
    """The thread count ``--threads`` stands for (0: the available cores)."""
    from ltrfeat.core.cores import available_cores

    return threads or available_cores()


LEXICAL_HELP = {  # option -> what it sets (defaults: ltrfeat.features.lexical.LEXICAL_DEFAULTS)
    "k1": "BM25 k1",
    "b": "BM25 b",
    "mu": "Dirichlet prior",
    "jm_lambda": "Jelinek-Mercer lambda",
    "ad_delta": "Absolute discounting delta",
    "bm25_norms": "BM25 document lengths: exact token counts, or lucene (the engine's one-byte norms)",
}


def lexical_options(
    *, used_at_extraction: bool = False, names=("k1", "b", "mu", "jm_lambda", "ad_delta", "bm25_norms")
):
    """The lexical models' settings (``--k1 --b --mu --jm-lambda --ad-delta --bm25-norms``), received as one
    ``lexical_params`` dict with None for each option not given. A command that scores with features
    extracted earlier (``used_at_extraction``) takes unset ones from the ranker's record of its features
    (:mod:`ltrfeat.features.pins`); ``extract`` from the ``--corpus-stats`` file's record, else the defaults."""
    from ltrfeat.features.lexical import BM25_NORMS, LEXICAL_DEFAULTS

    if used_at_extraction:
        suffix = " (default: the value the ranker's features were extracted with)"
    else:
        suffix = " (default: the value recorded in --corpus-stats, else {default})"
    options = [
        click.option(
            f"--{name.replace('_', '-')}",
            name,
            type=click.Choice(BM25_NORMS) if name == "bm25_norms" else float,
            default=None,
            help=f"{what}{suffix.format(default=LEXICAL_DEFAULTS[name])}.",
        )
        for name, what in LEXICAL_HELP.items()
        if name in names
    ]
    return option_group("lexical_params", *options)


def ranker_options(
    *,
    n_estimators: int | None,
    n_estimators_help: str = "Maximum boosting rounds.",
    threads: int,
    threads_what: str = "of the LambdaMART engine",
):
    """The LambdaMART options shared by ``train-ranker`` and ``ablate``: ``--engine --n-estimators
    --learning-rate --num-leaves --early-stopping-rounds --threads --param``, received as one ``ranker`` dict,
    for :func:`ranker_config`."""
    from ltrfeat.rankers.choices import ENGINES
    from ltrfeat.rankers.config import RankerConfig as R

    def decorator(fn):
        options = [
            click.option(
                "--engine",
                type=click.Choice(ENGINES),
                default=R.engine,
                help="LambdaMART implementation.",
            ),
            click.option(
                "--n-estimators",
                type=int,
                default=n_estimators,
                help=n_estimators_help,
            ),
            click.option(
                "--learning-rate",
                type=float,
                default=R.learning_rate,
                help="Shrinkage of each tree.",
            ),
            click.option(
                "--num-leaves",
                type=int,
                default=R.num_leaves,
                help="Leaves per tree.",
            ),
            click.option(
                "--early-stopping-rounds",
                type=int,
                default=R.early_stopping_rounds,
                help="Patience in rounds on the validation NDCG; 0 disables early stopping.",
            ),
            threads_option(default=threads, what=threads_what),
            click.option(
                "--param",
                "params",
                multiple=True,
                metavar="KEY=VALUE",
                help="Extra engine parameter (repeatable), e.g. --param min_data_in_leaf=50.",
            ),
        ]
        return option_group("ranker", *options)(fn)

    return decorator


def ranker_config(ranker: dict, **settings):
    """The RankerConfig the ranker options describe (``--threads 0``: all cores); ``settings`` add the ones
    the command takes elsewhere (``eval_at``, ``seed``) or replace some (``n_estimators``, ``params``)."""
    from ltrfeat.rankers.config import RankerConfig

    options = {
        "engine": ranker["engine"],
        "n_estimators": ranker["n_estimators"],
        "learning_rate": ranker["learning_rate"],
        "num_leaves": ranker["num_leaves"],
        "early_stopping_rounds": ranker["early_stopping_rounds"],
        "n_jobs": ranker["threads"] or None,
        "params": parse_key_values(ranker["params"]),
    }
    return RankerConfig(**(options | settings))


def option_group(name: str, *options):
    """Click options that reach the command as one dict keyword ``name`` ({parameter name: value}), so a command
    with many options keeps a short signature; ``ctx.params`` still holds each value under its own name."""
    import functools

    names = [opt(lambda: None).__click_params__[-1].name for opt in options]

    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            kwargs[name] = {key: kwargs.pop(key) for key in names}
            return fn(*args, **kwargs)

        for option in reversed(options):
            wrapper = option(wrapper)
        for param in wrapper.__click_params__[-len(options) :]:
            param.section = name  # for SectionedCommand's --help
        return wrapper

    return decorator


_SHORT_DEFAULT_WIDTH = 25  # a longer default shows its leading comma-separated items and ",..."


def shown_default(value) -> str:
    """An option's default as a short help text shows it: on/off, comma-joined sequences, long lists cut."""
    if isinstance(value, bool):
        return "on" if value else "off"
    text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    if len(text) <= _SHORT_DEFAULT_WIDTH or "," not in text:
        return text
    return text[: text.rindex(",", 0, _SHORT_DEFAULT_WIDTH + 1)] + ",..."


class SectionedCommand(click.Command):
    """A command whose ``--help`` lists its options in titled sections (``sections``: option-group name ->
    title; options outside a group go first under ``first``), each with its one-line text from ``short``
    (parameter name -> text; the full help otherwise); the full texts live in ``docs`` (a docs/ page).

    A short text names a value through a placeholder, never a copy: ``{default}`` (the option's default) and
    ``{alone}`` (the value an option with an optional value takes when given alone)."""

    def __init__(self, *args, sections: dict, short: dict, first: str = "Input", docs: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.sections, self.short, self.first, self.docs = sections, short, first, docs

    def format_options(self, ctx, formatter):
        groups: dict = {}
        general = {id(self.get_help_option(ctx))}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            key = getattr(param, "section", None) or (
                "general" if param.name == "config" or id(param) in general else None
            )
            groups.setdefault(key, []).append((record[0], self._short(param) or record[1]))
        for key, title in [(None, self.first), *self.sections.items(), ("general", "General")]:
            if groups.get(key):
                with formatter.section(title):
                    formatter.write_dl(groups[key])
        if self.docs:
            formatter.write_paragraph()
            formatter.write_text(f"Every option in full, with its default: {self.docs}.")

    def _short(self, param) -> str | None:
        text = self.short.get(param.name)
        if text is None:
            return None
        if "{default}" in text:
            text = text.replace("{default}", shown_default(param.default))
        if "{alone}" in text:
            text = text.replace("{alone}", shown_default(param.flag_value))
        return text


MLFLOW = click.option(
    "--mlflow",
    "mlflow_uri",
    is_flag=False,
    flag_value=DEFAULT_URI,
    default=None,
    metavar="[URI]",
    help=f"Record the run in MLflow at tracking URI (alone: {DEFAULT_URI}): settings, metrics (ndcg@10 as "
    "ndcg_at_10), outputs and feature pins. Needs ltrfeat[mlflow].",
)
MLFLOW_REGISTER = click.option(
    "--mlflow-register",
    metavar="NAME",
    default=None,
    help="With --mlflow: also register the saved ranker as MLflow model NAME (a pyfunc model that checks the "
    "feature pins of the LETOR files it scores).",
)


def mlflow_options(*, register: bool = False):
    """``--mlflow [URI]`` (and with ``register`` ``--mlflow-register NAME``), reaching the command as ``tracking``."""
    return option_group("tracking", MLFLOW, *((MLFLOW_REGISTER,) if register else ()))
