"""Click logs, with or without the positions results were shown at, read into one :class:`ClickLog`.

:func:`read_click_log` reads an impression-level log (one row per shown result), an aggregated log with positions,
an aggregated log without them (the synthetic world's ``clicks.tsv``) in any table format (TSV, CSV, JSONL,
Parquet; text ones optionally gzipped), OpenSearch User Behavior Insights records (:mod:`ltrfeat.clicks.ubi`), or
the event log ``ltrfeat serve --event-log`` writes (its directory or a segment; :mod:`ltrfeat.clicks.served`: click
events folded onto the impressions they clicked, never counted as impressions themselves).
It streams: the file is read a chunk at a time and summed as it goes (:mod:`ltrfeat.clicks.aggregate`), so memory
holds the distinct (query, document, position) keys, never the rows; with a Dask client the chunks are checked and
summed on the cluster. Every problem is a one-line :class:`~ltrfeat.core.errors.TextTableError` naming the file,
the lines and the fix.
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.clicks.aggregate import POSITIONED_COLUMNS, REQUIRED, Lookup, Totals, log_kind, partial, shown_rows
from ltrfeat.clicks.chunks import CHUNK_ROWS, iter_table_chunks
from ltrfeat.clicks.served import impressions, read_event_log
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.text import read_docs, read_queries, table_format, write_table

NO_POSITIONS_NOTE = "the click log has no positions, so position bias cannot be corrected"


@dataclasses.dataclass(frozen=True)
class ClickLog:
    """A click log summed per (query, document, position) and per (query, document).

    positioned : columns ``query, docid, position`` (int64, 1-based), ``impressions``, ``clicks`` (int64); one row
        per (query, docid, position), sorted by those three; None when the log has no positions.
    totals : columns ``query, docid, impressions, clicks`` (+ ``doc`` when the log or a docs table gives the text):
        one row per pair, in the order pairs first appear in the log.
    source : the path (or a description), for messages and pins.
    kind : ``impressions``, ``positioned``, ``pairs`` (aggregated, no positions) or ``ubi``.
    sessions : distinct session ids (None when the log has no session column).
    """

    positioned: pd.DataFrame | None
    totals: pd.DataFrame
    source: str
    kind: str = "pairs"
    sessions: int | None = None

    @property
    def has_positions(self) -> bool:
        """Whether the log says where each result was shown (so position bias can be estimated and corrected)."""
        return self.positioned is not None


def read_click_log(
    path,
    *,
    queries=None,
    docs=None,
    fmt: str | None = None,
    encoding: str = "utf-8",
    doc_field: str | None = None,
    chunk_rows: int = CHUNK_ROWS,
    client=None,
) -> ClickLog:
    """Read, check and sum the click log at ``path`` (a file, or the directory ``serve --event-log`` wrote).

    Parameters
    ----------
    queries : query table (path or a frame with ``qid, query``) for logs that name queries by ``qid``; for UBI
        event records, the UBI query records (path).
    docs : documents table (path or a frame with ``docid`` and text columns): rows naming another document are an
        error, and ``totals`` gets each document's ``doc_field`` text as ``doc``.
    fmt : ``tsv``, ``csv``, ``jsonl``, ``parquet`` or ``ubi`` (default: from the extension; JSON lines whose first
        record has an ``action_name`` are UBI events).
    doc_field : the docs column to use as ``doc`` (default ``title`` when there is one, else the first text column).
    chunk_rows : rows read and checked at a time.
    client : a ``distributed.Client``: the chunks are checked and summed on its workers (same result).
    """
    chunks, row_kind, ubi, lookup, doc_text = _sourced(path, queries, docs, fmt, encoding, doc_field, chunk_rows)
    first = next(chunks)
    has_sessions = "session" in first.columns
    needed = [c for c in first.columns if c in REQUIRED[row_kind] | {"query", "qid", "session"}]
    parts = _partials(_with_columns(_chain(first, chunks), needed), row_kind, lookup, client)
    totals = Totals()
    for part in parts:
        totals.add(part, has_sessions=has_sessions)
    return _click_log(totals, "ubi" if ubi else row_kind, str(path), doc_text)


def read_shown_lists(path, *, queries=None, docs=None, fmt: str | None = None, encoding: str = "utf-8") -> pd.DataFrame:
    """Every shown result of the impression-level log at ``path`` (a table, UBI records or serve's event log; the
    options as for :func:`read_click_log`), checked as it checks them: ``qid`` (``1``, ``2``, ... per shown list --
    an ``impression_id``, else a session's results for one query -- in order of first appearance), ``query``,
    ``docid``, ``position``, ``clicked``; rows by list, then position. Aggregated logs have no lists to give, and a
    list showing two results at one position is refused (one-line errors naming file and line)."""
    chunks, row_kind, _, lookup, _ = _sourced(path, queries, docs, fmt, encoding, None, CHUNK_ROWS)
    if row_kind != "impressions":
        raise TextTableError(
            "an aggregated click log (counts per query, document and position) does not say which results were "
            "shown together",
            path=path,
            fix="give the impression-level log (one row per shown result: session, query, docid, position, clicked)",
        )
    rows = pd.concat([shown_rows(chunk, lookup) for chunk in chunks])
    codes = pd.factorize(pd.MultiIndex.from_arrays([rows["list"], rows["query"]]))[0]
    again = pd.DataFrame({"q": codes, "p": rows["position"].to_numpy()}).duplicated().to_numpy()
    if again.any():
        row = int(np.flatnonzero(again)[0])
        raise TextTableError(
            f"list {rows['list'].iloc[row]!r} (query {rows['query'].iloc[row]!r}) shows two results at position "
            f"{rows['position'].iloc[row]}",
            path=path,
            line=int(rows.index[row]),
            fix="give every shown list its own impression_id (or session) with one result per position",
        )
    rows = rows.assign(qid=(codes + 1).astype(str)).iloc[np.lexsort((rows["position"].to_numpy(), codes))]
    return rows[["qid", "query", "docid", "position", "clicked"]]


def _sourced(path, queries, docs, fmt, encoding, doc_field, chunk_rows):
    """The chunks of the log at ``path`` (of any kind :func:`read_click_log` reads), its row kind, whether it is
    UBI, the :class:`Lookup` its rows are checked against and the documents' texts (or None)."""
    if fmt not in (None, "ubi"):
        table_format(path, fmt)  # an unknown format: the one-line error listing the formats
    served = _is_event_log(path, fmt, encoding)
    ubi = not served and _is_ubi_log(path, fmt, queries, encoding)
    lookup, doc_text = _lookup(None if ubi else queries, docs, doc_field, encoding)
    if served:
        chunks = _event_log_chunks(path, chunk_rows)
    elif ubi:
        from ltrfeat.clicks.ubi import read_ubi

        chunks = iter([read_ubi(path, queries, encoding=encoding)])
    else:
        chunks = iter_table_chunks(path, fmt=fmt, encoding=encoding, rows=chunk_rows)
    first = next(chunks)
    row_kind = "impressions" if ubi or served else log_kind(list(first.columns), path)
    return _chain(first, chunks), row_kind, ubi, lookup, doc_text


def _chain(first: pd.DataFrame, rest):
    yield first
    yield from rest


def _with_columns(chunks, needed: list[str]):
    """Chunks with every column the first one had (a JSON-lines chunk whose records all lack a key gets it empty,
    so its rows are refused like empty cells)."""
    for chunk in chunks:
        missing = [c for c in needed if c not in chunk.columns]
        if missing:
            source = chunk.attrs.get("source")
            chunk = chunk.assign(**{c: pd.Series(None, index=chunk.index, dtype="str") for c in missing})
            chunk.attrs["source"] = source
        yield chunk


def _partials(chunks, kind: str, lookup: Lookup, client):
    """Each chunk's :func:`~ltrfeat.clicks.aggregate.partial`, in file order: here, or on ``client``'s workers with
    at most two chunks per worker on the cluster at a time."""
    if client is None:
        for chunk in chunks:
            yield partial(chunk, kind, lookup)
        return
    from ltrfeat.core.dask_cluster import worker_addresses

    window = 2 * max(1, len(worker_addresses(client)))
    lookup_future = client.scatter(lookup, broadcast=True)
    pending: collections.deque = collections.deque()
    for chunk in chunks:
        pending.append(client.submit(partial, chunk, kind, lookup_future, pure=False))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _click_log(totals: Totals, kind: str, source: str, doc_text: pd.Series | None) -> ClickLog:
    counts = totals.counts()
    counts = counts[counts["impressions"].to_numpy() > 0]
    queries = np.asarray(totals.queries.texts, dtype=object)
    docids = np.asarray(totals.docids.texts, dtype=object)
    positioned = None
    if "position" in counts.columns:
        # sort by the texts through their ranks: no per-row string comparisons
        q_rank, d_rank = _ranks(queries), _ranks(docids)
        q, d, position = (counts[c].to_numpy() for c in ("q", "d", "position"))
        order = np.lexsort((position, d_rank[d], q_rank[q]))
        positioned = pd.DataFrame(
            {
                "query": pd.Series(queries[q[order]], dtype="str"),
                "docid": pd.Series(docids[d[order]], dtype="str"),
                "position": position[order].astype(np.int64),
                "impressions": counts["impressions"].to_numpy()[order].astype(np.int64),
                "clicks": counts["clicks"].to_numpy()[order].astype(np.int64),
            }
        )
        counts = counts.groupby(["q", "d"], sort=False, as_index=False)[["impressions", "clicks"]].sum()
    q, d = counts["q"].to_numpy(), counts["d"].to_numpy()
    pairs = pd.DataFrame(
        {
            "query": pd.Series(queries[q], dtype="str"),
            "docid": pd.Series(docids[d], dtype="str"),
            "impressions": counts["impressions"].to_numpy().astype(np.int64),
            "clicks": counts["clicks"].to_numpy().astype(np.int64),
        }
    )
    if len(totals.docs):
        doc = pd.Series(totals.docs["doc"].to_numpy(), index=pd.MultiIndex.from_frame(totals.docs[["q", "d"]]))
        pairs["doc"] = pd.Series(doc.reindex(pd.MultiIndex.from_arrays([q, d])).to_numpy(), dtype="str")
    elif doc_text is not None:
        pairs["doc"] = pairs["docid"].map(doc_text).astype("str")
    sessions = len(totals.sessions) if totals.has_sessions else None
    return ClickLog(positioned=positioned, totals=pairs, source=source, kind=kind, sessions=sessions)


def _ranks(texts: np.ndarray) -> np.ndarray:
    """Each text's place in sorted order."""
    ranks = np.empty(len(texts), np.int64)
    ranks[np.argsort(texts, kind="stable")] = np.arange(len(texts))
    return ranks


def _first_json_record(path, encoding: str) -> dict | None:
    """The first record of a JSON-lines file (None for other formats or no records)."""
    try:
        if table_format(path) != "jsonl":
            return None
    except TextTableError:
        return None
    from ltrfeat.clicks.ubi import first_record

    return first_record(path, encoding)


def _is_event_log(path, fmt: str | None, encoding: str) -> bool:
    """Whether ``path`` is the event log ``ltrfeat serve --event-log`` wrote: its directory, or one of its segments
    (JSON lines whose first record has an ``impression_id`` and an ``action``)."""
    if Path(path).is_dir():
        if fmt not in (None, "jsonl"):
            raise TextTableError(
                f"a directory is read as the event log `ltrfeat serve --event-log` wrote, not as {fmt}",
                path=path,
                fix="drop --format, or give the log file",
                param="fmt",
            )
        return True
    record = _first_json_record(path, encoding) if fmt in (None, "jsonl") else None
    return record is not None and {"impression_id", "action"} <= record.keys()


def _event_log_chunks(path, rows: int):
    """An event log's impressions (its click events folded onto the results they clicked: one row per shown
    result) as text chunks of at most ``rows`` rows, the first with every column so the checks see them."""
    shown = impressions(read_event_log(path))
    if shown.empty:
        raise TextTableError(
            "the event log holds no impressions yet",
            path=path,
            fix="serve some /score requests with --event-log first, or give another log",
        )
    columns = ["session", "query", "docid", "position", "clicked", *(["user"] if shown["user"].notna().any() else [])]
    columns += ["impression_id"] if "impression_id" in shown.columns else []
    table = shown[columns].astype("str").where(shown[columns].notna())
    table.index = pd.RangeIndex(1, len(table) + 1, name="line")
    for start in range(0, len(table), rows):
        chunk = table.iloc[start : start + rows]
        chunk.attrs["source"] = str(path)
        yield chunk


def _ubi_queries(path, encoding: str) -> bool:
    record = _first_json_record(path, encoding)
    return record is not None and "action_name" not in record and "query_response_hit_ids" in record


def _is_ubi_log(path, fmt: str | None, queries, encoding: str) -> bool:
    """Whether ``path`` holds UBI events: ``fmt="ubi"``, or JSON lines whose first record has an ``action_name``, or
    no record at all beside UBI query records (a log without clicks). UBI query records passed as the log, or as
    the queries of a log that holds no events, are an error saying which file goes where."""
    if fmt == "ubi":
        return True
    if fmt not in (None, "jsonl"):
        return False
    if _ubi_queries(path, encoding):
        raise TextTableError(
            "these are UBI query records, not events",
            path=path,
            line=1,
            fix="pass the UBI event records as the log and these as its queries (Python queries=..., CLI --queries)",
        )
    record = _first_json_record(path, encoding)
    if record is not None and "action_name" in record:
        return True
    with_ubi_queries = queries is not None and not isinstance(queries, pd.DataFrame) and _ubi_queries(queries, encoding)
    if with_ubi_queries and record is not None:
        raise TextTableError(
            "the queries are UBI query records but the log holds no UBI events (no action_name in its first record)",
            path=path,
            line=1,
            fix="pass the UBI event records as the log",
        )
    return with_ubi_queries


def _lookup(queries, docs, doc_field, encoding) -> tuple[Lookup, pd.Series | None]:
    query_of = None
    if queries is not None:
        frame = queries if isinstance(queries, pd.DataFrame) else read_queries(queries, encoding=encoding)
        query_of = dict(zip(frame["qid"].astype(str), frame["query"].astype(str)))
    known, doc_text = None, None
    if docs is not None:
        frame = docs if isinstance(docs, pd.DataFrame) else read_docs(docs, encoding=encoding, missing="keep")
        known = frozenset(frame["docid"].astype(str))
        fields = [c for c in frame.columns if c != "docid"]
        field = doc_field or ("title" if "title" in fields else (fields[0] if fields else None))
        if field is not None:
            if field not in frame.columns:
                raise TextTableError(
                    f"the docs table has no column {field!r} (columns: {', '.join(fields)})",
                    path=None if isinstance(docs, pd.DataFrame) else docs,
                    line=1,
                    fix="pick one of its text columns as doc_field",
                    param="doc_field",
                )
            doc_text = pd.Series(frame[field].to_numpy(dtype=object), index=frame["docid"].astype(str).to_numpy())
    return Lookup(query_of=query_of, known_docs=known), doc_text


def write_positioned(log: ClickLog, path, *, fmt: str | None = None) -> None:
    """Write ``log.positioned`` (``query, docid, position, impressions, clicks``) to ``path`` atomically, in any
    table format; a log without positions is an error saying so."""
    if log.positioned is None:
        raise TextTableError(
            f"{NO_POSITIONS_NOTE}: there is nothing to write per position",
            path=log.source,
            fix="aggregate an impression-level log (one row per shown result, with its position)",
        )
    write_table(log.positioned[POSITIONED_COLUMNS], Path(path), fmt=fmt)
