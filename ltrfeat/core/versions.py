"""The versions of Python and of the libraries that shape a result, for bundles, models and reports."""

from __future__ import annotations

import functools
import platform
from importlib.metadata import PackageNotFoundError, version

# import name -> the distributions that may provide it, first found wins
_DISTRIBUTIONS = {"xgboost": ("xgboost", "xgboost-cpu"), "scikit-learn": ("scikit-learn",)}


@functools.cache
def _version(name: str) -> str | None:
    """The installed version of ``name`` (looked up once per process: reading the metadata scans sys.path)."""
    for dist in _DISTRIBUTIONS.get(name, (name,)):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return "0+unknown" if name == "ltrfeat" else None


def library_versions(*names: str) -> dict[str, str | None]:
    """``{"python": ..., "ltrfeat": ..., name: version, ...}`` for the installed distributions;
    None for one that is absent (``"0+unknown"`` for ltrfeat run from a source tree)."""
    return {"python": platform.python_version()} | {name: _version(name) for name in ("ltrfeat", *names)}
