"""Cross-fitted neural features for ablations: no encoder ever scores a query it was trained on.

The scheme (written into every report):

* Queries are split into ``k`` outer folds ``T_1..T_k`` (seeded). For outer fold ``f`` the ranker is tested
  on ``T_f`` and trained on the other folds (a seeded share of them held out for early stopping).
* Test rows of fold ``f`` get scores from an encoder ``E_f`` trained on every training pair whose query is
  not in ``T_f``.
* The ranker's rows of fold ``g != f`` get scores from an encoder ``E_fg`` trained without ``T_f`` and
  ``T_g`` — out-of-fold scores, so the ranker learns how far to trust the feature from scores of the kind
  it sees at test time. ``E_fg = E_gf`` serves both outer folds ``f`` and ``g``, so a trained encoder costs
  ``k + k(k-1)/2`` trainings (inner cross-fitting over the other ``k - 1`` folds).
* Queries are matched by normalised text (:func:`ltrfeat.core.text.normalise_query`: NFKC, case-folded, collapsed
  whitespace, the rule of the leakage guard), so a separate click table is filtered by the same rule; an encoder's training queries and the queries it scores are checked to be
  disjoint before every training (:class:`~ltrfeat.experiments.fold_plans.LeakageError` otherwise).

Zero-shot encoders (``sbert``) are not trained and score every row once.

The pipeline, each step in its own module: fold plans (:mod:`~ltrfeat.experiments.fold_plans`), the trainings
planned with their starting points and whatever of them is cached (:mod:`~ltrfeat.experiments._training_plan`,
:mod:`~ltrfeat.experiments._starting_points`, :mod:`~ltrfeat.experiments._encoder_cache`), the shared MiniLM pass
(:mod:`~ltrfeat.experiments._minilm_pass`), the trainings run by the config's trainer
(:mod:`~ltrfeat.experiments._fold_trainer`), and here the columns assembled into folds.
"""

from __future__ import annotations

import contextlib
import dataclasses
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.logs import show_progress
from ltrfeat.core.processes import freed_memory_kept
from ltrfeat.core.settings import MAX_THREADS, SEED, Interval, OneOf, Settings
from ltrfeat.core.stages import StageProfile
from ltrfeat.core.text import CONFLICTS
from ltrfeat.experiments._encoder_cache import keeps_start
from ltrfeat.experiments._encoder_options import minilm_engine, spec_options
from ltrfeat.experiments._fold_trainer import EncoderTrainer, FoldRun, FoldTrainer, train_here, train_one
from ltrfeat.experiments._minilm_pass import score_zero_shot
from ltrfeat.experiments._starting_points import ContinuedStart, StartingPoint, distils_in_folds
from ltrfeat.experiments._training_plan import Training, encoder_table, plan_trainings
from ltrfeat.experiments.click_training import spec_table
from ltrfeat.experiments.defaults import K_FOLDS
from ltrfeat.experiments.fold_plans import (
    FoldPlan,
    build_folds,
    check_folds,
    group_pairs,
    n_trainings,
    plan_folds,
    scoring_jobs,
)
from ltrfeat.encoders.config import KEEP_START_MARGIN
from ltrfeat.experiments.span_settings import FOLD_DISTILL, LONG_DOC_FOLD_DISTILL, SPAN_OPTIONS, SPAN_SWITCHES
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.crossfit_traits import traits
from ltrfeat.encoders.pretraining import Pretraining


