"""Module hooks: forward-pre, forward and full-backward hooks with removable handles."""

from __future__ import annotations

import numpy as np
import pytest

import minifw as mf
from minifw import nn
from tests.strategies import assert_close

pytestmark = pytest.mark.extra  # given code: no task teaches it


def test_forward_pre_hook_and_forward_hook_can_replace_values():
    layer = nn.Linear(2, 2)
    calls = []
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 0.0,))
    post = layer.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1.0)
    out = layer(mf.ones(3, 2))
    assert calls == [(3, 2)]
    expected = layer.bias.value.detach() + 1.0
    assert_close(out, expected.expand(3, 2))
    pre.remove()
    post.remove()
    post.remove()  # removing twice is harmless
    x = mf.ones(3, 2)
    assert_close(layer(x), x @ layer.weight.value.T + layer.bias.value)
    assert calls == [(3, 2)]


def test_handle_works_as_context_manager():
    layer = nn.ReLU()
    seen = []
    with layer.register_forward_hook(lambda m, a, o: seen.append(1)):
        layer(mf.ones(1))
    layer(mf.ones(1))
    assert seen == [1]


def test_full_backward_hook_matches_torch():
    torch = pytest.importorskip("torch", reason="PyTorch, the oracle of these tests, is missing")
    x = np.random.default_rng(0).standard_normal((3, 4))
    w = np.random.default_rng(1).standard_normal((2, 4))

    def grads(lib, module, tensor):
        record = {}
        module.register_full_backward_hook(
            lambda m, gi, go: record.update(gi=[g.detach() for g in gi], go=[g for g in go])
        )
        inp = tensor(x, requires_grad=True)
        # The input is used twice: the hook must see only the module's share of its gradient.
        (module(inp).sum() * 3.0 + (inp * 2.0).sum()).backward()
        return record, inp.grad

    ours_layer = nn.Linear(4, 2, bias=False)
    ours_layer.weight.value = mf.tensor(w, requires_grad=True)
    theirs_layer = torch.nn.Linear(4, 2, bias=False).double()
    theirs_layer.weight.data = torch.tensor(w)
    ours, our_grad = grads(mf, ours_layer, mf.tensor)
    theirs, their_grad = grads(torch, theirs_layer, torch.tensor)
    assert_close(ours["gi"][0], theirs["gi"][0])
    assert_close(ours["go"][0], theirs["go"][0])
    assert_close(our_grad, their_grad)


def test_full_backward_hook_can_replace_grad_input_and_fires_without_input_grad():
    layer = nn.Linear(3, 1)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10.0,))
    x = mf.ones(2, 3, requires_grad=True)
    layer(x).sum().backward()
    assert_close(x.grad, (layer.weight.value.detach() * 10.0).expand(2, 3))
    seen = []
    other = nn.Linear(3, 1)
    other.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    other(mf.ones(2, 3)).sum().backward()
    assert seen == [((None,), (2, 1))]
    assert other.weight.value.grad is not None


def test_hooks_must_be_callable():
    with pytest.raises(TypeError, match="must be callable"):
        nn.ReLU().register_forward_hook(3)
