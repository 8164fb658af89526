"""Temporary siblings of outputs: named after their process, removed on any exit, swept when stale.

Every output is written to a hidden sibling (``.NAME.PID-HOST.XXXXXXXX.tmp``, a file or a directory)
and renamed over ``NAME`` only when complete. The live ones are registered, so a command stopped
by SIGTERM or Ctrl-C removes them (see :func:`remove_live`). A run killed outright (``kill -9``, an
out-of-memory kill, a power cut) cannot clean up after itself: the next write of the same output
removes the siblings whose process is gone (same host, pid no longer running) and says so in one line
on stderr. Siblings of a live process, of another host, or without a pid (older versions) are left alone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import shutil
import socket
import threading
from pathlib import Path

log = logging.getLogger("ltrfeat")

_LIVE: dict[Path, Path] = {}  # temporary path -> the output it becomes
_LOCK = threading.Lock()


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _prefix(name: str) -> str:
    return f".{name}.{os.getpid()}-{_host_tag()}."


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def sweep_stale(directory, name: str) -> list[Path]:
    """Remove the temporary siblings of ``directory/name`` left by dead processes of this host; one
    stderr line (log warning) names them. Returns the removed paths."""
    pattern = re.compile(rf"^\.{re.escape(name)}\.(\d+)-([0-9a-f]{{8}})\.[^./]+\.(?:tmp|old)$")
    host = _host_tag()
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if not match or match.group(2) != host or _alive(int(match.group(1))):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:  # another run swept it first
            continue
        except OSError:
            continue
        removed.append(path)
    if removed:
        pids = sorted({int(pattern.match(p.name).group(1)) for p in removed})  # type: ignore[union-attr]
        log.warning(
            "removed %d temporary file%s of %s left by killed run%s (pid %s): %s",
            len(removed),
            "" if len(removed) == 1 else "s",
            Path(directory) / name,
            "" if len(pids) == 1 else "s",
            ", ".join(map(str, pids)),
            ", ".join(p.name for p in removed),
        )
    return removed


def new_file(final) -> tuple[int, Path]:
    """``(fd, path)`` of a new registered temporary file beside ``final`` (stale ones swept first)."""
    final = Path(final)
    directory = final.parent if str(final.parent) else Path(".")
    sweep_stale(directory, final.name)
    return _made(directory, final.name, ".tmp", lambda path: os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))


def new_dir(final, *, suffix: str = ".tmp") -> Path:
    """A new registered temporary directory beside ``final`` (mode as for any new directory; stale
    ones swept first). ``suffix``: ``.tmp``, or ``.old`` for a replaced output kept until the swap is done."""
    final = Path(final)
    directory = final.parent if str(final.parent) else Path(".")
    if suffix == ".tmp":
        sweep_stale(directory, final.name)
    _, tmp = _made(directory, final.name, suffix, lambda path: os.mkdir(path, 0o777))  # the umask applies
    return tmp


def move_aside(path) -> Path:
    """Rename the file ``path`` to a new registered ``.old`` sibling (swept when stale) and return it."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    _, aside = _made(directory, path.name, ".old", lambda new: os.replace(path, new))
    return aside


def _made(directory: Path, name: str, suffix: str, make) -> tuple:
    """``(make(path), path)`` for a new, unused ``path`` beside ``directory/name``, registered *before* it
    exists: a SIGTERM or Ctrl-C raised between making and registering (where ``mkstemp`` would leave a file
    no cleanup knows of) finds the name registered, and removing a path not made yet is a no-op."""
    for _ in range(100):
        path = directory / f"{_prefix(name)}{secrets.token_hex(4)}{suffix}"
        _register(path, directory / name)
        try:
            return make(path), path
        except FileExistsError:  # only this process's own names start with its prefix
            release(path)
    raise FileExistsError(f"no unused temporary name beside {directory / name}")


def _register(path: Path, final: Path) -> None:
    with _LOCK:
        _LIVE[path] = final


def release(path) -> None:
    """``path`` was renamed into place or removed: forget it."""
    with _LOCK:
        _LIVE.pop(Path(path), None)


def shown(path) -> Path:
    """``path`` as the user named it: inside (or equal to) a live temporary sibling, under the output
    that sibling becomes (``.report.123-ab.x.tmp/report.json`` -> ``report/report.json``)."""
    path = Path(path)
    with _LOCK:
        live = dict(_LIVE)
    for parent in (path, *path.parents):
        if parent in live:
            return live[parent] / path.relative_to(parent)
    return path


def remove_live() -> int:
    """Remove every registered temporary file and directory of this process (on SIGTERM or Ctrl-C,
    for the ones an unwinding ``except`` did not reach); returns how many were still there."""
    with _LOCK:
        paths = list(_LIVE)
        _LIVE.clear()
    removed = 0
    for path in paths:
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed += 1
        except OSError:
            pass
    return removed
