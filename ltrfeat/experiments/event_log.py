"""The append-only log of impressions and user events that ``ltrfeat serve --event-log`` writes, in the
impression-level click-log format: JSON lines in segments ``events-000001.jsonl``, ... (a new one starts once the
current one would pass ``max_bytes``). :mod:`ltrfeat.clicks.served` reads it back and folds events onto their
impressions (for ``interleave-report`` and every click-log reader).

:meth:`EventLog.append` returns once the lines are written and ``fsync``-ed, so what the service acknowledged
survives ``kill -9`` and a power cut. A write cut short by a crash leaves at most a last line without its newline,
which the next writer starts a new segment after and the reader skips (no acknowledged line is ever such a line).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from datetime import datetime, UTC
from pathlib import Path

from ltrfeat.clicks.served import SEGMENT, segments
from ltrfeat.core.errors import LtrfeatError

LOCK = ".writer.lock"


def now() -> str:
    """The current time as ISO 8601 UTC with milliseconds (the log's ``timestamp``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
            found = segments(self.directory)
            last = found[-1] if found else None
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
