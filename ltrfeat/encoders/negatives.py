"""Negatives of every sample: random training documents, same-query lower-labelled ones, the mini-batch's others.

Each sample's candidate negatives are (a) ``negatives`` = J documents drawn uniformly from the training documents,
(b) ``hard_negatives`` documents of the same query with a lower label (drawn with replacement; none if the query has
no lower-labelled document), and (c) with ``in_batch``, the documents of the other samples of the mini-batch (one
(B, B) score matrix). A candidate is masked out when it is the sample's own document or a document judged for the
same query with a label >= the sample's. The trainer's generator draws them: the seed fixes every one.
"""

from __future__ import annotations

import numpy as np

from ltrfeat.encoders.training_pairs import Prepared

__all__ = ["Sampler"]


def _ragged(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Positions ``starts[i] .. starts[i] + lengths[i] - 1`` of every ``i``, back to back."""
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))


class Sampler:
    """Vectorised negative sampling and masking over the training rows."""

    def __init__(self, data: Prepared, sample_rows: np.ndarray):
        tr = np.flatnonzero(data.train)
        self.n_docs = len(data.docs)
        self.pool = np.unique(data.d_idx[tr])
        # judged (query, doc) -> highest soft label, for masking
        keys = data.q_idx[tr] * self.n_docs + data.d_idx[tr]
        order = np.lexsort((-data.y[tr], keys))
        keys, ys = keys[order], data.y[tr][order]
        first = np.r_[True, keys[1:] != keys[:-1]]
        self.keys, self.key_y = keys[first], ys[first]
        # keys are sorted by (query, doc): the judged documents of query q are keys[q_ptr[q]:q_ptr[q + 1]]
        self.q_ptr = np.searchsorted(self.keys // self.n_docs, np.arange(len(data.queries) + 1))
        # same-query training rows sorted by (query, y): lower-labelled ones form a prefix
        order = np.lexsort((data.y[tr], data.q_idx[tr]))
        self.by_q_doc = data.d_idx[tr][order]
        rank_key = data.q_idx[tr][order] * 4.0 + data.y[tr][order]
        q_of_sample = data.q_idx[sample_rows]
        self.block_start = np.searchsorted(rank_key, q_of_sample * 4.0, side="left")
        self.n_lower = (
            np.searchsorted(rank_key, q_of_sample * 4.0 + data.y[sample_rows], side="left") - self.block_start
        )

    def judged_at_least(self, q, d, y) -> np.ndarray:
        """True where (q, d) is a judged training pair with soft label >= y (broadcasting)."""
        key = q * self.n_docs + d
        pos = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        return (self.keys[pos] == key) & (self.key_y[pos] >= y)

    def in_batch_mask(self, q, d, y) -> np.ndarray:
        """(B, B) True where document ``d[j]`` must not be a negative of sample ``i``: the same
        document, or judged for ``q[i]`` with a soft label >= ``y[i]``.

        Walks each sample's judged documents (a few per query) instead of looking up all B^2 pairs.
        """
        starts = self.q_ptr[q]
        lens = self.q_ptr[q + 1] - starts
        pos = _ragged(starts, lens)
        owner = np.repeat(np.arange(len(q)), lens)
        keep = self.key_y[pos] >= y[owner]
        owner, docs = owner[keep], self.keys[pos[keep]] % self.n_docs
        by_doc = np.argsort(d, kind="stable")
        lo = np.searchsorted(d[by_doc], docs, side="left")
        count = np.searchsorted(d[by_doc], docs, side="right") - lo
        mask = d[None, :] == d[:, None]
        mask[np.repeat(owner, count), by_doc[_ragged(lo, count)]] = True
        return mask

    def candidates(self, rng, samples, q, d, y, *, negatives: int, hard: int):
        """Random and hard negative doc ids (B, J + H) and their mask."""
        parts = [rng.integers(0, len(self.pool), size=(len(samples), negatives))]
        parts[0] = self.pool[parts[0]]
        mask = [np.ones(parts[0].shape, dtype=bool)]
        if hard:
            n_lower = self.n_lower[samples]
            offs = (rng.random((len(samples), hard)) * np.maximum(n_lower, 1)[:, None]).astype(np.int64)
            parts.append(self.by_q_doc[self.block_start[samples][:, None] + offs])
            mask.append(np.repeat((n_lower > 0)[:, None], hard, axis=1))
        cand = np.concatenate(parts, axis=1)
        ok = np.concatenate(mask, axis=1) & (cand != d[:, None]) & ~self.judged_at_least(q[:, None], cand, y[:, None])
        return cand, ok
