"""Layers: PyTorch's initialisation, repr and state-dict keys, outputs with PyTorch's weights,
gradcheck on tiny inputs, and the containers."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw import nn
from minifw.autograd import gradcheck
from tests.strategies import assert_close

torch = pytest.importorskip("torch", reason="PyTorch, the oracle of these tests, is missing")
pytestmark = pytest.mark.extra  # given code: no task teaches it

# (minifw layer, torch layer, input shape); input values are random normals.
LAYERS = [
    (lambda: nn.Linear(3, 2), lambda: torch.nn.Linear(3, 2), (4, 3)),
    (lambda: nn.Linear(3, 2, bias=False), lambda: torch.nn.Linear(3, 2, bias=False), (2, 5, 3)),
    (
        lambda: nn.Conv1d(2, 3, 2, stride=2, padding=1),
        lambda: torch.nn.Conv1d(2, 3, 2, stride=2, padding=1),
        (2, 2, 5),
    ),
    (
        lambda: nn.Conv2d(2, 3, (2, 3), padding=1),
        lambda: torch.nn.Conv2d(2, 3, (2, 3), padding=1),
        (2, 2, 4, 4),
    ),
    (
        lambda: nn.Conv2d(1, 2, 3, bias=False),
        lambda: torch.nn.Conv2d(1, 2, 3, bias=False),
        (1, 1, 4, 4),
    ),
    (lambda: nn.MaxPool2d(2), lambda: torch.nn.MaxPool2d(2), (1, 2, 4, 4)),
    (lambda: nn.AvgPool2d(3, 1, 1), lambda: torch.nn.AvgPool2d(3, 1, 1), (1, 2, 4, 4)),
    (nn.ReLU, torch.nn.ReLU, (3, 4)),
    (nn.Sigmoid, torch.nn.Sigmoid, (3, 4)),
    (nn.Tanh, torch.nn.Tanh, (3, 4)),
    (lambda: nn.Softmax(1), lambda: torch.nn.Softmax(1), (3, 4)),
    (lambda: nn.LogSoftmax(-1), lambda: torch.nn.LogSoftmax(-1), (3, 4)),
    (nn.Flatten, torch.nn.Flatten, (2, 3, 2, 2)),
    (lambda: nn.LayerNorm(4), lambda: torch.nn.LayerNorm(4), (3, 4)),
    (lambda: nn.LayerNorm((2, 3)), lambda: torch.nn.LayerNorm((2, 3)), (2, 2, 3)),
    (lambda: nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3), (4, 3)),
    (lambda: nn.Dropout(0.3), lambda: torch.nn.Dropout(0.3), (3, 4)),
]
IDS = [repr(make()) for _, make, _ in LAYERS]


def copy_from_torch(ours, theirs):
    """Load a torch module's state into ours through load_state_dict (same key names)."""
    state = OrderedDict((k, mf.tensor(v.detach().numpy())) for k, v in theirs.state_dict().items())
    ours.load_state_dict(state)


