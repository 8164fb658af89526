"""The shared text analyzer: lowercase, punctuation removal, optional stopwords and stemming.

Every lexical statistic (corpus statistics and the features computed from them) is
defined over the tokens this analyzer produces, so the same :class:`Analyzer`
configuration must be used to fit and to transform; it is saved with the corpus
statistics for that reason.
"""

from __future__ import annotations

import dataclasses
import re
from itertools import compress

import Stemmer
import numpy as np

from ltrfeat.core.errors import ParameterError
from ltrfeat.core.wordsplit import SEPARATOR, joined_words

# Lucene's default English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET): small and conservative,
# so product and web titles keep their content words.
ENGLISH_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with".split()
)

# Runs of letters and digits (Unicode aware); everything else separates tokens. Underscore is
# punctuation here, unlike in ``\w``.
STOPWORD_LISTS = ("english",)  # named stopword lists an Analyzer takes
_TOKEN = re.compile(r"[^\W_]+")
_SEP = SEPARATOR.decode()


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
        if isinstance(self.stopwords, str) and self.stopwords not in STOPWORD_LISTS:
            raise ParameterError(
                f"stopwords must be None, {' or '.join(map(repr, STOPWORD_LISTS))} or a list of words, "
                f"got {self.stopwords!r}",
                param="stopwords",
            )
        if self.stemmer is not None and self.stemmer not in Stemmer.algorithms():
            raise ParameterError(
                f"unknown stemmer {self.stemmer!r}",
                fix=f"give --stem one of PyStemmer's: {', '.join(Stemmer.algorithms())}",
            )

    def _stopset(self) -> frozenset:
        if self.stopwords is None:
            return frozenset()
        if self.stopwords == "english":
            return ENGLISH_STOPWORDS
        return frozenset(w.lower() for w in self.stopwords)

    def _words(self, text: str) -> list[str]:
        return _TOKEN.findall(text.lower() if self.lowercase else text)

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
        if not texts:
            return [], np.zeros(1, dtype=np.int64)
        flat = joined_words(texts, words_of=self._words, lowercase=self.lowercase).decode("utf-8").split()
        is_sep = np.fromiter(map(_SEP.__eq__, flat), dtype=bool, count=len(flat))
        bounds = np.flatnonzero(is_sep)
        offsets = np.concatenate([[0], bounds - np.arange(len(bounds)), [len(flat) - len(bounds)]]).astype(np.int64)
        if len(bounds):
            flat = [t for t in flat if t != _SEP]
        stop = self._stopset()
        if stop:
            words = flat if self.lowercase else map(str.lower, flat)
            keep = ~np.fromiter(map(stop.__contains__, words), dtype=bool, count=len(flat))
            kept_before = np.concatenate([[0], np.cumsum(keep)])
            offsets = kept_before[offsets]
            flat = list(compress(flat, keep.tolist()))
        if self.stemmer and flat:
            distinct = list(dict.fromkeys(flat))  # far fewer than the tokens: stem each word once
            stems = dict(zip(distinct, Stemmer.Stemmer(self.stemmer).stemWords(distinct)))
            flat = list(map(stems.__getitem__, flat))
        return flat, offsets

    def to_json(self) -> dict:
        return {
            "lowercase": self.lowercase,
            "stopwords": list(self.stopwords) if isinstance(self.stopwords, tuple) else self.stopwords,
            "stemmer": self.stemmer,
        }

    @classmethod
    def from_json(cls, obj: dict) -> "Analyzer":
        stop = obj.get("stopwords")
        return cls(
            lowercase=bool(obj.get("lowercase", True)),
            stopwords=tuple(stop) if isinstance(stop, list) else stop,
            stemmer=obj.get("stemmer"),
        )
