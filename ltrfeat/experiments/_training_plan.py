"""The plan of a cross-fitting's encoder trainings: for every trained spec and every ``E_f`` / ``E_fg``, what it
trains on and starts from, which rows of which fold it scores, its cache key and whatever of it is cached."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.stages import StageProfile
from ltrfeat.core.text import normalise_query
from ltrfeat.experiments import _encoder_pool
from ltrfeat.experiments._encoder_cache import cache_key, keeps_start, load_record, load_scores, scores_path
from ltrfeat.experiments._encoder_options import spec_options
from ltrfeat.experiments._starting_points import ContinuedStart, StartingPoint
from ltrfeat.experiments.click_training import spec_table
from ltrfeat.experiments.fold_plans import FoldPlan, check_disjoint, in_queries, scoring_jobs
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.crossfit_traits import traits


@dataclasses.dataclass(eq=False)
class Training:
    """One encoder training of the cross-fitting: what it trains on and starts from, the rows of each fold
    its encoder scores (``rows_of``, their texts) and their scores, cached (``kept``) or not yet."""

    spec: EncoderSpec
    column: str
    job: str
    table: pd.DataFrame
    options: dict
    start: "StartingPoint | ContinuedStart | None"
    rows_of: dict[str, np.ndarray]
    texts: dict[str, tuple[list, list]]
    rows: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # of the table
    key: str | None = None
    paths: dict[str, Path] = dataclasses.field(default_factory=dict)
    kept: dict[str, np.ndarray | None] = dataclasses.field(default_factory=dict)
    outer: str | None = None  # the outer fold whose test rows it scores (None: an inner training)
    record: dict | None = None  # :func:`~ltrfeat.experiments._training_task.training_record`, once known
    record_path: Path | None = None
    zero_shot: dict[str, np.ndarray] | None = None  # the run's zero-shot column on its MiniLM base, by fold
    start_scores: np.ndarray | None = None  # that column's scores of the rows of table (they are judged pairs)

    @property
    def done(self) -> bool:
        """Its scores, and the record the report shows of a training with a start, are cached."""
        scored = bool(self.kept) and all(v is not None for v in self.kept.values())
        return scored and (self.record is not None or not keeps_start(self.spec))


def check_trainings(trainings: list[Training]) -> None:
    """What can be refused before any encoder trains: a validation share that leaves one of the trainings (the
    smallest tables come last: inner, continued) without a validation or a training query."""
    from ltrfeat.encoders.training_pairs import check_holdout, table_queries

    for job in trainings:
        if not job.done:
            share = job.options.get("val_fraction", job.spec.kind.config.val_fraction)
            check_holdout(table_queries(job.table), share, what=f"{job.spec.name} training {job.job}: ")


def encoder_table(pairs: pd.DataFrame, field: str, train_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """What the encoders train on: ``train_table``, or the judged ``pairs`` (their ``field`` as ``doc``)."""
    if train_table is None:
        train_table = pairs.rename(columns={field: "doc"})[["qid", "query", "doc", "label"]]
    return train_table.reset_index(drop=True)


def plan_trainings(
    pairs: pd.DataFrame,
    plans: list[FoldPlan],
    specs: list[EncoderSpec],
    config,
    *,
    train_table: pd.DataFrame,
    collection: list | None = None,
    cache: Path | None = None,
    profile: StageProfile | None = None,
) -> tuple[list[Training], list[EncoderSpec]]:
    """Every encoder training of the cross-fitting (what each trains on, starts from and scores; with ``cache``
    its key and whatever of it is cached) and the zero-shot specs, in the order :func:`~ltrfeat.experiments.crossfit.crossfit_columns` runs
    them; ``train_table`` as that function prepares it. Nothing is trained or scored here."""
    field, options, seed, cluster = config.field, dict(config.options), config.seed, config.cluster
    train_keys = train_table["query"].map(normalise_query)
    qid_text = dict(zip(pairs["qid"], pairs["query"].map(normalise_query)))
    row_qid = pairs["qid"].to_numpy()
    queries, docs = pairs["query"].tolist(), pairs[field].tolist()
    jobs = scoring_jobs(plans)
    trainings: list[Training] = []
    zero_shot: list[EncoderSpec] = []  # scored once the trainings are planned (see _share_minilm)
    for spec in specs:
        column = f"{spec.name}_{field}_{spec.column_suffix}"
        if not spec.trainable:
            zero_shot.append(spec)
            continue
        own = spec_options(spec, options)
        start_point = None
        if spec.pretrain in traits(spec.kind).start_mods:
            texts = docs + list(collection or [])
            start_point = StartingPoint(
                spec, texts, options=own, seed=seed, cache=cache, profile=profile, cluster=cluster
            )
            own = start_point.fold_options
        spec_rows, own = spec_table(train_table, spec.loss, own)
        # the thread count is a runtime setting: out of the cache key unless the user chose it
        training_options = own if not traits(spec.kind).pooled else {"threads": _encoder_pool.THREADS} | own
        continuing = config.continue_outer and traits(spec.kind).continues_outer
        inner_of: dict[frozenset, Training] = {}
        # inner trainings first: a continued outer one needs its inner one's key
        for index in [*range(len(plans), len(jobs)), *range(len(plans))] if continuing else range(len(jobs)):
            excluded, targets = jobs[index]
            rows = np.flatnonzero(~train_keys.isin({qid_text[q] for q in excluded}).to_numpy())
            trained_on = set(train_keys.iloc[rows])
            name = "without " + "+".join(sorted(p.name for p in plans if p.test <= excluded))
            start: StartingPoint | ContinuedStart | None = start_point
            if continuing and index < len(plans):
                inner = inner_of[excluded | plans[(index + 1) % len(plans)].test]
                rows = np.setdiff1d(rows, inner.rows)  # the one fold the inner encoder lacks
                start = ContinuedStart(inner, trainer=config.trainer, seed=seed, cache=cache)
                name += f" (continues the encoder {inner.job})"
            table = spec_rows.iloc[rows]
            for fold, scored in targets:
                check_disjoint(trained_on, {qid_text[q] for q in scored}, f"{spec.name} {fold}")
            rows_of = {fold: np.flatnonzero(in_queries(row_qid, scored)) for fold, scored in targets}
            job = Training(
                spec,
                column,
                name,
                table,
                training_options,
                start,
                rows_of,
                {fold: ([queries[i] for i in r], [docs[i] for i in r]) for fold, r in rows_of.items()},
                rows=rows,
                outer=plans[index].name if index < len(plans) else None,
            )
            inner_of[excluded] = job
            if cache is not None:
                job.key = cache_key(spec, own, table, seed, None if start is None else start.key)
                job.paths = {fold: scores_path(cache, f"{spec.name}-{job.key}", *job.texts[fold]) for fold in rows_of}
                job.kept = {fold: load_scores(job.paths[fold], len(r)) for fold, r in rows_of.items()}
                job.record_path = cache / "scores" / f"{spec.name}-{job.key}.training.json"
                job.record = load_record(job.record_path)
            trainings.append(job)
    return trainings, zero_shot
