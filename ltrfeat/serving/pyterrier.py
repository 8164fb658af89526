"""PyTerrier transformers: ltrfeat features and the trained LambdaMART inside a PyTerrier pipeline.

``pip install 'ltrfeat[pyterrier]'`` (the maintained ``pyterrier`` package, 1.x; ``python-terrier`` is
now only a meta-package that pulls ``pyterrier[all]``). The transformer and ``pt.Experiment`` API work
without Java: nothing here starts a JVM.

PyTerrier result frames carry ``qid, query, docno`` and the document text (``text``, or any column);
ltrfeat frames call them ``qid, query, docid`` and name the fields (``title``, ``description``).
``fields`` maps each ltrfeat field to a frame column (default: a column of the same name, else ``text``).

- :class:`Features` appends feature columns to the frame's ``features`` array (PyTerrier's LTR
  convention): lexical and neural extractors, or exactly a trained ranker's features in its order
  (:meth:`Features.for_ranker`).
- :class:`Ranker` scores ``features`` with a trained ranker (any kind: LambdaMART, linear, ...) and ranks.
- :class:`FeatureScore` ranks by one feature column (e.g. BM25 as a baseline).
- :func:`candidates` turns a LETOR file and its text tables into a result frame (its judged candidates),
  and :func:`qrels` its labels into PyTerrier qrels, so ``pt.Experiment`` scores the same rows as
  ``ltrfeat evaluate``.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError, LtrfeatWarning

if TYPE_CHECKING:
    from ltrfeat.serving.scorer import Scorer


def _import_pyterrier() -> ModuleType | None:
    """PyTerrier, an optional extra: the module imports without it and explains on first use."""
    try:
        import pyterrier
    except ImportError:  # pragma: no cover - exercised only without the extra
        return None
    return pyterrier


pt = _import_pyterrier()
_Base: type = object if pt is None else pt.Transformer


def _require() -> ModuleType:
    """PyTerrier, or an error saying how to install it."""
    if pt is None:
        raise LtrfeatError("PyTerrier is not installed", fix="pip install 'ltrfeat[pyterrier]'")
    return pt


def _pairs(res: pd.DataFrame, fields, mapping: dict) -> pd.DataFrame:
    """An ltrfeat pairs table (``qid, query, docid`` + fields) from a PyTerrier result frame."""
    absent = [c for c in ("qid", "query", "docno") if c not in res.columns]
    if absent:
        raise LtrfeatError(
            f"the PyTerrier frame has no column(s) {', '.join(absent)}",
            fix="put a retriever or pt.Transformer.from_df(...) with qid, query, docno first",
        )
    out = {
        "qid": res["qid"].astype(str).to_numpy(),
        "query": res["query"].astype(str).to_numpy(),
        "docid": res["docno"].astype(str).to_numpy(),
    }
    for field in fields:
        column = mapping.get(field) or (field if field in res.columns else "text")
        if column not in res.columns:
            raise LtrfeatError(
                f"the PyTerrier frame has no column {column!r} for field {field!r}",
                fix="add the text (e.g. pt.text.get_text) or map it: fields={'title': 'text'}",
            )
        out[field] = res[column].fillna("").astype(str).to_numpy()
    return pd.DataFrame(out)


def _with_features(res: pd.DataFrame, X: np.ndarray, append: bool) -> pd.DataFrame:
    out = res.copy()
    if append and "features" in res.columns:
        X = np.hstack([np.vstack(res["features"].to_numpy()), X])
    out["features"] = list(np.asarray(X, dtype=np.float32))
    return out


class Features(_Base):
    """Adds ltrfeat feature columns to a result frame's ``features`` (qid, query, docno, text -> features).

    Parameters
    ----------
    extractors : fitted ltrfeat feature extractors (``LexicalExtractor``, ``EncoderExtractor``, ...), or
        unfitted ones together with ``docs`` (a documents table with ``docid`` and the fields) to fit on.
    fields : ``{ltrfeat field: frame column}``; unmapped fields use the same-named column, else ``text``.
    append : append to an existing ``features`` column instead of replacing it.
    strict : refuse (raise :class:`~ltrfeat.core.errors.LtrfeatError`, nothing returned) a frame holding a query
        an encoder was trained on, as the CLI's ``--strict`` does; otherwise each frame with such queries
        gives one :class:`~ltrfeat.core.errors.LtrfeatWarning` per encoder, with the count
        (:mod:`ltrfeat.encoders.leakage`).
    """

    def __init__(
        self,
        extractors,
        *,
        docs: pd.DataFrame | None = None,
        fields: dict | None = None,
        append: bool = True,
        strict: bool = False,
    ):
        _require()
        from ltrfeat.features.extract import fit_extractors

        self.extractors = fit_extractors(list(extractors), docs) if docs is not None else list(extractors)
        self.fields = dict(fields or {})
        self.append = append
        self.strict = strict
        self._scorer: Scorer | None = None

    @classmethod
    def for_ranker(
        cls,
        ranker,
        *,
        corpus_stats=None,
        encoders: dict | None = None,
        fields: dict | None = None,
        lexical_params: dict | None = None,
        strict: bool = False,
    ) -> "Features":
        """Exactly the features ``ranker`` (a model file of any kind, or a fitted ranker) was trained on, in its order --
        what :class:`Ranker` needs (built as ``ltrfeat serve`` builds them, with its checks of the ranker's
        recorded settings; ``strict`` as for the class)."""
        from ltrfeat.serving.scorer import Scorer

        scorer = Scorer.load(
            ranker, encoders=encoders, corpus_stats=corpus_stats, lexical_params=lexical_params, strict=strict
        )
        self = cls(scorer.extractors, fields=fields, append=False, strict=strict)
        self._scorer = scorer
        return self

    def feature_names(self) -> list[str]:
        """Names of the columns this transformer adds, in order."""
        if self._scorer is not None:
            return list(self._scorer.feature_names)
        return [n for ex in self.extractors for n in ex.feature_names()]

    def _needed_fields(self) -> list[str]:
        if self._scorer is not None:
            return list(self._scorer.fields)
        fields: list[str] = []
        for ex in self.extractors:
            names = ex._fields() if hasattr(ex, "_fields") else ex.fields
            fields.extend([names] if isinstance(names, str) else names)
        return list(dict.fromkeys(fields))

    def transform(self, res: pd.DataFrame) -> pd.DataFrame:
        from ltrfeat.encoders.leakage import LeakageGuard

        pairs = _pairs(res, self._needed_fields(), self.fields)
        guard = LeakageGuard(self.extractors, strict=self.strict)
        guard.add(pairs["qid"], pairs["query"])  # strict: raises before any feature is computed
        for message in guard.messages():
            warnings.warn(message, LtrfeatWarning, stacklevel=2)
        if not len(pairs):
            return _with_features(res, np.zeros((0, len(self.feature_names())), np.float32), self.append)
        if self._scorer is not None:  # the ranker's columns, in its order, one query at a time
            X = np.zeros((len(pairs), len(self._scorer.feature_names)), dtype=np.float32)
            for _, rows in pairs.groupby("qid", sort=False).indices.items():
                sub = pairs.iloc[rows]
                X[rows] = self._scorer.features(sub["query"].iat[0], sub.to_dict("records"))
        else:
            X = np.column_stack([np.asarray(ex.transform(pairs), dtype=np.float32) for ex in self.extractors])
        return _with_features(res, X, self.append)


def stable_ties(qid, scores) -> np.ndarray:
    """``scores`` with ties within a query broken by row order, as ``ltrfeat evaluate --ties input`` does.

    trec_eval (behind ``pt.Experiment``) compares scores as float32 and orders tied documents by docno,
    descending; so scores are rounded to float32 and each later row of a float32 tie group is lowered by
    one more float32 ulp. Rows whose float64 scores differ but round to the same float32 keep their
    float64 order.
    """
    scores = np.asarray(scores, dtype=np.float64)
    frame = pd.DataFrame({"q": np.asarray(qid), "s": -scores, "row": np.arange(len(scores))})
    order = frame.sort_values(["q", "s", "row"], kind="stable").index.to_numpy()  # ltrfeat's order per query
    out = scores.astype(np.float32)
    ranked = out[order]
    same_q = frame["q"].to_numpy()[order]
    for k in range(1, len(order)):  # walk each query's ranking: keep it strictly decreasing in float32
        if same_q[k] == same_q[k - 1] and ranked[k] >= ranked[k - 1]:
            ranked[k] = np.nextafter(ranked[k - 1], np.float32(-np.inf))
    out[order] = ranked
    return out.astype(np.float64)


def _ranked(res: pd.DataFrame, scores, ties: str) -> pd.DataFrame:
    out = res.copy()
    out["score"] = stable_ties(res["qid"].to_numpy(), scores) if ties == "stable" else np.asarray(scores, np.float64)
    return _require().model.add_ranks(out)


class Ranker(_Base):
    """Scores the ``features`` column with a trained ranker (model file of any kind, or a fitted model) and ranks.

    ``ties="stable"`` (default) breaks exact score ties by row order, as ``ltrfeat evaluate --ties input`` does (see
    :func:`stable_ties`); ``"none"`` keeps the raw scores.
    """

    def __init__(self, ranker, *, ties: str = "stable"):
        _require()
        self.ties = ties
        from ltrfeat.rankers.models import load_ranker

        self.ranker = load_ranker(ranker)

    def transform(self, res: pd.DataFrame) -> pd.DataFrame:
        from ltrfeat.core.dataset import RankingSet

        if "features" not in res.columns:
            raise LtrfeatError(
                "the PyTerrier frame has no features column", fix="put ltrfeat Features(...) before the Ranker"
            )
        width = len(self.ranker.feature_map_.names)
        X = np.vstack(res["features"].to_numpy()).astype(np.float32) if len(res) else np.zeros((0, width), np.float32)
        if X.shape[1] != width:
            raise LtrfeatError(
                f"features has {X.shape[1]} columns, the ranker needs {width}",
                fix="use Features.for_ranker(ranker, ...) to compute exactly the ranker's features",
            )
        data = RankingSet(
            qid=res["qid"].astype(str).to_numpy(dtype=object),
            label=np.zeros(len(X)),
            X=X,
            feature_map=self.ranker.feature_map_,
        )
        return _ranked(res, self.ranker.predict(data) if len(X) else [], self.ties)


class FeatureScore(_Base):
    """Ranks by one column of ``features`` (``index``), e.g. ``Features([bm25]) >> FeatureScore(0)``;
    ``ties`` as for :class:`Ranker`."""

    def __init__(self, index: int = 0, *, ties: str = "stable"):
        _require()
        self.index, self.ties = int(index), ties

    def transform(self, res: pd.DataFrame) -> pd.DataFrame:
        scores = [float(f[self.index]) for f in res["features"]] if len(res) else []
        return _ranked(res, scores, self.ties)


def candidates(letor, *, queries: pd.DataFrame, docs: pd.DataFrame, text: str = "title") -> pd.DataFrame:
    """The judged candidates of a LETOR file as a PyTerrier result frame: ``qid, query, docno, text`` plus every
    document field column (``text`` = the ``text`` field), in file order, with the LETOR ``label``."""
    from ltrfeat.core.letor import read_letor

    data = letor if not isinstance(letor, (str, bytes)) and hasattr(letor, "qid") else read_letor(letor)
    if data.docid is None:
        raise LtrfeatError("the LETOR rows carry no docid comments", fix="write '#docid = X' after each row")
    qtext = dict(zip(queries["qid"].astype(str), queries["query"]))
    frame = pd.DataFrame(
        {
            "qid": data.qid.astype(str),
            "query": [qtext.get(q) for q in data.qid.astype(str)],
            "docno": data.docid.astype(str),
            "label": data.label,
        }
    )
    if frame["query"].isna().any():
        raise LtrfeatError(f"{int(frame['query'].isna().sum())} rows have no query text", fix="check the queries table")
    fields = docs.set_index(docs["docid"].astype(str)).drop(columns=["docid"])
    frame = frame.join(fields, on="docno")
    frame["text"] = frame[text].fillna("")
    return frame


def qrels(frame: pd.DataFrame) -> pd.DataFrame:
    """PyTerrier qrels (``qid, docno, label`` as int) from :func:`candidates`' frame."""
    return pd.DataFrame({"qid": frame["qid"], "docno": frame["docno"], "label": frame["label"].astype(int)})