@dataclasses.dataclass(frozen=True)
class CrossFitConfig(Settings):
    """How judged pairs become cross-fitted ablation folds (validated on creation).

    k : outer query folds (``k + k(k-1)/2`` trainings per trained encoder); ``ltrfeat ablate --k-folds`` and
        :attr:`PairsSource.k_folds <ltrfeat.experiments.ablate.PairsSource>` set it.
    valid_fraction : share of each fold's training queries held out for the ranker's early stopping.
    seed : seeds the fold split and every encoder training.
    field : the pairs' document text column the encoders read.
    options : encoder training options, ``KEY`` for every encoder or ``MODEL.KEY`` for one model
        (see :func:`~ltrfeat.experiments._encoder_options.spec_options`).
    conflicts : what to do when one docid has two texts (see :func:`ltrfeat.features.extract.extract_pairs`).
    encoder_jobs : CLSM / DSSM / DeepMatch trainings and MiniLM fine-tunings run at once in worker processes, the cores shared
        among them (0: one per core when they read 20,000 rows or more, else in this process; 1: one after the
        other in this process; see :func:`ltrfeat.experiments._workers.plan_workers`); the numbers do not change
        (see :mod:`ltrfeat.experiments._encoder_pool`).
    continue_outer : kinds that allow it (``CrossFitTraits.continues_outer``: MiniLM fine-tuning, ``sbert-ft``): each
        outer encoder ``E_f`` continues the inner encoder ``E_fg`` (``g`` the next fold) on the pairs of ``T_g``,
        instead of fine-tuning the base model on every pair outside ``T_f`` again: the same pairs, seen once each, in 2 passes over the data instead of 3
        (see :class:`~ltrfeat.experiments._starting_points.ContinuedStart`). False trains every encoder from the base model.
    cluster : a :class:`~ltrfeat.experiments._dask_trainings.DaskTrainings` that runs every training, and makes the
        MiniLM teacher vectors, on a Dask cluster instead of here (the scores are the same); None: the local pool.
    trainer : what trains the encoders, a :class:`~ltrfeat.experiments._fold_trainer.FoldTrainer` (tests inject a
        double); the default trains them (:class:`~ltrfeat.experiments._fold_trainer.EncoderTrainer`).
    """

    label: ClassVar[str] = "cross-fitting"
    _parameter_constraints: ClassVar[dict] = {
        "k": [Integral],
        "valid_fraction": [Interval(Real, 0, 1, closed="left")],
        "seed": [SEED],
        "field": [str],
        "options": [dict],
        "conflicts": [OneOf(*CONFLICTS)],
        "encoder_jobs": [Interval(Integral, 0, MAX_THREADS)],
        "continue_outer": [bool],
    }
    _fixes: ClassVar[dict] = {
        "valid_fraction": "the ranker's validation share, e.g. 0.1",
        "encoder_jobs": "0 = one worker per core, 1 = train in this process",
    }

    k: int = K_FOLDS
    valid_fraction: float = 0.1
    seed: int = 0
    field: str = "doc"
    options: dict = dataclasses.field(default_factory=dict)
    conflicts: str = "error"
    encoder_jobs: int = 0
    continue_outer: bool = True
    cluster: object = dataclasses.field(default=None, compare=False)
    trainer: FoldTrainer = dataclasses.field(default_factory=EncoderTrainer, compare=False)

    def _check(self) -> None:
        check_folds(self.k)
        if "score" in self.options:
            raise ParameterError(
                "the score is chosen per encoder, not as an encoder option (it names the column)",
                fix="write the encoder as e.g. dssm:hinge@dot or clsm:softmax@cosine",
                param="options",
            )
        for key, value in self.options.items():
            name = key.rpartition(".")[2]
            whole = isinstance(value, int) and not isinstance(value, bool)
            low = 0 if name in ("span_epochs", FOLD_DISTILL) else 1
            spans = SPAN_OPTIONS | {FOLD_DISTILL: LONG_DOC_FOLD_DISTILL}
            if name in spans and not (whole and (value in (0, 1) if name in SPAN_SWITCHES else value >= low)):
                raise ParameterError(
                    f"encoder option {key}={value!r}: the +spans settings are whole numbers >= 1 (span_hold_out, "
                    "span_whole: 0 or 1; span_epochs >= 0: 0 for +spans+teacher's distilled towers only; "
                    f"{FOLD_DISTILL} >= 0)",
                    fix=f"e.g. --encoder-option {key}={1 if name in SPAN_SWITCHES else spans[name] or 8}",
                    param="options",
                )


