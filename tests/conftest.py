"""Shared fixtures over the data builders of ``builders.py`` (plain functions, importable by tests)."""

from __future__ import annotations

import pytest

from builders import build_world, planted_folds


@pytest.fixture(scope="session")
def planted():
    """Three LETOR-rotation folds with a planted neural signal (see :func:`builders.planted_folds`)."""
    return planted_folds()


@pytest.fixture(scope="session")
def scorer_world(tmp_path_factory):
    """Docs, queries, corpus statistics, a CLSM encoder and a ranker on disk (:func:`builders.build_world`)."""
    return build_world(tmp_path_factory.mktemp("world"))
