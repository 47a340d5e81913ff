"""nn.functional against PyTorch: activations, softmax family, linear, one_hot, embedding.

Every op with a PyTorch counterpart is compared with it in float64, forward and backward.
Never graded (`extra`): task 4.4's own tests, against numpy, are in test_activation.py.
Each test skips, saying why, where PyTorch is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw.autograd import gradcheck
from tests.strategies import assert_close, compare_with_torch, shapes, small_floats

try:
    import torch

    TF = torch.nn.functional
except ImportError:  # the tests below skip one by one
    torch = TF = None

pytestmark = [
    pytest.mark.extra,
    pytest.mark.skipif(torch is None, reason="PyTorch, the oracle of these tests, is missing"),
]


arrays = hnp.arrays(np.float64, shapes(min_dims=1, max_dims=3), elements=small_floats(-5, 5))


@settings(deadline=None)
@given(arrays, st.data())
def test_softmax_and_log_softmax_match_torch(values, data):
    dim = data.draw(st.integers(-values.ndim, values.ndim - 1))
    compare_with_torch(lambda t: F.softmax(t, dim), lambda t: TF.softmax(t, dim), [values])
    compare_with_torch(lambda t: F.log_softmax(t, dim), lambda t: TF.log_softmax(t, dim), [values])


def test_softmax_family_is_stable_for_huge_logits():
    logits = np.array([[1000.0, 0.0, -1000.0], [1000.0, 1000.0, 999.0]])
    compare_with_torch(lambda t: F.softmax(t, 1), lambda t: TF.softmax(t, 1), [logits])
    compare_with_torch(lambda t: F.log_softmax(t, 1), lambda t: TF.log_softmax(t, 1), [logits])
    out = F.log_softmax(mf.tensor(logits), 1)
    assert np.isfinite(out.numpy()).all()
    targets = np.array([2, 0])
    loss = F.cross_entropy(mf.tensor(logits), mf.tensor(targets))
    assert_close(loss, TF.cross_entropy(torch.tensor(logits), torch.tensor(targets)))


def test_softmax_gradcheck_and_float32():
    x = mf.tensor(np.random.default_rng(1).standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda t: F.log_softmax(t, 0), [x])
    small = F.softmax(mf.tensor([1.0, 2.0], dtype=mf.float32), 0)
    assert small.dtype is mf.float32
    assert abs(sum(small.tolist()) - 1.0) < 1e-6


@settings(deadline=None)
@given(arrays, st.data())
def test_max_along_dim_matches_torch(values, data):
    dim = data.draw(st.integers(-values.ndim, values.ndim - 1))
    keepdim = data.draw(st.booleans())
    compare_with_torch(
        lambda t: t.max(dim, keepdim).values, lambda t: t.max(dim, keepdim).values, [values]
    )
    compare_with_torch(
        lambda t: F.max_along(t, dim, keepdim).values,
        lambda t: t.max(dim, keepdim).values,
        [values],
    )
    want = torch.tensor(values).max(dim, keepdim).indices.tolist()
    assert mf.tensor(values).max(dim, keepdim).indices.tolist() == want
    assert F.max_along(mf.tensor(values), dim, keepdim).indices.tolist() == want


@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh"])
def test_activations_match_torch(name):
    values = np.random.default_rng(0).uniform(-4, 4, size=(3, 4))
    compare_with_torch(
        getattr(F, name), getattr(TF, name) if name == "relu" else getattr(torch, name), [values]
    )


def test_linear_matches_torch_and_checks_shapes():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    compare_with_torch(F.linear, TF.linear, [x, w, b])
    compare_with_torch(lambda x, w: F.linear(x, w), lambda x, w: TF.linear(x, w), [x, w])
    with pytest.raises(RuntimeError, match=r"input of shape \(2, 3\) has 3 features"):
        F.linear(mf.zeros(2, 3), mf.zeros(5, 4))


def test_one_hot_matches_torch():
    labels = np.array([[0, 3], [2, 1]])
    ours = F.one_hot(mf.tensor(labels))
    assert ours.dtype is mf.int64
    assert ours.tolist() == TF.one_hot(torch.tensor(labels)).tolist()
    assert F.one_hot(mf.tensor([1]), 4).tolist() == [[0, 1, 0, 0]]
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(mf.tensor([5]), 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(mf.tensor([-1]), 3)
    with pytest.raises(RuntimeError, match="index tensor of dtype int64"):
        F.one_hot(mf.tensor([1.0]), 3)


def test_embedding_gathers_and_scatter_adds():
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((6, 3))
    index = np.array([[1, 4, 1], [0, 5, 1]])
    compare_with_torch(
        lambda w: F.embedding(mf.tensor(index), w),
        lambda w: TF.embedding(torch.tensor(index), w),
        [weight],
    )
    compare_with_torch(
        lambda w: F.embedding(mf.tensor(index), w, padding_idx=1),
        lambda w: TF.embedding(torch.tensor(index), w, padding_idx=1),
        [weight],
    )
    with pytest.raises(IndexError, match="index out of range in self: index 6"):
        F.embedding(mf.tensor([6]), mf.tensor(weight))
    with pytest.raises(RuntimeError, match="scalar type Long"):
        F.embedding(mf.tensor([1.0]), mf.tensor(weight))


def test_layer_norm_matches_torch_and_gradchecks():
    rng = np.random.default_rng(0)
    x, w, b = (
        rng.standard_normal((2, 3, 4)),
        rng.standard_normal((3, 4)),
        rng.standard_normal((3, 4)),
    )
    compare_with_torch(
        lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
        lambda x, w, b: TF.layer_norm(x, (3, 4), w, b),
        [x, w, b],
    )
    small = mf.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda t: F.layer_norm(t, (3,)), [small])
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*, 5\]"):
        F.layer_norm(mf.zeros(2, 3), (5,))


@pytest.mark.parametrize(
    ("name", "forward_launches"), [("softmax", 5), ("log_softmax", 6)]
)  # fmt: skip
def test_softmax_family_is_one_node_with_few_launches(name, forward_launches):
    x = mf.tensor(np.random.default_rng(2).standard_normal((4, 5)), requires_grad=True)
    fn = getattr(F, name)
    with mf.profiler.profile() as forward:
        y = fn(x, 1)
    assert len(forward.events) == forward_launches
    assert (
        y.grad_fn.name() == {"softmax": "Softmax", "log_softmax": "LogSoftmax"}[name] + "Backward"
    )
    assert [node.name() for node, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]
    seed = np.random.default_rng(3).standard_normal((4, 5))
    with mf.profiler.profile() as backward:
        y.backward(mf.tensor(seed))
    assert len(backward.events) == 4  # x keeps the last one as its .grad: no copy
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    getattr(TF, name)(t, 1).backward(torch.tensor(seed))
    assert_close(x.grad, t.grad, rtol=1e-12, atol=1e-14)


def test_softmax_family_edge_cases():
    for fn, torch_fn in ((F.softmax, TF.softmax), (F.log_softmax, TF.log_softmax)):
        compare_with_torch(lambda t, f=fn: f(t, 0), lambda t, f=torch_fn: f(t, 0), [np.array(3.0)])
        empty = fn(mf.zeros(0, 3, requires_grad=True), 0)
        assert empty.shape == (0, 3)
        empty.sum().backward()
        y = fn(mf.tensor([[1.0, 2.0]], requires_grad=True), 1)
        y.mul_(2.0)  # the saved output changed: backward must refuse
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    x = mf.tensor(np.random.default_rng(4).standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda t: F.softmax(t, 1), [x])
    halves = F.log_softmax(mf.tensor([[1.0, 2.0]], dtype=mf.float32, requires_grad=True), 1)
    assert halves.dtype is mf.float32
    assert F.log_softmax(mf.tensor([1, 2]), 0).dtype is mf.float64  # ints become floats
