"""OpenSearch User Behavior Insights (UBI) records as JSON lines, read as an impression-level log and written from
one (the public schema, https://github.com/o19s/ubi, versions 1.0-1.3).

* **Query records** (the ``ubi_queries`` index): ``query_id``, ``user_query`` (the text as typed), ``client_id``,
  ``timestamp``, ``query_response_hit_ids`` (the ids of the results shown, in order) and optional fields.
* **Event records** (``ubi_events``): ``action_name`` (``click``, ``impression``, ``add_to_cart``...), ``query_id``,
  ``client_id``, ``session_id``, ``timestamp``, ``event_attributes.object.object_id`` (the result acted on) and
  ``event_attributes.position.ordinal`` (its place in the list, counted from 1).

What was shown: a query record's ``query_response_hit_ids`` (position = place in the list), else that query's
``impression`` events (position = ordinal). What was clicked: ``click`` and ``click_through`` events; each result
counts once per query however often it was clicked; other actions are ignored. Each ``query_id`` (one result page)
is one session; ``client_id`` is the user.
"""

from __future__ import annotations

import datetime
import json

import numpy as np
import pandas as pd

from ltrfeat.core.errors import TextTableError, line_list
from ltrfeat.core.fileio import atomic_output, open_input
from ltrfeat.core.text import json_object, text_codec

CLICK_ACTIONS = ("click", "click_through")
IMPRESSION_ACTION = "impression"


def _records(path, encoding: str):
    """``(line, record)`` of every JSON line of ``path``."""
    codec = text_codec(encoding, path=path)
    try:
        with open_input(path, binary=False, encoding="utf-8-sig" if codec == "utf-8" else codec) as fh:
            for lineno, line in enumerate(fh, start=1):
                if line.strip():
                    yield lineno, json_object(line, path, lineno)
    except FileNotFoundError:
        raise TextTableError("file not found", path=path, fix="check the path") from None
    except UnicodeDecodeError as exc:
        raise TextTableError(
            f"cannot decode the file as {codec} ({exc.reason})",
            path=path,
            fix="pass the file's encoding (Python encoding=..., CLI --encoding)",
        ) from None


def first_record(path, encoding: str = "utf-8") -> dict | None:
    """The first JSON record of ``path`` (None when it has none or is not JSON lines)."""
    try:
        return next((record for _, record in _records(path, encoding)), None)
    except TextTableError:
        return None


def _text(value) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def _query_records(path, encoding: str) -> dict[str, tuple[int, dict]]:
    found: dict[str, tuple[int, dict]] = {}
    for line, record in _records(path, encoding):
        query_id = _text(record.get("query_id"))
        if query_id is None:
            raise TextTableError(
                "a UBI query record without a query_id",
                path=path,
                line=line,
                fix="every query record needs the query_id its events refer to",
            )
        if query_id in found:
            raise TextTableError(
                f"query_id {query_id!r} appears twice (lines {found[query_id][0]}, {line})",
                path=path,
                line=line,
                fix="give every query record a unique query_id",
            )
        hits = record.get("query_response_hit_ids")
        if hits is not None and not isinstance(hits, list):
            raise TextTableError(
                f"query_response_hit_ids is a {type(hits).__name__}, not a list",
                path=path,
                line=line,
                fix="list the ids of the results shown, in order",
            )
        found[query_id] = (line, record)
    if not found:
        raise TextTableError(
            "file holds no UBI query records", path=path, fix="pass the UBI query records (JSON lines)"
        )
    return found


def _ordinal(record: dict, path, line: int) -> int | None:
    position = (record.get("event_attributes") or {}).get("position") or {}
    ordinal = position.get("ordinal") if isinstance(position, dict) else None
    if ordinal is None:
        return None
    if isinstance(ordinal, bool) or not isinstance(ordinal, (int, float)) or ordinal != int(ordinal) or ordinal < 1:
        raise TextTableError(
            f"event_attributes.position.ordinal is {ordinal!r}",
            path=path,
            line=line,
            fix="ordinals count from 1 (the top result), as the UBI schema says",
        )
    return int(ordinal)


