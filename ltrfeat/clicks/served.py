"""The event log ``ltrfeat serve --event-log`` writes (:mod:`ltrfeat.experiments.event_log`), read back: every
record checked (:func:`read_event_log`) and folded into an impression-level click log (:func:`impressions`), the
table ``read_click_log`` and ``interleave-report`` read.

A directory of segments ``events-000001.jsonl``, ``events-000002.jsonl``, ...; every line is one object with the
click-log columns (:data:`COLUMNS`): an impression writes one line per shown result (``action`` ``"impression"``,
``clicked`` 0) and an event one line for its result (``action`` the UBI ``action_name``, ``clicked`` 1 for a
click). A last line without its newline is a write a crash cut short, never acknowledged: it is skipped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError

INTERLEAVE_METHODS = ("team-draft", "balanced")
TEAMS = ("A", "B")
# the impression-level click-log columns, then interleaving's
COLUMNS = ("session", "query", "docid", "position", "clicked", "timestamp")
INTERLEAVING_COLUMNS = ("impression_id", "ranker", "team", "method", "rank_a", "rank_b", "action")
OPTIONAL_COLUMNS = ("user", "dwell")
_TYPES = {
    "session": str,
    "impression_id": str,
    "query": str,
    "docid": str,
    "position": int,
    "clicked": int,
    "timestamp": str,
    "ranker": str,
    "team": str,
    "method": str,
    "action": str,
}
SEGMENT = re.compile(r"^events-(\d{6,})\.jsonl$")
IMPRESSION = "impression"
MAX_POSITION = 100_000  # results of one impression (serve logs at most --event-log-depth, <= 10,000)
MAX_RANK = 10**9


def segments(directory: Path) -> list[Path]:
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := SEGMENT.match(p.name))]
    return [p for _, p in sorted(found)]


def _problem(path, line: int, problem: str) -> LtrfeatError:
    return LtrfeatError(
        problem, path=path, line=line, fix="give the event log `ltrfeat serve --event-log` wrote (JSON lines)"
    )


def _records(path: Path) -> list[dict]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LtrfeatError(f"cannot read the event log ({exc.strerror or exc})", path=path) from None
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        lines.pop()  # a write a crash cut short: never acknowledged
    out = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
            raise _problem(path, number, f"not a JSON line ({str(exc)[:80]})") from None
        if not isinstance(record, dict):
            raise _problem(path, number, f"a JSON {type(record).__name__}, not an object")
        for name, kind in _TYPES.items():
            value = record.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                got = "missing" if name not in record else f"{type(value).__name__} {str(value)[:40]!r}"
                raise _problem(path, number, f"field {name!r} must be {kind.__name__}, got {got}")
        if not 1 <= record["position"] <= MAX_POSITION or record["clicked"] not in (0, 1):
            raise _problem(path, number, f"position must be 1 to {MAX_POSITION:,} and clicked 0 or 1")
        if record["team"] not in TEAMS or record["method"] not in ("none", *INTERLEAVE_METHODS):
            raise _problem(
                path,
                number,
                f"team must be A or B and method none, {', '.join(INTERLEAVE_METHODS)}; got {record['team'][:20]!r}, "
                f"{record['method'][:20]!r}",
            )
        for name in ("rank_a", "rank_b"):
            value = record.get(name)
            needed = record["method"] in INTERLEAVE_METHODS
            if (value is None and needed) or not (value is None or (type(value) is int and 1 <= value <= MAX_RANK)):
                raise _problem(
                    path, number, f"{name} must be a rank (1 or more) in an interleaved impression, got {value!r}"[:200]
                )
        out.append(record)
    return out


def read_event_log(path) -> pd.DataFrame:
    """Every record of a log (a directory of segments or one ``.jsonl`` file), in written order."""
    path = Path(path)
    if path.is_dir():
        files = segments(path)
        if not files:
            raise LtrfeatError(
                "no event-log segments (events-NNNNNN.jsonl) in this directory",
                path=path,
                fix="give the directory `ltrfeat serve --event-log` wrote to",
            )
    elif path.exists():
        files = [path]
    else:
        raise LtrfeatError("no such file or directory", path=path, fix="give the event log's directory or a segment")
    records = [r for f in files for r in _records(f)]
    columns = [*COLUMNS, *INTERLEAVING_COLUMNS, *OPTIONAL_COLUMNS]
    table = pd.DataFrame.from_records(records, columns=columns) if records else pd.DataFrame(columns=columns)
    table.attrs["source"] = str(path)
    return table


def impressions(log: pd.DataFrame) -> pd.DataFrame:
    """One row per shown result (``impression_id``, ``position``), ``clicked`` 1 when a click came for it, in
    the order the impressions were served, then by position; events for a result no impression line shows are dropped (counted in
    ``attrs["orphan_events"]``)."""
    shown = log[log["action"] == IMPRESSION].drop_duplicates(["impression_id", "position"])
    events = log[(log["action"] != IMPRESSION) & (log["clicked"] == 1)]
    key = ["impression_id", "position"]
    clicked = events.groupby(key, sort=False).size().rename("n_clicks").reset_index()
    out = shown.drop(columns=["clicked", "action"]).merge(clicked, on=key, how="left")
    out["clicked"] = (out.pop("n_clicks").fillna(0) > 0).astype(np.int64)
    out["_first"] = pd.factorize(out["impression_id"])[0]  # impressions in the order they were served
    out = out.sort_values(["_first", "position"], kind="stable").drop(columns="_first").reset_index(drop=True)
    matched = events.merge(shown[key], on=key, how="inner")
    out.attrs["orphan_events"] = int(len(events) - len(matched))
    out.attrs["source"] = log.attrs.get("source")
    return out[[*COLUMNS, *(c for c in out.columns if c not in COLUMNS)]]
