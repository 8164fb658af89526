"""The Cranfield collection: ``cran.all.1400``, ``cran.qry`` and ``cranqrel``.

Quirks handled (each has a test fixture): CRLF or LF line endings; SMART-style records
(``.I id`` then ``.T`` title, ``.A`` authors, ``.B`` bibliography, ``.W`` text markers, each
field's text spanning any number of lines, joined with spaces); ``cranqrel`` lines
``query doc code`` number the queries 1..225 by their *position* in ``cran.qry``, not by its
``.I`` ids (which run 001, 002, 004, ...); code 1 is the most relevant and 4 the least, −1
means "no relevance" and is dropped.

Output: qid = the query's position (``"1"``..), with its ``.I`` id kept as ``cran_id`` in
``queries.tsv``; documents have the fields ``title`` (``.T``) and ``body`` (``.W``); grade =
5 − code (1 → 4, ..., 4 → 1); BM25 candidates not in the qrels get 0.
"""

from __future__ import annotations

import re

import pandas as pd

from ltrfeat.core.errors import TextTableError
from ltrfeat.core.fileio import read_lines
from ltrfeat.core.trec import Qrels
from ltrfeat.datasets.converters._base import (
    Converted,
    Options,
    clean_text,
    converted_by_retrieval,
    refuse_first,
    register_source,
)

_MARKER = re.compile(r"^\.([A-Z])(?:\s+(.*?))?\s*$")
_KNOWN = frozenset("ITABW")
_GRADE = {1: 4, 2: 3, 3: 2, 4: 1}


def read_records(path, encoding: str, fields: dict[str, str]) -> list[dict]:
    """Records of a SMART-style file: ``{"id", "line", <name>: text or None}`` for each
    ``.I`` record, keeping the markers in ``fields`` (letter → name) and skipping the
    other known ones (``.A``, ``.B``, ...)."""
    records, current, field = [], None, None
    for lineno, line in read_lines(path, encoding):
        m = _MARKER.match(line)
        if m and m.group(1) not in _KNOWN:
            raise TextTableError(
                f"unknown field marker .{m.group(1)}",
                path=path,
                line=lineno,
                fix="Cranfield files use only .I .T .A .B .W",
            )
        if m and m.group(1) == "I":
            if not m.group(2):
                raise TextTableError(".I without an id", path=path, line=lineno, fix="write '.I <id>'")
            current = {"id": m.group(2), "line": lineno, **{name: [] for name in fields.values()}}
            records.append(current)
            field = None
            continue
        if current is None:
            if line.strip():
                raise TextTableError(
                    "text before the first .I record",
                    path=path,
                    line=lineno,
                    fix="check that this is a Cranfield file (records start with '.I <id>')",
                )
            continue
        if m:
            field = m.group(1)
            if m.group(2) and field in fields:
                current[fields[field]].append(m.group(2))
            continue
        if field is None and line.strip():
            raise TextTableError(
                "text after .I before any field marker",
                path=path,
                line=lineno,
                fix="put the text under a .T, .A, .B or .W marker",
            )
        if field in fields:
            current[fields[field]].append(line)
    if not records:
        raise TextTableError("no .I records", path=path, fix="check that this is a Cranfield file")
    for rec in records:
        for name in fields.values():
            rec[name] = clean_text(" ".join(rec[name]))
    return records


def _docs(path, encoding) -> pd.DataFrame:
    records = read_records(path, encoding, {"T": "title", "W": "body"})
    docs = pd.DataFrame(
        {
            "docid": [r["id"] for r in records],
            "title": [r["title"] for r in records],
            "body": [r["body"] for r in records],
            "line": [r["line"] for r in records],
        }
    )
    refuse_first(
        docs,
        docs["docid"].duplicated(),
        "document .I {} occurs twice",
        key="docid",
        path=path,
        fix="give every document a unique .I id",
    )
    return docs.drop(columns="line")


def _queries(path, encoding) -> pd.DataFrame:
    records = read_records(path, encoding, {"W": "query"})
    for r in records:
        if r["query"] is None:
            raise TextTableError(
                f"query .I {r['id']} has no .W text",
                path=path,
                line=r["line"],
                fix="give every query its text after a .W line",
            )
    return pd.DataFrame(
        {
            "qid": [str(i) for i in range(1, len(records) + 1)],
            "query": [r["query"] for r in records],
            "cran_id": [r["id"] for r in records],
        }
    )


def _qrels(path, encoding, n_queries: int, duplicates: str) -> tuple[Qrels, int]:
    qid, docid, grade, lines, dropped = [], [], [], [], 0
    fix = "cranqrel lines are 'QUERY DOC CODE' with QUERY the 1-based position in cran.qry and CODE in -1, 1..4"
    for lineno, line in read_lines(path, encoding):
        parts = line.split()
        if not parts:
            continue
        try:
            q, d, code = int(parts[0]), parts[1], int(parts[2])
        except (ValueError, IndexError):
            raise TextTableError(
                f"expected 'QUERY DOC CODE', got {line.strip()!r}", path=path, line=lineno, fix=fix
            ) from None
        if len(parts) != 3:
            raise TextTableError(f"expected 3 fields, got {len(parts)}", path=path, line=lineno, fix=fix)
        if not 1 <= q <= n_queries:
            raise TextTableError(
                f"query number {q} is outside 1..{n_queries} (the queries in cran.qry)",
                path=path,
                line=lineno,
                fix="pass the cran.qry these qrels belong to; queries are numbered by position, not by .I",
            )
        if code == -1:
            dropped += 1
            continue
        if code not in _GRADE:
            raise TextTableError(f"relevance code {code} is not -1, 1, 2, 3 or 4", path=path, line=lineno, fix=fix)
        qid.append(str(q))
        docid.append(d)
        grade.append(_GRADE[code])
        lines.append(lineno)
    return Qrels.from_rows(path, qid, docid, grade, lines, duplicates=duplicates), dropped


@register_source(
    name="cranfield",
    roles=("docs", "queries", "qrels"),
    file_names=(("cran.all.1400",), ("cran.qry",), ("cranqrel", "cranqrel.txt", "cran.qrel")),
    summary="Cranfield aeronautics abstracts: cran.all.1400 (1400 docs), cran.qry (225 queries), cranqrel",
    label_rule="cranqrel code 1 (most relevant) .. 4 (least) -> grade 4 .. 1; code -1 dropped; "
    "BM25 candidates without a judgement -> 0",
)
def cranfield(paths, options: Options) -> Converted:
    docs = _docs(paths["docs"], options.encoding)
    queries = _queries(paths["queries"], options.encoding)
    qrels, dropped = _qrels(paths["qrels"], options.encoding, len(queries), options.duplicates)
    return converted_by_retrieval("cranfield", paths, queries, docs, qrels, options, dropped_qrels_code_minus_1=dropped)
