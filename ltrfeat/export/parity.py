"""Engine parity: how far the exported featureset's lexical features, scored as the engine would
(:class:`~ltrfeat.export.plugin_features.EngineSimulator`), are from ltrfeat's own values.

:func:`parity_report` takes judged (query, document) pairs, fits one set of corpus statistics on
their documents (the simulated index holds the same documents, so both sides count the same
N, df and lengths), computes every lexical feature of the model that the featureset has a
template for (each pair with its document id's first text, the one an index holds), and reports
per feature the share of rows whose values differ by more than
``tolerance`` relative (|a - b| / max(|a|, |b|)) and the largest such difference. Neural columns
are left out (their parity is the vector arithmetic, checked by the export tests).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.export import plugin_features as pf
from ltrfeat.features.corpus import CorpusStats
from ltrfeat.features.lexical import BM25_B, BM25_K1, LexicalExtractor

TOLERANCE = 1e-6


def parity_report(
    names, pairs: pd.DataFrame, *, analyzer, settings: dict, target: str = "es-ltr", tolerance: float = TOLERANCE
) -> dict:
    """Per-feature parity of ltrfeat's values and the simulated engine's on ``pairs``.

    Parameters
    ----------
    names : the model's feature names (only lexical ones with an engine template are compared).
    pairs : table with ``query``, ``docid`` and the document fields the features read.
    analyzer : the extraction's :class:`~ltrfeat.core.analysis.Analyzer`.
    settings : the extraction's lexical settings (``k1``, ``b``, ``bm25_norms``, ...).

    Returns ``{"rows", "queries", "documents", "tolerance", "bm25_norms", "features": {name: {"differ",
    "max_relative_difference"}}, "skipped": {lexical name without a template: reason}}``.
    """
    names = [n for n in names if pf.parse_feature(n)["kind"] == "lexical"]
    plan = pf.plugin_featureset(names, target=target)
    entries = {e["name"]: e for e in plan["features"] if e.get("template") is not None}
    compared, skipped = {}, {}
    for name in names:
        info = pf.parse_feature(name)
        if name not in entries:
            skipped[name] = plan["not_reproduced"].get(name, "no engine template")
        else:
            compared[name] = info
    fields = (
        list(dict.fromkeys(i["field"] for i in compared.values() if i["field"]))
        or [c for c in pairs.columns if c not in ("qid", "query", "docid", "label")][:1]
    )
    docs = pairs.drop_duplicates("docid")[["docid", *fields]].reset_index(drop=True)
    corpus = CorpusStats.from_docs(docs, fields=fields, analyzer=analyzer)
    # an id names one document in the engine: every pair is scored with its docid's first text, on both sides
    pairs = pairs[["query", "docid"]].join(docs.set_index("docid"), on="docid").reset_index(drop=True)
    families = tuple(dict.fromkeys(i["family"] for i in compared.values()))
    ours = np.zeros((len(pairs), 0), np.float32)
    lexical = LexicalExtractor(features=families or ("bm25",), fields=tuple(fields), corpus=corpus, **settings).fit(
        None
    )
    if compared:
        values = lexical.transform(pairs)
        position = {n: j for j, n in enumerate(lexical.feature_names())}
        ours = values[:, [position[n] for n in compared]]
    index = pf.index_body(
        fields, target=target, analyzer=analyzer, k1=settings.get("k1", BM25_K1), b=settings.get("b", BM25_B)
    )
    engine = pf.EngineSimulator(docs, index, analyzer=analyzer)
    featureset = [entries[n] for n in compared]
    theirs = np.zeros_like(ours)
    # query-level features (query_len, idf_*) are template parameters: ltrfeat's own values, as /embed gives them
    query_level = [j for j, i in enumerate(compared.values()) if i["family"] in ("idf", "query_len")]
    docids = pairs["docid"].to_numpy(dtype=object)
    for query, rows in pairs.groupby("query", sort=False).indices.items():
        params = {pf.KEYWORDS: query, **pf.term_counts(query, analyzer)}
        params.update({featureset[j]["name"]: float(ours[rows[0], j]) for j in query_level})
        theirs[rows] = engine.features(featureset, params, docids[rows])
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    scale = np.maximum(np.abs(a), np.abs(b))
    rel = np.divide(np.abs(a - b), scale, out=np.zeros_like(scale), where=scale > 0)
    features = {
        name: {
            "differ": float((rel[:, j] > tolerance).mean()) if len(rel) else 0.0,
            "max_relative_difference": float(rel[:, j].max(initial=0.0)),
        }
        for j, name in enumerate(compared)
    }
    return {
        "rows": int(len(pairs)),
        "queries": int(pairs["query"].nunique()),
        "documents": int(len(docs)),
        "tolerance": tolerance,
        "bm25_norms": settings.get("bm25_norms", "exact"),
        "features": features,
        "skipped": skipped,
    }


def format_report(report: dict) -> list[str]:
    """The report as aligned text lines (one per compared feature)."""
    lines = [
        f"parity on {report['rows']} pairs ({report['queries']} queries, {report['documents']} documents; "
        f"ltrfeat bm25 lengths: {report['bm25_norms']}): rows differing beyond {report['tolerance']:g} relative"
    ]
    width = max([len(n) for n in report["features"]] + [7])
    for name, f in report["features"].items():
        lines.append(f"  {name:<{width}}  {100 * f['differ']:6.2f}%  max {f['max_relative_difference']:.3g}")
    return lines
