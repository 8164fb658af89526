"""How many CPU cores this process may really use (affinity mask and cgroup quota, not the host's count).

``os.cpu_count()`` counts the host's cores: in a container limited to 2 CPUs on a 64-core host, torch
and LightGBM would start 64 threads and spend their time switching. Thread defaults use this instead.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def _cgroup_limit(path: Path = CGROUP_CPU_MAX) -> int | None:
    """Cores allowed by a cgroup v2 quota (``"200000 100000"`` -> 2), None without a quota."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, math.ceil(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def available_cores() -> int:
    """Cores in this process's affinity mask, capped by a cgroup CPU quota; at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        n = os.cpu_count() or 1
    limit = _cgroup_limit()
    return max(1, min(n, limit) if limit else n)
