"""Shared fixtures over the data builders of ``builders.py`` (plain functions, importable by tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import build_world, planted_folds


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A scratch working directory holding ``data/`` (a link to the committed sample data) and an empty ``out/``."""
    (tmp_path / "data").symlink_to(Path(__file__).resolve().parents[1] / "data")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def planted():
    """Three LETOR-rotation folds with a planted neural signal (see :func:`builders.planted_folds`)."""
    return planted_folds()


@pytest.fixture(scope="session")
def scorer_world(tmp_path_factory):
    """Docs, queries, corpus statistics, a CLSM encoder and a ranker on disk (:func:`builders.build_world`)."""
    return build_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module")
def _dask_module_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        distributed.Client(cluster, timeout="60s") as c,
    ):
        yield c


@pytest.fixture
def dask_client(_dask_module_client):
    """A client of a 2-worker LocalCluster (single-threaded worker processes), shared by a module's Dask tests.

    Each test starts with both workers up: a worker the nanny restarted after the previous test may still be starting.
    """
    _dask_module_client.wait_for_workers(2, timeout=60)
    return _dask_module_client
