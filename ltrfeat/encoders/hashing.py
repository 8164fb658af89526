"""Letter-trigram word hashing (DSSM / CLSM) with cached, vectorised batch preparation.

A text is normalised (NFKC, lowercase, apostrophes deleted, every other non-alphanumeric
character a word break, digits kept), each word ``w`` becomes ``#w#`` and is cut into letter
trigrams: ``boy`` -> ``#bo``, ``boy``, ``oy#``.

Trigram ids:

* ``0`` (:data:`UNKNOWN_ID`) -- a trigram outside the fitted vocabulary (rarer than
  ``min_count`` in the training texts). The towers start its weights at zero, so an unseen
  trigram contributes nothing unless training saw rare trigrams mapped there.
* ``1`` (:data:`BOUNDARY_ID`) -- the CLSM sentence-boundary word ``<s>``.
* ``2 ...`` -- the vocabulary learned by :meth:`TrigramHasher.fit` (most frequent first, ties
  alphabetical), or, with ``n_buckets``, ``2 + crc32(trigram) % n_buckets`` (no vocabulary).

Each distinct word is hashed once and cached; a batch is assembled with numpy from the cached
per-word id arrays, so preparing a batch costs one byte-string split plus array gathers. The word
table grows by doubling (appending is amortised linear) and, with ``cache_words`` set (``serve`` sets
it), starts afresh when a call would take it beyond that many words: the table is a cache, and its
size changes the speed, never the ids.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from ltrfeat.core.unicode_norm import nfkc
from ltrfeat.core.wordsplit import SEPARATOR, joined_words

UNKNOWN_ID = 0
BOUNDARY_ID = 1
N_RESERVED = 2

_APOSTROPHES = re.compile(r"['\u2019`]")
_WORD = re.compile(r"[^\W_]+")
_ASCII_APOSTROPHES = b"'`"
_SEP_ID = -2  # the text separator's id in the word index


@dataclass(frozen=True)
class TokenizedTexts:
    """Texts as ragged sequences of word ids into a hasher's word table.

    ``words[offsets[i]:offsets[i + 1]]`` are the word ids of text ``i``.
    """

    words: np.ndarray  # int64
    offsets: np.ndarray  # int64, len n_texts + 1
    table: int | None = None  # the word table the ids point into (its generation); None: not a hasher's

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, rows) -> "TokenizedTexts":
        """The texts at positions ``rows`` (vectorised ragged gather)."""
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return TokenizedTexts(self.words[_ragged_positions(starts, lengths, offsets)], offsets, self.table)


@dataclass(frozen=True)
class BagBatch:
    """DSSM input: each text's trigram ids, concatenated (``nn.EmbeddingBag`` input + offsets)."""

    ids: np.ndarray  # int64, all trigram ids of all texts
    offsets: np.ndarray  # int64, start of each text in ``ids`` (len n_texts)


@dataclass(frozen=True)
class SequenceBatch:
    """CLSM input: the batch's distinct word bags and every text's word windows, flat.

    Row 0 of the word table is the empty word (a text with no words gets one, so every text
    has a window), row 1 is ``<s>``, then the batch's distinct words. Each text is padded with
    ``d`` x ``<s>`` at both ends; ``windows[j]`` holds the word-table rows of window ``j``
    (n = 2d + 1 of them, centre in the middle), text ``i`` owns ``lengths[i]`` consecutive
    windows -- no padding between texts.
    """

    word_ids: np.ndarray  # int64 trigram ids of the batch's word table
    word_offsets: np.ndarray  # int64 (n_words,)
    windows: np.ndarray  # int64 (sum(lengths), 2d + 1)
    lengths: np.ndarray  # int64 (B,)


def _appended(buffer: np.ndarray, used: int, values: np.ndarray) -> np.ndarray:
    """``buffer`` (``used`` items filled) with ``values`` written after them, doubled when full."""
    need = used + len(values)
    if need > len(buffer):
        grown = np.empty(max(need, 2 * len(buffer), 1024), dtype=buffer.dtype)
        grown[:used] = buffer[:used]
        buffer = grown
    buffer[used:need] = values
    return buffer


