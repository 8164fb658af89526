"""Re-rank a TREC run: join its (query, document) pairs to their texts, compute the ranker's
features, score them and return the new run (written with :func:`ltrfeat.core.trec.write_trec_run`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.trec import trec_order

from ltrfeat.serving.scorer import Scorer


def _missing(ids: np.ndarray, known: pd.Index) -> list:
    return list(dict.fromkeys(ids[~pd.Index(ids).isin(known)].tolist()))


def rerank_run(
    scorer: Scorer, run: pd.DataFrame, queries: pd.DataFrame, docs: pd.DataFrame, *, depth: int | None = None
) -> pd.DataFrame:
    """New scores for the run's documents: columns ``qid, docid, score``, one row per run line.

    ``run`` as from :func:`ltrfeat.core.trec.read_run`; ``queries`` (``qid, query``) and ``docs``
    (``docid`` + the fields the ranker's features read) as from ``ltrfeat.core.text``. With
    ``depth``, only each query's top ``depth`` documents of the run (trec_eval order) are
    re-scored; the others keep their run order below every re-scored document. A run query or
    document without text is an error listing the first few ids. ``scorer.guard`` counts (or, strict,
    refuses) queries an encoder was trained on.
    """
    source = run.attrs.get("source")
    qtext = pd.Series(queries["query"].to_numpy(dtype=object), index=pd.Index(queries["qid"].astype(str)))
    dindex = pd.Index(docs["docid"].astype(str))
    absent = [f for f in scorer.fields if f not in docs.columns]
    if absent:
        raise TextTableError(
            f"the documents table lacks field(s) {', '.join(absent)} that the ranker's features read",
            path=docs.attrs.get("source"),
            fix=f"give a documents table with {', '.join(scorer.fields)}",
        )
    order = trec_order(run["qid"], run["docid"], run["score"])
    ordered = run.iloc[order]
    qid = ordered["qid"].to_numpy(dtype=object)
    docid = ordered["docid"].to_numpy(dtype=object)
    for what, ids, known, table in (
        ("queries", qid, qtext.index, "queries"),
        ("documents", docid, dindex, "documents"),
    ):
        lost = _missing(ids, known)
        if lost:
            raise TextTableError(
                f"{len(lost)} {what} of the run have no text in the {table} table "
                f"({', '.join(map(str, lost[:5]))}{', ...' if len(lost) > 5 else ''})",
                path=source,
                fix=f"give the {table} table the run was retrieved from",
            )
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]) if len(qid) else np.zeros(0, int)
    position = np.arange(len(qid)) - np.repeat(starts, np.diff(np.r_[starts, len(qid)]))
    top = position < depth if depth is not None else np.ones(len(qid), dtype=bool)
    rows = dindex.get_indexer(docid[top])
    pairs = pd.DataFrame(
        {
            "qid": qid[top],
            "query": qtext.reindex(qid[top]).to_numpy(dtype=object),
            "docid": docid[top],
            **{f: docs[f].to_numpy(dtype=object)[rows] for f in scorer.fields},
        }
    )
    scorer.guard.add(pairs["qid"], pairs["query"])
    X = scorer.pair_features(pairs)
    data = RankingSet(
        qid=pairs["qid"].to_numpy(dtype=object), label=np.zeros(len(pairs)), X=X, feature_map=scorer.ranker.feature_map_
    )
    scores = np.empty(len(qid))
    scores[top] = scorer.ranker.predict(data) if len(pairs) else np.zeros(0)
    if not top.all():  # below the depth: the run's order, under every re-scored document
        floor = scores[top].min() - 1.0 if top.any() else 0.0
        scores[~top] = floor - position[~top]
    out = pd.DataFrame({"qid": qid, "docid": docid, "score": scores})
    out.attrs["reranked"] = int(top.sum())
    return out
