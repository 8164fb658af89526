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


class Interrupted(Exception):
    """A simulated kill right after a training checkpoint was written."""


def train_until_interrupted(monkeypatch, train, *, epoch: int = 1) -> None:
    """Run ``train()`` (which writes checkpoints) and stop it right after epoch ``epoch``'s checkpoint."""
    import pytest

    from ltrfeat.features.encoders import training

    write = training._write_checkpoint

    def write_then_stop(path, **kw):
        write(path, **kw)
        if kw["header"]["epoch"] == epoch:
            raise Interrupted

    monkeypatch.setattr(training, "_write_checkpoint", write_then_stop)
    with pytest.raises(Interrupted):
        train()
    monkeypatch.setattr(training, "_write_checkpoint", write)
