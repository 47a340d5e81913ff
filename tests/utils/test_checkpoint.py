"""utils.checkpoint: recomputation in backward gives the plain call's gradients."""

from __future__ import annotations

import numpy as np
import pytest

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw import nn
from minifw.utils.checkpoint import checkpoint
from tests.strategies import assert_close

pytestmark = pytest.mark.extra  # given code: no task teaches it


def grads(model, x, use_checkpoint):
    model.zero_grad()
    x = x.detach().requires_grad_(True)
    mf.manual_seed(7)
    hidden = checkpoint(model, x) if use_checkpoint else model(x)
    (hidden * hidden).sum().backward()
    return [x.grad.numpy().copy()] + [p.value.grad.numpy().copy() for p in model.parameters()]


def test_module_gradients_identical_including_dropout():
    mf.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 3))
    x = mf.randn(5, 4)
    plain = grads(model, x, use_checkpoint=False)
    recomputed = grads(model, x, use_checkpoint=True)
    for a, b in zip(plain, recomputed, strict=True):
        assert np.array_equal(a, b)


def test_function_of_several_inputs_and_params_without_input_grad():
    w = mf.randn(3, 3, requires_grad=True)
    a, b = mf.randn(2, 3, requires_grad=True), mf.randn(2, 3)
    calls = []

    def block(x, y):
        calls.append(1)
        return (x @ w + y).relu().sum(1)

    out = checkpoint(block, a, b)
    assert out.requires_grad and len(calls) == 1
    out.sum().backward()
    assert len(calls) == 2  # recomputed once, in backward
    got = (a.grad.numpy().copy(), w.grad.numpy().copy())
    a.grad = w.grad = None
    block(a, b).sum().backward()
    assert_close(got[0], a.grad)
    assert_close(got[1], w.grad)
    # A Module's parameters count as inputs: gradients flow even if x needs none.
    layer = nn.Linear(3, 1)
    checkpoint(layer, mf.ones(2, 3)).sum().backward()
    assert layer.weight.value.grad.tolist() == [[2.0, 2.0, 2.0]]


def test_forward_keeps_no_graph_inside():
    layer = nn.Linear(3, 3)
    inner = []
    layer.register_forward_hook(lambda m, args, out: inner.append(out.requires_grad))
    out = checkpoint(layer, mf.randn(2, 3, requires_grad=True))
    assert inner == [False] and out.grad_fn is not None
    with pytest.raises(TypeError, match="must return one Tensor"):
        checkpoint(lambda x: (x, x), mf.ones(1, requires_grad=True))
    assert F.relu(out).shape == (2, 3)