@pytest.mark.parametrize("make,make_torch,shape", LAYERS, ids=IDS)
def test_layer_matches_torch(make, make_torch, shape):
    ours, theirs = make(), make_torch().double()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, p), (tname, tp) in zip(
        ours.named_parameters(), theirs.named_parameters(), strict=True
    ):
        assert name == tname and p.value.shape == tuple(tp.shape)
    copy_from_torch(ours, theirs)
    ours.eval(), theirs.eval()
    x = np.random.default_rng(0).standard_normal(shape)
    xm, xt = mf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, ref = ours(xm), theirs(xt)
    assert_close(out, ref, rtol=1e-9, atol=1e-12)
    g = np.random.default_rng(1).standard_normal(tuple(ref.shape))
    out.backward(mf.tensor(g))
    ref.backward(torch.tensor(g))
    assert_close(xm.grad, xt.grad, rtol=1e-8, atol=1e-11)
    for (_, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert_close(p.value.grad, tp.grad, rtol=1e-8, atol=1e-11)


@pytest.mark.parametrize("make,make_torch,shape", LAYERS, ids=IDS)
def test_layer_gradcheck(make, make_torch, shape):
    """Input gradients via gradcheck; parameter gradients against central differences."""
    mf.manual_seed(0)
    layer = make().eval()
    small = (1, *shape[1:2], *(min(s, 3) for s in shape[2:]))  # gradcheck: O(inputs x outputs)
    x = mf.tensor(np.random.default_rng(2).standard_normal(small), requires_grad=True)
    assert gradcheck(layer, [x])
    weights = mf.tensor(np.random.default_rng(3).standard_normal(layer(x).shape))
    layer.zero_grad()
    (layer(x) * weights).sum().backward()
    eps = 1e-6
    for name, p in layer.named_parameters():
        flat = p.detach().view(-1)
        for i in range(min(flat.numel(), 12)):
            with mf.no_grad():
                start = flat[i].item()
                flat[i] = start + eps
                up = (layer(x) * weights).sum().item()
                flat[i] = start - eps
                down = (layer(x) * weights).sum().item()
                flat[i] = start
            numeric = (up - down) / (2 * eps)
            analytic = p.grad.view(-1)[i].item()
            assert abs(numeric - analytic) <= 1e-5 + 1e-3 * abs(numeric), (name, i)


@pytest.mark.parametrize(
    "make,fan_in",
    [(lambda: nn.Linear(50, 40), 50), (lambda: nn.Conv2d(3, 30, 4), 48),
     (lambda: nn.Conv1d(5, 40, 3), 15)],
)  # fmt: skip
def test_default_init_is_kaiming_uniform(make, fan_in):
    mf.manual_seed(0)
    layer = make()
    bound = 1 / np.sqrt(fan_in)
    for p in layer.parameters():
        values = p.value.detach().numpy()
        assert values.min() >= -bound and values.max() <= bound
        assert values.max() > 0.8 * bound and values.min() < -0.8 * bound
        assert abs(values.std() - bound / np.sqrt(3)) < 0.15 * bound
        assert p.value.requires_grad
    mf.manual_seed(0)
    again = make()
    assert all(
        a.value.tolist() == b.value.tolist()
        for a, b in zip(layer.parameters(), again.parameters(), strict=True)
    )


def test_embedding_and_layer_norm_init():
    mf.manual_seed(0)
    emb = nn.Embedding(400, 50, padding_idx=3)
    w = emb.weight.value.detach().numpy()
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02
    assert (w[3] == 0).all()
    assert repr(emb) == repr(torch.nn.Embedding(400, 50, padding_idx=3))
    small = nn.Embedding(4, 2)
    index = mf.tensor([[0, 2, 2], [3, 0, 1]])
    assert gradcheck(lambda w: F.embedding(index, w), [small.weight.value])
    out = emb(mf.tensor([[3, 5]]))
    assert out.shape == (1, 2, 50)
    out.sum().backward()
    assert emb.weight.value.grad.numpy()[3].tolist() == [0.0] * 50
    norm = nn.LayerNorm(3)
    assert norm.weight.value.tolist() == [1.0] * 3 and norm.bias.value.tolist() == [0.0] * 3


def test_layers_follow_dtype_and_batchnorm_running_stats():
    layer = nn.Linear(3, 2, dtype=mf.float32)
    assert layer.weight.value.dtype is mf.float32
    ours, theirs = nn.BatchNorm1d(2), torch.nn.BatchNorm1d(2).double()
    x = np.random.default_rng(0).standard_normal((5, 2, 3))
    for _ in range(2):
        assert_close(ours(mf.tensor(x)), theirs(torch.tensor(x)).detach(), rtol=1e-9, atol=1e-12)
    assert_close(ours.running_mean, theirs.running_mean, rtol=1e-9, atol=1e-12)
    assert_close(ours.running_var, theirs.running_var, rtol=1e-9, atol=1e-12)
    assert ours.num_batches_tracked.item() == 2
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_dropout_layer_uses_training_flag():
    layer = nn.Dropout(0.5)
    x = mf.ones(10, 10)
    assert (layer(x).numpy() == 0).any()
    layer.eval()
    assert layer(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(2.0)


def test_sequential_indexing_len_iteration_and_slicing():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(model) == 3
    assert isinstance(model[0], nn.Linear) and isinstance(model[-1], nn.Linear)
    assert [type(m).__name__ for m in model] == ["Linear", "ReLU", "Linear"]
    head = model[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is model[0]
    x = mf.randn(4, 2)
    assert_close(model(x), model[2](model[1](model[0](x))))
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert [n for n, _ in named.named_parameters()] == ["fc.weight", "fc.bias"]
    assert isinstance(named[1], nn.Tanh)
    with pytest.raises(IndexError, match="index 3 is out of range"):
        model[3]
    model.append(nn.Sigmoid())
    assert len(model) == 4 and model(x).shape == (4, 1)


def test_module_list_registers_its_modules():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    net = Net()
    assert len(net.blocks) == 3 and len(list(net.parameters())) == 6
    assert "blocks.2.bias" in dict(net.named_parameters())
    net.blocks.append(nn.Linear(2, 1))
    assert net(mf.randn(3, 2)).shape == (3, 1)
    net.blocks[0] = nn.ReLU()
    assert len(list(net.parameters())) == 6
    assert isinstance(net.blocks[1:], nn.ModuleList) and len(net.blocks[1:]) == 3
