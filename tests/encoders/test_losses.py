"""Losses against hand-computed values, the paper's gradient, and a gradient check on a tiny model."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ltrfeat.core.errors import ParameterError
from ltrfeat.encoders.losses import loss_names, make_loss, register_loss, unregister_loss

from ltrfeat.encoders.losses.generalized import GeneralizedLoss
from ltrfeat.encoders.losses.hinge import HingeLoss
from ltrfeat.encoders.losses.softmax import SoftmaxLoss
from ltrfeat.encoders.model import TwoTowerModel, model_config
from ltrfeat.encoders.hashing import TrigramHasher

POS = torch.tensor([0.5, 0.2], dtype=torch.float64)
NEG = torch.tensor([[0.1, -0.2], [0.3, 0.2]], dtype=torch.float64)


def test_softmax_loss_by_hand():
    # -ln P(D+|Q) = ln(1 + sum_j exp(-gamma * (R+ - R-_j)))  (CLSM appendix, eq. 8)
    first = math.log(1 + math.exp(-10 * 0.4) + math.exp(-10 * 0.7))
    second = math.log(1 + math.exp(-10 * -0.1) + math.exp(0.0))
    assert math.isclose(SoftmaxLoss(gamma=10)(POS, NEG).item(), (first + second) / 2, rel_tol=1e-12)


def test_generalized_loss_by_hand_and_equal_to_softmax_when_y_is_one():
    y = torch.tensor([0.3, 1.0], dtype=torch.float64)
    p = [1 / (1 + math.exp(-4) + math.exp(-7)), 1 / (1 + math.exp(1) + 1)]
    expected = (-(0.3 * math.log(p[0]) + 0.7 * math.log(1 - p[0])) - math.log(p[1])) / 2
    assert math.isclose(GeneralizedLoss(gamma=10)(POS, NEG, labels=y).item(), expected, rel_tol=1e-12)
    ones = torch.ones(2, dtype=torch.float64)
    assert torch.allclose(
        GeneralizedLoss(gamma=7)(POS, NEG, labels=ones), SoftmaxLoss(gamma=7)(POS, NEG), atol=0, rtol=1e-15
    )


def test_hinge_loss_by_hand():
    # max(0, 1 - s+ + s-) over the four triples: 0.6, 0.3, 1.1, 1.0
    assert math.isclose(HingeLoss()(POS, NEG).item(), (0.6 + 0.3 + 1.1 + 1.0) / 4, rel_tol=1e-12)
    assert math.isclose(HingeLoss(margin=0.2)(POS, NEG).item(), (0 + 0 + 0.3 + 0.2) / 4, rel_tol=1e-12)


def test_masked_candidates_are_ignored():
    mask = torch.tensor([[True, False], [True, True]])
    kept = SoftmaxLoss(gamma=10)(POS[:1], NEG[:1, :1]) + SoftmaxLoss(gamma=10)(POS[1:], NEG[1:])
    assert torch.allclose(SoftmaxLoss(gamma=10)(POS, NEG, mask=mask), kept / 2)
    hinge_kept = (0.6 + 1.1 + 1.0) / 3
    assert math.isclose(HingeLoss()(POS, NEG, mask=mask).item(), hinge_kept, rel_tol=1e-12)


def test_sample_without_negatives_is_left_out_and_gradients_stay_finite():
    pos = POS.clone().requires_grad_(True)
    mask = torch.tensor([[False, False], [True, True]])
    y = torch.tensor([0.2, 1.0], dtype=torch.float64)
    loss = GeneralizedLoss(gamma=10)(pos, NEG, labels=y, mask=mask)
    assert torch.allclose(loss, GeneralizedLoss(gamma=10)(POS[1:], NEG[1:], labels=y[1:]))
    loss.backward()
    assert torch.isfinite(pos.grad).all() and pos.grad[0] == 0


def test_softmax_gradient_matches_the_paper():
    # d loss / d Delta_j = alpha_j = -gamma exp(-gamma Delta_j) / (1 + sum exp(-gamma Delta_j'))  (eq. 11)
    pos = torch.tensor([0.4], dtype=torch.float64, requires_grad=True)
    neg = torch.tensor([[0.1, 0.3, -0.5]], dtype=torch.float64, requires_grad=True)
    SoftmaxLoss(gamma=5)(pos, neg).backward()
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
            return GeneralizedLoss(gamma=3)(s[:, 0], s[:, 1:], labels=torch.tensor([1.0, 0.4], dtype=torch.float64))

        params = tuple(p.detach().clone().requires_grad_(True) for p in model.parameters())
        assert torch.autograd.gradcheck(loss_of, params, eps=1e-6, atol=1e-5)


# -- loss objects: per-sample weights and the registry ------------------------------------------
LOSSES = [SoftmaxLoss(gamma=10), GeneralizedLoss(gamma=10), HingeLoss(margin=0.5)]
LABELS = torch.tensor([0.3, 1.0], dtype=torch.float64)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
def test_a_weight_is_a_weighted_mean_over_samples(loss):
    mask = torch.tensor([[True, False], [True, True]])
    each = [loss(POS[i : i + 1], NEG[i : i + 1], mask=mask[i : i + 1], labels=LABELS[i : i + 1]) for i in range(2)]
    weighted = loss(POS, NEG, mask=mask, labels=LABELS, weight=torch.tensor([3.0, 1.0], dtype=torch.float64))
    if loss.name == "hinge":  # a triple weighs as its sample: 3 x the first sample's one triple, its second's two
        expected = (3 * each[0] + 2 * each[1]) / 5
    else:
        expected = (3 * each[0] + each[1]) / 4
    assert math.isclose(weighted.item(), expected.item(), rel_tol=1e-12)
    ones = loss(POS, NEG, mask=mask, labels=LABELS, weight=torch.ones(2, dtype=torch.float64))
    assert math.isclose(ones.item(), loss(POS, NEG, mask=mask, labels=LABELS).item(), rel_tol=1e-12)
    zero_second = loss(POS, NEG, mask=mask, labels=LABELS, weight=torch.tensor([1.0, 0.0], dtype=torch.float64))
    assert math.isclose(zero_second.item(), each[0].item(), rel_tol=1e-12)


def test_the_registry_builds_each_loss_from_the_settings_it_has_a_field_for():
    assert loss_names()[:3] == ("softmax", "generalized", "hinge")
    assert make_loss("softmax", gamma=3.0, margin=0.2) == SoftmaxLoss(gamma=3.0)
    assert make_loss("hinge", gamma=3.0, margin=0.2) == HingeLoss(margin=0.2)
    assert make_loss("generalized", gamma=2.0).every_pair and not make_loss("softmax").every_pair
    with pytest.raises(ParameterError, match="unknown loss 'ranknet'.*softmax, generalized, hinge"):
        make_loss("ranknet")
    with pytest.raises(TypeError):
        register_loss(object)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="registered already"):
        register_loss(type("Other", (SoftmaxLoss,), {}))


def test_a_loss_registered_at_run_time_is_a_config_choice_and_trains():
    from builders import make_pairs
    from ltrfeat.encoders.config import EncoderConfig, SbertConfig
    from ltrfeat.encoders.training import train_encoder

    class Squared(HingeLoss):
        name = "squared-hinge"

        def __call__(self, pos, neg, *, mask=None, labels=None, weight=None):
            return super().__call__(pos, neg, mask=mask, labels=labels, weight=weight) ** 2

    with pytest.raises(ParameterError, match="loss must be one of softmax, generalized, hinge"):
        EncoderConfig(loss="squared-hinge")
    register_loss(Squared)
    try:
        assert EncoderConfig(loss="squared-hinge").loss == SbertConfig(loss="squared-hinge").loss == "squared-hinge"
        encoder, _ = train_encoder(
            make_pairs(n_queries=24), loss="squared-hinge", sizes={"hidden": [16], "out": 8}, model="dssm", epochs=1
        )
        assert encoder.training["params"]["loss"] == "squared-hinge" and encoder.training["n_samples"] > 0
    finally:
        unregister_loss("squared-hinge")
    with pytest.raises(ParameterError):
        EncoderConfig(loss="squared-hinge")
