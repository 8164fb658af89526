"""Whole ablations as library calls: judged pairs with texts (:func:`ablate_pairs`) or LETOR fold directories
(:func:`ablate_folds`) become folds, feature sets, ranker runs, statistics and a report directory.

``ltrfeat ablate`` is a thin command over these two functions; the settings travel as :class:`PairsSource`,
:class:`FoldsSource` and :class:`AblateSettings`, whose defaults are the command's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar

from ltrfeat.clicks.debias import DEBIAS, DEFAULT_CLIP
from ltrfeat.clicks.propensity import METHODS as PROPENSITY_METHODS
from ltrfeat.core.cores import available_cores
from ltrfeat.core.duplicates import duplicates_line
from ltrfeat.core.errors import LtrfeatError, ParameterError, cli_fixes, cli_settings
from ltrfeat.core.fileio import check_output_dir, replaced_dir
from ltrfeat.core.duplicates import POLICIES as DUPLICATE_POLICIES
from ltrfeat.core.letor import NAN_POLICIES
from ltrfeat.core.metrics import GAINS, NO_RELEVANT, TIES
from ltrfeat.core.settings import SEED, Interval, OneOf, Settings, check_value
from ltrfeat.core.text import CONFLICTS
from ltrfeat.core.stages import StageProfile
from ltrfeat.experiments.ablation import AblationConfig, fit_rows, run_ablation
from ltrfeat.experiments.ablation_result import AblationResult
from ltrfeat.experiments.letor_folds import load_letor_folds
from ltrfeat.experiments.feature_sets import plan_feature_sets
from ltrfeat.experiments.summary import summarise
from ltrfeat.experiments.summary_types import Summary
from ltrfeat.experiments.click_training import click_log_table, click_training
from ltrfeat.experiments.cost_plan import Plan, count_work, folds_work, planned, priced, remember_sets
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.pairs_input import CrossFitScheme, PairsFolds, PairsRead
from ltrfeat.experiments.report import check_report_dir, write_report
from ltrfeat.experiments._run_cache import RunStore
from ltrfeat.experiments._workers import MIN_FIT_ROWS, plan_workers
from ltrfeat.rankers import registry
from ltrfeat.rankers.choices import ENGINES
from ltrfeat.rankers.positions import positioned_training
from ltrfeat.rankers.selection import SelectionConfig
from ltrfeat.experiments._fold_trainer import EncoderTrainer, FoldTrainer
from ltrfeat.experiments.fold_plans import check_folds
from ltrfeat.experiments.defaults import DEFAULTS, ENCODER_DEFAULTS, K_FOLDS, METRICS, QUICK, QUICK_ENCODER
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.experiments.span_settings import SPANS_BELOW_QUERIES

# Row subsampling makes ranker seeds matter (without it both engines are deterministic and extra seeds are
# wasted); params bagging_fraction=1 (LightGBM) or subsample=1 (XGBoost) turns it off.
SUBSAMPLE = {"lightgbm": {"bagging_fraction": 0.8, "bagging_freq": 1}, "xgboost": {"subsample": 0.8}}
_BARE_TWO_TOWER = ("clsm", "dssm")
_CLICK_FIELDS = {  # the fields that go with click_log, and their ablate options
    "debias": "--debias",
    "propensity": "--propensity",
    "propensity_method": "--propensity",
    "clip": "--clip",
    "click_queries": "--click-queries",
    "click_docs": "--click-docs",
    "click_format": "--log-format",
}


@dataclasses.dataclass(frozen=True)
class PairsSource(Settings):
    """Text mode: a judged-pairs table whose lexical features are computed once and whose ``encoders`` are
    cross-fitted over ``k_folds`` query folds (see :mod:`ltrfeat.experiments.crossfit`).

    path : the judged pairs (query, doc, label; optional qid, docid), read by
        :func:`ltrfeat.core.text.read_judged_pairs` with ``columns``, ``encoding``, ``label_map`` and
        ``duplicates``.
    encoders : encoder specs, e.g. ``("clsm:softmax", "dssm:generalized")`` (see
        :class:`~ltrfeat.encoders.spec.EncoderSpec`).
    conflicts : an id naming different texts on different rows fails (``"error"``) or keeps its first text.
    lexical : the lexical features (names or ``"all"``), the base feature set.
    train_pairs, train_columns : a separate encoder training table (e.g. a click log) and its column mapping;
        filtered by query text so no fold's test query is trained on. None: the judged pairs.
    click_log : a click log the encoders train on instead (any format :func:`~ltrfeat.clicks.read_click_log`
        reads, told apart by the extension or ``click_format``: impression-level, aggregated, UBI), with
        ``click_queries`` (qid table or UBI query records) and ``click_docs`` (the documents' texts); its labels built by
        :func:`~ltrfeat.clicks.click_labels` with the position bias corrected by ``debias`` (``none``, ``ipw``,
        ``pbm``), the curve read from ``propensity`` or estimated by ``propensity_method``, ``clip`` for ``ipw``.
    collection, collection_field : unlabelled documents for ``+spans`` pre-training, and the column read.
    k_folds, valid_fraction, split_seed : outer query folds (:attr:`CrossFitConfig.k
        <ltrfeat.experiments.crossfit.CrossFitConfig>`), the share of each fold's ranker queries held
        out for early stopping, the seed of folds and encoders.
    encoder_options : training options, ``KEY`` or ``MODEL.KEY``, over :data:`ENCODER_DEFAULTS`.
    encoder_jobs, continue_outer : see :class:`~ltrfeat.experiments.crossfit.CrossFitConfig`.
    """

    label: ClassVar[str] = "text mode"
    _parameter_constraints: ClassVar[dict] = {
        "path": [str, Path],
        "encoders": [tuple],
        "duplicates": [OneOf(*DUPLICATE_POLICIES)],
        "conflicts": [OneOf(*CONFLICTS)],
        "k_folds": [Integral],
        "valid_fraction": [Interval(Real, 0, 1, closed="left")],
        "split_seed": [Integral],
        "encoder_options": [dict],
        "encoder_jobs": [Interval(Integral, 0, None)],
        "continue_outer": [bool],
        "debias": [OneOf(*DEBIAS)],
        "propensity_method": [OneOf(*PROPENSITY_METHODS)],
        "clip": [Interval(Real, 0, 1, closed="right")],
    }

    path: str | Path
    encoders: tuple[str, ...] = ()
    columns: str | dict | None = None
    encoding: str = "utf-8"
    label_map: str = "none"
    duplicates: str = "error"
    conflicts: str = "error"
    lexical: str = "all"
    train_pairs: str | Path | None = None
    train_columns: str | dict | None = None
    click_log: str | Path | None = None
    debias: str = "none"
    propensity: str | Path | None = None
    propensity_method: str = "harvest"
    clip: float = DEFAULT_CLIP
    click_queries: str | Path | None = None
    click_docs: str | Path | None = None
    click_format: str | None = None
    collection: str | Path | None = None
    collection_field: str = "title"
    k_folds: int = K_FOLDS
    valid_fraction: float = 0.1
    split_seed: int = 0
    encoder_options: dict = dataclasses.field(default_factory=dict)
    encoder_jobs: int = 0
    continue_outer: bool = True

    def __post_init__(self):
        if isinstance(self.encoders, list):
            self._set("encoders", tuple(self.encoders))
        super().__post_init__()

    def _check(self) -> None:
        check_folds(self.k_folds)
        if self.click_log is not None and self.train_pairs is not None:
            raise ParameterError(
                "--click-log and --train-pairs both name the encoders' training table",
                fix="give one of them",
                param="click_log",
            )
        if self.click_log is None:
            changed = [f for f in _CLICK_FIELDS if getattr(self, f) != PairsSource.__dataclass_fields__[f].default]
            if changed:
                raise ParameterError(
                    f"{_CLICK_FIELDS[changed[0]]} goes with --click-log",
                    fix="give the click log the encoders train on with --click-log LOG",
                    param=changed[0],
                )


@dataclasses.dataclass(frozen=True)
class FoldsSource(Settings):
    """LETOR mode: fold directories (``DIR/Fold1/{train,vali,test}``) whose files already hold the columns.

    base : the base features (ids, id ranges and names, e.g. ``"1-40"``).
    neural : the neural feature groups, ``{name: spec}`` (e.g. ``{"clsm": "clsm_title_cos"}``).
    fold_glob, nan_policy : see :func:`ltrfeat.experiments.letor_folds.load_letor_folds`.
    """

    label: ClassVar[str] = "LETOR mode"
    _parameter_constraints: ClassVar[dict] = {
        "path": [str, Path],
        "neural": [dict],
        "fold_glob": [str],
        "nan_policy": [OneOf(*NAN_POLICIES)],
    }

    path: str | Path
    base: str
    neural: dict
    fold_glob: str = "Fold*"
    nan_policy: str = "keep"

    def _check(self) -> None:
        if not self.base or not self.neural:
            raise ParameterError(
                "LETOR mode needs --base SPEC and at least one --neural NAME=SPEC",
                fix="e.g. --base 1-40 --neural g=41-46",
                param="neural" if self.base else "base",
            )


@dataclasses.dataclass(frozen=True)
class AblateSettings(Settings):
    """How the folds are compared and where the report goes (both modes).

    report_dir, overwrite : the report directory; an existing one is replaced only with ``overwrite``.
    engine : ``"lightgbm"`` or ``"xgboost"``.
    seeds, n_estimators, resamples : ranker seeds, boosting rounds and statistics resamples; None:
        :data:`DEFAULTS` (:data:`QUICK` with ``quick``).
    ranker_params : other LambdaMART parameters (``learning_rate``, ``num_leaves``, ``early_stopping_rounds``,
        ``n_jobs``, ``params``); ``params`` adds to :data:`SUBSAMPLE`.
    metrics, gain, no_relevant, ties : see :class:`~ltrfeat.experiments.ablation.AblationConfig`.
    selection : model selection per fold and feature set (None: plain LambdaMART).
    alone, base_name, deployable : see :func:`~ltrfeat.experiments.feature_sets.plan_feature_sets`; ``deployable``
        (an LTR engine) also makes the verdict's "to ship" commands train and export for it.
    write_runs : also write TREC runs of the test folds into the report.
    write_features : text mode: a directory for what the verdict's ranker trains on (:func:`write_features`).
    cache : keep trained encoders, their scores and ranker runs here for the next run.
    quick : a smoke run (:data:`QUICK`, :data:`QUICK_ENCODER`).
    dask : run the ranker runs on a Dask cluster (scheduler address or file, or ``local[:N]``).
    jobs : worker processes for the ranker runs (see :func:`ltrfeat.experiments._workers.plan_workers`).
    progress : show progress bars.
    config_file : the settings file the options came from, recorded in the report.
    budget : seconds of wall time the run may take: the plan shrinks what was left at its default (seeds, rounds,
        resamples, encoder epochs) to fit, or refuses (see :mod:`ltrfeat.experiments.cost_plan`).
    """

    label: ClassVar[str] = "the ablation"
    _parameter_constraints: ClassVar[dict] = {
        "report_dir": [str, Path],
        "engine": [OneOf(*ENGINES)],
        "ranker_params": [dict],
        "metrics": [str, tuple],
        "gain": [OneOf(*GAINS)],
        "no_relevant": [OneOf(*NO_RELEVANT)],
        "ties": [OneOf(*TIES)],
        "selection": [SelectionConfig, None],
        "deployable": [OneOf(*registry.LTR_ENGINES), None],
        "overwrite": [bool],
        "write_runs": [bool],
        "quick": [bool],
        "progress": [bool],
        "budget": [Interval(Real, 0, None, closed="neither"), None],
    }
    _nested: ClassVar[dict] = {"selection": SelectionConfig}

    report_dir: str | Path
    engine: str = "lightgbm"
    seeds: tuple | None = None
    n_estimators: int | None = None
    resamples: int | None = None
    ranker_params: dict = dataclasses.field(default_factory=dict)
    metrics: str | tuple = METRICS
    gain: str = "exp2"
    no_relevant: str = "exclude"
    ties: str = "expected"
    selection: SelectionConfig | None = None
    alone: str | None = None
    base_name: str = "lexical"
    deployable: str | None = None
    overwrite: bool = False
    write_runs: bool = False
    write_features: str | Path | None = None
    cache: str | Path | None = None
    quick: bool = False
    dask: str | None = None
    jobs: int | None = None
    progress: bool = True
    config_file: dict | None = None
    budget: float | None = None

    def _check(self) -> None:
        for seed in self.seeds or ():
            check_value("seeds", seed, [SEED], fix="give seeds in [0, 2**32)")

    def resolved(self, name: str):
        """``seeds``, ``n_estimators`` or ``resamples`` as given, else its default (quick or not)."""
        value = getattr(self, name)
        return value if value is not None else (QUICK if self.quick else DEFAULTS)[name]


@dataclasses.dataclass
class Ablation:
    """What an ablation made: its folds, the runs' :class:`~ltrfeat.experiments.ablation_result.AblationResult`, the
    summary (statistics, verdict) and the report directory."""

    folds: list[Fold]
    result: AblationResult
    summary: Summary
    report_dir: Path


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def ablate_pairs(
    source: PairsSource,
    settings: AblateSettings,
    *,
    say: Callable[[str], None] = _stderr,
    trainer: FoldTrainer | None = None,
    engine_features: Callable | None = None,
) -> Ablation:
    """Judged pairs -> lexical features + cross-fitted encoder columns -> an ablation with its report.
    ``say`` gets one-line progress messages; ``trainer`` trains the encoders (default: the real trainings; tests
    inject a double, see :class:`~ltrfeat.experiments._fold_trainer.FoldTrainer`);
    ``engine_features``: with ``settings.deployable``, the engine's feature filter (see
    :func:`~ltrfeat.experiments.feature_sets.plan_feature_sets`); errors name the ``ltrfeat ablate`` option to change."""
    run = _Run(say, engine_features)
    check_report_dir(settings.report_dir, overwrite=settings.overwrite)
    if settings.write_features is not None:
        check_output_dir(settings.write_features, overwrite=settings.overwrite, option="--write-features")
    with encoder_option_flags():
        with run.profile.stage("reading"):
            read = read_pairs_source(source, say=say)  # once: the plan and the run share the tables (and click log)
        try:
            work = pairs_work(source, settings, read=read)
        except LtrfeatError:  # bad input: the run itself says what is wrong, in the order it checks
            work = None
        if work is not None:
            lines, source, settings, run.plan = planned(work, source, settings)
            for line in lines:
                say(line)
    with _cluster(settings) as run.client, encoder_option_flags():
        made = pairs_folds(
            source,
            cache=settings.cache,
            quick=settings.quick,
            progress=settings.progress,
            profile=run.profile,
            say=say,
            trainer=trainer,
            client=run.client,
            read=read,
        )
        done = _ablate(made.folds, made.groups, made.base, made.scheme, settings, run)
    if run.plan is not None:
        remember_sets(run.plan.work, settings, ranker_params(settings))
    if settings.write_features is not None:
        write_features(settings.write_features, made.folds, made.scheme.lexical)
        say(f"wrote {Path(settings.write_features) / FEATURES_FILE} and {CORPUS_FILE}: out-of-fold features")
    return done


@contextlib.contextmanager
def _cluster(settings: AblateSettings):
    """The Dask client of ``settings.dask`` (None without it), closed on exit."""
    if not settings.dask:
        yield None
        return
    from ltrfeat.core import dask_cluster

    with dask_cluster.dask_client(settings.dask) as client:
        yield client


def ablate_folds(
    source: FoldsSource,
    settings: AblateSettings,
    *,
    say: Callable[[str], None] = _stderr,
    engine_features: Callable | None = None,
) -> Ablation:
    """LETOR fold directories -> an ablation with its report; ``say`` gets one-line progress messages;
    ``engine_features`` as for :func:`ablate_pairs`."""
    run = _Run(say, engine_features)
    check_report_dir(settings.report_dir, overwrite=settings.overwrite)
    if settings.write_features is not None:
        raise ParameterError(
            "--write-features is for --pairs (text mode): LETOR folds already hold their features",
            fix="train the ranker on your fold files",
            param="write_features",
        )
    with run.profile.stage("reading"):
        folds = load_letor_folds(source.path, fold_glob=source.fold_glob, nan_policy=source.nan_policy)
    _say_positions(folds, settings, say)
    with _cluster(settings) as run.client:
        return _ablate(folds, dict(source.neural), source.base, None, settings, run)


def _say_positions(folds: list[Fold], settings: AblateSettings, say: Callable[[str], None]) -> None:
    """Training parts with display positions: how LambdaMART corrects them, or why this ablation cannot."""
    positioned = [fold.name for fold in folds if fold.train.position is not None]
    if positioned:
        say(
            positioned_training(
                positioned, settings.engine, selecting=settings.selection is not None, dask=bool(settings.dask)
            )
        )


def pairs_folds(
    source: PairsSource,
    *,
    cache=None,
    quick: bool = False,
    progress: bool = True,
    profile: StageProfile | None = None,
    say: Callable[[str], None] = _stderr,
    trainer: FoldTrainer | None = None,
    client=None,
    read: PairsRead | None = None,
) -> PairsFolds:
    """The judged pairs of ``source`` read and cross-fitted into folds (see
    :func:`ltrfeat.experiments.crossfit.text_folds`); with a Dask ``client`` every encoder training runs on its
    cluster; ``read``: what :func:`read_pairs_source` read of ``source`` already."""
    from ltrfeat.experiments.crossfit import CrossFitConfig, text_folds
    from ltrfeat.experiments.fold_plans import n_trainings
    from ltrfeat.experiments._dask_trainings import DaskTrainings
    from ltrfeat.features.extract import lexical_extractors

    profile = profile or StageProfile()
    if read is None:
        with profile.stage("reading"):
            read = read_pairs_source(source, say=say)
    pairs, specs, train_table = read.pairs, read.specs, read.train_table
    extractors = lexical_extractors(source.lexical, fields=["doc"])
    if not extractors:
        raise LtrfeatError("--lexical must name at least one lexical feature", fix="name them, or give 'all'")
    options = encoder_options(source, quick=quick)
    config = CrossFitConfig(
        k=source.k_folds,
        valid_fraction=source.valid_fraction,
        seed=source.split_seed,
        options=options,
        conflicts=source.conflicts,
        encoder_jobs=source.encoder_jobs,
        continue_outer=source.continue_outer,
        cluster=None if client is None else DaskTrainings(client),
        trainer=trainer or EncoderTrainer(),
    )
    k = source.k_folds
    n_train = n_trainings(k) * sum(s.trainable for s in specs)
    say(f"cross-fitting {', '.join(s.name for s in specs)} over {k} query folds ({n_train} encoder trainings)")
    folds, groups, base, cross_fitting = text_folds(
        pairs,
        config,
        lexical=extractors,
        specs=specs,
        train_table=train_table,
        collection=read.collection,
        cache=cache,
        progress=progress,
        profile=profile,
    )
    # what the verdict's "to ship" line trains (zero-shot ones are served as they are)
    encoders = {
        spec.name: {"spec": spec.text, "trained": spec.trainable, "transformer": spec.kind.transformer}
        for spec in specs
    }
    clicks = None if train_table is None else train_table.attrs.get("clicks")
    for spec in specs:  # what trained the click-trained encoders, for the report and the verdict
        if clicks is not None and spec.trainable:
            encoders[spec.name]["clicks"] = dict(clicks)
    scheme = CrossFitScheme(
        cross_fitting,
        options,
        encoders,
        duplicates=read.duplicates,
        lexical=extractors,  # fitted: their corpus statistics
        texts={
            "query": dict(zip(pairs["qid"].astype(str), pairs["query"])),
            "doc": dict(zip(pairs["docid"].astype(str), pairs["doc"])),
        },
    )
    return PairsFolds(folds, groups, ",".join(base), scheme)


FEATURES_FILE, CORPUS_FILE = "features.letor", "corpus.npz"


def write_features(directory, folds: list[Fold], lexical) -> None:
    """What the verdict's ranker trains on, in ``directory``: :data:`FEATURES_FILE`, every judged pair once with
    its lexical columns and each encoder's *out-of-fold* column (from the fold where the pair's query was a test
    query: scored by encoders trained without it, as scikit-learn's ``cross_val_predict`` for stacking), so a
    ranker trained on it weighs the neural columns as they behave on new queries; and :data:`CORPUS_FILE`, the
    lexical extractors' corpus statistics (``serve --corpus-stats``, ``extract --corpus-stats``)."""
    from ltrfeat.core.letor import write_letor
    from ltrfeat.experiments.fold_plans import out_of_fold
    from ltrfeat.features.extract import save_corpus_stats

    with replaced_dir(directory, kind="features") as tmp:  # an earlier directory stays until this one is complete
        write_letor(tmp / FEATURES_FILE, out_of_fold(folds))
        save_corpus_stats(lexical, tmp / CORPUS_FILE)


