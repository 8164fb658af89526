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
