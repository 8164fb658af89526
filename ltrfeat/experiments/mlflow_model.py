"""A ranker file as an MLflow pyfunc model (``train-ranker --mlflow URI --mlflow-register NAME``).

MLflow loads it from this file's code (models from code: nothing is unpickled) and the ranker from its own
files (:func:`ltrfeat.rankers.models.load_ranker`). ``predict`` takes a DataFrame with a ``letor`` column of
LETOR/svmlight file paths (each with its ``.features.json`` sidecar) and returns the scores of their rows, in
order; before scoring a file it checks that the file's columns were made as the ranker's training columns
were (the feature-pipeline pins, :func:`ltrfeat.features.pins.check_same_pipeline`) and refuses it otherwise.
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import numpy as np
from mlflow.pyfunc import PythonModel

from ltrfeat.core.errors import LtrfeatError

INPUT_COLUMN = "letor"


class PinnedRanker(PythonModel):
    """Scores LETOR files with a ranker after checking their feature pins."""

    def load_context(self, context):
        from ltrfeat.rankers.models import load_ranker

        self.ranker = load_ranker(context.artifacts["model"])

    def predict(self, context, model_input, params=None):
        from ltrfeat.core.letor import read_letor
        from ltrfeat.features.pins import check_same_pipeline

        if INPUT_COLUMN not in getattr(model_input, "columns", ()):
            raise LtrfeatError(
                f"the ranker model takes a DataFrame with a {INPUT_COLUMN!r} column of LETOR file paths",
                fix=f"predict(pd.DataFrame({{{INPUT_COLUMN!r}: ['test.letor']}}))",
            )
        scores = []
        for path in model_input[INPUT_COLUMN]:
            data = read_letor(path)
            check_same_pipeline(self.ranker.feature_map_, data.feature_map, path=path)
            scores.append(self.ranker.predict(data))
        return np.concatenate(scores) if scores else np.zeros(0)


def log_ranker(model_path, *, register: str | None = None):
    """Log the ranker at ``model_path`` (and its ``.meta.json``) to the active MLflow run as a pyfunc model
    named ``ranker``; ``register``: also register it under that name. Returns MLflow's model info."""
    meta = Path(f"{model_path}.meta.json")
    return mlflow.pyfunc.log_model(
        name="ranker",
        python_model=Path(__file__),
        artifacts={"model": str(model_path), "meta": str(meta)},
        registered_model_name=register,
        pip_requirements=[],
    )


mlflow.models.set_model(PinnedRanker())
