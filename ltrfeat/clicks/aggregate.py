"""Click-log rows checked and summed a chunk at a time: each chunk becomes a partial aggregate (per query, document
and position, or per pair when the log has no positions), and :class:`Totals` adds the partials up, so a log of
any length needs memory for its distinct keys only.

Kinds of log (told apart by their columns, :func:`log_kind`):

* ``impressions``: one row per shown result: ``query`` (or ``qid``), ``docid``, ``position``, ``clicked`` (0/1);
  optional ``session``, ``user``, ``dwell``, ``timestamp`` and any other column (ignored).
* ``positioned``: ``query``|``qid``, ``docid``, ``position``, ``impressions``, ``clicks``.
* ``pairs``: ``query``|``qid``, ``docid``, ``impressions``, ``clicks`` [, ``doc``]: no positions.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ltrfeat.core.errors import TextTableError, line_list

REQUIRED = {  # columns of each kind besides query (or qid)
    "impressions": {"docid", "position", "clicked"},
    "positioned": {"docid", "position", "impressions", "clicks"},
    "pairs": {"docid", "impressions", "clicks"},
}
POSITIONED_COLUMNS = ["query", "docid", "position", "impressions", "clicks"]
_CLICKED = {"0": 0, "1": 1, "0.0": 0, "1.0": 1, "false": 0, "true": 1}
_FORMATS = (
    "impression-level (query or qid, docid, position, clicked), aggregated with positions (query or qid, docid, "
    "position, impressions, clicks) or aggregated without positions (query or qid, docid, clicks, impressions)"
)


def log_kind(columns, path) -> str:
    """Which kind of click log a table with ``columns`` is; missing columns are a one-line error saying which."""
    have = set(columns)
    if "query" not in have and "qid" not in have:
        missing = "query (or qid)"
    elif "docid" not in have:
        missing = "docid"
    elif "clicked" in have:
        missing = "" if "position" in have else "position"
        kind = "impressions"
    elif {"impressions", "clicks"} <= have:
        return "positioned" if "position" in have else "pairs"
    else:
        missing = " and ".join(sorted({"impressions", "clicks"} - have)) + " (or a clicked column)"
    if missing:
        found = ", ".join(repr(c) for c in columns)
        raise TextTableError(
            f"no {missing} column for a click log (columns found: {found})",
            path=path,
            line=1,
            fix=f"write one of the click-log formats: {_FORMATS}",
        )
    return kind


@dataclasses.dataclass(frozen=True)
class Lookup:
    """What a chunk is checked against: query texts by qid, the known document ids (None: not checked)."""

    query_of: dict[str, str] | None = None
    known_docs: frozenset[str] | None = None


def _fail(chunk: pd.DataFrame, mask: np.ndarray, problem: str, fix: str) -> None:
    lines = chunk.index.to_numpy()[mask]
    raise TextTableError(
        f"{int(mask.sum())} rows {problem} (lines {line_list(lines)})",
        path=chunk.attrs.get("source"),
        line=int(lines[0]),
        fix=fix,
    )


def _text(chunk: pd.DataFrame, column: str, what: str) -> pd.Series:
    values = chunk[column].str.strip()
    empty = (values.isna() | (values == "")).to_numpy(dtype=bool)
    if empty.any():
        _fail(chunk, empty, f"have an empty {what}", f"give every row its {what}")
    return values


def _plain_integers(values: pd.Series) -> np.ndarray | None:
    """The column as int64 when every cell is a plain integer (the common case, cast without Python objects);
    None otherwise (the careful path then names the bad rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(pa.array(values), pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return None


def _integers(chunk: pd.DataFrame, column: str, *, minimum: int, fix: str) -> np.ndarray:
    fast = _plain_integers(chunk[column])
    if fast is not None and (len(fast) == 0 or fast.min() >= minimum):
        return fast.astype(np.int64, copy=False)
    text = _text(chunk, column, column)
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    first = lambda mask: f" (e.g. {text.to_numpy()[mask][0]!r})"  # noqa: E731
    bad = np.isnan(values) & ~text.str.lower().isin(["nan", "+nan", "-nan"]).to_numpy(dtype=bool)
    if bad.any():
        _fail(chunk, bad, f"hold a {column} that is not a number{first(bad)}", fix)
    bad = ~np.isfinite(values)
    if bad.any():
        _fail(chunk, bad, f"hold a {column} that is not finite{first(bad)}", fix)
    bad = values != np.round(values)
    if bad.any():
        _fail(chunk, bad, f"hold a {column} that is not a whole number{first(bad)}", fix)
    bad = values < minimum
    if bad.any():
        _fail(chunk, bad, f"hold a {column} below {minimum}{first(bad)}", fix)
    bad = values >= 2**53  # beyond that a float is no longer every integer, and int64 ends soon after
    if bad.any():
        _fail(chunk, bad, f"hold a {column} too large to count exactly{first(bad)}", fix)
    return values.astype(np.int64)


def _keys(chunk: pd.DataFrame, lookup: Lookup) -> tuple[pd.Series, pd.Series]:
    """The query text and docid of every row, checked (qid mapped through ``lookup.query_of``); text Series, so
    that no Python string is made per row."""
    if "query" in chunk.columns:
        queries = _text(chunk, "query", "query")
    else:
        if lookup.query_of is None:
            raise TextTableError(
                "the log names queries by qid but no query table was given",
                path=chunk.attrs.get("source"),
                line=1,
                fix="pass the queries table (Python queries=..., CLI --queries FILE) or write a query column",
            )
        qids = _text(chunk, "qid", "qid")
        mapped = qids.map(lookup.query_of)
        unknown = mapped.isna().to_numpy(dtype=bool)
        if unknown.any():
            _fail(
                chunk,
                unknown,
                f"name a qid the query table lacks (e.g. {qids.to_numpy()[unknown][0]!r})",
                "add those queries to the query table or pass the right one",
            )
        queries = mapped.astype("str")
    docids = _text(chunk, "docid", "docid")
    if lookup.known_docs is not None:
        unknown = ~docids.isin(lookup.known_docs).to_numpy(dtype=bool)
        if unknown.any():
            _fail(
                chunk,
                unknown,
                f"name a document the docs table lacks (e.g. docid {docids.to_numpy()[unknown][0]!r})",
                "add those documents to the docs table, pass the right one, or drop the rows",
            )
    return queries, docids


def _position(chunk: pd.DataFrame) -> np.ndarray:
    return _integers(chunk, "position", minimum=1, fix="positions count from 1 (the top result)")


def _clicked(chunk: pd.DataFrame) -> np.ndarray:
    fast = _plain_integers(chunk["clicked"])
    if fast is not None and ((fast == 0) | (fast == 1)).all():
        return fast.astype(np.int64, copy=False)
    text = _text(chunk, "clicked", "clicked").str.lower()
    values = text.map(_CLICKED)
    bad = values.isna().to_numpy(dtype=bool)
    if bad.any():
        _fail(
            chunk,
            bad,
            f"hold a clicked value that is not 0 or 1 (e.g. {text.to_numpy()[bad][0]!r})",
            "write clicked as 0/1 (or false/true): one row per shown result",
        )
    return values.to_numpy(dtype=np.int64)


def _check_dwell(chunk: pd.DataFrame) -> None:
    text = chunk["dwell"].str.strip()
    given = (text.notna() & (text != "")).to_numpy(dtype=bool)
    values = pd.to_numeric(text.where(given), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    bad = given & ~(np.isfinite(values) & (values >= 0))
    if bad.any():
        _fail(
            chunk,
            bad,
            "hold a dwell that is not a finite number of seconds >= 0",
            "write dwell in seconds, or leave it empty",
        )


def shown_rows(chunk: pd.DataFrame, lookup: Lookup) -> pd.DataFrame:
    """One chunk of an impression-level log checked row by row (as :func:`partial` checks it): ``list`` (the shown
    list's ``impression_id``, else its ``session``), ``query``, ``docid``, ``position``, ``clicked``; indexed by
    source line."""
    key = "impression_id" if "impression_id" in chunk.columns else "session"
    if key not in chunk.columns:
        raise TextTableError(
            "the log has no session (or impression_id) column: its rows cannot be told apart into shown lists",
            path=chunk.attrs.get("source"),
            line=1,
            fix="write each row's session (one shown list per session and query) or impression_id",
        )
    queries, docids = _keys(chunk, lookup)
    lists = _text(chunk, key, key)
    columns = {"list": lists.to_numpy(), "query": queries.to_numpy(), "docid": docids.to_numpy()}
    return pd.DataFrame(columns | {"position": _position(chunk), "clicked": _clicked(chunk)}, index=chunk.index)


@dataclasses.dataclass
class Partial:
    """One chunk's sums: ``counts`` keyed by ``q``, ``d`` (codes into ``queries`` and ``docids``, the chunk's distinct
    texts in order of appearance) and ``position`` when the log has one; ``docs`` the first doc text per (q, d) code
    pair (empty when the log has none); ``sessions`` 64-bit hashes of the distinct session ids."""

    counts: pd.DataFrame
    queries: np.ndarray
    docids: np.ndarray
    docs: pd.DataFrame
    sessions: np.ndarray


def partial(chunk: pd.DataFrame, kind: str, lookup: Lookup) -> Partial:
    """Check one chunk of a ``kind`` log and sum it (one-line :class:`TextTableError` naming the file, lines and fix)."""
    queries, docids = _keys(chunk, lookup)
    q, query_texts = pd.factorize(queries)
    d, docid_texts = pd.factorize(docids)
    frame = {"q": q, "d": d}
    if kind == "impressions":
        frame |= {"position": _position(chunk), "impressions": np.ones(len(chunk), np.int64), "clicks": _clicked(chunk)}
        if "dwell" in chunk.columns:
            _check_dwell(chunk)
    else:
        if kind == "positioned":
            frame["position"] = _position(chunk)
        fix = "impressions count the times a result was shown, clicks the times it was clicked"
        frame["impressions"] = _integers(chunk, "impressions", minimum=0, fix=fix)
        frame["clicks"] = _integers(chunk, "clicks", minimum=0, fix=fix)
        more = frame["clicks"] > frame["impressions"]
        if more.any():
            never = more & (frame["impressions"] == 0)
            problem = (
                "count clicks on a result never shown (0 impressions)"
                if never.any()
                else "count more clicks than impressions"
            )
            _fail(
                chunk,
                never if never.any() else more,
                problem,
                "a result is clicked at most once per impression: check the two columns",
            )
    docs = pd.DataFrame({"q": q[:0], "d": d[:0], "doc": pd.Series([], dtype=object)})
    if "doc" in chunk.columns:
        docs = pd.DataFrame({"q": q, "d": d, "doc": chunk["doc"].to_numpy(dtype=object)})
        docs = docs[docs["doc"].notna()].drop_duplicates(["q", "d"])
    sessions = np.zeros(0, np.uint64)
    if "session" in chunk.columns:
        distinct = pd.factorize(_text(chunk, "session", "session"))[1]
        sessions = np.unique(pd.util.hash_array(np.asarray(distinct, dtype=object)))
    return Partial(
        _summed(pd.DataFrame(frame)), np.asarray(query_texts, object), np.asarray(docid_texts, object), docs, sessions
    )


def _summed(frame: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in ("q", "d", "position") if c in frame.columns]
    return frame.groupby(keys, sort=False, as_index=False)[["impressions", "clicks"]].sum()


class _Codes:
    """Texts numbered in the order they are first seen."""

    def __init__(self):
        self.code: dict[str, int] = {}
        self.texts: list[str] = []

    def of(self, texts: np.ndarray) -> np.ndarray:
        out = np.empty(len(texts), np.int64)
        for i, text in enumerate(texts.tolist()):
            found = self.code.get(text)
            if found is None:
                found = self.code[text] = len(self.texts)
                self.texts.append(text)
            out[i] = found
        return out


class Totals:
    """The sum of partials, keys numbered in the order they first appear (partials added in file order). Queries and
    documents are held once each as text and the sums under integer codes; pending partials are summed whenever they
    outgrow the sum so far, so memory stays within a few times the distinct keys."""

    def __init__(self):
        self.queries, self.docids = _Codes(), _Codes()
        self._sum: pd.DataFrame | None = None
        self._pending: list[pd.DataFrame] = []
        self._pending_rows = 0
        self.docs = pd.DataFrame({"q": np.zeros(0, np.int64), "d": np.zeros(0, np.int64), "doc": []})
        self.sessions = np.zeros(0, np.uint64)
        self.has_sessions = False

    def add(self, part: Partial, *, has_sessions: bool) -> None:
        q, d = self.queries.of(part.queries), self.docids.of(part.docids)
        counts = part.counts.assign(q=q[part.counts["q"].to_numpy()], d=d[part.counts["d"].to_numpy()])
        self._pending.append(counts)
        self._pending_rows += len(counts)
        if self._pending_rows > max(len(self._sum) if self._sum is not None else 0, 1_000_000):
            self._sum = self.counts()
            self._pending, self._pending_rows = [], 0
        if len(part.docs):
            docs = part.docs.assign(q=q[part.docs["q"].to_numpy()], d=d[part.docs["d"].to_numpy()])
            self.docs = pd.concat([self.docs, docs]).drop_duplicates(["q", "d"])
        if has_sessions:
            self.has_sessions = True
            self.sessions = np.union1d(self.sessions, part.sessions)

    def counts(self) -> pd.DataFrame:
        """Every key's impressions and clicks, keys as codes (``q``, ``d``[, ``position``])."""
        frames = ([self._sum] if self._sum is not None else []) + self._pending
        if not frames:
            return pd.DataFrame({c: np.zeros(0, np.int64) for c in ("q", "d", "impressions", "clicks")})
        return _summed(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])
