"""Worker-process settings of :mod:`ltrfeat.core.processes`."""

from __future__ import annotations

import subprocess
import sys

import pytest

# allocate, touch and free a 48 MB buffer 8 times; print the minor page faults of the last 7
_FAULTS = """
import ctypes, resource, sys
from ltrfeat.core.processes import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def touch():
    buf = ctypes.create_string_buffer(48 << 20)  # calloc-like: zeroed, every page written
    del buf
touch()
before = faults()
for _ in range(7):
    touch()
print(faults() - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc settings")
def test_keep_freed_memory_reuses_large_buffers_instead_of_paging_them_in_again():
    # 48 MB is 12,288 pages: glibc maps such a block afresh on every allocation unless told to keep freed memory
    assert _faults("default") > 7 * 10_000
    assert _faults("keep") < 7 * 1_000


# a copy of the package: start a pool, change one file of the copy, then hand the pool a task
_CHANGED = """
import pathlib, sys
import ltrfeat
assert pathlib.Path(ltrfeat.__file__).parent.parent == pathlib.Path(sys.argv[2]), ltrfeat.__file__
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.processes import spawn_pool
with spawn_pool(1) as pool:
    assert pool.submit(abs, -3).result() == 3  # the worker started before the change: same files
if sys.argv[1] == "edit":
    target = pathlib.Path(sys.argv[2]) / "ltrfeat" / "core" / "text.py"
    target.write_text(target.read_text() + "\\n# edited\\n")
with spawn_pool(1) as pool:
    try:
        print(pool.submit(abs, -3).result())
    except LtrfeatError as exc:
        print("error:", exc)
"""


@pytest.mark.parametrize("mode", ["same", "edit"])
def test_a_pool_worker_that_imported_changed_package_files_refuses_its_tasks(tmp_path, mode):
    import os
    import shutil

    import ltrfeat

    shutil.copytree(
        os.path.dirname(ltrfeat.__file__), tmp_path / "ltrfeat", ignore=shutil.ignore_patterns("__pycache__")
    )
    env = os.environ | {"PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", _CHANGED, mode, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # with -c the working directory comes first on sys.path: not this checkout's ltrfeat
        check=True,
    ).stdout.strip()
    if mode == "same":
        assert out == "3"
    else:  # the digest is the one this process saw first, before the edit
        assert out.startswith("error: ") and out.count("error: ") == 1
        assert "this worker process runs other ltrfeat files than the command that started it" in out
        assert "run the command again" in out and "\n" not in out


_BLOCK = """
import ctypes, resource
from ltrfeat.core.processes import freed_memory_kept
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
def repeated():
    buf = ctypes.create_string_buffer(48 << 20)
    del buf
    before = faults()
    for _ in range(7):
        buf = ctypes.create_string_buffer(48 << 20)
        del buf
    return faults() - before
with freed_memory_kept():
    inside = repeated()
    kept = rss()
freed = rss()
print(inside, repeated(), kept - freed)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc settings")
def test_freed_memory_kept_applies_inside_the_block_only_and_hands_the_memory_back():
    out = subprocess.run([sys.executable, "-c", _BLOCK], capture_output=True, text=True, check=True)
    inside, after, returned = map(int, out.stdout.split())
    assert inside < 7 * 1_000  # reused while training
    assert after > 7 * 10_000  # afterwards such a block is mapped afresh again, as by default
    assert returned > 40 << 20  # the block's freed 48 MB went back to the kernel at its end
