"""An ablation's test-fold scores as TREC runs, with the test queries' qrels beside them.

``runs/<set>.run`` holds every fold's test scores of that feature set from its first seed
(``SET/CANDIDATE`` sets as ``SET__CANDIDATE``); ``runs/<set>.seed<S>.run`` those of each further
seed ``S`` that every fold ran;
``runs/qrels.txt`` holds the test queries' judgements. Any TREC tool (``ltrfeat evaluate --qrels
--run``, trec_eval, ir-measures, ranx) then reads them. Query ids are the data's (each query is
tested in one fold); document ids are the data's ``docid``, or ``r<n>`` (the row's position
within its query, from 1) when the data has none or repeats one within a query.

The report averages each query's metric over seeds and takes the expected value over the orders of equal
scores (its ``ties`` convention); a TREC evaluator reads one run and orders equal scores by docid, descending.
With one seed and no tied scores the two agree exactly (``ties="docid"`` agrees with ties too); :func:`write_test_runs` counts the queries with tied scores.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.trec import write_qrels, write_trec_run

RUNS_DIR = "runs"
QRELS = "qrels.txt"


def run_slug(name: str) -> str:
    """A file name and TREC tag for a feature set name (``lexical/lightgbm`` -> ``lexical__lightgbm``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name.replace("/", "__")) or "set"


def _ids(folds) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str]:
    """Per fold: the TREC query and document ids of its test rows, and how the document ids were made.
    (Folds partition the queries, see :func:`ltrfeat.experiments.ablation.run_ablation`, so qids are unique.)"""
    qids, docids, from_data = {}, {}, True
    for fold in folds:
        q = np.asarray(fold.test.qid, dtype=object).astype(str)
        qids[fold.name] = q.astype(object)
        usable = fold.test.docid is not None and not pd.isna(pd.Series(fold.test.docid, dtype=object)).any()
        if usable:
            text = pd.Series(fold.test.docid, dtype=object).astype(str)
            usable = not (
                text.str.contains(r"\s|^$", regex=True).any() or pd.DataFrame({"q": q, "d": text}).duplicated().any()
            )
        if usable:
            docids[fold.name] = text.to_numpy(dtype=object)
        else:
            from_data = False
            position = pd.Series(q).groupby(q, sort=False).cumcount() + 1
            docids[fold.name] = ("r" + position.astype(str)).to_numpy(dtype=object)
    return (
        qids,
        docids,
        (
            "the data's docids"
            if from_data
            else "r<n>: the row's position within its query (the data has no unique docid for every row)"
        ),
    )


def _tied_queries(qid: np.ndarray, scores: np.ndarray) -> int:
    frame = pd.DataFrame({"q": qid, "s": scores})
    return int(frame.duplicated(["q", "s"]).groupby(frame["q"], sort=False).any().sum())


def write_test_runs(result, folds, directory) -> dict:
    """Write every feature set's test-fold scores of ``result`` as TREC runs into ``directory``.

    ``folds`` are the folds the ablation ran on (their test queries give the run's ids and the
    qrels). Returns the record that ``report.json`` keeps under ``runs``: per set, its files and the
    seed each fold's scores came from; the id conventions; the number of queries whose scores tie
    in each run.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    by_name = {f.name: f for f in folds}
    qids, docids, how = _ids(folds)
    record: dict = {"directory": RUNS_DIR, "docids": how, "files": {}, "tied_queries": {}}
    labels = np.concatenate([np.asarray(by_name[f.name].test.label, dtype=np.float64) for f in folds])
    if np.isfinite(labels).all() and (labels == np.round(labels)).all():
        write_qrels(
            directory / QRELS,
            np.concatenate([qids[f.name] for f in folds]),
            np.concatenate([docids[f.name] for f in folds]),
            labels,
        )
        record["qrels"] = QRELS
    else:
        record["qrels"] = None
        record["qrels_note"] = "labels are not integer grades: no qrels written"
    used: set[str] = set()
    for fs in result.feature_sets:
        per_fold = result.test_scores.get(fs.name)
        if not per_fold:
            continue
        slug = run_slug(fs.name)
        while slug in used:
            slug += "_"
        used.add(slug)
        # the first seed of every fold, then each further seed that every fold ran
        common = [s for s in per_fold[folds[0].name]["seeds"][1:] if all(s in per_fold[f.name]["seeds"] for f in folds)]
        q = np.concatenate([qids[f.name] for f in folds])
        d = np.concatenate([docids[f.name] for f in folds])
        files = {}
        for seed in [None, *common]:
            name = f"{slug}.run" if seed is None else f"{slug}.seed{seed}.run"
            pick = [0 if seed is None else per_fold[f.name]["seeds"].index(seed) for f in folds]
            scores = np.concatenate([per_fold[f.name]["scores"][k] for f, k in zip(folds, pick)])
            write_trec_run(directory / name, q, d, scores, tag=slug)
            files[name] = [per_fold[f.name]["seeds"][k] for f, k in zip(folds, pick)]
            record["tied_queries"][name] = _tied_queries(q, scores)
        record["files"][fs.name] = files
    return record