def read_pairs_source(source: PairsSource, *, say: Callable[[str], None] = _stderr) -> PairsRead:
    """``source``'s judged pairs, encoder specs (a bare ``clsm`` / ``dssm`` upgraded on small data, see
    :func:`small_data_specs`), ``--collection`` texts, separate training table and the duplicate-row figures per
    table, read and checked as ``ablate`` reads them; duplicate lines go to ``say``."""
    from ltrfeat.core.text import read_judged_pairs
    from ltrfeat.encoders.spec import EncoderSpec

    if not source.encoders:
        raise LtrfeatError("text mode needs at least one --encoder", fix="e.g. --encoder clsm:softmax")
    specs = [EncoderSpec.parse(e) for e in source.encoders]
    table_fix = "give a .tsv, .csv, .jsonl or .parquet table (LETOR fold directories go to --folds)"
    with cli_fixes({"columns": "map it with --columns {role}=<column>", "fmt": table_fix}):
        pairs = read_judged_pairs(
            source.path,
            columns=source.columns,
            encoding=source.encoding,
            label_map=source.label_map,
            duplicates=source.duplicates,
        )
    specs = small_data_specs(source.encoders, specs, pairs["qid"].nunique(), say)
    if len({s.name for s in specs}) != len(specs):
        raise LtrfeatError("each --encoder may be given once", fix="drop the repeated encoder")
    collection = _collection(source, specs)
    train_table = None
    if source.click_log is not None:
        train_table = click_log_table(source, specs, say)
    merged = {"pairs": pairs.attrs["duplicates"]}
    if source.train_pairs is not None:
        with cli_fixes({"columns": "map it with --train-columns {role}=<column>", "fmt": table_fix}):
            train_table = read_judged_pairs(
                source.train_pairs,
                columns=source.train_columns,
                encoding=source.encoding,
                duplicates=source.duplicates,
            )
        merged["train_pairs"] = train_table.attrs["duplicates"]
    for figures in merged.values():
        if line := duplicates_line(figures):
            say(line)
    return PairsRead(pairs, specs, collection, train_table, merged)


