"""The shared text analyzer: lowercase, punctuation removal, optional stopwords and stemming.

Every lexical statistic (corpus statistics and the features computed from them) is
defined over the tokens this analyzer produces, so the same :class:`Analyzer`
configuration must be used to fit and to transform; it is saved with the corpus
statistics for that reason.
"""
from __future__ import annotations

import dataclasses
import re

import Stemmer
import numpy as np

# Lucene's default English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET): small and conservative,
# so product and web titles keep their content words.
ENGLISH_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with".split()
)

# Runs of letters and digits (Unicode aware); everything else separates tokens. Underscore is
# punctuation here, unlike in ``\w``.
_TOKEN = re.compile(r"[^\W_]+")
_SEP = "\x00"
_TOKEN_OR_SEP = re.compile(r"[^\W_]+|\x00")


@dataclasses.dataclass(frozen=True)
class Analyzer:
    """Turns a text into a list of tokens.

    Parameters
    ----------
    lowercase : fold case (``str.lower``) before tokenising.
    stopwords : ``None`` (keep every token), ``"english"`` (Lucene's 33-word English list)
        or an explicit tuple of words (compared after lowercasing).
    stemmer : ``None`` or a Snowball algorithm name understood by PyStemmer, e.g.
        ``"english"`` (Porter2) or ``"porter"``.

    Tokens are maximal runs of Unicode letters and digits, so punctuation (including
    ``-``, ``/``, ``_`` and ``&``) splits words: ``"12-Gauge"`` → ``["12", "gauge"]``.
    """

    lowercase: bool = True
    stopwords: str | tuple[str, ...] | None = None
    stemmer: str | None = None

    def __post_init__(self):
        if isinstance(self.stopwords, (list, set, frozenset)):
            object.__setattr__(self, "stopwords", tuple(sorted(self.stopwords)))
        if isinstance(self.stopwords, str) and self.stopwords != "english":
            raise ValueError(f"stopwords must be None, 'english' or a list of words, got {self.stopwords!r}")
        if self.stemmer is not None and self.stemmer not in Stemmer.algorithms():
            raise ValueError(f"unknown stemmer {self.stemmer!r}; PyStemmer offers {', '.join(Stemmer.algorithms())}")

    def _stopset(self) -> frozenset:
        if self.stopwords is None:
            return frozenset()
        if self.stopwords == "english":
            return ENGLISH_STOPWORDS
        return frozenset(w.lower() for w in self.stopwords)

    def tokens(self, text: str) -> list[str]:
        """The tokens of one text."""
        return self.analyze([text])[0]

    def analyze(self, texts) -> list[list[str]]:
        """Tokens of each text in ``texts``."""
        flat, offsets = self.analyze_flat(texts)
        return [flat[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]

    def analyze_flat(self, texts) -> tuple[list[str], np.ndarray]:
        """All tokens of ``texts`` in one list, and offsets: text ``i`` is ``flat[offsets[i]:offsets[i+1]]``."""
        texts = [str(t) for t in texts]
        joined = _SEP.join(texts)
        if self.lowercase:
            joined = joined.lower()
        if joined.count(_SEP) == len(texts) - 1:
            # one regex pass over all texts; each separator comes out as its own token
            flat = _TOKEN_OR_SEP.findall(joined)
            bounds = np.asarray([i for i, t in enumerate(flat) if t == _SEP], dtype=np.int64)
            offsets = np.concatenate([[0], bounds - np.arange(len(bounds)), [len(flat) - len(bounds)]]).astype(np.int64)
            flat = [t for t in flat if t != _SEP]
        else:  # no texts, or a text holds the separator itself: go text by text
            per_text = [_TOKEN.findall(t.lower() if self.lowercase else t) for t in texts]
            flat = [t for toks in per_text for t in toks]
            offsets = np.zeros(len(texts) + 1, dtype=np.int64)
            np.cumsum([len(t) for t in per_text], out=offsets[1:])
        stop = self._stopset()
        if stop:
            keep = np.fromiter(((t if self.lowercase else t.lower()) not in stop for t in flat), dtype=bool, count=len(flat))
            kept_before = np.concatenate([[0], np.cumsum(keep)])
            offsets = kept_before[offsets]
            flat = [t for t, k in zip(flat, keep.tolist()) if k]
        if self.stemmer and flat:
            flat = Stemmer.Stemmer(self.stemmer).stemWords(flat)
        return flat, offsets

    def to_json(self) -> dict:
        return {"lowercase": self.lowercase,
                "stopwords": list(self.stopwords) if isinstance(self.stopwords, tuple) else self.stopwords,
                "stemmer": self.stemmer}

    @classmethod
    def from_json(cls, obj: dict) -> "Analyzer":
        stop = obj.get("stopwords")
        return cls(lowercase=bool(obj.get("lowercase", True)),
                   stopwords=tuple(stop) if isinstance(stop, list) else stop,
                   stemmer=obj.get("stemmer"))
