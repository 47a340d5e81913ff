"""Losses (functional and Modules) against PyTorch in float64, forward and backward."""

from __future__ import annotations

import numpy as np
import pytest

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw import nn
from minifw.autograd import gradcheck
from tests.strategies import assert_close, compare_with_torch

torch = pytest.importorskip("torch", reason="PyTorch, the oracle of these tests, is missing")
TF = torch.nn.functional
pytestmark = pytest.mark.extra  # given code: no task teaches it
REDUCTIONS = ["mean", "sum", "none"]


rng = np.random.default_rng(0)
LOGITS = rng.standard_normal((5, 4))
TARGETS = np.array([0, 3, 1, 1, 2])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss(reduction):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    compare_with_torch(
        lambda x, y: F.mse_loss(x, y, reduction=reduction),
        lambda x, y: TF.mse_loss(x, y, reduction=reduction),
        [a, b],
    )
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(mf.zeros(3, 1), mf.zeros(3))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_int64_and_float_targets(reduction):
    for targets in (mf.tensor(TARGETS), mf.tensor(TARGETS.astype(float))):
        compare_with_torch(
            lambda x, t=targets: F.cross_entropy(x, t, reduction=reduction),
            lambda x: TF.cross_entropy(x, torch.tensor(TARGETS), reduction=reduction),
            [LOGITS],
        )


def test_cross_entropy_weight_ignore_index_and_extra_dims():
    weight = np.array([0.5, 2.0, 1.0, 3.0])
    targets = np.array([0, 3, -100, 1, 2])
    compare_with_torch(
        lambda x: F.cross_entropy(x, mf.tensor(targets), mf.tensor(weight)),
        lambda x: TF.cross_entropy(x, torch.tensor(targets), torch.tensor(weight)),
        [LOGITS],
    )
    images, labels = rng.standard_normal((2, 3, 4, 2)), rng.integers(0, 3, size=(2, 4, 2))
    compare_with_torch(
        lambda x: F.cross_entropy(x, mf.tensor(labels)),
        lambda x: TF.cross_entropy(x, torch.tensor(labels)),
        [images],
    )
    compare_with_torch(
        lambda x: F.cross_entropy(x, mf.tensor(2)),
        lambda x: TF.cross_entropy(x, torch.tensor(2)),
        [LOGITS[0]],
    )


def test_cross_entropy_with_probability_targets():
    probs = np.abs(rng.standard_normal((5, 4)))
    probs /= probs.sum(1, keepdims=True)
    compare_with_torch(F.cross_entropy, TF.cross_entropy, [LOGITS, probs])


