"""Tensor backwards (task 2.4): gradcheck of every differentiable op on drawn inputs.

Inputs are drawn with non-contiguous layouts (permuted, sliced) and, for binary ops,
with shapes that broadcast against each other, so gradients must be summed back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from minifw.autograd import gradcheck
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt
from tests.hypothesis_profiles import at_most, fixture_ok

task2_4 = pytest.mark.task2_4
# Each gradcheck runs dozens of forwards and backwards; where only the values and the
# layout vary (not the shapes), a few examples cover the op.
few = at_most(6)
some = at_most(12)
SMALL = {"max_dims": 3, "max_side": 3}
DIFFERENTIABLE = [spec for spec in mt.OPS if spec.differentiable]


def leaf(data: st.DataObject, backend: TensorBackend, shape: Any = None, **kw: Any) -> mf.Tensor:
    """A float64 leaf requiring grad, drawn in a contiguous, permuted or sliced layout."""
    if shape is None:
        shape = data.draw(mt.shapes(**SMALL))
    return data.draw(mt.tensors(shape=shape, backend=backend, requires_grad=True, **kw))


@task2_4
@pytest.mark.parametrize("spec", DIFFERENTIABLE, ids=lambda s: s.name)
@fixture_ok
@given(data=st.data())
def test_gradcheck_op_table(backend: TensorBackend, spec: mt.OpSpec, data: st.DataObject) -> None:
    domains = spec.domains(for_grad=True)
    if spec.arity == 2:
        shapes = data.draw(mt.broadcastable_shapes(**SMALL))
    else:
        shapes = (data.draw(mt.shapes(**SMALL)),)
    args = [
        leaf(data, backend, shape, elements=domain.elements())
        for shape, domain in zip(shapes, domains, strict=True)
    ]
    assert gradcheck(spec.fn, args)


@task2_4
@fixture_ok
@given(data=st.data())
def test_gradcheck_matmul_forms(backend: TensorBackend, data: st.DataObject) -> None:
    shape_a, shape_b = data.draw(mt.matmul_shapes(max_batch_dims=1, max_side=3))
    a, b = leaf(data, backend, shape_a), leaf(data, backend, shape_b)
    assert gradcheck(lambda x, y: x @ y, (a, b))


@task2_4
@some
@given(data=st.data(), keepdim=st.booleans())
def test_gradcheck_sum_mean_var(
    backend: TensorBackend, data: st.DataObject, keepdim: bool
) -> None:
    x = leaf(data, backend, data.draw(mt.shapes(min_dims=1, **SMALL)))
    dims = data.draw(st.lists(st.integers(-x.dim(), x.dim() - 1), min_size=1, max_size=2))
    dim = tuple({d % x.dim() for d in dims})
    assert gradcheck(lambda t: t.sum(dim, keepdim), (x,))
    assert gradcheck(lambda t: t.mean(dim[0], keepdim), (x,))
    assert gradcheck(lambda t: t.sum() * 2.0, (x,))
    if x.numel() > 1:
        assert gradcheck(lambda t: t.var(), (x,))


@task2_4
@some
@given(data=st.data(), keepdim=st.booleans())
def test_gradcheck_max_and_min(backend: TensorBackend, data: st.DataObject, keepdim: bool) -> None:
    shape = data.draw(mt.shapes(min_dims=1, **SMALL))
    size = int(np.prod(shape))
    # distinct values, at least 0.1 apart: the max is unique and stays so under eps
    values = data.draw(st.permutations(list(np.arange(size) * 0.1 - 1.0)))
    x = mf.tensor(np.array(values).reshape(shape), backend=backend, requires_grad=True)
    dim = data.draw(st.integers(-x.dim(), x.dim() - 1))
    assert gradcheck(lambda t: t.max(dim, keepdim)[0], (x,))
    assert gradcheck(lambda t: t.min(dim, keepdim).values, (x,))
    assert gradcheck(lambda t: t.max(), (x,))
    assert gradcheck(lambda t: t.min(), (x,))


def check_drawn_broadcast_backward(data: st.DataObject) -> None:
    """(a * b + a).sum() of drawn broadcastable operands: both gradients summed back.

    Every chosen-input test of task 2.4 checks one too, so backwards fitted to them fail.
    """
    shape_a, shape_b = data.draw(mt.broadcastable_shapes(**SMALL), label="shapes")
    a = data.draw(mt.tensors(shape=shape_a, requires_grad=True), label="a")
    b = data.draw(mt.tensors(shape=shape_b, requires_grad=True), label="b")
    va, vb = a.detach().numpy(), b.detach().numpy()
    (a * b + a).sum().backward()
    big = np.broadcast_shapes(shape_a, shape_b)

    def summed_to(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        values = np.broadcast_to(values, big)
        extra = values.ndim - len(shape)
        values = values.sum(axis=tuple(range(extra))) if extra else values
        ones = tuple(i for i, side in enumerate(shape) if side == 1)
        return values.sum(axis=ones, keepdims=True) if ones else values

    assert a.grad is not None and b.grad is not None
    mt.assert_close(a.grad, summed_to(np.broadcast_to(vb, big) + 1.0, shape_a))
    mt.assert_close(b.grad, summed_to(va, shape_b))


@task2_4
@some
@given(data=st.data())
def test_max_of_ties_shares_the_gradient_evenly(data: st.DataObject) -> None:
    check_drawn_broadcast_backward(data)
    x = mf.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    assert x.grad is not None and x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]
    y = mf.tensor([[3.0, 3.0]], requires_grad=True)
    y.max(1).values.sum().backward()
    assert y.grad is not None and y.grad.tolist() == [[1.0, 0.0]]  # the index max returns


LAYOUT_OPS: list[tuple[str, Callable[[Any], Any]]] = [
    ("view", lambda t: t.contiguous().view(-1) * 1.0),
    ("reshape", lambda t: t.reshape(3, 4)),
    ("permute", lambda t: t.permute(2, 0, 1)),
    ("transpose", lambda t: t.transpose(0, -1)),
    ("T", lambda t: t.T),
    ("unsqueeze_squeeze", lambda t: t.unsqueeze(1).squeeze(1)),
    ("flatten", lambda t: t.flatten(1)),
    ("expand", lambda t: t[:, :1].expand(2, 3, 2)),
    ("expand_new_dims", lambda t: t.expand(2, 2, 3, 2)),
    ("index", lambda t: t[1, ::2, None]),
    ("index_ellipsis", lambda t: t[..., 1]),
    ("contiguous", lambda t: t.transpose(0, 1).contiguous()),
    ("clone", lambda t: t.clone()),
    ("cat", lambda t: mf.cat([t, t[:, :1] * 2.0], 1)),
    ("stack", lambda t: mf.stack([t, t.exp()], -1)),
    ("where", lambda t: mf.where(t > 0, t * t, -t)),
    ("where_number", lambda t: mf.where(t < 0, 0.0, t)),
    ("to_same", lambda t: t.to(mf.float64).double()),
]


# Layout ops whose backward is given code (views, indexing, copies): checked, never graded.
GIVEN_LAYOUT = {"reshape", "unsqueeze_squeeze", "flatten", "index", "index_ellipsis", "clone"}
GIVEN_LAYOUT |= {"to_same"}
TASK_LAYOUT_OPS = [op for op in LAYOUT_OPS if op[0] not in GIVEN_LAYOUT]
GIVEN_LAYOUT_OPS = [op for op in LAYOUT_OPS if op[0] in GIVEN_LAYOUT]


def check_layout_op(backend: TensorBackend, fn: Any, data: st.DataObject) -> None:
    x = leaf(data, backend, (2, 3, 2), elements=mt.AWAY_FROM_KINK.elements())
    assert gradcheck(fn, (x,))


@task2_4
@pytest.mark.parametrize(("name", "fn"), TASK_LAYOUT_OPS, ids=[n for n, _ in TASK_LAYOUT_OPS])
@few
@given(data=st.data())
def test_gradcheck_layout_ops(
    backend: TensorBackend, name: str, fn: Any, data: st.DataObject
) -> None:
    check_layout_op(backend, fn, data)


@pytest.mark.extra  # the backward of these layout ops is given code
@pytest.mark.parametrize(("name", "fn"), GIVEN_LAYOUT_OPS, ids=[n for n, _ in GIVEN_LAYOUT_OPS])
@few
@given(data=st.data())
def test_gradcheck_given_layout_ops(
    backend: TensorBackend, name: str, fn: Any, data: st.DataObject
) -> None:
    check_layout_op(backend, fn, data)


@task2_4
@some
@given(data=st.data())
def test_gradcheck_cat_and_where_with_several_inputs(data: st.DataObject) -> None:
    check_drawn_broadcast_backward(data)
    a = mf.randn(2, 3, requires_grad=True)
    b = mf.randn(1, 3, requires_grad=True)
    c = mf.randn(3, requires_grad=True)
    assert gradcheck(lambda x, y: mf.cat([x, y], 0), (a, b))
    assert gradcheck(lambda x, y, z: mf.where(x > 0, y, z), (a, b, c))
    assert gradcheck(lambda x, y: mf.stack([x[0], y[0]]), (a, b))


@pytest.mark.extra  # Cast is given code
def test_cast_backward_returns_the_leaf_dtype() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    y = x.float()
    assert y.dtype is mf.float32 and y.grad_fn is not None
    (y * 3.0).sum().backward()
    assert x.grad is not None and x.grad.dtype is mf.float64 and x.grad.tolist() == [3.0, 3.0]
    assert not x.long().requires_grad


@task2_4
@some
@given(data=st.data())
def test_gradients_of_broadcast_operands_are_summed_back(data: st.DataObject) -> None:
    check_drawn_broadcast_backward(data)
    a = mf.ones(2, 3, requires_grad=True)
    b = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = mf.tensor([[2.0], [5.0]], requires_grad=True)
    ((a * b) + c).sum().backward()
    assert b.grad is not None and b.grad.shape == (3,) and b.grad.tolist() == [2.0, 2.0, 2.0]
    assert c.grad is not None and c.grad.shape == (2, 1) and c.grad.tolist() == [[3.0], [3.0]]
    assert a.grad is not None and a.grad.tolist() == [[1.0, 2.0, 3.0]] * 2


@task2_4
@some
@given(data=st.data())
def test_number_operands_get_no_gradient_and_constants_stay_constant(data: st.DataObject) -> None:
    check_drawn_broadcast_backward(data)
    x = mf.tensor([2.0], requires_grad=True)
    k = mf.tensor([5.0])
    (3.0 * x + k / x - 1).sum().backward()
    assert x.grad is not None and x.grad.tolist() == [3.0 - 5.0 / 4.0]
    assert k.grad is None
