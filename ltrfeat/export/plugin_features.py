"""Every feature the search engine can compute, as Elasticsearch / OpenSearch LTR feature templates.

:func:`plugin_featureset` gives each feature of a ranker a template for the LTR plugins' featureset
(``_ltr/_featureset`` on both: Elasticsearch with the o19s plugin and OpenSearch, whose plugin keeps
the feature store under ``/_ltr`` and only its stats under ``/_plugins/_ltr``), :func:`index_body` the index settings and mappings those templates rely on (an analyzer
equal to ltrfeat's, BM25 with the extraction's k1/b, token-count, term and bigram sub-fields, vector
fields), and :func:`query_params` the template parameters of one query (``keywords``, query vectors,
query-level values) -- what ``ltrfeat serve``'s ``/embed`` answers and what an ``sltr`` query is sent.

What the engine computes, per feature (``f`` a text field; see :data:`REPRODUCED` for the caveats):

==========================  ==========================================================================
``bm25_f``                  ``match`` on ``f`` (similarity BM25 with the extraction's k1, b)
``tf_sum_f``                ``match`` on ``f.tf`` (a scripted similarity scoring ``boost * freq``: Lucene
                            merges a repeated query term into one clause whose boost counts the repeats)
``tf_mean_f``               ``tf_sum_f``'s query in a ``script_score`` dividing by the query's token count
                            (a parameter)
``tf_max_f``                the plugin's ``match_explorer`` ``max_raw_tf``
``tf_min_f``                ``match_explorer`` ``min_raw_tf`` in a ``bool`` whose filter needs every query
                            term in ``f`` (``operator: and``); the plugin's statistics cover only the terms
                            a document contains, so without the filter a missing term would not count as 0
``field_len_f``             ``function_score`` ``field_value_factor`` on the ``f.length`` token count
``coverage_f``              ``script_score``: ``match`` on ``f.terms`` (a scripted similarity scoring 1 per
                            matching distinct query term) divided by the query's distinct terms (a parameter)
``phrase_match_f``          ``constant_score`` over ``match_phrase`` on ``f``
``bigram_match_f``          ``match`` on ``f.bigrams`` (word shingles, boolean similarity)
``query_len``, ``idf_*_f``  query-level: ``constant_score`` whose boost is a parameter computed by
                            ltrfeat from its corpus statistics (``/embed``)
``<enc>_f_cos``             ``script_score`` cosine of the query vector (a parameter) with the
                            ``<enc>_f_vector`` field (``dense_vector`` / ``knn_vector``), plus 1 (the
                            engines refuse negative scores); a ``standard`` feature normalizer with
                            mean 1 gives the model the cosine back; a document without a vector
                            scores as cosine 0 (:data:`NO_VECTOR`)
``<enc>_f_dot``             Elasticsearch only: ``dotProduct`` plus the vector width, normalised back
==========================  ==========================================================================

Not computed by the engine (:data:`NOT_REPRODUCED`): ``tfidf_sum``, ``norm_tf_sum``, the three
language-model scores, ``trigram_cos``, DeepMatch ``_score`` and any feature ltrfeat does not name.
They get no template: upload fails until a template is given (``--templates``), or, with
``fill_zero``, they get ``match_none`` and the model sees 0 for them in the engine, although it was
trained on the real values -- retrain without them for scores that match.

:class:`EngineSimulator` re-implements how the engine scores these templates (Lucene BM25 with its
one-byte length norms, the plugin's term statistics, boolean similarity, token counts, painless
cosine in float32), so the exported JSON can be checked against ltrfeat's own features without a
cluster.
"""

from __future__ import annotations

import json
import re

import numpy as np

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.analysis import Analyzer
from ltrfeat.features.lexical import BM25_B, BM25_K1, FAMILIES, LEXICAL_DEFAULTS, QUERY_ONLY, lucene_length
from ltrfeat.features.pins import lexical_settings
from ltrfeat.rankers.registry import LTR_ENGINES

