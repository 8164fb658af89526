"""The append-only log of impressions and user events that ``ltrfeat serve --event-log`` writes and
``ltrfeat interleave-report`` reads: JSON lines in the impression-level click-log format.

A directory of segments ``events-000001.jsonl``, ``events-000002.jsonl``, ...; a new one starts once the current
one would pass ``max_bytes``. Every line is one object with the click-log columns (:data:`COLUMNS`): an impression
writes one line per shown result (``action`` ``"impression"``, ``clicked`` 0) and an event one line for its result
(``action`` the UBI ``action_name``, ``clicked`` 1 for a click). :func:`impressions` folds them into one row per shown
result, ``clicked`` 1 when any click came for it: the impression-level format a click log has.

:meth:`EventLog.append` returns once the lines are written and ``fsync``-ed, so what the service acknowledged
survives ``kill -9`` and a power cut. A write cut short by a crash leaves at most a last line without its newline,
which the next writer starts a new segment after and :func:`read_event_log` skips (no acknowledged line is ever
such a line).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from datetime import datetime, UTC
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments.interleaving import INTERLEAVE_METHODS, TEAMS

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
LOCK = ".writer.lock"
MAX_POSITION = 100_000  # results of one impression (serve logs at most --event-log-depth, <= 10,000)
MAX_RANK = 10**9


def now() -> str:
    """The current time as ISO 8601 UTC with milliseconds (the log's ``timestamp``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _segments(directory: Path) -> list[Path]:
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := SEGMENT.match(p.name))]
    return [p for _, p in sorted(found)]


class EventLog:
    """Appends records to the segments in ``directory`` (created if missing); thread-safe, one writer per
    directory (a second, in any process, is refused until the first is closed or its process ends). A context
    manager (closes on exit).

    Parameters
    ----------
    directory : where the segments are.
    max_bytes : a segment's size after which the next append starts a new one (one append is never split).
    """

    def __init__(self, directory, *, max_bytes: int = 64 * 2**20):
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self._lock = threading.Condition()
        self._queued: list[bytes] = []
        self._submitted = self._synced = 0  # appends queued / written and synced, in order
        self._writing = self._broken = False
        self._failed: tuple[int, int, OSError | None] = (0, 0, None)  # the appends of the last batch that failed
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.directory / LOCK, os.O_WRONLY | os.O_CREAT, 0o644)
            try:  # one writer per log: two would interleave their segments' rotation
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._lock_fd)
                raise LtrfeatError(
                    "another process is writing this event log",
                    path=self.directory,
                    fix="give each running `serve` its own --event-log directory",
                ) from None
            segments = _segments(self.directory)
            last = segments[-1] if segments else None
            self._number = int(SEGMENT.match(last.name).group(1)) if last else 0  # type: ignore[union-attr]
            if last is None or last.stat().st_size >= max_bytes or not _ends_cleanly(last):
                self._open_next()
            else:
                self._fd = os.open(last, os.O_WRONLY | os.O_APPEND)
                self._size = last.stat().st_size
                self.path = last
        except OSError as exc:
            raise LtrfeatError(
                f"cannot write the event log ({exc.strerror or exc})",
                path=self.directory,
                fix="give --event-log a directory this user can create files in",
            ) from None

    def _open_next(self) -> None:
        self._number += 1
        self.path = self.directory / f"events-{self._number:06d}.jsonl"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        self._size = 0
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:  # the new file's name is durable too
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def append(self, records: list[dict]) -> None:
        """Write ``records`` as JSON lines and ``fsync`` them; returns only once they are on disk.

        Group commit: while one thread writes and syncs, the appends arriving meanwhile queue up and the next of
        them writes them all with one ``fsync`` (an append is never split between segments or syncs)."""
        data = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode()
        with self._lock:
            self._queued.append(data)
            self._submitted += 1
            ticket = self._submitted
            while self._synced < ticket:
                if self._writing:
                    self._lock.wait()
                    continue
                self._writing = True
                batch, self._queued, upto = b"".join(self._queued), [], self._submitted
                self._lock.release()
                failed = None
                try:
                    self._write(batch)
                except OSError as exc:
                    failed = exc
                    self._broken = True  # it may end in part of a line: the next batch starts a new segment
                finally:
                    self._lock.acquire()
                    self._writing = False
                    if failed is not None:
                        self._failed = (self._synced, upto, failed)
                    self._synced = upto
                    self._lock.notify_all()
            lo, hi, error = self._failed
            if error is not None and lo < ticket <= hi:
                raise error

    def _write(self, data: bytes) -> None:
        if self._broken or (self._size and self._size + len(data) > self.max_bytes):
            os.close(self._fd)
            self._open_next()
            self._broken = False
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)
        self._size += len(data)

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)
            os.close(self._lock_fd)  # releases the writer's lock


def _ends_cleanly(path: Path) -> bool:
    size = path.stat().st_size
    if size == 0:
        return True
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) == b"\n"


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
        files = _segments(path)
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
