"""DSSM tower (Huang et al. 2013): bag of letter trigrams -> 300 tanh -> 300 tanh -> 128 tanh."""

from __future__ import annotations

import torch
from torch import nn

from ltrfeat.encoders.hashing import BagBatch, TrigramHasher
from ltrfeat.encoders._init import init_trigram_weights


class DssmTower(nn.Module):
    """Feed-forward tower over a sparse trigram-count vector.

    The first layer is an ``nn.EmbeddingBag`` (sum) over the text's trigram ids, i.e. the
    product of the weight matrix with the count vector, without a dense one-hot input.

    Parameters
    ----------
    n_features : trigram id space (``TrigramHasher.n_features_``).
    hidden : widths of the hidden tanh layers (the first one is the trigram projection).
    out : width of the semantic (output) layer.
    """

    def __init__(self, n_features: int, *, hidden=(300, 300), out: int = 128):
        super().__init__()
        hidden = list(hidden)
        if not hidden:
            raise ValueError("DSSM needs at least one hidden layer")
        self.trigrams = nn.EmbeddingBag(n_features, hidden[0], mode="sum")
        self.trigram_bias = nn.Parameter(torch.zeros(hidden[0]))
        widths = hidden + [out]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        init_trigram_weights(self.trigrams.weight, fan_out=hidden[0])

    def prepare(self, hasher: TrigramHasher, texts) -> BagBatch:
        """Model input for ``texts`` (str list or ``TokenizedTexts``)."""
        return hasher.bag_batch(texts)

    def forward(self, batch: BagBatch) -> torch.Tensor:
        x = self.trigrams(torch.from_numpy(batch.ids), torch.from_numpy(batch.offsets))
        if not torch.is_grad_enabled():  # inference: the same arithmetic in place, no temporaries
            x.add_(self.trigram_bias).tanh_()
            for layer in self.layers:
                x = layer(x).tanh_()
            return x
        x = torch.tanh(x + self.trigram_bias)
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x
