"""The versions of Python and of the libraries that shape a result, for bundles, models and reports, and the
digest of ltrfeat's own files that worker processes are checked against."""

from __future__ import annotations

import functools
import hashlib
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ltrfeat.core.errors import LtrfeatError

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


_PACKAGE_FILES = (".py", ".js", ".css")


@functools.cache
def package_digest() -> str:
    """SHA-256 (16 hex digits) of ltrfeat's own files (``.py``, ``.js``, ``.css``: their paths inside the package
    and their bytes) as this process first reads them. A process that hands work to other processes
    (:func:`ltrfeat.core.processes.spawn_pool`, a Dask cluster) compares theirs with its own
    (:func:`check_package`): a worker started after the files were upgraded or edited would run other code than
    the command that started it, and the results would mix two versions."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in _PACKAGE_FILES and "__pycache__" not in path.parts and path.is_file():
            h.update(path.relative_to(root).as_posix().encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


def check_package(expected: str) -> None:
    """Raise a one-line :class:`~ltrfeat.core.errors.LtrfeatError` when this process's
    :func:`package_digest` is not ``expected`` (the digest of the process that sent it work)."""
    found = package_digest()
    if found != expected:
        raise LtrfeatError(
            f"this worker process runs other ltrfeat files than the command that started it (files digest {found}, the "
            f"command's {expected}): ltrfeat was upgraded or edited while the command ran",
            path=Path(__file__).resolve().parent.parent,
            fix="run the command again once the installation is settled",
        )
