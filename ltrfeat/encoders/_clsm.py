"""CLSM tower (Shen et al. 2014): word-n-gram convolution over letter trigrams, max pooling, semantic layer."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ltrfeat.encoders.hashing import SequenceBatch, TrigramHasher
from ltrfeat.encoders._init import init_trigram_weights


class ClsmTower(nn.Module):
    """Convolutional latent semantic tower.

    The window ``l_t = [f_{t-d}; ...; f_{t+d}]`` of trigram count vectors times
    ``W_c = [W_{-d} ... W_d]`` equals ``sum_k W_k f_{t+k}``: one ``nn.EmbeddingBag`` (sum) maps
    each distinct word of the batch to all ``n = 2d + 1`` per-offset projections at once, and
    ``h_t`` is one more bag sum of ``n`` of those rows per window of the batch -- no dense
    one-hot windows, no padding between texts, no loop over texts. ``h_t = tanh(W_c l_t + b)``,
    ``v = max_t h_t`` over each text's own windows (a segment max), ``y = tanh(W_s v + b_s)``.

    Parameters
    ----------
    n_features : trigram id space (``TrigramHasher.n_features_``).
    context : d, the words on each side of the window centre (window n = 2d + 1).
    conv : K, the width of the convolutional / max-pooling layer.
    out : L, the width of the semantic layer.
    """

    def __init__(self, n_features: int, *, context: int = 1, conv: int = 300, out: int = 128):
        super().__init__()
        if context < 0:
            raise ValueError(f"context must be >= 0, got {context}")
        self.context = context
        self.conv = conv
        self.window = 2 * context + 1
        self.trigrams = nn.EmbeddingBag(n_features, self.window * conv, mode="sum")
        self.conv_bias = nn.Parameter(torch.zeros(conv))
        self.semantic = nn.Linear(conv, out)
        init_trigram_weights(self.trigrams.weight, fan_out=conv)

    def prepare(self, hasher: TrigramHasher, texts) -> SequenceBatch:
        """Model input for ``texts`` (str list or ``TokenizedTexts``)."""
        return hasher.sequence_batch(texts, context=self.context)

    def _convolve(self, batch: SequenceBatch) -> torch.Tensor:
        """``W_c l_t + b`` (N, K) of every window of the batch, texts back to back.

        Row ``3w + k`` of the flattened word projections is word ``w``'s offset-``k`` projection,
        so each window is a bag of ``n`` rows summed by one ``embedding_bag`` call.
        """
        words = self.trigrams(torch.from_numpy(batch.word_ids), torch.from_numpy(batch.word_offsets))
        rows = torch.from_numpy(batch.windows) * self.window + torch.arange(self.window)
        # in place: the (N, K) window matrix is the largest tensor of a step (its sum's backward keeps no output)
        return F.embedding_bag(rows, words.view(-1, self.conv), mode="sum").add_(self.conv_bias)

    def local_features(self, batch: SequenceBatch) -> torch.Tensor:
        """``h_t = tanh(W_c l_t + b)`` (N, K) of every window of the batch, texts back to back."""
        return torch.tanh(self._convolve(batch))

    def forward(self, batch: SequenceBatch) -> torch.Tensor:
        # max over each text's own windows only: segments, so padding never enters the max;
        # tanh is monotone, so max_t tanh(x_t) = tanh(max_t x_t) and tanh runs on (B, K) only
        x = torch.segment_reduce(self._convolve(batch), "max", lengths=torch.from_numpy(batch.lengths), axis=0)
        return torch.tanh(self.semantic(torch.tanh(x)))