def _collection(source: PairsSource, specs: list) -> list | None:
    """The ``--collection`` texts for the ``+spans`` encoders of ``specs`` (None without a collection)."""
    from ltrfeat.core.text import read_docs

    if source.collection is None:
        return None
    if not any(s.span_pretrained for s in specs):
        raise LtrfeatError(
            "--collection is read by +spans / +spans+teacher encoders only", fix="e.g. --encoder clsm:generalized+spans"
        )
    field = source.collection_field
    return read_docs(source.collection, fields=[field], encoding=source.encoding, missing="drop")[field].tolist()


def train_like_ablate(
    source: PairsSource,
    *,
    cache=None,
    quick: bool = False,
    say: Callable[[str], None] = _stderr,
    clicks_only: bool = False,
):
    """``(encoder, spec)``: what ``ablate`` with ``source`` trains in every fold for its one encoder, trained once
    on all of its judged pairs (or its separate training table or click log) -- the encoder to ship with the
    verdict's ranker (:func:`ltrfeat.experiments.crossfit.train_spec`); ``cache`` the ablation's ``--cache``.
    ``clicks_only`` (``train-encoder LOG --debias ... --spec``): ``source.click_log`` is the only table, its
    (query, document) pairs stand in for the judged ones (the ``+spans`` texts) and the spec is taken as written
    (the small-data rule counts judged queries)."""
    from ltrfeat.experiments.crossfit import train_spec
    from ltrfeat.experiments.fold_plans import group_pairs
    from ltrfeat.encoders.spec import EncoderSpec

    if len(source.encoders) != 1:
        raise ParameterError("give one encoder spec to train", fix="train each encoder on its own", param="encoders")
    if clicks_only:
        specs = [EncoderSpec.parse(source.encoders[0])]
        train_table = click_log_table(source, specs, say, docs_option="--docs")
        pairs = train_table[["query", "doc", "label"]].assign(qid=train_table["query"])
        read = PairsRead(pairs, specs, _collection(source, specs), train_table, {})
    else:
        read = read_pairs_source(source, say=say)
    with encoder_option_flags():
        encoder = train_spec(
            read.specs[0],
            group_pairs(read.pairs),
            options=encoder_options(source, quick=quick),
            seed=source.split_seed,
            train_table=read.train_table,
            collection=read.collection,
            cache=cache,
        )
    return encoder, read.specs[0]