NO_VECTOR = "a document without a vector in the field scores as similarity 0 (the script's params.missing)"
KEYWORDS = "keywords"
DISTINCT_TERMS = "distinct_terms"
QUERY_TERMS = "query_terms"
# scripted similarities of the tf and terms sub-fields; Lucene's BooleanQuery rewrite merges a repeated SHOULD
# clause into one whose boost is the number of repeats, which the scripts see as query.boost
SIMILARITY_SCRIPTS = {
    "ltrfeat_tf": "return query.boost * doc.freq;",
    "ltrfeat_present": "return 1.0;",
}
_ENCODER = re.compile(r"^(?P<enc>[a-z]+(?:-[A-Za-z0-9]+)?)_(?P<field>.+)_(?P<kind>cos|dot|score)$")
# (family, stem) longest stem first, so "tf_sum" is not read as "tf" + "sum_title"
_STEMS = sorted(((fam, stem) for fam, (_, stems) in FAMILIES.items() for stem in stems), key=lambda s: -len(s[1]))

REPRODUCED = {
    "bm25": "match (BM25 k1/b of the extraction); Lucene stores field lengths in one byte (exact below 40 "
    "tokens, 1/8 steps above) and counts N and avgdl over documents that have the field",
    "tf": "sum and mean: boost x freq similarity sub-field (repeated query terms count as often as they occur); "
    "max: match_explorer; min: match_explorer filtered to documents holding every query term",
    "idf": "query-level parameter computed by ltrfeat (/embed)",
    "query_len": "query-level parameter computed by ltrfeat (/embed)",
    "field_len": "token_count sub-field",
    "coverage": "1-per-distinct-term similarity sub-field / distinct query terms",
    "phrase_match": "match_phrase (equal without stopword removal: the engine keeps stopword positions)",
    "bigram_match": "boolean-similarity shingle sub-field (equal without stopword removal)",
    "cos": "script_score cosine over the vector field + 1, normalised back by a feature normalizer",
    "dot": "script_score dotProduct + vector width, normalised back (Elasticsearch only)",
}
NOT_REPRODUCED = {
    "tfidf": "sum of tf x idf per query term: no per-term product in the engine's query language",
    "norm_tf": "sum of tf / field length: no per-term statistics in a script the plugins both support",
    "lm_dirichlet": "Lucene's LM similarities clip and smooth differently from ltrfeat's query likelihood",
    "lm_jm": "Lucene's LM similarities clip and smooth differently from ltrfeat's query likelihood",
    "lm_absdisc": "absolute discounting has no Lucene similarity",
    "trigram_cos": "letter-trigram TF-IDF cosine has no engine query",
    "score": "DeepMatch scores (query, document) pairs with its own network: no engine equivalent",
    "dot": "OpenSearch's painless k-NN functions have no dot product: use a cosine encoder",
    None: "not an ltrfeat feature name: give a template with --templates",
}


def parse_feature(name: str, encoders=()) -> dict:
    """``{"kind": "lexical", "family", "field"}``, ``{"kind": "neural", "encoder", "field", "score"}`` or
    ``{"kind": "unknown"}`` for a feature name; ``encoders`` (names) settle names an encoder label could split."""
    for enc in sorted(encoders, key=len, reverse=True):
        for kind in ("cos", "dot", "score"):
            if name.startswith(enc + "_") and name.endswith("_" + kind) and len(name) > len(enc) + len(kind) + 2:
                return {"kind": "neural", "encoder": enc, "field": name[len(enc) + 1 : -len(kind) - 1], "score": kind}
    for family, stem in _STEMS:
        if family in QUERY_ONLY:
            if name == stem:
                return {"kind": "lexical", "family": family, "field": None}
        elif name.startswith(stem + "_") and len(name) > len(stem) + 1:
            return {"kind": "lexical", "family": family, "field": name[len(stem) + 1 :]}
    match = _ENCODER.match(name)
    if match:
        return {"kind": "neural", "encoder": match["enc"], "field": match["field"], "score": match["kind"]}
    return {"kind": "unknown"}


def vector_field(encoder: str, field: str) -> str:
    """The index field holding ``encoder``'s document vectors of ``field``."""
    return f"{encoder}_{field}_vector"