def _ragged_positions(starts, lengths, out_offsets) -> np.ndarray:
    """Flat source positions for a ragged gather of ``lengths[i]`` items from ``starts[i]``."""
    total = int(out_offsets[-1])
    return np.repeat(starts - out_offsets[:-1], lengths) + np.arange(total, dtype=np.int64)


class TrigramHasher:
    """Letter-trigram word hasher with a vocabulary learned from training texts.

    Parameters
    ----------
    min_count : trigrams seen fewer times than this in the training texts map to the
        unknown id 0.
    n_buckets : if set, trigrams are hashed into this many buckets (crc32) instead of a
        learned vocabulary; nothing is unknown then.
    max_word_len : longer words are cut to this many characters (bounds the trigrams per word).
    cache_words : most words the word table keeps between calls (None: every word seen); a call that
        would exceed it starts a new table, and tokens of the old one are refused (tokenize again).
    """

    def __init__(
        self,
        *,
        min_count: int = 1,
        n_buckets: int | None = None,
        max_word_len: int = 32,
        cache_words: int | None = None,
    ):
        self.min_count = min_count
        self.n_buckets = n_buckets
        self.max_word_len = max_word_len
        self.cache_words = cache_words

    # -- normalisation -------------------------------------------------------------------
    def words(self, text: str) -> list[str]:
        """Normalised words of ``text``: lowercase, punctuation removed, numbers kept."""
        text = _APOSTROPHES.sub("", nfkc(text).lower())
        cut = self.max_word_len
        return [w[:cut] for w in _WORD.findall(text)]

    @staticmethod
    def trigrams(word: str) -> list[str]:
        """Letter trigrams of ``#word#`` in order (``boy`` -> ``#bo``, ``boy``, ``oy#``)."""
        marked = f"#{word}#"
        return [marked[i : i + 3] for i in range(len(marked) - 2)]

    # -- fitting -------------------------------------------------------------------------
    def fit(self, texts=()) -> "TrigramHasher":
        """Learn the trigram vocabulary from ``texts`` (an iterable of str).

        With ``n_buckets`` there is nothing to learn and ``texts`` may be empty.
        """
        if self.n_buckets is not None:
            if int(self.n_buckets) < 1:
                raise ValueError(f"n_buckets must be a positive integer, got {self.n_buckets!r}")
            self.vocabulary_ = None
            self.n_features_ = N_RESERVED + int(self.n_buckets)
        else:
            if int(self.min_count) < 1:
                raise ValueError(f"min_count must be >= 1, got {self.min_count!r}")
            word_counts = Counter()
            for text in texts:
                word_counts.update(self.words(text))
            counts = Counter()
            for word, count in word_counts.items():
                for tri in self.trigrams(word):
                    counts[tri] += count
            kept = sorted((t for t, c in counts.items() if c >= self.min_count), key=lambda t: (-counts[t], t))
            if not kept:
                raise ValueError(
                    "no letter trigram reaches min_count in the training texts; give non-empty texts or lower min_count"
                )
            self.vocabulary_ = {tri: N_RESERVED + i for i, tri in enumerate(kept)}
            self.n_features_ = N_RESERVED + len(kept)
        self._reset_cache()
        return self

    def _check_fitted(self):
        if not hasattr(self, "n_features_"):
            raise RuntimeError("TrigramHasher is not fitted; call fit(texts) first")

    def _reset_cache(self):
        # word (utf-8 bytes) -> row of the word table; the table is flat trigram ids with per-word start
        # and length, the first _n_flat / _n_words items of each buffer filled
        self._word_index: dict[bytes, int] = {SEPARATOR: _SEP_ID}
        self._flat = np.zeros(0, dtype=np.int64)
        self._starts = np.zeros(0, dtype=np.int64)
        self._lens = np.zeros(0, dtype=np.int64)
        self._n_flat = self._n_words = 0
        self._table = getattr(self, "_table", -1) + 1

    @property
    def cached_words(self) -> int:
        """Words in the word table now."""
        return self._n_words

    def _trigram_ids(self, trigrams: list[str]) -> np.ndarray:
        if self.vocabulary_ is None:
            n = int(self.n_buckets)
            values = (N_RESERVED + zlib.crc32(t.encode("utf-8")) % n for t in trigrams)
        else:
            values = map(self.vocabulary_.get, trigrams, repeat(UNKNOWN_ID))
        return np.fromiter(values, dtype=np.int64, count=len(trigrams))

    def _add_words(self, words: list[bytes]) -> None:
        """Append distinct, not yet cached words (utf-8) to the word table, all in one pass."""
        marked = [f"#{w}#" for w in map(bytes.decode, words)]
        trigrams = [m[i : i + 3] for m in marked for i in range(len(m) - 2)]
        lens = np.fromiter(map(len, marked), dtype=np.int64, count=len(words)) - 2  # len(#w#) - 2 trigrams
        starts = self._n_flat + np.cumsum(lens) - lens
        first = self._n_words
        self._word_index.update(zip(words, range(first, first + len(words))))
        self._flat = _appended(self._flat, self._n_flat, self._trigram_ids(trigrams))
        self._starts = _appended(self._starts, first, starts)
        self._lens = _appended(self._lens, first, lens)
        self._n_flat += len(trigrams)
        self._n_words += len(words)

    def word_trigrams(self, word: str) -> list[int]:
        """Trigram ids of one (already normalised) word; cached per word."""
        self._check_fitted()
        key = word.encode("utf-8")
        if key not in self._word_index:
            if self.cache_words is not None and self._n_words >= self.cache_words:
                self._reset_cache()
            self._add_words([key])
        row = self._word_index[key]
        return self._flat[self._starts[row] : self._starts[row] + self._lens[row]].tolist()

    # -- batches -------------------------------------------------------------------------
    def tokenize(self, texts) -> TokenizedTexts:
        """Word ids (into the hasher's cached word table) of each text, as a ragged array.

        All texts are split as one byte string (:func:`~ltrfeat.core.wordsplit.joined_words`); the
        words are exactly :meth:`words` of each text.
        """
        self._check_fitted()
        texts = list(texts)
        tokens = joined_words(texts, words_of=self.words, lowercase=True, delete=_ASCII_APOSTROPHES).split()
        ids, missing, new = self._lookup(tokens)
        if len(missing):  # new words, and words over max_word_len (the table holds them cut)
            fresh = [w for w in dict.fromkeys(new) if w not in self._word_index]
            if self.cache_words is not None and self._n_words and self._n_words + len(fresh) > self.cache_words:
                self._reset_cache()  # a new table holds this call's words (all of them, even beyond the bound)
                ids, missing, new = self._lookup(tokens)
                fresh = list(dict.fromkeys(new))
            self._add_words(fresh)
            ids[missing] = [self._word_index[w] for w in new]
        sep = ids == _SEP_ID
        text_of_word = np.cumsum(sep)[~sep]
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.bincount(text_of_word, minlength=len(texts)), out=offsets[1:])
        return TokenizedTexts(ids[~sep], offsets, self._table)

    def _lookup(self, tokens: list[bytes]) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
        """Word-table rows of ``tokens`` (-1: not in the table), the positions not found and their words (cut)."""
        ids = np.fromiter(map(self._word_index.get, tokens, repeat(-1)), dtype=np.int64, count=len(tokens))
        missing = np.flatnonzero(ids == -1)
        cut = self.max_word_len
        new = [tokens[p] for p in missing]
        return ids, missing, [w if len(w) <= cut else w.decode("utf-8")[:cut].encode("utf-8") for w in new]

    def _as_tokens(self, texts) -> TokenizedTexts:
        if not isinstance(texts, TokenizedTexts):
            return self.tokenize(list(texts))
        if texts.table != self._table:
            raise RuntimeError("these tokens point into an earlier word table of the hasher; tokenize the texts again")
        return texts

    def bag_batch(self, texts) -> BagBatch:
        """DSSM batch: flat trigram ids and per-text offsets (texts or :class:`TokenizedTexts`)."""
        tokens = self._as_tokens(texts)
        word_lens = self._lens[tokens.words]
        cum = np.zeros(len(word_lens) + 1, dtype=np.int64)
        np.cumsum(word_lens, out=cum[1:])
        ids = self._flat[_ragged_positions(self._starts[tokens.words], word_lens, cum)]
        return BagBatch(ids=ids, offsets=cum[tokens.offsets[:-1]])

    def sequence_batch(self, texts, *, context: int = 1) -> SequenceBatch:
        """CLSM batch with ``context`` (= d) ``<s>`` words padded at both ends of every text."""
        tokens = self._as_tokens(texts)
        n = len(tokens)
        lengths = np.maximum(tokens.lengths, 1)  # an empty text keeps one empty word (row 0)
        uniq, inverse = np.unique(tokens.words, return_inverse=True)
        # all padded texts back to back: d x <s>, words, d x <s>
        padded = lengths + 2 * context
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(padded, out=starts[1:])
        seq = np.ones(int(starts[-1]), dtype=np.int64)
        seq[starts[:-1] + context] = 0  # stays 0 only for empty texts
        text_of_word = np.repeat(np.arange(n), tokens.lengths)
        within = np.arange(len(tokens.words)) - np.repeat(tokens.offsets[:-1], tokens.lengths)
        seq[starts[:-1][text_of_word] + context + within] = 2 + inverse.reshape(-1)
        first = (
            np.repeat(starts[:-1], lengths)
            + np.arange(int(lengths.sum()))
            - np.repeat(np.cumsum(lengths) - lengths, lengths)
        )
        windows = seq[first[:, None] + np.arange(2 * context + 1)[None, :]]
        # word table: row 0 the empty word, row 1 <s>, then the batch's distinct words
        word_lens = self._lens[uniq]
        cum = np.zeros(len(uniq) + 1, dtype=np.int64)
        np.cumsum(word_lens, out=cum[1:])
        flat = self._flat[_ragged_positions(self._starts[uniq], word_lens, cum)]
        return SequenceBatch(
            word_ids=np.concatenate([[BOUNDARY_ID], flat]).astype(np.int64),
            word_offsets=np.concatenate([[0, 0], 1 + cum[:-1]]).astype(np.int64),
            windows=windows,
            lengths=lengths,
        )

    # -- persistence ---------------------------------------------------------------------
    def to_json(self) -> dict:
        """Parameters and vocabulary as a JSON-serialisable dict (trigrams in id order)."""
        self._check_fitted()
        vocab = None if self.vocabulary_ is None else sorted(self.vocabulary_, key=self.vocabulary_.get)
        return {
            "min_count": self.min_count,
            "n_buckets": self.n_buckets,
            "max_word_len": self.max_word_len,
            "normalisation": "nfkc-lower-strip-apostrophes-split-nonalnum",
            "vocabulary": vocab,
        }

    @classmethod
    def from_json(cls, data: dict) -> "TrigramHasher":
        """Rebuild a fitted hasher from :meth:`to_json` output."""
        hasher = cls(min_count=data["min_count"], n_buckets=data["n_buckets"], max_word_len=data["max_word_len"])
        vocab = data["vocabulary"]
        if vocab is None:
            hasher.vocabulary_ = None
            hasher.n_features_ = N_RESERVED + int(hasher.n_buckets)
        else:
            hasher.vocabulary_ = {tri: N_RESERVED + i for i, tri in enumerate(vocab)}
            hasher.n_features_ = N_RESERVED + len(vocab)
        hasher._reset_cache()
        return hasher