@contextlib.contextmanager
def encoder_option_flags():
    """Library errors about an encoder training setting re-worded as ``--encoder-option KEY=VALUE``; the encoders'
    validation share told apart from the rankers' (``--valid-fraction``)."""
    from ltrfeat.encoders.registry import encoder_kinds

    names = set().union(*(k.config.names() for k in encoder_kinds().values() if k.trainable))
    fixes = {
        "val_fraction": "give more queries or --encoder-option val_fraction=0 (no early stopping of the encoders; "
        "--valid-fraction is the rankers' early-stopping share)"
    }
    with cli_fixes(fixes), cli_settings(lambda key, value: f"--encoder-option {key}={value}", names):
        yield


def encoder_options(source: PairsSource, *, quick: bool = False) -> dict:
    """The encoder training options of ``source``: its ``encoder_options`` over the ablation's defaults."""
    from ltrfeat.experiments._encoder_options import merge_options

    return merge_options(QUICK_ENCODER if quick else ENCODER_DEFAULTS, source.encoder_options)


def small_data_specs(texts, specs: list, n_queries: int, say: Callable[[str], None], *, teacher=None) -> list:
    """``specs`` (parsed from ``texts``) with a bare ``clsm`` / ``dssm`` made ``MODEL:generalized+spans+teacher``
    (``MODEL:generalized+spans`` without the packaged MiniLM; ``teacher``: whether it is installed, default
    :func:`~ltrfeat.encoders.sbert.packaged_available`) when fewer than :data:`SPANS_BELOW_QUERIES`
    queries are judged, said through ``say``; an explicit loss keeps the spec as written (``clsm:softmax`` is the
    from-scratch CLSM)."""
    from ltrfeat.encoders.spec import EncoderSpec
    from ltrfeat.encoders.sbert import packaged_available

    if n_queries >= SPANS_BELOW_QUERIES:
        return specs
    teacher = packaged_available() if teacher is None else teacher
    out = []
    for text, spec in zip(texts, specs):
        model = text.strip()
        if model in _BARE_TWO_TOWER:
            few = f"--encoder {model}: {n_queries:,} judged queries (fewer than {SPANS_BELOW_QUERIES:,}), so "
            if teacher:
                spec = EncoderSpec.parse(f"{model}:generalized+spans+teacher")
                say(
                    f"{few}{model}:generalized+spans+teacher -- MiniLM distilled into it on spans of the documents "
                    f"first, which beat span training alone ({model}:generalized+spans) and the from-scratch {model} "
                    f"at every size measured, 240 to 11,795 queries (docs/features.md); write {model}:generalized+spans for no MiniLM, "
                    f"{model}:softmax for the from-scratch encoder"
                )
            else:
                spec = EncoderSpec.parse(f"{model}:generalized+spans")
                say(
                    f"{few}{model}:generalized+spans -- pre-trained on spans of the documents first, which beat the "
                    f"from-scratch {model} at every size measured up to 11,795 queries (docs/features.md; with the "
                    f"sbert extra installed it would be {model}:generalized+spans+teacher, better still); write "
                    f"{model}:softmax for the from-scratch encoder"
                )
        out.append(spec)
    return out