def vector_param(encoder: str) -> str:
    """The template parameter holding ``encoder``'s query vector."""
    return f"{encoder}_query_vector"


def _entry(name, params, template, language="mustache"):
    return {"name": name, "params": list(params), "template_language": language, "template": template}


def _vector_template(name, info, target, dims):
    enc, field, kind = info["encoder"], info["field"], info["score"]
    vfield, param = vector_field(enc, field), vector_param(enc)
    if kind == "dot" and dims is None:
        return None, None, "the vector width of a dot-scored encoder is needed: give --encoder NAME=PATH"
    offset = 1.0 if kind == "cos" else float(dims)
    # the vector functions throw on a document without a vector: such documents score as similarity 0
    if target == "es-ltr":
        fn = "cosineSimilarity" if kind == "cos" else "dotProduct"
        script = {
            "source": f"doc['{vfield}'].size() == 0 ? params.missing : "
            f"{fn}(params.query_vector, '{vfield}') + params.offset",
            "params": {"offset": offset, "missing": offset, "query_vector": "@VECTOR@"},
        }
    else:
        script = {
            "source": "doc[params.field].size() == 0 ? params.missing : "
            "params.offset + cosineSimilarity(params.query_value, doc[params.field])",
            "params": {"field": vfield, "offset": offset, "missing": offset, "query_value": "@VECTOR@"},
        }
    body = json.dumps({"script_score": {"query": {"match_all": {}}, "script": script}})
    template = body.replace('"@VECTOR@"', "{{#toJson}}%s{{/toJson}}" % param)
    return _entry(name, [param], template), {"standard": {"mean": offset, "standard_deviation": 1.0}}, None


def _per_query_term(name, field, terms: str) -> dict:
    """The feature's match score on ``field`` divided by the query's ``terms`` count (a template parameter)."""
    body = json.dumps(
        {
            "script_score": {
                "query": {"match": {field: "{{%s}}" % KEYWORDS}},
                "script": {"source": "_score / params.n", "params": {"n": "@N@"}},
            }
        }
    )
    return _entry(name, [KEYWORDS, terms], body.replace('"@N@"', "{{%s}}" % terms))


def _lexical_template(name, family, field):
    kw = "{{%s}}" % KEYWORDS
    if family in ("query_len", "idf"):  # query-level: the value itself is the parameter
        return _entry(name, [name], '{"constant_score": {"filter": {"match_all": {}}, "boost": {{%s}}}}' % name)
    if family == "bm25":
        return _entry(name, [KEYWORDS], {"match": {field: kw}})
    if family == "tf":
        stat = name[: -len(field) - 1].replace("tf_", "")
        if stat == "sum":
            return _entry(name, [KEYWORDS], {"match": {f"{field}.tf": kw}})
        if stat == "mean":
            return _per_query_term(name, f"{field}.tf", QUERY_TERMS)
        explorer = {"match_explorer": {"type": f"{stat}_raw_tf", "query": {"match": {field: kw}}}}
        if stat == "max":
            return _entry(name, [KEYWORDS], explorer)
        every_term = {"match": {field: {"query": kw, "operator": "and"}}}
        return _entry(name, [KEYWORDS], {"bool": {"must": [explorer], "filter": [every_term]}})
    if family == "field_len":
        return _entry(
            name,
            [KEYWORDS],
            {
                "function_score": {
                    "query": {"match_all": {}},
                    "field_value_factor": {"field": f"{field}.length", "missing": 0},
                    "boost_mode": "replace",
                }
            },
        )
    if family == "coverage":
        return _per_query_term(name, f"{field}.terms", DISTINCT_TERMS)
    if family == "phrase_match":
        return _entry(name, [KEYWORDS], {"constant_score": {"filter": {"match_phrase": {field: kw}}, "boost": 1.0}})
    if family == "bigram_match":
        return _entry(name, [KEYWORDS], {"match": {f"{field}.bigrams": kw}})
    return None


