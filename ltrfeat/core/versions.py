"""The versions of Python and of the libraries that shape a result, for bundles, models and reports."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

# import name -> the distributions that may provide it, first found wins
_DISTRIBUTIONS = {"xgboost": ("xgboost", "xgboost-cpu"), "scikit-learn": ("scikit-learn",)}


def library_versions(*names: str) -> dict[str, str | None]:
    """``{"python": ..., "ltrfeat": ..., name: version, ...}`` for the installed distributions;
    None for one that is absent (``"0+unknown"`` for ltrfeat run from a source tree)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("ltrfeat", *names):
        out[name] = None
        for dist in _DISTRIBUTIONS.get(name, (name,)):
            try:
                out[name] = version(dist)
                break
            except PackageNotFoundError:
                continue
        if name == "ltrfeat" and out[name] is None:
            out[name] = "0+unknown"
    return out