def test_cross_entropy_target_errors():
    x = mf.tensor(LOGITS)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, mf.tensor([0, 4, 1, 1, 2]))
    with pytest.raises(ValueError, match=r"Expected target of shape \(5,\)"):
        F.cross_entropy(x, mf.tensor([0, 1]))
    with pytest.raises(ValueError, match="whole numbers"):
        F.cross_entropy(x, mf.tensor([0.5, 1.0, 1.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.cross_entropy(x, mf.tensor(TARGETS), reduction="avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    logp = TF.log_softmax(torch.tensor(LOGITS), 1).numpy()
    compare_with_torch(
        lambda x: F.nll_loss(x, mf.tensor(TARGETS), reduction=reduction),
        lambda x: TF.nll_loss(x, torch.tensor(TARGETS), reduction=reduction),
        [logp],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    p = rng.uniform(0.05, 0.95, size=(3, 4))
    t = rng.uniform(0.0, 1.0, size=(3, 4))
    w = rng.uniform(0.5, 2.0, size=(4,))
    compare_with_torch(
        lambda x, y: F.binary_cross_entropy(x, y, reduction=reduction),
        lambda x, y: TF.binary_cross_entropy(x, y, reduction=reduction),
        [p, t],
    )
    compare_with_torch(
        lambda x: F.binary_cross_entropy(x, mf.tensor(t), mf.tensor(w), reduction=reduction),
        lambda x: TF.binary_cross_entropy(
            x, torch.tensor(t), torch.tensor(w), reduction=reduction
        ),
        [p],
    )


def test_binary_cross_entropy_clamps_logs_and_checks_range():
    edge = np.array([0.0, 1.0, 0.5])
    target = np.array([1.0, 0.0, 1.0])
    compare_with_torch(
        lambda x: F.binary_cross_entropy(x, mf.tensor(target)),
        lambda x: TF.binary_cross_entropy(x, torch.tensor(target)),
        [edge],
    )
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(mf.tensor([1.5]), mf.tensor([1.0]))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(mf.tensor([0.5]), mf.tensor([1.0, 0.0]))


def test_losses_gradcheck():
    x = mf.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda t: F.cross_entropy(t, mf.tensor([1, 0, 3])), [x])
    p = mf.tensor(rng.uniform(0.1, 0.9, size=(2, 3)), requires_grad=True)
    y = mf.tensor(rng.uniform(0.0, 1.0, size=(2, 3)), requires_grad=True)
    assert gradcheck(F.binary_cross_entropy, [p, y])


@pytest.mark.parametrize(
    "ours,theirs,make_input,target",
    [
        (nn.MSELoss, torch.nn.MSELoss, lambda: LOGITS, LOGITS[::-1].copy()),
        (nn.CrossEntropyLoss, torch.nn.CrossEntropyLoss, lambda: LOGITS, TARGETS),
        (nn.NLLLoss, torch.nn.NLLLoss, lambda: -np.abs(LOGITS), TARGETS),
        (nn.BCELoss, torch.nn.BCELoss, lambda: 1 / (1 + np.exp(-LOGITS)), LOGITS > 0),
    ],
)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_loss_modules_match_torch(ours, theirs, make_input, target, reduction):
    target_mf = mf.tensor(target if target.dtype != bool else target.astype(float))
    target_torch = torch.tensor(target if target.dtype != bool else target.astype(float))
    loss, ref = ours(reduction=reduction), theirs(reduction=reduction)
    assert repr(loss) == repr(theirs())
    compare_with_torch(
        lambda x: loss(x, target_mf), lambda x: ref(x, target_torch), [make_input()]
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("use_weight", [False, True])
def test_ignore_index_inside_the_class_range_is_ignored(reduction, use_weight):
    weight = np.array([0.5, 2.0, 1.0, 3.0]) if use_weight else None
    for targets in (np.array([0, 3, 1, 1, 2]), np.array([1, 1, 1, 1, 1])):  # some / all ignored

        def ours(x, t=targets):
            w = None if weight is None else mf.tensor(weight)
            return F.cross_entropy(x, mf.tensor(t), w, ignore_index=1, reduction=reduction)

        def theirs(x, t=targets):
            w = None if weight is None else torch.tensor(weight)
            return TF.cross_entropy(x, torch.tensor(t), w, ignore_index=1, reduction=reduction)

        compare_with_torch(ours, theirs, [LOGITS])  # all ignored with "mean": nan, zero gradients


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_loss_is_one_node_of_three_launches_and_one_backward_launch(reduction):
    logp = mf.tensor(TF.log_softmax(torch.tensor(LOGITS), 1).numpy(), requires_grad=True)
    with mf.profiler.profile() as forward:
        loss = F.nll_loss(logp, mf.tensor(TARGETS), reduction=reduction)
    # select: unpicked cells read as 0, never -inf * 0
    assert [e.name for e in forward.events] == ["select", "mul", "reduce_add"]
    assert loss.grad_fn.name() == "NllLossBackward" and loss.shape == ()
    with mf.profiler.profile() as backward:
        loss.backward()
    assert [e.name for e in backward.events] == ["mul"]  # logp keeps it: no copy
    picked = LOGITS.shape[0] if reduction == "mean" else 1
    expected = np.zeros_like(LOGITS)
    expected[np.arange(len(TARGETS)), TARGETS] = -1.0 / picked
    assert_close(logp.grad, expected, rtol=0, atol=0)


def test_cross_entropy_keeps_float32():
    x = mf.tensor(LOGITS, dtype=mf.float32, requires_grad=True)
    loss = F.cross_entropy(x, mf.tensor(TARGETS))
    assert loss.dtype is mf.float32
    loss.backward()
    assert x.grad is not None and x.grad.dtype is mf.float32
    ref = TF.cross_entropy(torch.tensor(LOGITS, dtype=torch.float32), torch.tensor(TARGETS))
    assert_close(loss, ref, rtol=1e-6, atol=1e-6)
