"""TREC-style collections judged through qrels: BEIR/TREC (``trec``) and MS MARCO (``msmarco``).

Inputs, each optionally ``.gz``:

* documents: BEIR ``corpus.jsonl`` (``{"_id", "title", "text"}`` per line; other keys such
  as ``metadata`` are ignored) or a TSV without header ``docid<TAB>text`` (MS MARCO
  ``collection.tsv``). Fields: ``title`` and ``body`` (``text``); a field empty in every
  document is left out.
* queries: BEIR ``queries.jsonl`` (``{"_id", "text"}``) or TSV ``qid<TAB>text`` (MS MARCO
  ``queries.*.tsv``). Only queries with qrels are converted.
* qrels: BEIR TSV ``query-id corpus-id score`` (header line optional) or classic TREC
  ``qid iteration docno grade``, separated by tabs or spaces.

Grades are integers kept as given; negative grades (e.g. TREC's −2 for spam) count as not
relevant (label 0), as do BM25 candidates without a judgement.
"""

from __future__ import annotations


import pandas as pd

from ltrfeat.core.errors import TextTableError
from ltrfeat.core.fileio import is_gzip_path, read_lines
from ltrfeat.core.text import json_object
from ltrfeat.core.trec import parse_qrels
from ltrfeat.datasets.converters._base import (
    Converted,
    Options,
    clean_text,
    converted_by_retrieval,
    refuse_first,
    register_source,
)

_JSONL = (".jsonl", ".json", ".ndjson")


def _is_jsonl(path) -> bool:
    name = str(path)[:-3] if is_gzip_path(path) else str(path)
    return name.lower().endswith(_JSONL)


def read_id_texts(path, encoding: str, *, keys: dict[str, str], what: str) -> pd.DataFrame:
    """Columns ``id``, the values of ``keys`` (output name → JSON key; the last one is the TSV's
    text column) and ``line``, from JSONL (``_id`` + keys) or a headerless ``id<TAB>text`` TSV."""
    ids, lines, texts = [], [], {name: [] for name in keys}
    jsonl = _is_jsonl(path)
    text_name = list(keys)[-1]
    for lineno, line in read_lines(path, encoding):
        if not line.strip():
            continue
        if jsonl:
            rec = json_object(line, path, lineno)
            if "_id" not in rec or keys[text_name] not in rec:
                raise TextTableError(
                    f"a {what} record needs the keys '_id' and {keys[text_name]!r}",
                    path=path,
                    line=lineno,
                    fix='use the BEIR layout, e.g. {"_id": "d1", "title": "...", "text": "..."}',
                )
            ident = rec["_id"]
            values = {name: rec.get(key) for name, key in keys.items()}
            bad = [k for k, v in values.items() if v is not None and not isinstance(v, str)]
            if bad:
                raise TextTableError(
                    f"{what} field {keys[bad[0]]!r} is not a string",
                    path=path,
                    line=lineno,
                    fix="store texts as JSON strings",
                )
        else:
            parts = line.split("\t")
            if len(parts) != 2:
                raise TextTableError(
                    f"expected 2 tab-separated fields (id, text), got {len(parts)}",
                    path=path,
                    line=lineno,
                    fix=f"write '<id><TAB><text>' lines, or use a .jsonl {what} file",
                )
            ident, values = parts[0], {name: None for name in keys}
            values[text_name] = parts[1]
        if isinstance(ident, bool) or not isinstance(ident, (str, int)) or not str(ident).strip():
            raise TextTableError(
                f"{what} id {ident!r} is empty or not a string",
                path=path,
                line=lineno,
                fix="give every record a non-empty id",
            )
        ident = str(ident).strip()
        if any(ch.isspace() for ch in ident):
            raise TextTableError(
                f"{what} id {ident!r} contains whitespace, which a LETOR file cannot carry",
                path=path,
                line=lineno,
                fix="use ids without spaces",
            )
        ids.append(ident)
        lines.append(lineno)
        for name in keys:
            texts[name].append(clean_text(values[name]))
    if not ids:
        raise TextTableError(f"no {what} records", path=path, fix="check the file")
    frame = pd.DataFrame({"id": ids, **texts, "line": lines})
    message = f"{what} id {{!r}} occurs twice"
    refuse_first(frame, frame["id"].duplicated(), message, key="id", path=path, fix=f"give every {what} a unique id")
    return frame


def _read_docs(path, encoding: str) -> pd.DataFrame:
    """``docid, title, body``."""
    frame = read_id_texts(path, encoding, keys={"title": "title", "body": "text"}, what="document")
    return frame.drop(columns="line").rename(columns={"id": "docid"})


def _read_queries(path, encoding: str) -> pd.DataFrame:
    """``qid, query``; every query needs text."""
    frame = read_id_texts(path, encoding, keys={"query": "text"}, what="query")
    refuse_first(
        frame, frame["query"].isna(), "query {!r} has no text", key="id", path=path, fix="give every query its text"
    )
    return frame.drop(columns="line").rename(columns={"id": "qid"})


def _convert(name: str, paths, options: Options) -> Converted:
    docs = _read_docs(paths["docs"], options.encoding)
    queries = _read_queries(paths["queries"], options.encoding)
    qrels = parse_qrels(paths["qrels"], options.encoding, duplicates=options.duplicates)
    negative = int((qrels.frame["grade"] < 0).sum())
    return converted_by_retrieval(name, paths, queries, docs, qrels, options, negative_grades_as_0=negative)


_RULE = "qrels grades kept as given; negative grades and BM25 candidates without a judgement -> 0"


@register_source(
    name="trec",
    roles=("docs", "queries", "qrels"),
    file_names=(
        ("corpus.jsonl", "corpus.jsonl.gz"),
        ("queries.jsonl", "queries.jsonl.gz"),
        ("qrels/test.tsv", "qrels.tsv", "qrels.txt"),
    ),
    summary="TREC / BEIR collections: corpus.jsonl, queries.jsonl, qrels (BEIR TSV or TREC 'q 0 d rel')",
    label_rule=_RULE,
)
def trec(paths, options: Options) -> Converted:
    return _convert("trec", paths, options)


@register_source(
    name="msmarco",
    roles=("docs", "queries", "qrels"),
    file_names=(
        ("collection.tsv", "collection.tsv.gz"),
        ("queries.dev.small.tsv", "queries.dev.tsv", "queries.tsv"),
        ("qrels.dev.small.tsv", "qrels.dev.tsv", "qrels.tsv"),
    ),
    summary="MS MARCO passage ranking: collection.tsv (pid, passage), queries.*.tsv (qid, query), "
    "qrels.*.tsv (qid 0 pid rel)",
    label_rule=_RULE,
)
def msmarco(paths, options: Options) -> Converted:
    return _convert("msmarco", paths, options)