def crossfit_columns(
    pairs: pd.DataFrame,
    plans: list[FoldPlan],
    specs: list[EncoderSpec],
    config: CrossFitConfig | None = None,
    *,
    train_table: pd.DataFrame | None = None,
    collection: list | None = None,
    cache=None,
    progress: bool = True,
    profile: StageProfile | None = None,
    starts: dict | None = None,
    **settings,
) -> dict[str, dict[str, np.ndarray]]:
    """Neural similarity columns for every outer fold: plan the trainings, set aside the cached ones, run the rest
    (:attr:`CrossFitConfig.trainer`), assemble the columns.

    Returns ``{fold name: {column name: float32 array over all rows of pairs}}``; rows outside the fold's
    queries are NaN. ``pairs`` has ``qid, query, docid, <field>, label``; ``train_table`` (default: the
    judged pairs themselves) has ``query, doc, label``. ``collection``: more document texts (no queries, no
    labels) for the ``+spans`` pre-training besides the pairs' own documents. ``config`` (a :class:`CrossFitConfig`;
    keyword ``settings`` replace single fields) gives the document field, the encoder options and the seed.
    ``profile`` records each training's and each scoring's seconds and where it ran. ``starts``, when given, gets
    for every encoder whose trainings start from a model worth keeping which folds kept it (:func:`kept_starts`).
    """
    config = dataclasses.replace(config or CrossFitConfig(), **settings)
    cache = None if cache is None else Path(cache)
    judged = train_table is None  # the training table's rows are the judged pairs'
    train_table = encoder_table(pairs, config.field, train_table)
    n_jobs = len(scoring_jobs(plans)) * sum(s.trainable for s in specs)
    teacher_cache = None
    if cache is not None and any(not s.trainable or s.teacher is not None for s in specs):
        from ltrfeat.encoders import distill

        teacher_cache = cache / "teacher"
        distill.load_vectors(teacher_cache)  # MiniLM vectors of earlier runs: each text encoded once, ever
    bar = tqdm(total=n_jobs, desc="encoders", unit="fit", disable=not show_progress(progress) or n_jobs == 0)
    engine = contextlib.ExitStack()  # every MiniLM pass of this process below runs on the chosen engine
    try:
        from ltrfeat.encoders import sbert_onnx

        engine.enter_context(sbert_onnx.engine(minilm_engine(config.options)))
        trainings, zero_shot = plan_trainings(
            pairs, plans, specs, config, train_table=train_table, collection=collection, cache=cache, profile=profile
        )
        run = FoldRun(config, specs, pairs, train_table, cache, profile, bar)
        for job in trainings:
            if job.done:
                run.finish(job, {}, 0.0, 0.0, True, where="cache")
        todo = [job for job in trainings if not job.done]
        prepared = config.trainer.prepare(run, todo, zero_shot)
        zero_shot_columns = score_zero_shot(run, zero_shot, todo, judged=judged)
        train_here(run, config.trainer.train_elsewhere(run, todo, prepared), config.trainer)
        columns = _assemble(plans, specs, config.field, trainings, zero_shot_columns, n_rows=len(pairs))
        if starts is not None:
            starts.update(kept_starts(specs, trainings, dict(config.options)))
    finally:
        engine.close()
        bar.close()
        if teacher_cache is not None:  # also after an interruption: the vectors computed so far stay valid
            distill.save_vectors(teacher_cache)
    return columns


def _assemble(plans, specs, field: str, trainings: list[Training], zero_shot: dict, *, n_rows: int) -> dict:
    """``{fold: {column: values}}`` in the specs' order: the zero-shot columns as they are, a trained encoder's
    column holding in each fold the scores of the trainings that scored its rows (NaN elsewhere)."""
    columns: dict[str, dict[str, np.ndarray]] = {plan.name: dict(zero_shot) for plan in plans}
    for job in trainings:
        for fold, target in job.rows_of.items():
            column = columns[fold].setdefault(job.column, np.full(n_rows, np.nan, dtype=np.float32))
            column[target] = job.kept[fold]
    order = [f"{spec.name}_{field}_{spec.column_suffix}" for spec in specs]
    return {plan.name: {c: columns[plan.name][c] for c in order} for plan in plans}


START_NAMES = {  # what a training keeps when it keeps its start, by the spec's +MOD (CrossFitTraits.keeps_start)
    None: "the zero-shot model",
    "spans": "the span pre-training",
    "spans+teacher": "the span pre-training distilled from MiniLM",
    "init": "the +init bundle",
    "teacher": "the towers distilled from MiniLM",
}