def _neural_reason(info: dict, target: str) -> str | None:
    """Why ``target`` cannot compute an encoder feature (``parse_feature``'s neural record), or None."""
    if info["score"] == "cos" or (info["score"] == "dot" and target == "es-ltr"):
        return None
    return NOT_REPRODUCED[info["score"]]


def uncomputable(names, *, target: str, encoders=()) -> dict[str, str]:
    """``{name: why}`` for each feature of ``names`` the LTR engine ``target`` cannot compute with a generated
    template (export-ranker refuses a model using one). A name ltrfeat does not know (``f12``) is not listed:
    only a template given at export (``--templates``) decides whether the engine computes it."""
    out = {}
    for name in names:
        info = parse_feature(name, encoders)
        if info["kind"] == "lexical" and _lexical_template(name, info["family"], info["field"]) is None:
            out[name] = NOT_REPRODUCED[info["family"]]
        elif info["kind"] == "neural" and _neural_reason(info, target) is not None:
            out[name] = _neural_reason(info, target)
    return out


def engine_features(feature_map, names, *, target: str, what: str) -> tuple[list[str], str | None]:
    """The features of ``names`` (columns of ``feature_map``) that ``target`` computes (:func:`uncomputable`), and
    a one-line notice naming those left out (None when none is); an error when none is left. ``what``: the
    selection in the user's words, e.g. ``"--features 'lexical'"``."""
    encoders = [f.source.partition(":")[2] for f in feature_map if f.source.startswith("encoder:")]
    dropped = uncomputable(names, target=target, encoders=encoders)
    kept = [n for n in names if n not in dropped]
    if not kept:
        raise LtrfeatError(
            f"{target} cannot compute any feature of {what}: {_reasons(dropped)}",
            fix=f"select features {target} computes (BM25, tf, idf, field length, coverage, phrase and bigram "
            "matches, encoder cosines), or leave out --deployable",
        )
    if not dropped:
        return kept, None
    return (
        kept,
        f"--deployable {target}: left out {len(dropped)} of the {len(names)} features of {what}: {_reasons(dropped)}",
    )


def lexical_scoring(feature_map, *, dims: dict, corpus, given: dict, path=None) -> tuple[dict, dict, str | None]:
    """The model's lexical columns (``{name: family}``; ``dims``: encoder widths, to tell their columns apart), the
    settings the engine's templates recompute them with (:func:`ltrfeat.features.pins.lexical_settings`: the
    record, else the corpus statistics' ``corpus``, else the defaults; ``given`` must agree) and a note when some
    had to be assumed (else None)."""
    columns = {n: i["family"] for n in feature_map.names if (i := parse_feature(n, dims))["kind"] == "lexical"}
    settings, note = lexical_settings(feature_map, columns, corpus=corpus, given=given, path=path)
    return columns, settings, note


def norms_warning(columns: dict, settings: dict, target: str) -> str | None:
    """Why an LTR engine's BM25 will differ from the model's ``bm25`` columns (extracted with exact field lengths,
    not Lucene's one-byte norms), or None."""
    bm25 = [n for n, family in columns.items() if family == "bm25"]
    if not bm25 or target not in LTR_ENGINES or settings.get("bm25_norms", LEXICAL_DEFAULTS["bm25_norms"]) == "lucene":
        return None
    return (
        f"{', '.join(bm25)} were extracted with exact field lengths; the engine's BM25 uses Lucene's one-byte length "
        "norms (equal below 40 tokens), so its values differ on longer fields (see --parity); extract with "
        "--bm25-norms lucene and retrain for features equal to the engine's"
    )


def _reasons(dropped: dict[str, str]) -> str:
    """``a, b (why); c (why)``: the features grouped by the reason the engine cannot compute them."""
    by_reason: dict[str, list[str]] = {}
    for name, why in dropped.items():
        by_reason.setdefault(why, []).append(name)
    return "; ".join(f"{', '.join(names)} ({why})" for why, names in by_reason.items())


