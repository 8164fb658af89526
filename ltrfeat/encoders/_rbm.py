"""DSE pre-training (Wu et al., section 2.2): greedy layer-wise RBMs for a DSSM tower.

The stack mirrors the tower: trigram occurrences (binary visible units) -> hidden layer 1 -> ... ->
the semantic layer. Every RBM but the top one has binary hidden units; the top one has Gaussian
(linear, unit-variance) hidden units, as in the paper. Each RBM is trained with CD-1 (momentum 0.9,
weight decay 1e-4, the paper's settings) on the mean-field activations of the one below.

The trained stack initialises the tower exactly where it can: a DSSM tower uses tanh, and
``tanh(z / 2) = 2 sigmoid(z) - 1``, so halving a binary RBM's weights and bias (and folding the
``(t + 1) / 2`` rescaling of the layer below into the next weights and bias) makes every hidden tanh
layer output ``2 p - 1`` for the RBM's hidden probabilities ``p``. The top layer gets the Gaussian RBM's
mean ``W' p + c``; the tower then applies its tanh, which is close to linear for the small pre-trained
values. Known mismatch: the tower sums trigram *counts*, the RBM saw binary occurrences.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch
from tqdm import tqdm

from ltrfeat.encoders.hashing import UNKNOWN_ID, TrigramHasher
from ltrfeat.core.logs import show_progress
from ltrfeat.core.settings import Interval, Settings


@dataclass
class RBM:
    """Weights ``(n_visible, n_hidden)``, visible and hidden biases; ``gaussian`` hidden units or binary."""

    weight: torch.Tensor
    visible_bias: torch.Tensor
    hidden_bias: torch.Tensor
    gaussian: bool = False

    def hidden_mean(self, v: torch.Tensor) -> torch.Tensor:
        """E[h | v]: sigmoid probabilities (binary) or the Gaussian mean."""
        pre = v @ self.weight + self.hidden_bias
        return pre if self.gaussian else torch.sigmoid(pre)


def cd1_gradients(rbm: RBM, v0: torch.Tensor, noise: torch.Tensor):
    """One step of contrastive divergence: ``<v h>_data - <v h>_recon`` for the weights and both biases.

    ``noise`` (batch, n_hidden) drives the hidden sample: uniforms in [0, 1) for binary units
    (``h0 = 1[noise < p(h0 | v0)]``) or standard normals for Gaussian units (``h0 = mean + noise``).
    The reconstruction uses visible probabilities; the statistics use hidden means (Hinton's guide).
    Returns (dW, d visible bias, d hidden bias, mean squared reconstruction error), batch-averaged.
    """
    h0_mean = rbm.hidden_mean(v0)
    h0 = h0_mean + noise if rbm.gaussian else (noise < h0_mean).to(v0.dtype)
    v1 = torch.sigmoid(h0 @ rbm.weight.T + rbm.visible_bias)
    h1_mean = rbm.hidden_mean(v1)
    n = v0.shape[0]
    d_weight = (v0.T @ h0_mean - v1.T @ h1_mean) / n
    return d_weight, (v0 - v1).mean(0), (h0_mean - h1_mean).mean(0), float(((v0 - v1) ** 2).sum(1).mean())


@dataclass(frozen=True)
class CD1Settings(Settings):
    """The optimisation of one RBM: CD-1 gradient steps with momentum and weight decay.

    epochs : passes over the batches.
    lr : step size.
    momentum : share of the previous step added to each step.
    weight_decay : L2 penalty on the weights (not the biases).
    """

    label: ClassVar[str] = "RBM pre-training"
    _parameter_constraints: ClassVar[dict] = {
        "epochs": [Interval(Integral, 1, None)],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "weight_decay": [Interval(Real, 0, None)],
    }
    epochs: int
    lr: float
    momentum: float = 0.9
    weight_decay: float = 1e-4


def train_rbm(
    batches,
    n_visible: int,
    n_hidden: int,
    *,
    gaussian: bool,
    settings: CD1Settings,
    visible_mean: torch.Tensor | None = None,
    generator: torch.Generator,
    desc: str = "rbm",
    progress: bool = False,
) -> tuple[RBM, list[float]]:
    """Train one RBM with CD-1 as ``settings`` say; ``batches()`` yields visible batches (a fresh pass per call).

    Weights start at N(0, 0.01^2); visible biases at ``log(p / (1 - p))`` of ``visible_mean`` when given.
    Returns the RBM and the mean reconstruction error of each epoch.
    """
    weight = torch.randn(n_visible, n_hidden, generator=generator) * 0.01
    vbias = torch.zeros(n_visible)
    if visible_mean is not None:
        p = visible_mean.clamp(1e-3, 1 - 1e-3)
        vbias = torch.log(p / (1 - p))
    rbm = RBM(weight, vbias, torch.zeros(n_hidden), gaussian)
    velocity = [torch.zeros_like(t) for t in (rbm.weight, rbm.visible_bias, rbm.hidden_bias)]
    errors = []
    epochs, lr, momentum, weight_decay = settings.epochs, settings.lr, settings.momentum, settings.weight_decay
    for epoch in range(epochs):
        total, count = 0.0, 0
        for v0 in tqdm(
            batches(), desc=f"{desc} epoch {epoch + 1}/{epochs}", disable=not progress, file=sys.stderr, leave=False
        ):
            noise = (torch.randn if gaussian else torch.rand)(v0.shape[0], n_hidden, generator=generator)
            dw, db, dc, err = cd1_gradients(rbm, v0, noise)
            for vel, grad, param, decay in zip(
                velocity, (dw, db, dc), (rbm.weight, rbm.visible_bias, rbm.hidden_bias), (weight_decay, 0.0, 0.0)
            ):
                vel.mul_(momentum).add_(grad - decay * param, alpha=lr)
                param.add_(vel)
            total, count = total + err, count + 1
        errors.append(total / max(count, 1))
    return rbm, errors


def _occurrences(hasher: TrigramHasher, tokens, rows: np.ndarray, n_features: int) -> torch.Tensor:
    """Binary trigram-occurrence matrix (len(rows), n_features); the unknown trigram is left out."""
    bag = hasher.bag_batch(tokens.take(rows))
    text = np.repeat(np.arange(len(rows)), np.diff(np.r_[bag.offsets, len(bag.ids)]))
    v = torch.zeros(len(rows), n_features)
    v[torch.from_numpy(text), torch.from_numpy(bag.ids)] = 1.0
    v[:, UNKNOWN_ID] = 0.0
    return v


@dataclass(frozen=True)
class StackSettings(Settings):
    """The pre-training of a whole RBM stack (:func:`pretrain_dssm`).

    epochs : passes of each layer's RBM over its batches.
    batch_size : texts per CD-1 step.
    lr : step size of the binary layers.
    gaussian_lr : step size of the last (Gaussian) layer.
    max_texts : texts the stack is trained on at most (a seeded sample of them).
    """

    label: ClassVar[str] = "RBM stack pre-training"
    _parameter_constraints: ClassVar[dict] = {
        "epochs": [Interval(Integral, 1, None)],
        "batch_size": [Interval(Integral, 1, None)],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "gaussian_lr": [Interval(Real, 0, None, closed="neither")],
        "max_texts": [Interval(Integral, 1, None)],
    }
    epochs: int = 1
    batch_size: int = 128
    lr: float = 0.05
    gaussian_lr: float = 0.005
    max_texts: int = 20000


@torch.no_grad()
def pretrain_dssm(
    model,
    hasher: TrigramHasher,
    texts,
    settings: StackSettings | None = None,
    *,
    seed: int = 0,
    progress: bool | None = None,
    **setting,
) -> dict:
    """Pre-train a DSSM :class:`TwoTowerModel`'s towers as stacked RBMs on ``texts`` (queries and documents).

    One stack is trained on up to ``max_texts`` of the texts (a seeded sample) and copied into every
    tower (DSE uses one mapping for both sides; separate towers then fine-tune apart). ``settings``: a
    :class:`StackSettings` (default: all defaults), whose single fields keyword ``setting`` replace. Returns a
    JSON-able record: layer sizes and each layer's reconstruction error per epoch.
    """
    cfg = StackSettings.build(settings, setting)
    if model.config["architecture"] != "dssm":
        raise ValueError(f"RBM pre-training is for DSSM towers, not {model.config['architecture']}")
    if progress is None:
        progress = show_progress()
    generator = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng([seed, 3])
    texts = list(dict.fromkeys(texts))
    if len(texts) > cfg.max_texts:
        texts = [texts[i] for i in np.sort(rng.choice(len(texts), cfg.max_texts, replace=False))]
    tokens = hasher.tokenize(texts)
    tower = model.tower("query")
    n_features = tower.trigrams.num_embeddings
    widths = [tower.trigrams.embedding_dim] + [layer.out_features for layer in tower.layers]

    def first_layer_batches():
        order = rng.permutation(len(texts))
        for start in range(0, len(order), cfg.batch_size):
            yield _occurrences(hasher, tokens, order[start : start + cfg.batch_size], n_features)

    mean = sum(v.sum(0) for v in first_layer_batches()) / max(len(texts), 1)
    layers: list[dict] = []
    stack: list = []
    record = {
        "layers": layers,
        "n_texts": len(texts),
        "epochs": cfg.epochs,
        "lr": cfg.lr,
        "gaussian_lr": cfg.gaussian_lr,
    }
    batches, n_visible, data = first_layer_batches, n_features, None
    for depth, n_hidden in enumerate(widths):
        gaussian = depth == len(widths) - 1
        rbm, errors = train_rbm(
            batches,
            n_visible,
            n_hidden,
            gaussian=gaussian,
            settings=CD1Settings(epochs=cfg.epochs, lr=cfg.gaussian_lr if gaussian else cfg.lr),
            visible_mean=mean,
            generator=generator,
            desc=f"rbm {depth + 1}/{len(widths)}",
            progress=progress,
        )
        stack.append(rbm)
        layers.append({"visible": n_visible, "hidden": n_hidden, "gaussian": gaussian, "reconstruction_error": errors})
        if gaussian:
            break
        # the next RBM's data: this layer's hidden probabilities for every text (computed once)
        if data is None:
            data = torch.cat(
                [rbm.hidden_mean(v) for v in _ordered_batches(texts, cfg.batch_size, hasher, tokens, n_features)]
            )
        else:
            data = rbm.hidden_mean(data)
        mean, n_visible = data.mean(0), n_hidden
        batches = _tensor_batches(data, cfg.batch_size, rng)
    for t in {id(model.tower("query")): model.tower("query"), id(model.tower("doc")): model.tower("doc")}.values():
        load_stack(t, stack)
    return record


def _ordered_batches(texts, batch_size, hasher, tokens, n_features):
    for start in range(0, len(texts), batch_size):
        yield _occurrences(hasher, tokens, np.arange(start, min(start + batch_size, len(texts))), n_features)


def _tensor_batches(data: torch.Tensor, batch_size: int, rng: np.random.Generator):
    def batches():
        order = torch.from_numpy(rng.permutation(len(data)))
        for start in range(0, len(order), batch_size):
            yield data[order[start : start + batch_size]]

    return batches


@torch.no_grad()
def load_stack(tower, stack: list[RBM]) -> None:
    """Copy RBM weights into a :class:`DssmTower` (tanh layers; see the module docstring)."""
    if len(stack) != 1 + len(tower.layers):
        raise ValueError(f"{len(stack)} RBMs for a tower of {1 + len(tower.layers)} layers")
    first = stack[0]
    tower.trigrams.weight.copy_(first.weight / 2)
    tower.trigrams.weight[UNKNOWN_ID].zero_()
    tower.trigram_bias.copy_(first.hidden_bias / 2)
    for layer, rbm in zip(tower.layers, stack[1:]):
        # input t = 2p - 1  =>  W'p + c = (W/2)'t + c + W'1/2; binary layers are halved once more for tanh(z/2)
        weight, bias = rbm.weight.T / 2, rbm.hidden_bias + rbm.weight.sum(0) / 2
        if not rbm.gaussian:
            weight, bias = weight / 2, bias / 2
        layer.weight.copy_(weight)
        layer.bias.copy_(bias)