def kept_starts(specs: list[EncoderSpec], trainings: list, options: dict) -> dict:
    """For every encoder of ``specs`` whose trainings start from a model worth keeping, the report's record of
    the keep-start rule (:mod:`ltrfeat.encoders.epochs`, "Keeping the starting point"):
    ``{name: {"start", "margin", "folds": {fold: record}, "kept_in": [fold], "inner": {"trainings", "kept"}}}``.

    A fold's record is the ``keep_start`` of the training whose encoder scores its test rows (``kept``: that
    training kept its own start) and ``start_kept``: whether that encoder is the spec's start itself -- for an
    outer training that continues an inner one (whose record is its ``continued``), both kept their start. None
    where the rule did not apply (no validation queries).
    """
    out: dict = {}
    for spec in specs:
        if not spec.trainable or not keeps_start(spec):
            continue
        own = [t for t in trainings if t.spec is spec]
        folds: dict = {}
        for job in (t for t in own if t.outer is not None):
            record = dict((job.record or {}).get("keep_start") or {})
            record["start_kept"] = record.get("kept")
            if isinstance(job.start, ContinuedStart):
                inner = (job.start.inner.record or {}).get("keep_start")
                record["continued"] = inner
                if record["start_kept"] is not None:
                    record["start_kept"] = None if inner is None else record["start_kept"] and inner["kept"]
            folds[job.outer] = record
        inner = [(t.record or {}).get("keep_start") for t in own if t.outer is None]
        start = START_NAMES.get(spec.pretrain, "its starting point")
        if spec.pretrain == Pretraining.SPANS_TEACHER and any(distils_in_folds(spec, t.options) for t in own):
            start += ", then on the fold's training pairs"
        out[spec.name] = {
            "start": start,
            "margin": spec_options(spec, options).get("keep_start_margin", KEEP_START_MARGIN),
            "folds": folds,
            "kept_in": [fold for fold, r in folds.items() if r["start_kept"]],
            "inner": {"trainings": len(inner), "kept": sum(bool(r and r["kept"]) for r in inner)},
        }
    return out


def train_spec(
    spec: EncoderSpec,
    pairs: pd.DataFrame,
    *,
    options: dict,
    seed: int = 0,
    field: str = "doc",
    train_table: pd.DataFrame | None = None,
    collection: list | None = None,
    cache=None,
):
    """The encoder ``ablate --encoder SPEC`` trains in every fold, trained once on all of ``train_table`` (default:
    the judged ``pairs``, grouped as :func:`~ltrfeat.experiments.fold_plans.group_pairs` leaves them) -- what to ship when the verdict recommends a
    feature set with it. The same resolved options (:func:`~ltrfeat.experiments._encoder_options.spec_options` of ``options``, the ablation's merged
    ones), the same starting point (a ``+spans`` / ``+spans+teacher`` pre-training on the pairs' ``field`` texts
    and ``collection``: under the ablation's ``cache`` the one it made is reused), the same training with its
    validation split, early stopping and keep-start rule; ``seed`` the ablation's ``--split-seed``."""
    if not spec.trainable:
        raise LtrfeatError(
            f"{spec.text} is zero-shot: there is nothing to train", fix=f"extract with --encoder {spec.text}"
        )
    cache = None if cache is None else Path(cache)
    if train_table is None:
        train_table = pairs.rename(columns={field: "doc"})[["qid", "query", "doc", "label"]]
    own = spec_options(spec, options)
    from ltrfeat.encoders.training_pairs import check_holdout, table_queries

    check_holdout(table_queries(train_table), own.get("val_fraction", spec.kind.config.val_fraction))
    start = None
    teacher_cache = None if cache is None or spec.teacher is None else cache / "teacher"
    if teacher_cache is not None:
        from ltrfeat.encoders import distill

        distill.load_vectors(teacher_cache)
    try:
        if spec.pretrain in traits(spec.kind).start_mods:
            texts = pairs[field].tolist() + list(collection or [])
            start = StartingPoint(spec, texts, options=own, seed=seed, cache=cache)
            own = start.fold_options
        table, own = spec_table(train_table, spec.loss, own)
        table = table.reset_index(drop=True)
        if train_table.attrs.get("clicks"):  # a click log's: the shipped bundle records what trained it
            table.attrs["clicks"] = train_table.attrs["clicks"]
        with freed_memory_kept():
            encoder, _ = train_one(spec, table, options=own, seed=seed, cache=cache, start=start)
    finally:
        if teacher_cache is not None:
            distill.save_vectors(teacher_cache)
    return encoder


