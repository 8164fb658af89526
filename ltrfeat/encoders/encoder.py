"""The trained encoder the rest of the project uses: hasher + towers + training record."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ltrfeat.encoders.bundle import build_checked, read_bundle, write_bundle
from ltrfeat.encoders.model import TwoTowerModel
from ltrfeat.core.errors import ModelFileError, TextTableError
from ltrfeat.encoders.hashing import TrigramHasher


def distinct(texts) -> tuple[list, np.ndarray]:
    """Distinct texts in first-seen order and, for each input, the index of its text."""
    index = dict.fromkeys(texts)
    for i, text in enumerate(index):
        index[text] = i
    return list(index), np.fromiter(map(index.__getitem__, texts), dtype=np.int64, count=len(texts))


def check_texts(texts, what: str = "text") -> list:
    """``texts`` as a list, rejecting anything that is not a string (NaN, None, numbers)."""
    texts = list(texts)
    if set(map(type, texts)) <= {str}:
        return texts
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TextTableError(
                f"{what} {i + 1} is {text!r}, not a string",
                fix="give every query and document a text (empty string if none)",
            )
    return texts


def aligned_cosine(encoder, queries, docs, *, batch_size: int) -> np.ndarray:
    """Row-wise dot product of ``encoder.encode`` vectors for aligned query and doc lists (their cosine
    when ``encode`` L2-normalises)."""
    queries, docs = list(queries), list(docs)
    if len(queries) != len(docs):
        raise ValueError(f"{len(queries)} queries but {len(docs)} documents: the lists must be aligned")
    q = encoder.encode(queries, side="query", batch_size=batch_size)
    d = encoder.encode(docs, side="doc", batch_size=batch_size)
    return np.einsum("ij,ij->i", q, d)


class Encoder:
    """A trained two-tower text encoder.

    Its relevance score (:attr:`score`) is the cosine of the semantic vectors, or for an encoder
    trained with ``score="dot"`` (DSE) their raw dot product; :meth:`encode` returns the vectors that
    score is a plain dot product of (L2-normalised for cosine, raw tanh outputs in [-1, 1]^L for dot).

    Parameters
    ----------
    hasher : the fitted :class:`TrigramHasher`.
    model : the :class:`TwoTowerModel`.
    training : JSON-able record of how it was trained (parameters, data hash, validation
        metrics); stored in the bundle.
    """

    def __init__(self, hasher: TrigramHasher, model: TwoTowerModel, *, training: dict | None = None):
        self.hasher = hasher
        self.model = model
        self.training = training or {}

    @property
    def dim(self) -> int:
        return int(self.model.config["tower"]["out"])

    @property
    def score(self) -> str:
        """``"cosine"`` or ``"dot"``: what :meth:`similarity` computes (bundles predating the choice: cosine)."""
        return self.model.score

    def encode(self, texts, *, side: str = "query", batch_size: int = 1024) -> np.ndarray:
        """float32 vectors (n, L), L2-normalised for a cosine encoder and raw (unnormalised) for a dot
        encoder, so that ``similarity`` is their dot product either way; each distinct text is encoded once."""
        tower = self.model.tower(side)
        uniq, inverse = distinct(check_texts(texts, side))
        out = np.zeros((len(uniq), self.dim), dtype=np.float32)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                for start in range(0, len(uniq), batch_size):
                    chunk = uniq[start : start + batch_size]
                    vectors = tower(tower.prepare(self.hasher, chunk))
                    if self.model.normalized:
                        vectors = F.normalize(vectors, dim=1)
                    out[start : start + len(chunk)] = vectors.numpy()
        finally:
            self.model.train(was_training)
        return out[inverse]

    def similarity(self, queries, docs, *, batch_size: int = 1024) -> np.ndarray:
        """Relevance of each aligned (query, doc) pair, float32 (n,): cosine, or the dot product of a
        dot encoder (in [-L, L])."""
        return aligned_cosine(self, queries, docs, batch_size=batch_size)

    # -- persistence ---------------------------------------------------------------------
    def header(self) -> dict:
        return {"model": self.model.config, "hasher": self.hasher.to_json(), "training": self.training}

    def save(self, path) -> None:
        """Write the ``.ltrenc`` bundle (atomically)."""
        write_bundle(path, kind="encoder", header=self.header(), tensors=self.model.state_dict())

    @classmethod
    def from_parts(cls, header: dict, tensors: dict, *, path=None) -> "Encoder":
        """Rebuild an encoder from a bundle header and its tensors (``path`` for messages)."""
        try:
            hasher = TrigramHasher.from_json(header["hasher"])
            model = build_checked(TwoTowerModel, header["model"], tensors, path=path)
            model.load_state_dict(tensors, strict=True)
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            problem = " ".join(str(exc).split())[:300]
            raise ModelFileError(
                f"encoder bundle does not match its model config: {problem}",
                path=path,
                fix="the file is damaged or from an incompatible ltrfeat; retrain it",
            ) from None
        if hasher.n_features_ != model.config["n_features"]:
            raise ModelFileError(
                "hashing vocabulary and model input size disagree", path=path, fix="the file is damaged; retrain it"
            )
        model.eval()
        return cls(hasher, model, training=header.get("training") or {})

    @classmethod
    def load(cls, path) -> "Encoder":
        """Read an ``.ltrenc`` bundle; never unpickles."""
        header, tensors = read_bundle(path, kind="encoder")
        return cls.from_parts(header, tensors, path=path)
