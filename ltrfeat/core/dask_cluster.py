"""Connecting to a Dask cluster: ``--dask local[:N] | ADDRESS | SCHEDULER.json`` and its workers."""

from __future__ import annotations

import contextlib
from types import ModuleType

from ltrfeat.core.cores import available_cores
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.versions import package_digest


def _import_distributed() -> ModuleType | None:
    try:
        import distributed
    except ImportError:  # the optional `dask` extra is not installed
        return None
    return distributed


_distributed = _import_distributed()

INSTALL_FIX = "install the Dask extra: pip install 'ltrfeat[dask]'"


@contextlib.contextmanager
def dask_client(spec: str, *, timeout: str = "30s"):
    """A :class:`distributed.Client` for ``--dask SPEC``, closed (with its cluster) on exit.

    ``local`` starts a ``LocalCluster`` with one single-threaded worker process per CPU,
    ``local:N`` with N workers; a ``.json`` path is a scheduler file; anything else is a
    scheduler address (``tcp://host:8786``), given ``timeout`` to answer. The workers must run the same
    ltrfeat files as this process (:func:`check_workers`).
    """
    if _distributed is None:
        raise LtrfeatError("--dask needs the dask and distributed packages", fix=INSTALL_FIX)
    spec = str(spec).strip()
    kind, _, count = spec.partition(":")
    if kind == "local":
        try:
            n_workers = int(count) if count else available_cores()
        except ValueError:
            n_workers = 0
        if n_workers < 1:
            raise LtrfeatError(
                f"--dask {spec!r}: the worker count must be a positive integer", fix="e.g. --dask local:2"
            )
        with (
            _distributed.LocalCluster(
                n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            _distributed.Client(cluster) as client,
        ):
            check_workers(client)
            yield client
        return
    try:
        client = (
            _distributed.Client(scheduler_file=spec, timeout=timeout)
            if spec.endswith(".json")
            else _distributed.Client(spec, timeout=timeout)
        )
    except (OSError, ValueError, TimeoutError) as exc:
        raise LtrfeatError(
            f"cannot connect to the Dask scheduler {spec!r} ({type(exc).__name__}: {exc})",
            fix="give a running scheduler's address (tcp://host:8786), its scheduler file, or local[:N]",
        ) from None
    with client:
        check_workers(client)
        yield client


def check_workers(client) -> None:
    """A one-line error unless every worker of ``client``'s cluster imports the ltrfeat files this process does
    (:func:`~ltrfeat.core.versions.package_digest`: tasks on a worker with another installation would mix two
    versions' results)."""
    expected = package_digest()
    try:
        found = client.run(package_digest)
    except Exception as exc:  # noqa: BLE001 -- whatever a worker raised: most often, no ltrfeat there
        raise LtrfeatError(
            f"a Dask worker cannot run ltrfeat ({type(exc).__name__}: {exc})",
            fix="install the same ltrfeat on every worker as here",
        ) from None
    other = sorted(address for address, digest in found.items() if digest != expected)
    if other:
        raise LtrfeatError(
            f"{len(other)} of {len(found)} Dask workers ({', '.join(other[:3])}{', ...' if len(other) > 3 else ''}) "
            f"run other ltrfeat files than this process (files digest {found[other[0]]}, here {expected})",
            fix="install the same ltrfeat on every worker as here",
        )


def worker_addresses(client) -> list[str]:
    """Addresses of every worker of ``client``'s cluster, sorted."""
    try:
        info = client.scheduler_info(n_workers=-1)  # newer distributed lists only 5 workers by default
    except TypeError:
        info = client.scheduler_info()
    return sorted(info["workers"])
