"""Query, document and judged-pair text tables (TSV, CSV, JSONL, Parquet) as pandas DataFrames.

One DataFrame contract, PyTerrier style:

* queries: columns ``qid, query``; ``qid`` a unique string.
* documents: columns ``docid, <field>...``; ``docid`` a unique string.
* judged pairs: ``qid, query, docid, doc[, extra text fields], label``; ``label`` float64.

Ids are always read as strings ("007" stays "007"). Every returned frame's index, named
``line``, holds the 1-based source line of each row (header = line 1 for CSV/TSV; for
Parquet the 1-based row number), so later checks can still name the offending line.

Formats follow the extension (``.tsv .csv .jsonl .parquet``, the text ones optionally
``.gz``) or an explicit ``fmt``. TSV is plain: one row per line, fields split on tabs,
quotes are ordinary characters; so a TSV field cannot hold a tab, newline or carriage
return and :func:`write_table` refuses such text rather than corrupt it. CSV uses standard
quoting (RFC 4180) and holds any text. Text is empty-or-whitespace = missing.

This module holds the readers and :func:`pairs_to_ranking`; raw table reading is in ``_raw_tables`` (bytes to text
in ``_text_decoding``), the column checks in ``_table_checks``, labels in ``_text_labels`` and writing in
``_table_write``. Every public name is imported from here.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from ltrfeat.core._raw_tables import TABLE_FORMATS, _read_raw, json_object, table_format
from ltrfeat.core._table_checks import (
    MISSING_TEXT_POLICIES,
    TextTableWarning,
    _check_unique,
    _first_texts,
    _frame,
    _ids,
    _lines_of,
    _missing_mask,
    _require,
)
from ltrfeat.core._table_write import write_table
from ltrfeat.core._text_decoding import text_codec
from ltrfeat.core._text_labels import _parse_labels, map_labels
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.duplicates import resolve_duplicates
from ltrfeat.core.errors import TextTableError, line_list
from ltrfeat.core.unicode_norm import nfkc

__all__ = [
    "CONFLICTS",
    "MISSING_TEXT_POLICIES",
    "PAIR_COLUMNS",
    "QUERY_NORMALISATION",
    "TABLE_FORMATS",
    "TextTableWarning",
    "derive_id",
    "json_object",
    "map_labels",
    "normalise_query",
    "pairs_to_ranking",
    "parse_column_mapping",
    "read_docs",
    "read_judged_pairs",
    "read_queries",
    "read_table_columns",
    "table_format",
    "text_codec",
    "write_table",
]

PAIR_COLUMNS = ("qid", "query", "docid", "doc", "label")
CONFLICTS = ("error", "first")  # an id naming two texts: refused, or its first text kept
QUERY_NORMALISATION = "nfkc-casefold-space"  # the name of normalise_query's rule, recorded with its results


def normalise_query(text) -> str:
    """The one form query texts are compared in (the same query across folds, tables and training records): NFKC,
    case-folded, runs of whitespace as one space."""
    return " ".join(nfkc(str(text)).casefold().split())


# ---------------------------------------------------------------------------------------------
# Public readers.


def read_queries(
    path,
    *,
    qid_col: str = "qid",
    text_col: str = "query",
    encoding: str = "utf-8",
    fmt: str | None = None,
    missing: str = "error",
) -> pd.DataFrame:
    """Read a query table into columns exactly ``["qid", "query"]`` (``qid`` unique strings).

    Parameters
    ----------
    path : table file (TSV/CSV/JSONL/Parquet, see :func:`table_format`).
    qid_col, text_col : file columns holding the query id and the query text.
    encoding : text encoding of TSV/CSV/JSONL files; a decoding failure names the line
        and byte offset and suggests the likely encoding.
    fmt : format override (``tsv``, ``csv``, ``jsonl``, ``parquet``).
    missing : rows with empty query text: ``"error"`` (default), ``"drop"`` or ``"keep"``
        (as empty text); dropping and keeping emit a :class:`TextTableWarning`.
    """
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    _require(
        table,
        {"qid": qid_col, "query": text_col},
        lambda role: f"pick the {role} column with {'qid_col' if role == 'qid' else 'text_col'}=<column>",
        lambda role: "qid_col" if role == "qid" else "text_col",
    )
    qids = _ids(table, qid_col, "qid", "every query needs an id")
    keep = _missing_mask(table, [text_col], missing=missing)
    df = _frame(table, {"qid": qids, "query": table.text(text_col)}, keep)
    _check_unique(df, ["qid"], "qid", table.path, "give each query one row with a unique id")
    return df


def read_docs(
    path,
    *,
    docid_col: str = "docid",
    fields=None,
    encoding: str = "utf-8",
    fmt: str | None = None,
    missing: str = "error",
) -> pd.DataFrame:
    """Read a document table into columns ``["docid", <fields...>]`` (``docid`` unique strings).

    Parameters
    ----------
    path, encoding, fmt : as in :func:`read_queries`.
    docid_col : file column holding the document id.
    fields : text fields to keep: ``None`` (every other column), a list of column names, a
        comma-separated string, or a mapping ``{output_name: file_column}`` to rename.
    missing : rows with an empty text in any kept field: ``"error"`` (default), ``"drop"``
        or ``"keep"`` (as empty text), the last two with a :class:`TextTableWarning`.
    """
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    _require(
        table, {"docid": docid_col}, lambda role: "pick the id column with docid_col=<column>", lambda r: "docid_col"
    )
    if fields is None:
        mapping = {c: c for c in table.columns if c != docid_col}
    elif isinstance(fields, dict):
        mapping = dict(fields)
    else:
        names = [f.strip() for f in fields.split(",")] if isinstance(fields, str) else list(fields)
        mapping = {f: f for f in names if f}
    if not mapping:
        raise TextTableError(
            "no text fields to read",
            path=table.path,
            line=table.header_line,
            fix="add at least one text column besides the docid",
        )
    if "docid" in mapping:
        raise TextTableError("a text field cannot be named 'docid'", path=table.path, fix="rename that field")
    _require(
        table, mapping, lambda role: f"list existing columns in fields (field {role!r} is missing)", lambda r: "fields"
    )
    docids = _ids(table, docid_col, "docid", "every document needs an id")
    keep = _missing_mask(table, list(mapping.values()), missing=missing)
    df = _frame(table, {"docid": docids, **{out: table.text(col) for out, col in mapping.items()}}, keep)
    _check_unique(df, ["docid"], "docid", table.path, "give each document one row with a unique id")
    return df


def parse_column_mapping(spec: str) -> dict[str, str]:
    """Parse ``"query=search_term,doc=product_title"`` into ``{"query": "search_term", ...}``.

    Keys are canonical names (``qid query docid doc label``) or extra text-field names;
    values are file columns. Whitespace around names is ignored.
    """
    mapping: dict[str, str] = {}
    if spec.strip() and not spec.replace(",", "").strip():
        raise TextTableError(
            f"column mapping {spec!r} names no column",
            fix="write NAME=COLUMN pairs separated by commas, e.g. query=search_term,doc=title",
        )
    for item in spec.split(","):
        if not item.strip():
            continue
        key, sep, column = item.partition("=")
        key, column = key.strip(), column.strip()
        if not sep or not key or not column:
            raise TextTableError(
                f"bad column mapping item {item.strip()!r}",
                fix="write NAME=COLUMN pairs separated by commas, e.g. query=search_term,doc=title",
            )
        if key in mapping:
            raise TextTableError(f"column mapping names {key!r} twice", fix="map each name once")
        mapping[key] = column
    return mapping


def derive_id(prefix: str, *texts: str) -> str:
    """Deterministic id from text: ``prefix + sha1(texts joined by U+001F)[:12]``.

    The same text gives the same id in every file, so train and test tables agree.
    """
    return prefix + hashlib.sha1("\x1f".join(texts).encode("utf-8")).hexdigest()[:12]


def read_judged_pairs(
    path,
    *,
    columns=None,
    encoding: str = "utf-8",
    fmt: str | None = None,
    label_map: str = "none",
    missing: str = "error",
    duplicates: str = "error",
) -> pd.DataFrame:
    """Read judged (query, document, label) pairs.

    Returns columns ``qid, query, docid, doc, <extra text fields...>, label`` (``label``
    float64 after ``label_map``), index ``line``.

    Parameters
    ----------
    path, encoding, fmt : as in :func:`read_queries`.
    columns : mapping canonical name -> file column (or its string form for
        :func:`parse_column_mapping`), e.g. ``{"query": "search_term", "doc":
        "product_title", "docid": "product_uid", "label": "relevance"}``. Unmapped
        canonical names use the column of the same name. Extra keys name additional
        document text fields (``body=product_description``), kept under that name.
        Other file columns are ignored.
    label_map : how raw labels become integer grades, see :func:`map_labels`.
    missing : rows with empty query or document text: ``"error"`` (default), ``"drop"``
        or ``"keep"``, the last two with a :class:`TextTableWarning`.

    When ``qid`` (``docid``) is neither mapped nor a column, it is derived from the query
    (document) text with :func:`derive_id` (``q``/``d`` prefixes; a document's id hashes
    all its text fields). A (qid, docid) pair judged on several rows is resolved by
    ``duplicates`` (see :mod:`ltrfeat.core.duplicates`; default: an error), and the figures
    are kept in ``attrs["duplicates"]``; an id that names different texts on different rows is
    reported by :func:`pairs_to_ranking`.
    """
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    mapping = parse_column_mapping(columns) if isinstance(columns, str) else dict(columns or {})
    for name in PAIR_COLUMNS:
        if name not in mapping and (name not in ("qid", "docid") or name in table.cells):
            mapping[name] = name
    _require(
        table,
        mapping,
        lambda role: f"map it with columns={{'{role}': <column>}} (string form '{role}=<column>')",
        lambda role: "columns",
    )
    doc_fields = ["doc", *[k for k in mapping if k not in PAIR_COLUMNS]]
    keep = _missing_mask(table, [mapping["query"], *[mapping[f] for f in doc_fields]], missing=missing)
    labels = _parse_labels(table, mapping["label"], keep)
    id_fix = "fill in every id, or leave the id column unmapped to derive ids from the text"
    out: dict[str, pd.Series] = {}
    queries = table.text(mapping["query"])
    docs = [table.text(mapping[f]) for f in doc_fields]
    out["qid"] = _ids(table, mapping["qid"], "qid", id_fix) if "qid" in mapping else _derived_ids("q", [queries])
    out["query"] = queries
    out["docid"] = _ids(table, mapping["docid"], "docid", id_fix) if "docid" in mapping else _derived_ids("d", docs)
    out.update(zip(doc_fields, docs))
    df = _frame(table, out, keep)
    df["label"] = map_labels(labels, label_map, path=table.path, lines=table.lines[keep])
    df, figures = resolve_duplicates(df, policy=duplicates, path=table.path)
    df.attrs["duplicates"] = figures
    return df


def _derived_ids(prefix: str, texts: list[pd.Series]) -> pd.Series:
    """:func:`derive_id` of every row's texts (missing text as ""), hashing each distinct text once."""
    joined = texts[0].fillna("")
    if len(texts) > 1:
        joined = joined.str.cat([t.fillna("") for t in texts[1:]], sep="\x1f")
    codes, uniques = pd.factorize(joined)
    sha1 = hashlib.sha1  # derive_id inlined: this loop runs once per distinct text
    hashed = np.array([prefix + sha1(u.encode("utf-8")).hexdigest()[:12] for u in uniques.tolist()], dtype=object)
    return pd.Series(hashed[codes], dtype="str")