def ranker_params(settings: AblateSettings) -> dict:
    """The LambdaMART parameters of every run: the resolved ``n_estimators``, ``ranker_params`` and
    :data:`SUBSAMPLE` under the given ``params``."""
    params = {"n_estimators": settings.resolved("n_estimators"), **settings.ranker_params}
    params["params"] = {**SUBSAMPLE[settings.engine], **(settings.ranker_params.get("params") or {})}
    return params


@dataclasses.dataclass
class _Run:
    """What one ablation's steps share: its messages, the LTR engine's feature filter, the Dask client (None: this
    machine), the stage profile, when it started and its cost estimate."""

    say: Callable[[str], None]
    engine_features: Callable | None
    client: object = None
    profile: StageProfile = dataclasses.field(default_factory=StageProfile)
    started: float = dataclasses.field(default_factory=time.perf_counter)
    plan: Plan | None = None  # what the run was estimated to cost before it started


def _feature_sets(folds, groups, base, scheme: CrossFitScheme | None, settings: AblateSettings, run: _Run) -> list:
    """The feature sets the ablation compares (:func:`~ltrfeat.experiments.feature_sets.plan_feature_sets`)."""
    encoders = {} if scheme is None else scheme.encoders
    return plan_feature_sets(
        folds[0].train.feature_map,
        base=base,
        neural=groups,
        alone=settings.alone,
        base_name=settings.base_name,
        light=[name for name, encoder in encoders.items() if not encoder["transformer"]],
        deployable=settings.deployable,
        engine_features=run.engine_features,
        say=run.say,
    )