def plugin_featureset(
    names, *, target: str = "es-ltr", dims: dict | None = None, templates: dict | None = None, fill_zero: bool = False
) -> dict:
    """Featureset entries for ``names`` with the reasons for every feature the engine cannot compute.

    Parameters
    ----------
    target : ``es-ltr`` or ``opensearch-ltr``.
    dims : ``{encoder name: vector width}`` (needed for dot-scored encoders and the index mapping).
    templates : templates given by the user, used instead of the generated ones.
    fill_zero : give features the engine cannot compute ``match_none`` (the model sees 0) instead of none.

    Returns ``{"features": [...], "normalizers": {...}, "not_reproduced": {name: reason},
    "fields": [...], "vectors": {vector field: (encoder, width)}}``.
    """
    if target not in LTR_ENGINES:
        raise ValueError(f"target must be one of {LTR_ENGINES}, got {target!r}")
    dims, templates = dict(dims or {}), dict(templates or {})
    out = {"features": [], "normalizers": {}, "not_reproduced": {}, "fields": [], "vectors": {}}
    for name in names:
        info = parse_feature(name, dims)
        entry = reason = None
        if name in templates:
            entry = _entry(name, [KEYWORDS], templates[name])
        elif info["kind"] == "lexical":
            entry = _lexical_template(name, info["family"], info["field"])
            reason = None if entry else NOT_REPRODUCED[info["family"]]
            if entry and info["field"] and info["field"] not in out["fields"]:
                out["fields"].append(info["field"])
        elif info["kind"] == "neural" and _neural_reason(info, target) is None:
            entry, normalizer, reason = _vector_template(name, info, target, dims.get(info["encoder"]))
            if entry:
                out["normalizers"][name] = normalizer
                out["vectors"][vector_field(info["encoder"], info["field"])] = (
                    info["encoder"],
                    dims.get(info["encoder"]),
                )
        else:
            reason = NOT_REPRODUCED[info.get("score") if info["kind"] == "neural" else None]
        if entry is None:
            out["not_reproduced"][name] = reason
            entry = _entry(name, [KEYWORDS], {"match_none": {}} if fill_zero else None)
        out["features"].append(entry)
    return out