def read_ubi(events_path, queries_path=None, *, encoding: str = "utf-8") -> pd.DataFrame:
    """UBI event records (and the query records they refer to) as an impression-level frame: ``session`` (the
    query_id), ``query``, ``docid``, ``position``, ``clicked`` (``"0"``/``"1"``), ``user``, index ``line`` (the
    line of the query record, or of the impression event, that showed the result); every cell text."""
    queries = {} if queries_path is None else _query_records(queries_path, encoding)
    shown: dict[str, dict[str, tuple[int, int]]] = {}  # query_id -> docid -> (position, line)
    for query_id, (line, record) in queries.items():
        hits = record.get("query_response_hit_ids") or []
        shown[query_id] = {}
        for place, hit in enumerate(hits, start=1):
            shown[query_id].setdefault(str(hit), (place, line))
    from_events: dict[str, dict[str, tuple[int, int]]] = {}
    clicks: list[tuple[int, str, str]] = []
    texts: dict[str, str] = {}
    users: dict[str, str] = {}
    for line, record in _records(events_path, encoding):
        action = _text(record.get("action_name"))
        if action is None:
            raise TextTableError(
                "a UBI event without an action_name",
                path=events_path,
                line=line,
                fix="pass UBI event records (queries go to the queries file)",
            )
        if action not in CLICK_ACTIONS and action != IMPRESSION_ACTION:
            continue
        query_id = _text(record.get("query_id"))
        obj = (record.get("event_attributes") or {}).get("object") or {}
        docid = _text(obj.get("object_id")) if isinstance(obj, dict) else None
        if query_id is None or docid is None:
            raise TextTableError(
                f"a {action} event without a query_id or event_attributes.object.object_id",
                path=events_path,
                line=line,
                fix="each click or impression event names its query_id and the object_id acted on",
            )
        if (text := _text(record.get("user_query"))) is not None:
            texts.setdefault(query_id, text)
        if (user := _text(record.get("client_id"))) is not None:
            users.setdefault(query_id, user)
        ordinal = _ordinal(record, events_path, line)
        if action == IMPRESSION_ACTION:
            if ordinal is None:
                raise TextTableError(
                    "an impression event without event_attributes.position.ordinal",
                    path=events_path,
                    line=line,
                    fix="impression events must say where the result was shown",
                )
            from_events.setdefault(query_id, {}).setdefault(docid, (ordinal, line))
        else:
            clicks.append((line, query_id, docid))
    for query_id, docs in from_events.items():
        if not shown.get(query_id):
            shown[query_id] = docs
    never = [(line, q, d) for line, q, d in clicks if d not in shown.get(q, {})]
    if never:
        line, query_id, docid = never[0]
        why = "that query showed other results" if shown.get(query_id) else "nothing records what that query showed"
        raise TextTableError(
            f"{len(never)} click events on a result never shown (lines {line_list([n[0] for n in never])}; e.g. "
            f"object_id {docid!r} for query_id {query_id!r}: {why})",
            path=events_path,
            line=line,
            fix="pass the UBI query records (queries=..., CLI --queries) whose query_response_hit_ids list what was "
            "shown, or log impression events",
        )
    clicked = {(q, d) for _, q, d in clicks}
    rows = []
    for query_id, docs in shown.items():
        record = queries.get(query_id, (0, {}))[1]
        text = _text(record.get("user_query")) or texts.get(query_id)
        if text is None:
            line = queries[query_id][0] if query_id in queries else next(iter(docs.values()))[1]
            raise TextTableError(
                f"query_id {query_id!r} has no user_query",
                path=queries_path if query_id in queries else events_path,
                line=line,
                fix="give every query record its user_query (the text as the user typed it)",
            )
        user = _text(record.get("client_id")) or users.get(query_id)
        for docid, (position, line) in docs.items():
            rows.append(
                (line, query_id, text, docid, str(position), "1" if (query_id, docid) in clicked else "0", user)
            )
    if not rows:
        raise TextTableError(
            "no result was shown: no query record lists its results and no impression event was logged",
            path=events_path,
            fix="pass the UBI query records (queries=..., CLI --queries) whose query_response_hit_ids list what was "
            "shown, or log impression events",
        )
    frame = pd.DataFrame(rows, columns=["line", "session", "query", "docid", "position", "clicked", "user"])
    frame = frame.set_index("line").astype("str")
    frame.attrs["source"] = str(events_path)
    return frame


def write_ubi(impressions: pd.DataFrame, queries_path, events_path, *, start: str = "2026-01-01T00:00:00Z") -> None:
    """Write an impression-level frame (``session, query, docid, position, clicked`` [, ``user``]) as UBI query
    records (one per session, its results in position order) and ``click`` events (one per clicked result), each
    file atomically; timestamps a second apart from ``start``. Used for fixtures and to hand a log to UBI tools."""
    clock = datetime.datetime.fromisoformat(start.replace("Z", "+00:00"))
    users = impressions["user"] if "user" in impressions.columns else impressions["session"]
    frame = impressions.assign(
        user=users.astype(str),
        _session=pd.factorize(impressions["session"])[0],
        _position=pd.to_numeric(impressions["position"]),
    ).sort_values(["_session", "_position"], kind="stable")
    with atomic_output(queries_path) as queries_out, atomic_output(events_path) as events_out:
        for n, (session, rows) in enumerate(frame.groupby("session", sort=False)):
            query_id = f"q-{session}"
            stamp = (clock + datetime.timedelta(seconds=2 * n)).strftime("%Y-%m-%dT%H:%M:%SZ")
            record = {
                "application": "ltrfeat",
                "query_id": query_id,
                "client_id": rows["user"].iloc[0],
                "user_query": rows["query"].iloc[0],
                "timestamp": stamp,
                "query_response_hit_ids": [str(d) for d in rows["docid"]],
            }
            queries_out.write(json.dumps(record, ensure_ascii=False) + "\n")
            clicked = rows[np.asarray(rows["clicked"]).astype(int) == 1]
            for docid, position in zip(clicked["docid"], clicked["_position"]):
                event = {
                    "application": "ltrfeat",
                    "action_name": "click",
                    "query_id": query_id,
                    "session_id": str(session),
                    "client_id": rows["user"].iloc[0],
                    "timestamp": (clock + datetime.timedelta(seconds=2 * n + 1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "message_type": "CLICK_THROUGH",
                    "event_attributes": {
                        "object": {"object_id": str(docid), "object_id_field": "docid"},
                        "position": {"ordinal": int(position)},
                    },
                }
                events_out.write(json.dumps(event, ensure_ascii=False) + "\n")