def plan_pairs(source: PairsSource, settings: AblateSettings, *, say: Callable[[str], None] = _stderr) -> list[str]:
    """What :func:`ablate_pairs` would do and cost, in words (:mod:`ltrfeat.experiments.cost_plan`), without
    doing it; a ``settings.budget`` no plan fits raises :class:`ParameterError`."""
    with encoder_option_flags():
        return planned(pairs_work(source, settings, say=say), source, settings)[0]


def pairs_work(
    source: PairsSource,
    settings: AblateSettings,
    *,
    say: Callable[[str], None] = lambda m: None,
    read: PairsRead | None = None,
):
    """What :func:`ablate_pairs` would train and run (:class:`~ltrfeat.experiments.cost_plan.Work`), its inputs read
    and checked as the run reads them (unless ``read``, what :func:`read_pairs_source` read already); duplicate
    lines go to ``say``."""
    read = read_pairs_source(source, say=say) if read is None else read
    options = encoder_options(source, quick=settings.quick)
    return count_work(source, settings, read=read, options=options, ranker=ranker_params(settings))


def plan_folds_ablation(
    source: FoldsSource,
    settings: AblateSettings,
    *,
    say: Callable[[str], None] = _stderr,
    engine_features: Callable | None = None,
) -> list[str]:
    """What :func:`ablate_folds` would do and cost, in words; the folds are read, nothing is fitted."""
    folds = load_letor_folds(source.path, fold_glob=source.fold_glob, nan_policy=source.nan_policy)
    _say_positions(folds, settings, say)
    sets = _feature_sets(folds, dict(source.neural), source.base, None, settings, _Run(say, engine_features))
    return priced(folds_work(folds, sets, settings), settings)[0]


