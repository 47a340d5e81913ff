"""Every tensor op against PyTorch in float64: forwards (task 2.3) and backwards (task 2.4).

Each case is one function written against the shared Tensor API, `fn(lib, *tensors)`,
run once with `lib = minifw` and once with `lib = torch` on the same drawn values.
Backwards send the same random upstream gradient through both and compare the
gradients of every input. Skipped only when torch is not installed (CI installs it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import minifw as mf
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt
from tests.hypothesis_profiles import at_most

torch = pytest.importorskip("torch")

fixture_ok = at_most(10)
Shapes = st.SearchStrategy[tuple[tuple[int, ...], ...]]


class Case(NamedTuple):
    """An op run on both libraries: fn(lib, *inputs), the input shapes and values."""

    name: str
    fn: Callable[..., Any]
    shapes: Shapes
    domains: tuple[Any, ...] = (mt.ANY,)
    differentiable: bool = True


def one(shape: tuple[int, ...] | None = None, **kw: Any) -> Shapes:
    if shape is not None:
        return st.just((shape,))
    return mt.shapes(**kw).map(lambda s: (s,))


def pair_of_broadcastable() -> Shapes:
    return mt.broadcastable_shapes(max_dims=3, max_side=3)


DISTINCT = "distinct"  # values all different (no ties for max/min/argmax)
M = (2, 3, 4)

ELEMENTWISE = [
    Case(s.name, lambda lib, *a, s=s: s.fn(*a),
         pair_of_broadcastable() if s.arity == 2 else one(max_dims=3), s.domains(True),
         s.differentiable)
    for s in mt.OPS
]  # fmt: skip
OTHERS = [
    Case("sum", lambda lib, a: a.sum(), one()),
    Case("sum_dim", lambda lib, a: a.sum(1), one(M)),
    Case("sum_neg_keepdim", lambda lib, a: a.sum(-1, keepdim=True), one(M)),
    Case("sum_tuple", lambda lib, a: a.sum((0, 2)), one(M)),
    Case("lib_sum", lambda lib, a: lib.sum(a, 0), one(M)),
    Case("mean", lambda lib, a: a.mean(), one()),
    Case("mean_dims", lambda lib, a: a.mean((-1, 0), keepdim=True), one(M)),
    Case("var", lambda lib, a: a.var(), one(M)),
    Case("var_dim_biased", lambda lib, a: a.var(1, unbiased=False), one(M)),
    Case("std_dim", lambda lib, a: a.std(0, keepdim=True), one(M)),
    Case("max", lambda lib, a: a.max(), one(M), (DISTINCT,)),
    Case("max_dim", lambda lib, a: a.max(1), one(M), (DISTINCT,)),
    Case("max_keepdim", lambda lib, a: a.max(-1, keepdim=True)[0], one(M), (DISTINCT,)),
    Case("min", lambda lib, a: a.min(), one(M), (DISTINCT,)),
    Case("min_dim", lambda lib, a: a.min(0), one(M), (DISTINCT,)),
    Case("argmax", lambda lib, a: a.argmax(), one(M), (DISTINCT,), False),
    Case("argmax_dim", lambda lib, a: lib.argmax(a, 2, keepdim=True), one(M), (DISTINCT,), False),
    Case("argmin_dim", lambda lib, a: a.argmin(1), one(M), (DISTINCT,), False),
    Case("matmul", lambda lib, a, b: a @ b, mt.matmul_shapes(max_side=3), (mt.ANY, mt.ANY)),
    Case("lib_matmul", lambda lib, a, b: lib.matmul(a, b), st.just(((2, 3), (3, 2))),
         (mt.ANY, mt.ANY)),
    Case("view", lambda lib, a: a.view(4, -1), one(M)),
    Case("view_split", lambda lib, a: a.view(2, 3, 2, 2), one(M)),
    Case("reshape_copy", lambda lib, a: a.transpose(0, 2).reshape(-1, 6), one(M)),
    Case("permute", lambda lib, a: a.permute(2, 0, 1), one(M)),
    Case("transpose", lambda lib, a: a.transpose(-1, 0), one(M)),
    Case("T", lambda lib, a: a.T, one((3, 4))),
    Case("mT", lambda lib, a: a.mT, one(M)),
    Case("unsqueeze", lambda lib, a: a.unsqueeze(-2), one(M)),
    Case("squeeze", lambda lib, a: a[:, :1].squeeze(), one(M)),
    Case("squeeze_dim", lambda lib, a: a[:1].squeeze(0), one(M)),
    Case("flatten", lambda lib, a: a.flatten(), one(M)),
    Case("flatten_range", lambda lib, a: a.flatten(0, 1), one(M)),
    Case("expand", lambda lib, a: a[:, :1].expand(2, 3, 4), one(M)),
    Case("expand_new", lambda lib, a: a.expand(3, -1, -1), one((2, 4))),
    Case("index_int", lambda lib, a: a[1], one(M)),
    Case("index_mixed", lambda lib, a: a[1:, None, ::2, -1], one(M)),
    Case("index_ellipsis", lambda lib, a: a[..., 1:3], one(M)),
    Case("contiguous", lambda lib, a: a.transpose(0, 1).contiguous(), one(M)),
    Case("clone", lambda lib, a: a.clone() * 2.0, one(M)),
    Case("cat", lambda lib, a, b: lib.cat([a, b, a], 1), st.just(((2, 3), (2, 1))),
         (mt.ANY, mt.ANY)),
    Case("stack", lambda lib, a, b: lib.stack([a, b], -1), st.just(((2, 3), (2, 3))),
         (mt.ANY, mt.ANY)),
    Case("where", lambda lib, a, b: lib.where(a > b, a * b, b - a), pair_of_broadcastable(),
         (mt.ANY, mt.ANY)),
    Case("where_number", lambda lib, a: lib.where(a > 0, a, 0.0), one(M)),
    Case("lib_elementwise", lambda lib, a: lib.tanh(lib.exp(a)) + lib.sigmoid(lib.relu(a)),
         one(M)),
    Case("inplace_chain", lambda lib, a, b: _inplace_chain(a, b), st.just(((2, 3), (3,))),
         (mt.ANY, mt.ANY)),
    Case("detach", lambda lib, a: a * a.detach(), one(M)),
    Case("pow_tensor_exponent", lambda lib, a: a ** lib.tensor(2.0, dtype=lib.float64), one(M)),
    Case("float32_round_trip", lambda lib, a: (a.float() * 3.0).double(), one(M)),
    Case("mse_like", lambda lib, a, b: ((a - b) ** 2).mean(), pair_of_broadcastable(),
         (mt.ANY, mt.ANY)),
]  # fmt: skip
CASES = ELEMENTWISE + OTHERS


def _inplace_chain(a: Any, b: Any) -> Any:
    y = a * 1.0
    y += b
    y.mul_(2.0)
    y.sub_(b, alpha=0.5)
    y /= 4.0
    return y


def draw_inputs(data: st.DataObject, case: Case) -> list[np.ndarray]:
    shapes = data.draw(case.shapes)
    domains = case.domains * len(shapes) if len(case.domains) == 1 else case.domains
    arrays = []
    for shape, domain in zip(shapes, domains, strict=True):
        size = int(np.prod(shape))
        if domain == DISTINCT:
            values = data.draw(st.permutations(list(np.arange(size) * 0.25 - 1.0)))
            arrays.append(np.array(values, dtype=np.float64).reshape(shape))
        else:
            arrays.append(data.draw(mt.strided(shape=shape, elements=domain.elements())).values)
    return arrays


def as_tuple(out: Any) -> tuple[Any, ...]:
    return tuple(out) if isinstance(out, tuple) else (out,)


def run_both(case: Case, arrays: list[np.ndarray], backend: TensorBackend, grad: bool) -> Any:
    mine = [mf.tensor(a, backend=backend, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=grad) for a in arrays]
    return mine, theirs, as_tuple(case.fn(mf, *mine)), as_tuple(case.fn(torch, *theirs))


# Cases whose forward, or backward, is given code (views, indexing, joins, the max of all
# cells, a tensor exponent) or task 2.1's permute: they are checked, never graded.
GIVEN_FORWARD = {
    "T", "mT", "permute", "transpose", "expand", "expand_new", "flatten", "flatten_range",
    "index_ellipsis", "index_int", "index_mixed", "squeeze", "squeeze_dim", "unsqueeze",
    "view", "view_split",
}  # fmt: skip
GIVEN_BACKWARD = {
    "cat", "stack", "max", "flatten", "flatten_range", "index_ellipsis", "index_int",
    "index_mixed", "squeeze", "squeeze_dim", "unsqueeze", "view", "view_split",
    "pow_tensor_exponent",
}  # fmt: skip
FORWARD_CASES = [c for c in CASES if c.name not in GIVEN_FORWARD]
GIVEN_FORWARD_CASES = [c for c in CASES if c.name in GIVEN_FORWARD]
BACKWARD_CASES = [c for c in CASES if c.differentiable and c.name not in GIVEN_BACKWARD]
GIVEN_BACKWARD_CASES = [c for c in CASES if c.differentiable and c.name in GIVEN_BACKWARD]


def check_forward(backend: TensorBackend, case: Case, data: st.DataObject) -> None:
    arrays = draw_inputs(data, case)
    _, _, mine, theirs = run_both(case, arrays, backend, grad=False)
    assert len(mine) == len(theirs)
    for got, want in zip(mine, theirs, strict=True):
        assert got.shape == tuple(want.shape)
        if not want.dtype.is_floating_point and want.dtype != torch.bool:
            assert got.dtype is mf.int64
        mt.assert_close(got, want, rtol=1e-10, atol=1e-12)


def check_backward(backend: TensorBackend, case: Case, data: st.DataObject) -> None:
    arrays = draw_inputs(data, case)
    # Squares of magnitudes below ~1e-154 are subnormal: var/std gradients then depend on
    # how each library rounds subnormals, not on the math this test is about.
    assume(all(np.all((a == 0) | (np.abs(a) > 1e-100)) for a in arrays))
    mine_in, theirs_in, mine, theirs = run_both(case, arrays, backend, grad=True)
    out_mine, out_theirs = mine[0], theirs[0]
    upstream = data.draw(mt.strided(shape=tuple(out_theirs.shape))).values
    out_mine.backward(mf.tensor(upstream, backend=backend))
    out_theirs.backward(torch.tensor(upstream, dtype=torch.float64))
    for i, (x, y) in enumerate(zip(mine_in, theirs_in, strict=True)):
        if y.grad is None:
            assert x.grad is None or not np.any(x.grad.numpy()), f"input {i}"
            continue
        assert x.grad is not None, f"input {i} got no gradient"
        mt.assert_close(x.grad, y.grad, rtol=1e-9, atol=1e-10)


@pytest.mark.extra  # PyTorch decides, and grading never installs it
@pytest.mark.parametrize("case", FORWARD_CASES, ids=lambda c: c.name)
@fixture_ok
@given(data=st.data())
def test_forward_matches_pytorch(backend: TensorBackend, case: Case, data: st.DataObject) -> None:
    check_forward(backend, case, data)


@pytest.mark.extra  # views and indexing are given code (permute is task 2.1's)
@pytest.mark.parametrize("case", GIVEN_FORWARD_CASES, ids=lambda c: c.name)
@fixture_ok
@given(data=st.data())
def test_given_forward_matches_pytorch(
    backend: TensorBackend, case: Case, data: st.DataObject
) -> None:
    check_forward(backend, case, data)


@pytest.mark.extra  # PyTorch decides, and grading never installs it
@pytest.mark.parametrize("case", BACKWARD_CASES, ids=lambda c: c.name)
@fixture_ok
@given(data=st.data())
def test_backward_matches_pytorch(backend: TensorBackend, case: Case, data: st.DataObject) -> None:
    check_backward(backend, case, data)


@pytest.mark.extra  # given backward: views, indexing, cat, the max of all cells, t ** tensor
@pytest.mark.parametrize("case", GIVEN_BACKWARD_CASES, ids=lambda c: c.name)
@fixture_ok
@given(data=st.data())
def test_given_backward_matches_pytorch(
    backend: TensorBackend, case: Case, data: st.DataObject
) -> None:
    check_backward(backend, case, data)


# ---- semantics beyond values -------------------------------------------------------------


def _torch_dtype(name: str) -> Any:
    return getattr(torch, name)


PROMOTIONS = [
    ("int64", "float64", lambda a, b: a + b),
    ("int64", "float32", lambda a, b: a * b),
    ("float32", "float64", lambda a, b: a - b),
    ("int64", "int64", lambda a, b: a / b),
    ("int64", "int64", lambda a, b: a * b),
    ("int64", None, lambda a, b: a + 2.5),
    ("int64", None, lambda a, b: a**2),
    ("float32", None, lambda a, b: 2.0 * a),
    ("int64", None, lambda a, b: a.exp()),
    ("int64", None, lambda a, b: a.sum()),
    ("float32", None, lambda a, b: a.mean()),
    ("int64", None, lambda a, b: a.max(0)[1]),
]


@pytest.mark.extra  # dtype promotion is given code
@pytest.mark.parametrize(("first", "second", "fn"), PROMOTIONS)
def test_dtype_promotion_matches_pytorch(first: str, second: str | None, fn: Any) -> None:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # minifw's default float dtype
    try:
        _check_promotion(first, second, fn)
    finally:
        torch.set_default_dtype(previous)


def _check_promotion(first: str, second: str | None, fn: Any) -> None:
    values = np.array([1, 2, 3])
    mine_a = mf.tensor(values, dtype=first)
    theirs_a = torch.tensor(values, dtype=_torch_dtype(first))
    mine_b = mf.tensor(values, dtype=second) if second else None
    theirs_b = torch.tensor(values, dtype=_torch_dtype(second)) if second else None
    mine, theirs = fn(mine_a, mine_b), fn(theirs_a, theirs_b)
    assert mine.dtype.name == str(theirs.dtype).replace("torch.", "")
    mt.assert_close(mine, theirs, rtol=1e-6, atol=1e-6)


CREATION = [
    lambda lib: lib.arange(5),
    lambda lib: lib.arange(0, 1, 0.25),
    lambda lib: lib.arange(1.0, 7.0, 2.0),
    lambda lib: lib.linspace(-1, 1, 5),
    lambda lib: lib.eye(3),
    lambda lib: lib.eye(2, 3),
    lambda lib: lib.full((2, 2), 3.5),
    lambda lib: lib.full((2,), 7),
    lambda lib: lib.zeros(2, 3),
    lambda lib: lib.ones((3,), dtype=lib.float32),
    lambda lib: lib.zeros_like(lib.ones(2, 3, dtype=lib.int64)),
    lambda lib: lib.ones_like(lib.zeros(2)),
    lambda lib: lib.full_like(lib.zeros(2), -1.5),
    lambda lib: lib.tensor([[1, 2], [3, 4]]),
    lambda lib: lib.tensor(np.arange(3, dtype=np.float32)),
    lambda lib: lib.from_numpy(np.arange(4.0).reshape(2, 2)[:, 1]),
]


@pytest.mark.extra  # creation is given code
@pytest.mark.parametrize("make", CREATION)
def test_creation_matches_pytorch(make: Any) -> None:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        theirs = make(torch)
    finally:
        torch.set_default_dtype(previous)
    mine = make(mf)
    assert mine.shape == tuple(theirs.shape) and mine.stride() == theirs.stride()
    assert mine.dtype.name == str(theirs.dtype).replace("torch.", "")
    mt.assert_close(mine, theirs, rtol=1e-15, atol=0)


REPRS = [
    lambda lib: lib.tensor([1.0, 2.0, 3.0]),
    lambda lib: lib.tensor([[0.5, -1.25], [3.0, 4.0]]),
    lambda lib: lib.tensor([[1, 2], [30, -4]]),
    lambda lib: lib.tensor(3.25),
    lambda lib: lib.tensor([1e-5, 1.0, 123.0]),
    lambda lib: lib.tensor([1e9, 2.0]),
    lambda lib: lib.tensor([[float("nan"), float("-inf")], [0.0, 2.5]]),
    lambda lib: lib.tensor([0.1, 0.2], requires_grad=True),
    lambda lib: lib.tensor([0.1, 0.2], requires_grad=True) * 2.0,
    lambda lib: lib.arange(40.0) / 3.0,
    lambda lib: lib.arange(24.0).view(2, 3, 4),
    lambda lib: lib.zeros(3, 0),
    lambda lib: lib.ones(2, dtype=lib.float32),
    lambda lib: lib.arange(3000).view(3, 1000),
]


@pytest.mark.extra  # printing is given code
@pytest.mark.parametrize("make", REPRS)
def test_repr_matches_pytorch(make: Any) -> None:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        theirs = repr(make(torch))
    finally:
        torch.set_default_dtype(previous)
    theirs = theirs.replace("torch.", "minifw.").replace("Backward0>", "Backward>")
    assert repr(make(mf)) == theirs


ERRORS = [
    ("view", lambda lib: lib.zeros(2, 3).T.view(6)),
    ("view_size", lambda lib: lib.zeros(2, 3).view(4)),
    ("broadcast", lambda lib: lib.zeros(2, 3) + lib.zeros(4)),
    ("matmul", lambda lib: lib.zeros(2, 3) @ lib.zeros(4, 5)),
    ("permute_length", lambda lib: lib.zeros(2, 3).permute(0)),
    ("permute_duplicate", lambda lib: lib.zeros(2, 3).permute(1, 1)),
    ("dim_range", lambda lib: lib.zeros(2, 3).sum(2)),
    ("item", lambda lib: lib.zeros(2).item()),
    ("backward_non_scalar", lambda lib: (lib.zeros(2, requires_grad=True) * 2).backward()),
    ("backward_twice", lambda lib: _twice(lib)),
    ("leaf_inplace", lambda lib: lib.zeros(2, requires_grad=True).add_(1)),
    ("view_of_leaf_inplace", lambda lib: lib.zeros(2, requires_grad=True)[0].add_(1)),
    ("numpy_requires_grad", lambda lib: lib.zeros(2, requires_grad=True).numpy()),
    ("int_requires_grad", lambda lib: lib.zeros(2, dtype=lib.int64).requires_grad_()),
    ("max_empty", lambda lib: lib.zeros(0).max()),
    ("index_range", lambda lib: lib.zeros(2, 3)[2]),
    ("too_many_indices", lambda lib: lib.zeros(2)[0, 0]),
    ("cat_sizes", lambda lib: lib.cat([lib.zeros(2, 3), lib.zeros(2, 4)])),
    ("stack_sizes", lambda lib: lib.stack([lib.zeros(2), lib.zeros(3)])),
    ("int_negative_power", lambda lib: lib.tensor([2]) ** -1),
    ("inplace_cast", lambda lib: lib.zeros(2, dtype=lib.int64).add_(0.5)),
    ("expand", lambda lib: lib.zeros(2, 3).expand(2, 4)),
    ("bool", lambda lib: bool(lib.zeros(2))),
]


def _twice(lib: Any) -> None:
    y = lib.ones(2, requires_grad=True).exp().sum()
    y.backward()
    y.backward()


@pytest.mark.extra  # the error checks are given code
@pytest.mark.parametrize(("name", "fn"), ERRORS, ids=[n for n, _ in ERRORS])
def test_error_messages_carry_pytorchs_text(name: str, fn: Any) -> None:
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(type(theirs.value)) as mine:
        fn(mf)
    expected = str(theirs.value).split("\n")[0].strip().lower()
    expected = expected.split(" (triggered internally")[0]
    assert expected.rstrip(".") in str(mine.value).lower().replace("\n", " ")
