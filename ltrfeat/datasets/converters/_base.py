"""What every converter shares: the source registry, input lookup, text cleaning, line reading
and qrels labelling of BM25 top-k candidates."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from collections.abc import Callable
from typing import ClassVar

import numpy as np
import pandas as pd

from ltrfeat.core.analysis import Analyzer
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.settings import Settings
from ltrfeat.core.trec import Qrels
from ltrfeat.features.lexical import BM25_B, BM25_K1
from ltrfeat.features.retrieval import BM25Retriever, joined_text


@dataclasses.dataclass
class Converted:
    """A converted data set.

    pairs : ``qid, query, docid, doc, [<fields> when more than one], label`` plus source
        extras (raw labels, retrieval rank and score); rows of a query contiguous.
    queries : ``qid, query`` (+ source extras) of the queries in ``pairs``.
    docs : ``docid, <fields>`` of the documents in ``pairs``.
    fields : document text fields; ``doc`` is their non-empty values joined by a space.
    labels : how labels were made (``rule``) and other label facts.
    retrieval : for qrels sources, the candidate generation figures, else None.
    notes : warnings met on the way (e.g. conflicting texts kept first).
    """

    source: str
    inputs: dict
    pairs: pd.DataFrame
    queries: pd.DataFrame
    docs: pd.DataFrame
    fields: tuple
    labels: dict
    retrieval: dict | None = None
    notes: list = dataclasses.field(default_factory=list)
    duplicates: dict | None = None


@dataclasses.dataclass(frozen=True)
class Options(Settings):
    """Conversion options (:func:`convert`); a source uses those that apply to it."""

    label: ClassVar[str] = "the conversion options"

    k: int = 100
    label_map: str | None = None
    encoding: str | None = None
    analyzer: Analyzer | None = None
    k1: float = BM25_K1
    b: float = BM25_B
    progress: bool = False
    duplicates: str = "error"


@dataclasses.dataclass(frozen=True)
class Source:
    """A registered source: its input roles, the file names looked up in a directory
    (first existing wins), and the loader."""

    name: str
    roles: tuple
    file_names: tuple  # per role, a tuple of candidate names
    summary: str
    label_rule: str
    load: Callable
    label_map: str | None = None  # default --label-map, for sources that take one
    encoding: str = "utf-8"


SOURCES: dict[str, Source] = {}


def register_source(**spec) -> Callable:
    """Decorator registering ``load(paths: dict[role, Path], options: Options) -> Converted``."""

    def wrap(load):
        SOURCES[spec["name"]] = Source(load=load, **spec)
        return load

    return wrap


def _source(name: str) -> Source:
    if name not in SOURCES:
        raise TextTableError(f"unknown data set {name!r}", fix=f"use one of {', '.join(SOURCES)}")
    return SOURCES[name]


def resolve_inputs(name: str, inputs) -> dict[str, Path]:
    """Role → path: ``inputs`` are the source's files in role order, or one directory holding
    them under their usual names."""
    src = _source(name)
    inputs = [Path(p) for p in inputs]
    usage = " ".join(r.upper() for r in src.roles)
    usual = " ".join(names[0] for names in src.file_names)
    if len(inputs) == 1 and inputs[0].is_dir():
        paths = {}
        for role, names in zip(src.roles, src.file_names):
            found = [inputs[0] / n for n in names if (inputs[0] / n).is_file()]
            if not found:
                raise TextTableError(
                    f"no {role} file ({' or '.join(names)}) in the directory",
                    path=inputs[0],
                    fix=f"pass the files explicitly: {usage}",
                )
            paths[role] = found[0]
        return paths
    if len(inputs) != len(src.roles):
        raise TextTableError(
            f"{name} needs {len(src.roles)} input(s), {usage} (e.g. {usual}), or their directory; got {len(inputs)}",
            fix=f"ltrfeat datasets convert {name} {usual} --out DIR",
        )
    for path in inputs:
        if not path.is_file():
            raise TextTableError(
                "input file not found" if not path.exists() else "input is not a file", path=path, fix="check the path"
            )
    return dict(zip(src.roles, inputs))


def convert(name: str, inputs, options: Options | None = None, **option) -> Converted:
    """Read the data set ``name`` from ``inputs`` (files in role order or their directory) with ``options`` (an
    :class:`Options`, default: all defaults), whose single fields keyword ``option`` settings replace:

    k : candidates per query from BM25 top-k (qrels sources: cranfield, trec, msmarco).
    label_map : raw label → grade map (homedepot, crowdflower; see
        :func:`ltrfeat.core.text.map_labels`); None = the source's default.
    encoding : text encoding of the inputs; None = the source's default (homedepot: latin-1).
    analyzer, k1, b : BM25 retrieval settings (qrels sources).
    progress : show a progress bar during retrieval.
    duplicates : a (query, document) pair judged on several rows: ``error``, ``first``, ``mean`` or ``max``
        (see :mod:`ltrfeat.core.duplicates`); the figures go to ``Converted.duplicates``.
    """
    src = _source(name)
    options = Options.build(options, option)
    if int(options.k) < 1:
        raise TextTableError(f"k must be at least 1, got {options.k}", fix="pass --k 100 or another positive number")
    if options.label_map is not None and src.label_map is None:
        raise TextTableError(f"{name} takes no label map: {src.label_rule}", fix="drop --label-map")
    options = dataclasses.replace(
        options,
        k=int(options.k),
        label_map=options.label_map or src.label_map,
        encoding=options.encoding or src.encoding,
    )
    return src.load(resolve_inputs(name, inputs), options)


# --------------------------------------------------------------------------- text and lines


def clean_text(value) -> str | None:
    """Whitespace runs (tabs, line breaks included) become one space; empty → None."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = " ".join(str(value).split())
    return text or None


