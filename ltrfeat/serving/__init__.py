"""Online serving: the :class:`Scorer` API and the HTTP re-ranking service (``ltrfeat serve``)."""

from ltrfeat.serving.scorer import CandidateError, Scorer

__all__ = ["CandidateError", "Scorer"]
