"""Module state: zero_grad, buffers, state_dict / load_state_dict, to / double / float, apply."""

from __future__ import annotations

import numpy as np
import pytest

import minifw as mf
from minifw import nn

pytestmark = pytest.mark.extra  # given code: no task teaches it


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm1d(2)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(8, 3))
        self.register_buffer("scale", mf.tensor([2.0]))
        self.register_buffer("scratch", mf.zeros(1), persistent=False)

    def forward(self, x):
        return self.head(self.conv(x)) * self.scale


KEYS = [
    "scale", "conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean",
    "bn.running_var", "bn.num_batches_tracked", "head.1.weight", "head.1.bias",
]  # fmt: skip


def test_state_dict_keys_follow_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch, the oracle of these tests, is missing")

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 2, 3)
            self.bn = torch.nn.BatchNorm1d(2)
            self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(8, 3))
            self.register_buffer("scale", torch.tensor([2.0]))
            self.register_buffer("scratch", torch.zeros(1), persistent=False)

    assert list(Net().state_dict()) == list(TorchNet().state_dict()) == KEYS


def test_state_dict_round_trip_and_detached_values():
    a, b = Net(), Net()
    state = a.state_dict()
    assert not state["conv.weight"].requires_grad
    assert state["scale"].tolist() == [2.0]
    result = b.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert p.value.tolist() == q.value.tolist(), name
        assert q.value.requires_grad and q.value.is_leaf
    x = mf.randn(2, 1, 4, 4)
    assert a(x).tolist() == b(x).tolist()
    assert [n for n, _ in a.named_buffers()] == [
        "scale",
        "scratch",
        "bn.running_mean",
        "bn.running_var",
        "bn.num_batches_tracked",
    ]


def test_load_state_dict_reports_missing_unexpected_and_wrong_shapes():
    net = Net()
    state = net.state_dict()
    del state["conv.bias"]
    state["extra.weight"] = mf.zeros(1)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(state)
    message = str(info.value)
    assert 'Missing key(s) in state_dict: "conv.bias"' in message
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in message
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["conv.bias"] and result.unexpected_keys == ["extra.weight"]
    good = net.state_dict()
    good["head.1.weight"] = mf.zeros(3, 9)
    with pytest.raises(RuntimeError, match=r"size mismatch for head.1.weight: copying a param "
                       r"with shape \(3, 9\) from checkpoint, the shape in current model is "
                       r"\(3, 8\)"):  # fmt: skip
        net.load_state_dict(good, strict=False)


def test_zero_grad_and_apply():
    net = Net()
    net(mf.randn(2, 1, 4, 4)).sum().backward()
    assert net.conv.weight.value.grad is not None
    net.zero_grad(set_to_none=False)
    assert np.all(net.conv.weight.value.grad.numpy() == 0)
    net.zero_grad()
    assert all(p.value.grad is None for p in net.parameters())
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Conv2d", "BatchNorm1d", "Flatten", "Linear", "Sequential", "Net"]


def test_to_double_float_convert_floating_values_only():
    net = Net().float()
    assert net.conv.weight.value.dtype is mf.float32
    assert net.bn.running_mean.dtype is mf.float32
    assert net.bn.num_batches_tracked.dtype is mf.int64
    assert net.conv.weight.value.requires_grad and net.conv.weight.value.is_leaf
    out = net(mf.randn(2, 1, 4, 4, dtype=mf.float32))
    assert out.dtype is mf.float32
    assert net.double().conv.weight.value.dtype is mf.float64
    assert net.to(mf.float32).head[1].bias.value.dtype is mf.float32
    assert net.to("cpu") is net


def test_buffers_are_attributes_and_can_be_reassigned():
    net = Net()
    net.scale = mf.tensor([3.0])
    assert net.state_dict()["scale"].tolist() == [3.0]
    assert "scale" not in dict(net.named_parameters())
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'scal'"):
        net.scal  # noqa: B018
