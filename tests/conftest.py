"""Shared fixtures: where the real data sets live, and skipping politely when absent."""
from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DATASETS = SHARED / "datasets"


def dataset_path(*parts) -> Path:
    """Path under ``../shared/datasets``; skips the test when it is absent."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (real data sets live in ../shared/datasets)")
    return path