def _ablate(folds, groups, base, scheme: CrossFitScheme | None, settings: AblateSettings, run: _Run) -> Ablation:
    say, profile, started, client = run.say, run.profile, run.started, run.client
    folds_ready = time.perf_counter()
    sets = _feature_sets(folds, groups, base, scheme, settings, run)
    if scheme is None:  # LETOR mode, priced once its folds are read (text mode: before anything, in ablate_pairs)
        lines, changes, run.plan = priced(folds_work(folds, sets, settings), settings)
        for line in lines:
            say(line)
        settings = dataclasses.replace(settings, **changes) if changes else settings
    seeds = tuple(settings.resolved("seeds"))
    selection = settings.selection
    n_runs = len(folds) * sum(len(seeds) if s.kind == SetKind.RANKER else 1 for s in sets)
    how = " (plain LambdaMART)"
    if selection is not None:
        default = selection.candidates == SelectionConfig.default(settings.engine, tune=selection.tune).candidates
        among = "the default candidates" if default else ",".join(selection.candidates)
        how = f", each ranker chosen among {among} by {selection.inner_folds}-fold inner cross-validation"
    say(
        f"{len(folds)} folds x {len(sets)} feature sets ({', '.join(s.name for s in sets)}) x "
        f"{len(seeds)} seeds: {n_runs} runs{how}"
    )
    config = AblationConfig(
        engine=settings.engine,
        seeds=seeds,
        ranker_params=ranker_params(settings),
        metrics=settings.metrics,
        gain=settings.gain,
        no_relevant=settings.no_relevant,
        ties=settings.ties,
        selection=selection,
    )
    executor = None
    if client is not None:
        from ltrfeat.core.dask_cluster import worker_addresses
        from ltrfeat.rankers.dask_training import DaskExecutor

        executor = DaskExecutor(client)
    store = None if settings.cache is None else RunStore(Path(settings.cache) / "rankers")
    jobs = plan_workers(
        settings.jobs, rows=fit_rows(folds, sets, config), cores=available_cores(), min_rows=MIN_FIT_ROWS
    )
    with profile.stage("rankers"):
        result = run_ablation(
            folds, sets, config, progress=settings.progress, executor=executor, jobs=jobs, cache=store
        )
    if executor is not None:
        profile.ran_on("rankers", f"dask cluster of {len(worker_addresses(client))} workers")
    else:
        profile.ran_on("rankers", "this process" if jobs == 1 else f"{jobs} local processes")
    if store is not None:
        profile.ranker_runs(from_cache=store.hits, total=store.hits + store.misses, shared=store.shared)
    if settings.config_file is not None:
        result.config["config_file"] = settings.config_file
    texts = None
    if scheme is not None:
        texts = scheme.texts
        result.config["duplicates"] = scheme.duplicates
        result.config["cross_fitting"] = scheme.to_json()
    clicks = click_training(folds[0].train.feature_map, None if scheme is None else scheme.encoders)
    if clicks:  # what the verdict warns about and the report shows
        result.config["click_training"] = clicks
    with profile.stage("tests"):
        summary = summarise(result, seed=0, n_resamples=settings.resolved("resamples"))
    summary = dataclasses.replace(summary, stages=profile.as_dict())
    if summary.verdict:
        written = None if settings.write_features is None else str(settings.write_features)
        summary.verdict.update(deploy_to=settings.deployable, features_dir=written)
    timings = {
        "wall_seconds": round(time.perf_counter() - started, 1),
        "folds_and_features_seconds": round(folds_ready - started, 1),
        "stages": summary.stages,
    } | ({} if run.plan is None else {"estimate": run.plan.as_dict()})
    out = write_report(
        result,
        summary,
        settings.report_dir,
        overwrite=settings.overwrite,
        timings=timings,
        runs_of=folds if settings.write_runs else None,
        folds=folds,
        texts=texts,
    )
    return Ablation(folds, result, summary, out)
