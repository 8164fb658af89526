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
