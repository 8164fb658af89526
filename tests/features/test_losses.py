"""Losses against hand-computed values, the paper's gradient, and a gradient check on a tiny model."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ltrfeat.features.encoders._losses import generalized_loss, hinge_loss, softmax_loss
from ltrfeat.features.encoders.model import TwoTowerModel, model_config
from ltrfeat.features.hashing import TrigramHasher

POS = torch.tensor([0.5, 0.2], dtype=torch.float64)
NEG = torch.tensor([[0.1, -0.2], [0.3, 0.2]], dtype=torch.float64)


def test_softmax_loss_by_hand():
    # -ln P(D+|Q) = ln(1 + sum_j exp(-gamma * (R+ - R-_j)))  (CLSM appendix, eq. 8)
    first = math.log(1 + math.exp(-10 * 0.4) + math.exp(-10 * 0.7))
    second = math.log(1 + math.exp(-10 * -0.1) + math.exp(0.0))
    assert math.isclose(softmax_loss(POS, NEG, gamma=10).item(), (first + second) / 2, rel_tol=1e-12)


def test_generalized_loss_by_hand_and_equal_to_softmax_when_y_is_one():
    y = torch.tensor([0.3, 1.0], dtype=torch.float64)
    p = [1 / (1 + math.exp(-4) + math.exp(-7)), 1 / (1 + math.exp(1) + 1)]
    expected = (-(0.3 * math.log(p[0]) + 0.7 * math.log(1 - p[0])) - math.log(p[1])) / 2
    assert math.isclose(generalized_loss(POS, NEG, y, gamma=10).item(), expected, rel_tol=1e-12)
    ones = torch.ones(2, dtype=torch.float64)
    assert torch.allclose(
        generalized_loss(POS, NEG, ones, gamma=7), softmax_loss(POS, NEG, gamma=7), atol=0, rtol=1e-15
    )


def test_hinge_loss_by_hand():
    # max(0, 1 - s+ + s-) over the four triples: 0.6, 0.3, 1.1, 1.0
    assert math.isclose(hinge_loss(POS, NEG).item(), (0.6 + 0.3 + 1.1 + 1.0) / 4, rel_tol=1e-12)
    assert math.isclose(hinge_loss(POS, NEG, margin=0.2).item(), (0 + 0 + 0.3 + 0.2) / 4, rel_tol=1e-12)


def test_masked_candidates_are_ignored():
    mask = torch.tensor([[True, False], [True, True]])
    kept = softmax_loss(POS[:1], NEG[:1, :1], gamma=10) + softmax_loss(POS[1:], NEG[1:], gamma=10)
    assert torch.allclose(softmax_loss(POS, NEG, gamma=10, mask=mask), kept / 2)
    hinge_kept = (0.6 + 1.1 + 1.0) / 3
    assert math.isclose(hinge_loss(POS, NEG, mask=mask).item(), hinge_kept, rel_tol=1e-12)


def test_sample_without_negatives_is_left_out_and_gradients_stay_finite():
    pos = POS.clone().requires_grad_(True)
    mask = torch.tensor([[False, False], [True, True]])
    y = torch.tensor([0.2, 1.0], dtype=torch.float64)
    loss = generalized_loss(pos, NEG, y, gamma=10, mask=mask)
    assert torch.allclose(loss, generalized_loss(POS[1:], NEG[1:], y[1:], gamma=10))
    loss.backward()
    assert torch.isfinite(pos.grad).all() and pos.grad[0] == 0


def test_softmax_gradient_matches_the_paper():
    # d loss / d Delta_j = alpha_j = -gamma exp(-gamma Delta_j) / (1 + sum exp(-gamma Delta_j'))  (eq. 11)
    pos = torch.tensor([0.4], dtype=torch.float64, requires_grad=True)
    neg = torch.tensor([[0.1, 0.3, -0.5]], dtype=torch.float64, requires_grad=True)
    softmax_loss(pos, neg, gamma=5).backward()
    delta = (pos.detach() - neg.detach())[0]
    alpha = -5 * torch.exp(-5 * delta) / (1 + torch.exp(-5 * delta).sum())
    assert torch.allclose(neg.grad[0], -alpha) and torch.allclose(pos.grad, alpha.sum().reshape(1))


def test_gradient_check_on_a_tiny_model():
    hasher = TrigramHasher().fit(["red shoe", "blue hat", "green sock"])
    for arch, sizes in (("dssm", {"hidden": [5], "out": 3}), ("clsm", {"conv": 4, "out": 3})):
        torch.manual_seed(0)
        model = TwoTowerModel(model_config(arch, hasher.n_features_, **sizes)).double()
        qt, dt = model.tower("query"), model.tower("doc")
        qb = qt.prepare(hasher, ["red shoe", "blue"])
        db = dt.prepare(hasher, ["red shoe", "blue hat", "green sock socks"])
        names = [n for n, _ in model.named_parameters()]

        def loss_of(*params):
            state = dict(zip(names, params))

            def side(tower, prefix, batch):
                own = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
                return F.normalize(torch.func.functional_call(tower, own, (batch,)), dim=1)

            q, d = side(qt, "query_tower.", qb), side(dt, "doc_tower.", db)
            s = q @ d.T
            return generalized_loss(s[:, 0], s[:, 1:], torch.tensor([1.0, 0.4], dtype=torch.float64), gamma=3)

        params = tuple(p.detach().clone().requires_grad_(True) for p in model.parameters())
        assert torch.autograd.gradcheck(loss_of, params, eps=1e-6, atol=1e-5)


def test_sample_weights_make_a_weighted_average():
    # per-sample losses l_i averaged as sum(w l) / sum(w); equal weights change nothing, a zero weight drops a sample
    first, second = softmax_loss(POS[:1], NEG[:1], gamma=10), softmax_loss(POS[1:], NEG[1:], gamma=10)
    weight = torch.tensor([3.0, 1.0], dtype=torch.float64)
    assert torch.allclose(softmax_loss(POS, NEG, gamma=10, weight=weight), (3 * first + second) / 4)
    assert torch.allclose(softmax_loss(POS, NEG, gamma=10, weight=torch.full((2,), 5.0)), softmax_loss(POS, NEG))
    y = torch.tensor([0.3, 1.0], dtype=torch.float64)
    zero_second = torch.tensor([2.0, 0.0], dtype=torch.float64)
    assert torch.allclose(
        generalized_loss(POS, NEG, y, gamma=10, weight=zero_second), generalized_loss(POS[:1], NEG[:1], y[:1])
    )