def label_histogram(labels) -> dict:
    values, counts = np.unique(np.asarray(labels, dtype=np.float64), return_counts=True)
    return {f"{v:g}": int(c) for v, c in zip(values, counts)}


def add_doc_text(docs: pd.DataFrame, fields) -> pd.DataFrame:
    """``docs`` with a ``doc`` column: the non-empty ``fields`` joined by a space (None if all empty)."""
    docs = docs.copy()
    docs["doc"] = [t or None for t in joined_text(docs, fields)]
    return docs


# --------------------------------------------------------------------------- qrels sources


def refuse_first(frame: pd.DataFrame, bad, message: str, *, key: str, path, fix: str) -> None:
    """Raise a :class:`TextTableError` at the first row of ``frame`` (which has a ``line`` column) where ``bad``
    holds, ``{}`` in ``message`` standing for that row's ``key`` value; nothing when no row is bad."""
    bad = np.asarray(bad, dtype=bool)
    if bad.any():
        raise TextTableError(
            message.format(frame[key][bad].iat[0]), path=path, line=int(frame["line"][bad].iat[0]), fix=fix
        )


def converted_by_retrieval(name: str, paths, queries, docs, qrels: Qrels, options: Options, **figures) -> Converted:
    """A qrels source's :class:`Converted`: the BM25 candidates of its title and body (:func:`judged_by_retrieval`),
    labelled by the source's rule; ``figures`` (e.g. ``negative_grades_as_0=3``) go with the rule in ``labels``."""
    pairs, queries, docs, retrieval = judged_by_retrieval(
        queries, docs, qrels, fields=["title", "body"], options=options
    )
    return Converted(
        source=name,
        inputs=dict(paths),
        pairs=pairs,
        queries=queries,
        docs=docs,
        fields=tuple(retrieval["fields"]),
        labels={"rule": SOURCES[name].label_rule, **figures, "histogram": label_histogram(pairs["label"])},
        retrieval=retrieval,
        duplicates=qrels.duplicates,
    )


def judged_by_retrieval(
    queries: pd.DataFrame, docs: pd.DataFrame, qrels: Qrels, *, fields, options: Options
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict]:
    """BM25 top-k candidates of every judged query, labelled from the qrels (unjudged = 0).

    ``queries`` (``qid, query`` + extras) and ``docs`` (``docid`` + ``fields``) are the whole
    source; qrels naming an unknown query or document are an error. Only queries with at
    least one qrel are kept; fields empty in every document are dropped. Returns
    ``(pairs, queries, docs, retrieval figures)``.
    """
    q = qrels.frame
    for key, table, what in (("qid", queries, "query"), ("docid", docs, "document")):
        unknown = ~q[key].isin(table[key]).to_numpy()
        if unknown.any():
            first = int(np.flatnonzero(unknown)[0])
            raise TextTableError(
                f"qrels name {what} {q[key].iat[first]!r}, which is not in the {what} file "
                f"({int(unknown.sum())} such qrels)",
                path=qrels.path,
                line=int(q["line"].iat[first]),
                fix=f"pass the {what} file these qrels belong to",
            )
    fields = [f for f in fields if docs[f].notna().any()]
    if not fields:
        raise TextTableError("every document text is empty", fix="check the corpus file")
    judged = queries[queries["qid"].isin(q["qid"])]
    retriever = BM25Retriever(fields=fields, k1=options.k1, b=options.b, analyzer=options.analyzer).fit(docs)
    hits = retriever.retrieve(judged[["qid", "query"]], k=options.k, progress=options.progress)
    if hits.empty:
        raise TextTableError(
            "no judged query shares a word with any document",
            path=qrels.path,
            fix="check that the queries, documents and qrels belong together",
        )
    grades = q.set_index(["qid", "docid"])["grade"]
    key = pd.MultiIndex.from_arrays([hits["qid"], hits["docid"]])
    label = grades.reindex(key).to_numpy(dtype=np.float64)
    label = np.where(np.isnan(label), 0.0, np.maximum(label, 0.0))
    used = pd.unique(hits["docid"])
    out_docs = docs.set_index("docid").loc[used, fields].reset_index()
    text = add_doc_text(out_docs, fields).set_index("docid").reindex(hits["docid"])
    pairs = pd.DataFrame(
        {
            "qid": hits["qid"].to_numpy(),
            "query": judged.set_index("qid")["query"].reindex(hits["qid"]).to_numpy(),
            "docid": hits["docid"].to_numpy(),
            "doc": text["doc"].to_numpy(),
        }
    )
    if len(fields) > 1:
        for f in fields:
            pairs[f] = text[f].to_numpy()
    pairs["label"] = label
    pairs["bm25_rank"] = hits["rank"].to_numpy()
    pairs["bm25_score"] = hits["score"].to_numpy()
    relevant = q[q["grade"] > 0]
    found = relevant.set_index(["qid", "docid"]).index.isin(key)
    retrieved = set(hits["qid"].tolist())
    figures = {
        "k": options.k,
        "fields": fields,
        "k1": options.k1,
        "b": options.b,
        "analyzer": (options.analyzer or Analyzer()).to_json(),
        "queries_in_file": len(queries),
        "judged_queries": len(judged),
        "queries_without_candidates": int(len(judged) - len(retrieved)),
        "judged_relevant": int(len(relevant)),
        "relevant_in_top_k": int(found.sum()),
        "relevant_outside_top_k": int((~found).sum()),
        "recall_at_k": float(found.mean()) if len(found) else None,
        "queries_with_no_relevant_in_top_k": int(len(set(relevant["qid"]) - set(relevant["qid"][found]))),
    }
    return pairs, judged[judged["qid"].isin(retrieved)].reset_index(drop=True), out_docs, figures