# ---------------------------------------------------------------------------------------------
# Judged pairs -> ranking set + text tables.


def pairs_to_ranking(
    pairs: pd.DataFrame,
    *,
    fields=("doc",),
    conflicts: str = "error",
) -> tuple[RankingSet, pd.DataFrame, pd.DataFrame]:
    """Split judged pairs into a feature-less ranking set and its query and document tables.

    Parameters
    ----------
    pairs : judged pairs as from :func:`read_judged_pairs`.
    fields : document text fields to put in the document table.
    conflicts : an id whose text differs between rows (real data has them, e.g. a product
        retitled): ``"error"`` (default) or ``"first"`` (keep its first text, with a
        :class:`TextTableWarning`).

    Returns ``(ranking, queries, docs)``: ``ranking`` has ``X`` of shape ``(n, 0)``, the
    pairs' qid/docid/label and comments ``docid = <docid>``, rows grouped by query
    (queries in order of first appearance, rows of a query in input order); ``queries``
    has columns ``qid, query`` and ``docs`` ``docid, <fields...>``, one row per id in
    order of first appearance (index: the line of that first appearance). Ids must not
    contain whitespace, which a LETOR file could not carry.
    """
    if conflicts not in CONFLICTS:
        raise TextTableError(f"unknown conflicts policy {conflicts!r}", fix=f"use one of {', '.join(CONFLICTS)}")
    fields = list(fields)
    path = pairs.attrs.get("source")
    needed = ["qid", "query", "docid", "label", *fields]
    absent = [c for c in needed if c not in pairs.columns]
    if absent:
        raise TextTableError(
            f"judged pairs lack columns {absent} (found {list(pairs.columns)})",
            path=path,
            fix="read them with read_judged_pairs or add the columns",
        )
    if len(pairs) == 0:
        raise TextTableError("no judged pairs", path=path, fix="check the input table")
    for key, pattern, what in (("qid", r"[\s#]", "whitespace or '#'"), ("docid", r"\s", "whitespace")):
        spaced = pairs[key].astype(str).str.contains(pattern, regex=True).to_numpy()
        if spaced.any():
            bad = _lines_of(pairs)[spaced]
            raise TextTableError(
                f"{key} {pairs[key].to_numpy()[spaced][0]!r} contains {what}, which a LETOR "
                f"file cannot carry (lines {line_list(bad)})",
                path=path,
                line=int(bad[0]),
                fix=f"use ids without {what}, or leave the id column unmapped to derive ids",
            )
    resolve_duplicates(pairs, policy="error", path=path)
    codes, _ = pd.factorize(pairs["qid"].to_numpy(dtype=object))
    grouped = pairs.iloc[np.argsort(codes, kind="stable")]
    queries = _first_texts(grouped, "qid", ["query"], "query", conflicts=conflicts, path=path)
    docs = _first_texts(grouped, "docid", fields, "document", conflicts=conflicts, path=path)
    docid = grouped["docid"].to_numpy(dtype=object)
    ranking = RankingSet(
        qid=grouped["qid"].to_numpy(dtype=object),
        label=grouped["label"].to_numpy(dtype=np.float64),
        X=np.zeros((len(grouped), 0), dtype=np.float32),
        feature_map=FeatureMap(()),
        docid=docid,
        comment=np.array([f"docid = {d}" for d in docid], dtype=object),
    )
    return ranking, queries, docs


def read_table_columns(path, columns, *, encoding: str = "utf-8", fmt: str | None = None) -> pd.DataFrame:
    """The named ``columns`` of a table file (any format :func:`table_format` knows) as text, indexed by source line
    (``line``); a one-line error naming the file when a column is missing or the table is empty."""
    table = _read_raw(path, encoding=encoding, fmt=fmt)
    _require(table, {c: c for c in columns}, lambda role: f"add a {role!r} column")
    return _frame(table, {c: table.text(c) for c in columns}, np.ones(len(table), dtype=bool))