def index_body(
    fields,
    *,
    target: str = "es-ltr",
    vectors: dict | None = None,
    analyzer: Analyzer | None = None,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> dict:
    """Index settings and mappings the templates rely on (``PUT INDEX`` body).

    The ``ltrfeat`` analyzer equals :class:`~ltrfeat.core.analysis.Analyzer`: runs of letters and digits,
    lowercased, optionally Lucene's English stop set and the Snowball (Porter2) English stemmer.
    ``vectors``: ``{vector field: (encoder, width)}`` as :func:`plugin_featureset` returns them.
    """
    analyzer = analyzer or Analyzer()
    filters, defs = (["lowercase"] if analyzer.lowercase else []), {}
    if analyzer.stopwords is not None:
        defs["ltrfeat_stop"] = {
            "type": "stop",
            "stopwords": "_english_" if analyzer.stopwords == "english" else list(analyzer.stopwords),
        }
        filters.append("ltrfeat_stop")
    if analyzer.stemmer is not None:
        defs["ltrfeat_stem"] = {
            "type": "snowball",
            "language": "English" if analyzer.stemmer == "english" else analyzer.stemmer.capitalize(),
        }
        filters.append("ltrfeat_stem")
    defs["ltrfeat_bigrams"] = {
        "type": "shingle",
        "min_shingle_size": 2,
        "max_shingle_size": 2,
        "output_unigrams": False,
    }
    tokenizer = {"ltrfeat_words": {"type": "pattern", "pattern": r"[^\p{L}\p{N}]+"}}
    settings = {
        "analysis": {
            "tokenizer": tokenizer,
            "filter": defs,
            "analyzer": {
                "ltrfeat": {"type": "custom", "tokenizer": "ltrfeat_words", "filter": filters},
                "ltrfeat_bigrams": {
                    "type": "custom",
                    "tokenizer": "ltrfeat_words",
                    "filter": [*filters, "ltrfeat_bigrams"],
                },
            },
        },
        "similarity": {
            "ltrfeat_bm25": {"type": "BM25", "k1": k1, "b": b},
            **{name: {"type": "scripted", "script": {"source": src}} for name, src in SIMILARITY_SCRIPTS.items()},
        },
    }
    props = {}
    for field in fields:
        props[field] = {
            "type": "text",
            "analyzer": "ltrfeat",
            "similarity": "ltrfeat_bm25",
            "fields": {
                "length": {"type": "token_count", "analyzer": "ltrfeat"},
                "terms": {"type": "text", "analyzer": "ltrfeat", "similarity": "ltrfeat_present"},
                "tf": {"type": "text", "analyzer": "ltrfeat", "similarity": "ltrfeat_tf"},
                "bigrams": {"type": "text", "analyzer": "ltrfeat_bigrams", "similarity": "boolean"},
            },
        }
    for vfield, (_, width) in (vectors or {}).items():
        props[vfield] = (
            {"type": "dense_vector", "dims": width, "index": False}
            if target == "es-ltr"
            else {"type": "knn_vector", "dimension": width}
        )
    if target != "es-ltr" and vectors:
        settings["index"] = {"knn": True}
    return {"settings": settings, "mappings": {"properties": props}}


def query_params(query: str, names, *, lexical=None, vectors: dict | None = None) -> dict:
    """Template parameters of ``query`` for a featureset over ``names``.

    ``lexical``: a fitted :class:`~ltrfeat.features.lexical.LexicalExtractor` (its corpus statistics and
    analyzer) for ``query_len``, ``idf_*``, ``distinct_terms`` and ``query_terms``; ``vectors``: ``{encoder:
    query vector}``.
    """
    import pandas as pd

    from ltrfeat.features.lexical import LexicalExtractor

    params = {KEYWORDS: query}
    for enc, vec in (vectors or {}).items():
        params[vector_param(enc)] = [float(v) for v in np.asarray(vec, dtype=np.float32)]
    wanted = {n: parse_feature(n, vectors or {}) for n in names}
    query_level = [n for n, i in wanted.items() if i["kind"] == "lexical" and i["family"] in ("idf", "query_len")]
    if lexical is not None:
        params.update(term_counts(query, lexical.corpus_.analyzer))
        if query_level:
            fields = [wanted[n]["field"] for n in query_level if wanted[n]["field"]] or [lexical.corpus_.fields[0]]
            ex = LexicalExtractor(
                features=("idf", "query_len"), fields=tuple(dict.fromkeys(fields)), corpus=lexical.corpus_
            ).fit(None)
            row = pd.DataFrame({"query": [query], **{f: [""] for f in dict.fromkeys(fields)}})
            values = dict(zip(ex.feature_names(), ex.transform(row)[0].tolist()))
            params.update({n: values[n] for n in query_level})
    return params


def term_counts(query: str, analyzer: Analyzer) -> dict:
    """``distinct_terms`` and ``query_terms`` (token count) of the analysed query, at least 1 (the divisors
    of the coverage and tf_mean templates; a query without terms matches nothing, so they never divide)."""
    tokens = analyzer.tokens(query)
    return {DISTINCT_TERMS: max(len(set(tokens)), 1), QUERY_TERMS: max(len(tokens), 1)}


# ------------------------------------------------------------------ feature logging (training on engine features)


def sltr_log_query(featureset: str, params: dict, ids, *, log_name: str = "ltrfeat") -> dict:
    """Search body that logs every feature of ``featureset`` for the documents ``ids`` of one query
    (the plugins' ``sltr`` query in a filter, named, plus the ``ltr_log`` search extension)."""
    return {
        "query": {
            "bool": {
                "filter": [
                    {"terms": {"_id": [str(i) for i in ids]}},
                    {"sltr": {"_name": "logged_featureset", "featureset": featureset, "params": params}},
                ]
            }
        },
        "size": len(ids),
        "ext": {
            "ltr_log": {"log_specs": {"name": log_name, "named_query": "logged_featureset", "missing_as_zero": True}}
        },
    }


def parse_ltr_log(response: dict, names, *, log_name: str = "ltrfeat") -> tuple[list[str], np.ndarray]:
    """``(docids, float32 matrix in names order)`` from a logging search response (``fields._ltrlog``)."""
    docids, rows = [], []
    for hit in response["hits"]["hits"]:
        entries = next(e[log_name] for e in hit["fields"]["_ltrlog"] if log_name in e)
        values = {e["name"]: e.get("value", 0.0) for e in entries}
        docids.append(str(hit["_id"]))
        rows.append([values.get(n, 0.0) for n in names])
    return docids, np.asarray(rows, dtype=np.float32).reshape(len(rows), len(names))


# ------------------------------------------------------------------ a local engine for parity tests


def _render(template, params: dict):
    """Mustache as the plugins use it: ``{{name}}`` (JSON-escaped) and ``{{#toJson}}name{{/toJson}}``."""
    text = template if isinstance(template, str) else json.dumps(template)
    text = re.sub(r"\{\{#toJson\}\}(\w+)\{\{/toJson\}\}", lambda m: json.dumps(params[m[1]]), text)
    text = re.sub(
        r"\{\{(\w+)\}\}",
        lambda m: json.dumps(params[m[1]])[1:-1] if isinstance(params[m[1]], str) else json.dumps(params[m[1]]),
        text,
    )
    return json.loads(text)


class EngineSimulator:
    """Scores rendered feature templates the way the engine would, over an in-memory index.

    ``docs``: table with ``docid`` and the text fields; ``index``: :func:`index_body`'s output;
    ``vectors``: ``{vector field: {docid: vector}}``. Supports exactly the query shapes this module writes.
    """

    def __init__(self, docs, index: dict, *, vectors: dict | None = None, analyzer: Analyzer | None = None):
        self.analyzer = analyzer or Analyzer()
        props = index["mappings"]["properties"]
        sim = index["settings"]["similarity"]["ltrfeat_bm25"]
        self.k1, self.b = float(sim["k1"]), float(sim["b"])
        self.fields = [f for f, p in props.items() if p["type"] == "text"]
        self.docids = [str(d) for d in docs["docid"]]
        self.tokens = {
            f: dict(zip(self.docids, self.analyzer.analyze(docs[f].fillna("").astype(str)))) for f in self.fields
        }
        self.stats = {}
        for f, toks in self.tokens.items():
            present = [t for t in toks.values() if t]
            df: dict[str, int] = {}
            for t in present:
                for term in set(t):
                    df[term] = df.get(term, 0) + 1
            self.stats[f] = (len(present), sum(map(len, present)) / max(len(present), 1), df)
        self.vectors = {
            k: {str(d): np.asarray(v, dtype=np.float32) for d, v in m.items()} for k, m in (vectors or {}).items()
        }
        self._terms: dict = {}

    def features(self, featureset: list, params: dict, docids) -> np.ndarray:
        """float32 (len(docids), len(featureset)): each rendered template scored on each document (NaN where
        a feature has no template)."""
        queries = [_render(e["template"], params) for e in featureset]
        return np.array(
            [[np.nan if q is None else self._score(q, str(d)) for q in queries] for d in docids], dtype=np.float32
        )

    def _query_terms(self, text: str, bigrams=False) -> list[str]:
        key = (text, bigrams)
        if key not in self._terms:  # each text is analysed once (documents are scored per query and feature)
            toks = self.analyzer.tokens(text)
            self._terms[key] = [f"{a} {b}" for a, b in zip(toks, toks[1:])] if bigrams else toks
        return self._terms[key]

    def _score(self, q: dict, doc: str) -> float:
        ((kind, body),) = q.items()
        if kind == "match_none":
            return 0.0
        if kind == "match_all":
            return 1.0
        if kind == "match":
            ((field, text),) = body.items()
            operator = "or"
            if isinstance(text, dict):
                text, operator = text["query"], text.get("operator", "or")
            base, _, sub = field.partition(".")
            terms = self._query_terms(text, sub == "bigrams")
            if operator == "and" and not (terms and set(terms) <= set(self.tokens[base][doc])):
                return 0.0
            if sub == "bigrams":  # boolean similarity: the merged clause of a repeated bigram scores its boost
                have = set(self._query_terms(" ".join(self.tokens[base][doc]), True))
                return float(sum(t in have for t in terms))
            if sub == "terms":  # ltrfeat_present: 1 per distinct query term in the document
                return float(len(set(terms) & set(self.tokens[base][doc])))
            if sub == "tf":  # ltrfeat_tf: boost (the term's repeats in the query) x its frequency
                doc_toks = self.tokens[base][doc]
                return float(np.float32(sum(doc_toks.count(t) for t in terms)))
            return self._bm25(field, terms, doc)
        if kind == "match_explorer":  # statistics over the distinct query terms the document holds
            ((field, text),) = body["query"]["match"].items()
            doc_toks = self.tokens[field][doc]
            tfs = [tf for tf in (doc_toks.count(t) for t in dict.fromkeys(self._query_terms(text))) if tf]
            if not tfs:
                return 0.0
            agg = {"sum": np.sum, "min": np.min, "max": np.max, "mean": np.mean}[body["type"].split("_")[0]]
            return float(agg(np.asarray(tfs, dtype=np.float32)))
        if kind == "bool":  # every filter must match; the score is the musts' sum
            if not all(self._score(f, doc) > 0 for f in body.get("filter", [])):
                return 0.0
            return float(np.float32(sum(self._score(m, doc) for m in body.get("must", []))))
        if kind == "constant_score":
            return float(body.get("boost", 1.0)) if self._score(body["filter"], doc) > 0 else 0.0
        if kind == "match_phrase":
            ((field, text),) = body.items()
            seq, sub = self.tokens[field][doc], self._query_terms(text)
            return float(bool(sub) and any(seq[i : i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1)))
        if kind == "function_score":
            fvf = body["field_value_factor"]
            return float(len(self.tokens[fvf["field"].split(".")[0]][doc]))
        if kind == "script_score":
            inner = self._score(body["query"], doc)
            if inner == 0.0 and "match_all" not in body["query"]:  # no match: the sltr feature is 0
                return 0.0
            return self._script(body["script"], inner, doc)
        raise ValueError(f"the simulator does not know {kind!r} queries")

    def _bm25(self, field: str, terms: list[str], doc: str) -> float:
        n_docs, avgdl, df = self.stats[field]
        toks = self.tokens[field][doc]
        dl = lucene_length(len(toks))
        score = 0.0
        for term in terms:  # one SHOULD clause per query token, repeats included
            tf = toks.count(term)
            if tf:
                idf = np.log1p((n_docs - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf / (tf + self.k1 * (1 - self.b + self.b * dl / avgdl))
        return float(np.float32(score))

    def _script(self, script: dict, score: float, doc: str) -> float:
        p, source = script["params"], script["source"]
        if source == "_score / params.n":
            return score / p["n"]
        if "cosineSimilarity" in source or "dotProduct" in source:
            field = p.get("field") or re.search(r"'([^']+)'", source)[1]
            q = np.asarray(p.get("query_vector", p.get("query_value")), dtype=np.float32)
            d = self.vectors.get(field, {}).get(doc)
            if d is None:  # the size() == 0 guard
                return float(np.float32(p["missing"]))
            value = np.float32(q @ d)
            if "cosine" in source:
                value = value / np.float32(np.linalg.norm(q) * np.linalg.norm(d))
            return float(np.float32(np.float32(p["offset"]) + value))
        raise ValueError(f"the simulator does not know the script {source!r}")


def normalize(values: np.ndarray, names, normalizers: dict) -> np.ndarray:
    """Apply the plugins' ``standard`` / ``min_max`` feature normalizers (float32), as the model sees them."""
    out = np.asarray(values, dtype=np.float32).copy()
    for j, name in enumerate(names):
        spec = normalizers.get(name)
        if spec:
            kind, p = next(iter(spec.items()))
            if kind == "standard":
                out[:, j] = (out[:, j] - np.float32(p["mean"])) / np.float32(p["standard_deviation"])
            else:
                out[:, j] = (out[:, j] - np.float32(p["minimum"])) / np.float32(p["maximum"] - p["minimum"])
    return out
