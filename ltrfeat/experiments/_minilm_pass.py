"""The shared MiniLM pass: a zero-shot column's vectors and the frozen lower layers of the MiniLM fine-tunings on
the same model computed once, here or on a Dask cluster, and the zero-shot column handed to those fine-tunings."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import numpy as np

from ltrfeat.experiments._training_plan import Training
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.crossfit_traits import traits
from ltrfeat.encoders.pretraining import Pretraining


def frozen_groups(trainings: list[Training]) -> dict[tuple, tuple[list[Training], list[str]]]:
    """The MiniLM fine-tunings among ``trainings`` that keep frozen lower layers, by (base model, settings JSON):
    the trainings and every text they read and score."""
    from ltrfeat.encoders.config import SbertConfig

    groups: dict[tuple, tuple[list[Training], dict[str, None]]] = {}
    for job in trainings:
        if traits(job.spec.kind).frozen_prefix:
            settings = {k: v for k, v in job.options.items() if k in SbertConfig.names()}
            members, texts = groups.setdefault(
                (job.spec.path, json.dumps(settings, sort_keys=True, default=str)), ([], {})
            )
            members.append(job)
            texts.update(dict.fromkeys(job.table["query"]))
            texts.update(dict.fromkeys(job.table["doc"]))
            for queries, docs in job.texts.values():
                texts.update(dict.fromkeys(queries))
                texts.update(dict.fromkeys(docs))
    return {group: (members, list(texts)) for group, (members, texts) in groups.items()}


def share_minilm(
    zero_shot: list[EncoderSpec], groups: dict, queries: list, docs: list, *, cluster, profile, bar
) -> dict[tuple, tuple]:
    """One MiniLM pass (:func:`~ltrfeat.encoders.sbert_shared.shared_pass`) for a zero-shot column's
    vectors of ``queries``/``docs`` and the frozen-layer states of a group of :func:`frozen_groups` on the same
    model; in this process, or on ``cluster`` and brought back. Returns ``{group: store key}`` of the groups done."""
    from ltrfeat.encoders import sbert_shared

    shared: dict[tuple, tuple] = {}
    for spec in zero_shot:
        teacher = f"sbert={spec.path}" if spec.path else "sbert"
        for group, (members, texts) in groups.items():
            base, settings = group[0], json.loads(group[1])
            if group in shared or not sbert_shared.shares(teacher, base=base, **settings):
                continue
            name = members[0].spec.name
            bar.set_postfix_str(f"{spec.name} vectors and {name} frozen layers in one pass")
            start = time.perf_counter()
            wanted = {"query": queries, "doc": docs}
            if cluster is None:
                shared[group], _, _ = sbert_shared.shared_pass(
                    teacher, wanted, texts, base=base, progress=not bar.disable, **settings
                )
            else:
                shared[group], _, _ = cluster.shared_pass(teacher, wanted, texts, base=base, **settings)
            if profile is not None:
                profile.frozen_layers(
                    name,
                    seconds=time.perf_counter() - start,
                    texts=len(texts),
                    where=f"{'this process' if cluster is None else 'dask cluster'}, one pass with the {spec.name} vectors",
                )
    return shared


def keep_frozen(
    groups: dict, *, profile, bar, cluster=None, shared: dict[tuple, tuple] | None = None
) -> dict[int, tuple]:
    """Run the frozen lower layers of the MiniLM fine-tunings of ``groups`` (:func:`frozen_groups`) once over
    all the texts they read and score (one pass per base model and settings, :func:`~ltrfeat.encoders.
    sbert_training.keep_frozen_states`), here, before any of them trains: in this process or in a worker,
    every fine-tuning then starts from the same states; with a ``cluster`` (a :class:`~ltrfeat.experiments.
    _dask_trainings.DaskTrainings`) the pass runs there and the states come back. ``shared``: the groups whose
    states :func:`share_minilm` keeps already, with their store keys. Returns ``{id(training): (store key,
    texts)}``."""
    from ltrfeat.encoders.sbert_training import keep_frozen_states

    kept: dict[int, tuple] = {}
    shared = shared or {}
    for group, (members, texts) in groups.items():
        if group in shared:
            kept.update({id(job): (shared[group], texts) for job in members})
            continue
        base, settings = group
        bar.set_postfix_str(f"{members[0].spec.name}: frozen layers over {len(texts)} texts")
        start = time.perf_counter()
        keep = keep_frozen_states if cluster is None else cluster.frozen_states
        key = keep(texts, base=base, **json.loads(settings))
        if profile is not None:
            profile.frozen_layers(
                members[0].spec.name,
                seconds=time.perf_counter() - start,
                texts=len(texts),
                where="this process" if cluster is None else "dask cluster",
            )
        kept.update({id(job): (key, texts) for job in members})
    return kept


def teacher_vectors_on(cluster, specs, pairs, train_table, *, field: str, profile, distilling=()) -> None:
    """MiniLM vectors of every text a zero-shot teacher column scores or a ``+teacher`` training distils (or a
    ``+spans+teacher`` fold training of ``distilling``, :func:`~ltrfeat.experiments._starting_points.distils_in_folds`), made on ``cluster`` (only the texts
    not cached here), so neither pass encodes anything in this process."""
    wanted: dict[str, tuple[list, list]] = {}
    for spec in specs:
        if traits(spec.kind).teacher_scorer or spec.pretrain == Pretraining.TEACHER or spec in distilling:
            # a zero-shot column scores the judged pairs, a distillation reads the training table
            table, doc = (pairs, field) if traits(spec.kind).teacher_scorer else (train_table, "doc")
            queries, docs = wanted.setdefault(f"sbert={spec.path}" if spec.path else "sbert", ([], []))
            queries += table["query"].tolist()
            docs += table[doc].tolist()
    if not wanted:
        return
    with profile.stage("MiniLM vectors") if profile is not None else contextlib.nullcontext():
        encoded = sum(
            cluster.teacher_vectors(spec, texts, side=side)
            for spec, (queries, docs) in wanted.items()
            for side, texts in (("query", queries), ("doc", docs))
        )
    if profile is not None:
        profile.ran_on("MiniLM vectors", f"dask cluster ({encoded} texts encoded)")


def offer_zero_shot(trainings: list[Training], path, scores: np.ndarray, *, judged: bool) -> None:
    """Hand the zero-shot MiniLM column ``scores`` (base model ``path``, None: the packaged one) to the MiniLM
    fine-tunings of the same base among ``trainings``: one that keeps its base unchanged scores as that column
    (:func:`~ltrfeat.experiments._training_task.fold_scores`) instead of running the whole model again, and one
    that starts from it validates its start from it. ``judged``: the training tables' rows are the judged
    pairs' (the default training table), so their scores are known."""
    from ltrfeat.encoders.sbert import packaged_model_path

    def base(p) -> Path:
        return (packaged_model_path() if p is None else Path(p)).resolve()

    for job in trainings:
        if traits(job.spec.kind).frozen_prefix and base(job.spec.path) == base(path):
            job.zero_shot = {fold: scores[rows] for fold, rows in job.rows_of.items()}
            job.start_scores = scores[job.rows] if judged else None


def zero_shot_scorer(spec: EncoderSpec):
    kind = spec.kind
    return (kind.scorer or kind.load)(spec.path)


def score_zero_shot(run, zero_shot: list[EncoderSpec], todo: list[Training], *, judged: bool) -> dict:
    """``{column: scores of every judged pair}`` of the zero-shot encoders, each handed to the MiniLM fine-tunings
    of ``todo`` on its model (:func:`offer_zero_shot`); ``run``: the
    :class:`~ltrfeat.experiments._fold_trainer.FoldRun`."""
    columns: dict[str, np.ndarray] = {}
    for spec in zero_shot:
        start = time.perf_counter()
        scores = zero_shot_scorer(spec).similarity(run.queries, run.docs).astype(np.float32)
        if run.profile is not None:
            cluster = run.config.cluster
            where = "this process" if cluster is None else "this process, MiniLM vectors from the dask cluster"
            run.profile.zero_shot(spec.name, score_seconds=time.perf_counter() - start, where=where)
        columns[f"{spec.name}_{run.config.field}_{spec.column_suffix}"] = scores
        if traits(spec.kind).teacher_scorer:
            offer_zero_shot(todo, spec.path, scores, judged=judged)
    return columns
