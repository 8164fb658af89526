"""Per-document, per-feature contributions to a ranker's score: why a document ranks where it does.

Every built-in kind's model has a ``contributions(data)`` method (the optional hook of
:class:`ltrfeat.rankers.registry.RankerModel`) returning :class:`Contributions` whose ``values`` plus
``bias`` add up, row by row, to the model's ``predict(data)``:

- LambdaMART (``lightgbm``, ``xgboost`` and their tuned kinds): the engine's exact TreeSHAP values
  (LightGBM ``pred_contrib=True``, XGBoost ``pred_contribs=True``) over the trees used for prediction;
  the bias is the expected score the trees start from (XGBoost: with its ``base_score``);
- ``linear``: the exact terms ``w_j * z_j`` of the standardised features, bias 0;
- ``best-single``: the chosen feature's term (``direction * value``), bias 0;
- ``boost-best``: the start feature's term (``scale * its per-query z-score``) plus the trees' TreeSHAP.

Tree contributions are Shapley values of the trees' output for that one document: they say which features
moved its score away from the average document's, not which features the model leans on overall.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ltrfeat.core.errors import LtrfeatError


@dataclasses.dataclass(frozen=True)
class Contributions:
    """``values[i, j]``: feature ``names[j]``'s part of row ``i``'s score; ``bias[i]``: the rest (the
    score with no feature information). ``values.sum(axis=1) + bias`` is the model's score."""

    names: list[str]
    values: np.ndarray
    bias: np.ndarray

    @property
    def scores(self) -> np.ndarray:
        """The scores the contributions add up to."""
        return self.values.sum(axis=1) + self.bias

    def ranked(self, row: int) -> list[tuple[str, float]]:
        """Row ``row``'s (feature, contribution) pairs, largest |contribution| first (ties by name)."""
        pairs = zip(self.names, self.values[row].tolist())
        return sorted(pairs, key=lambda p: (-abs(p[1]), p[0]))

    def mean_abs(self) -> dict[str, float]:
        """Mean |contribution| per feature over the rows (a global importance, per-document based)."""
        return dict(zip(self.names, np.abs(self.values).mean(axis=0).tolist()))


def contributions(model, data) -> Contributions:
    """Per-row, per-feature contributions of any ranker to its scores of ``data`` (a RankingSet).

    A model explains itself through its ``contributions(data)`` method; a model without one (another
    package's kind) gets a one-line error naming the hook to add.
    """
    hook = getattr(model, "contributions", None)
    if hook is None:
        raise LtrfeatError(
            f"{type(model).__name__} rankers cannot say what their scores are made of",
            fix="give the model class a contributions(data) method (see docs/new-ranker.md)",
        )
    return hook(data)


def add_feature_term(contrib: Contributions, name: str, term: np.ndarray) -> Contributions:
    """``contrib`` with ``term`` added to feature ``name``'s column (appended when it has none)."""
    values = contrib.values.copy()
    names = list(contrib.names)
    if name not in names:
        names.append(name)
        values = np.column_stack([values, np.zeros(len(values))])
    values[:, names.index(name)] += term
    return Contributions(names, values, contrib.bias)


def explained_row(contrib: Contributions, row: int, score: float) -> dict:
    """Row ``row``'s score, bias and every feature's contribution, largest |contribution| first (JSON-ready)."""
    return {
        "score": float(score),
        "bias": float(contrib.bias[row]),
        "contributions": [{"feature": n, "contribution": v} for n, v in contrib.ranked(row)],
    }


def explain_queries(model, data, qids=None, *, top: int = 10) -> list[dict]:
    """Per query of ``data`` (``qids``, default every query in file order): its ``top`` documents by the
    model's score, each with its score, the bias and every feature's contribution, largest |contribution| first.

    A qid ``data`` lacks is a one-line error naming it.
    """
    known = data.queries()
    if qids is None:
        qids = known.tolist()
    present = set(known.tolist())
    missing = [q for q in qids if q not in present]
    if missing:
        shown = ", ".join(map(str, known[:5])) + (", ..." if len(known) > 5 else "")
        raise LtrfeatError(f"query {missing[0]!r} is not in the data", fix=f"give a qid it holds ({shown})")
    part = data.subset_queries(qids)
    part = part if part.is_contiguous() else part.regroup()
    scores, contrib = model.predict(part), contributions(model, part)
    bounds = part.query_boundaries()
    rows_of = {part.qid[start]: (start, end) for start, end in zip(bounds[:-1], bounds[1:])}
    out = []
    for qid in qids:
        start, end = (int(b) for b in rows_of[qid])
        order = start + np.argsort(-scores[start:end], kind="stable")[:top]
        documents = [
            {
                "rank": rank,
                "docid": None if part.docid is None else part.docid[i],
                "label": float(part.label[i]),
                **explained_row(contrib, i, scores[i]),
            }
            for rank, i in enumerate(order.tolist(), 1)
        ]
        out.append({"qid": qid, "documents": end - start, "top": documents})
    return out


def format_explanations(explained: list[dict], *, features: int | None = None) -> str:
    """:func:`explain_queries`' result as text: per query, per document its score and the ``features``
    (default all) largest contributions, signed."""
    lines = []
    for query in explained:
        lines.append(f"query {query['qid']}: top {len(query['top'])} of {query['documents']} documents")
        for doc in query["top"]:
            docid = "" if doc["docid"] is None else f"  {doc['docid']}"
            lines.append(
                f"  {doc['rank']:>3}.{docid}  score {doc['score']:.6g}  label {doc['label']:g}  bias {doc['bias']:+.4f}"
            )
            shown = doc["contributions"][:features]
            lines.extend(f"        {c['contribution']:+.4f}  {c['feature']}" for c in shown)
            if len(shown) < len(doc["contributions"]):
                lines.append(f"        ... {len(doc['contributions']) - len(shown)} more")
    return "\n".join(lines)