def scheme(
    *,
    k: int,
    valid_fraction: float,
    seed: int,
    separate_table: bool,
    span_pretrained=(),
    span_distilled=(),
    span_documents: int = 0,
    continued=(),
) -> dict:
    """The cross-fitting scheme in words and numbers, for the report (``span_pretrained``: the +spans and
    +spans+teacher encoders, pre-trained on ``span_documents`` distinct document texts; ``span_distilled``: those
    whose pre-training is first distilled from MiniLM; ``continued``: the encoders whose outer trainings continue
    inner ones, see :attr:`CrossFitConfig.continue_outer`)."""
    source = "a separate training table, filtered by query text" if separate_table else "the judged pairs"
    spans = (
        f" {', '.join(span_pretrained)}: every fold's encoder starts from one pre-training on query-like spans of "
        f"{span_documents} distinct document texts (the pairs' documents and any --collection; softmax loss; no "
        "query or label is read, so no fold's test labels reach it)."
        if span_pretrained
        else ""
    )
    if span_distilled:
        spans += (
            f" {', '.join(span_distilled)}: that pre-training distils MiniLM's in-batch cosine rankings of the "
            "span -> document pairs instead (the softmax span training follows only with span_epochs > 0)."
        )
    if continued:
        spans += (
            f" {', '.join(continued)}: the encoder for fold f's test rows continues the encoder trained without folds "
            "f and f+1 on fold f+1's pairs (every pair outside fold f seen once, 2 passes over the pairs instead "
            "of 3)."
        )
    return {
        "outer_folds": k,
        "inner_parts": k - 1,
        "ranker_valid_fraction": valid_fraction,
        "seed": seed,
        "encoder_training_data": source,
        "trainings_per_encoder": n_trainings(k),
        "description": (
            f"Queries are split into {k} folds (seed {seed}). For each fold, the ranker is tested on the fold's "
            f"queries and trained on the others ({valid_fraction:.0%} of them held out for early stopping). Test "
            f"rows are scored by an encoder trained on {source} without the test queries; the ranker's rows of "
            f"each other fold are scored by an encoder trained without the test queries and without that fold "
            f"(out-of-fold scores). No encoder scores a query it was trained on; {n_trainings(k)} trainings per "
            f"trained encoder.{spans}"
        ),
    }


def text_folds(
    pairs: pd.DataFrame,
    config: CrossFitConfig | None = None,
    *,
    lexical,
    specs: list[EncoderSpec],
    train_table: pd.DataFrame | None = None,
    collection: list | None = None,
    cache=None,
    progress: bool = True,
    profile: StageProfile | None = None,
    **settings,
):
    """From judged pairs to cross-fitted ablation folds, ready for :func:`ltrfeat.experiments.ablation.run_ablation`.

    ``config`` is a :class:`CrossFitConfig` (keyword ``settings`` replace single fields); ``collection`` as in
    :func:`crossfit_columns`. ``lexical`` is a
    list of unfitted lexical extractors (fitted on all documents: corpus statistics use no labels). Returns
    ``(folds, neural groups {name: [column]}, base column names, scheme dict)``: a list of
    :class:`~ltrfeat.experiments.folds.Fold` whose ``origin`` names the pairs' file (``pairs.attrs["source"]``,
    set by :func:`ltrfeat.core.text.read_judged_pairs`); the scheme's ``keep_start`` says which folds' encoders
    kept their starting model (:func:`kept_starts`), for encoders that start from one. ``profile`` gets the
    stages "lexical features" and "encoder columns" and every encoder training.
    """
    from ltrfeat.features.extract import extract_pairs

    config = dataclasses.replace(config or CrossFitConfig(), **settings)
    k, valid_fraction, seed = config.k, config.valid_fraction, config.seed
    profile = profile or StageProfile()
    pairs = group_pairs(pairs)
    with profile.stage("lexical features"):
        base = extract_pairs(pairs, lexical, conflicts=config.conflicts)
    if not (
        np.array_equal(base.qid, pairs["qid"].to_numpy(object))
        and base.docid is not None
        and np.array_equal(base.docid, pairs["docid"].to_numpy(object))
    ):
        raise AssertionError("lexical features are not aligned with the judged pairs")
    plans = plan_folds(pairs["qid"], k=k, valid_fraction=valid_fraction, seed=seed)
    starts: dict = {}
    with profile.stage("encoder columns"):
        columns = crossfit_columns(
            pairs,
            plans,
            specs,
            config,
            train_table=train_table,
            collection=collection,
            cache=cache,
            progress=progress,
            profile=profile,
            starts=starts,
        )
    folds = build_folds(base, plans, columns, pairs_name=str(pairs.attrs.get("source", "the judged pairs")))
    groups = {spec.name: [name] for spec, name in zip(specs, next(iter(columns.values())))}
    info = scheme(
        k=k,
        valid_fraction=valid_fraction,
        seed=seed,
        separate_table=train_table is not None,
        span_pretrained=[s.name for s in specs if s.span_pretrained],
        span_distilled=[s.name for s in specs if s.pretrain == Pretraining.SPANS_TEACHER],
        span_documents=len(set(pairs[config.field].dropna()) | set(collection or [])),
        continued=[s.name for s in specs if traits(s.kind).continues_outer] if config.continue_outer else [],
    )
    if starts:
        info["keep_start"] = starts
    return folds, groups, base.feature_map.names, info
