"""Worker processes that die with the process that started them.

A ``kill -9`` of a command leaves no chance to stop its workers: without help, spawned workers (and
multiprocessing's resource tracker, which waits for them) would run on as orphans. :func:`spawn_pool`
starts workers that ask Linux to kill them when their parent dies (``prctl(PR_SET_PDEATHSIG)``);
elsewhere a watchdog thread in each worker notices the parent is gone within a second. Every task a
worker runs first checks that the worker imported the same ltrfeat files as its parent
(:func:`~ltrfeat.core.versions.check_package`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time

from ltrfeat.core.versions import check_package, package_digest

_PR_SET_PDEATHSIG = 1
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4  # glibc mallopt parameters


class _CheckedPool(concurrent.futures.ProcessPoolExecutor):
    """A process pool whose tasks first check their worker's ltrfeat files against ``digest`` (the parent's)."""

    digest = ""

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(_checked, self.digest, fn, *args, **kwargs)


def _checked(digest: str, fn, *args, **kwargs):
    check_package(digest)
    return fn(*args, **kwargs)


def spawn_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """A process pool of ``workers`` spawned processes (not forked: the caller may run torch or engine
    threads, which fork would copy mid-flight) that die with this process and refuse to run tasks when
    they imported other ltrfeat files than this process did (an upgrade or edit while the command ran)."""
    pool = _CheckedPool(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    pool.digest = package_digest()
    return pool


def die_with_parent(parent_pid: int) -> None:
    """In a worker: end when process ``parent_pid`` ends (parent-death signal on Linux, else a watchdog)."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        threading.Thread(target=_watch, args=(parent_pid,), daemon=True, name="ltrfeat-parent-watchdog").start()


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    os._exit(1)


def keep_freed_memory() -> bool:
    """In a worker that allocates and frees the same large buffers over and over (a CLSM training step's
    window matrices, tens of MB each): have glibc's malloc keep freed memory for reuse instead of returning
    it to the kernel, so a step does not pay page faults to zero fresh pages for every such buffer (glibc maps
    blocks over 32 MB afresh on every allocation). The process keeps its peak memory until it ends. Returns
    whether it applied (glibc only; a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl has no mallopt)
        return False
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))


def _restored() -> dict[int, int]:
    """The malloc settings :func:`freed_memory_kept` leaves behind: the environment's (``MALLOC_*_`` variables: Dask's
    nanny sets ``MALLOC_TRIM_THRESHOLD_`` for its workers) or glibc's defaults -- for the thresholds, where its dynamic
    ones settle (mmap 32 MiB, trim twice that) unless a variable had fixed them from the start (mmap 128 KiB)."""
    env = {name: os.environ.get(f"MALLOC_{name}_") for name in ("MMAP_MAX", "MMAP_THRESHOLD", "TRIM_THRESHOLD")}
    fixed = any(v is not None for v in env.values())
    mmap = int(env["MMAP_THRESHOLD"] or (128 << 10 if fixed else 32 << 20))
    return {
        _M_MMAP_MAX: int(env["MMAP_MAX"] or 65536),
        _M_MMAP_THRESHOLD: mmap,
        _M_TRIM_THRESHOLD: int(env["TRIM_THRESHOLD"] or (128 << 10 if fixed else 2 * mmap)),
    }


@contextlib.contextmanager
def freed_memory_kept():
    """:func:`keep_freed_memory` for a block that trains in a process that lives on (this process, a Dask worker):
    afterwards malloc maps and trims again (:func:`_restored`) and hands the block's freed memory back to the kernel
    (``malloc_trim``). Only glibc's malloc thresholds change, never a result."""
    if not keep_freed_memory():
        yield
        return
    try:
        yield
    finally:
        libc = ctypes.CDLL(None)
        for param, value in _restored().items():
            libc.mallopt(param, value)
        libc.malloc_trim(0)
