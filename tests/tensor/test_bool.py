"""Bool tensors against PyTorch: comparisons, logic, all/any, where, closeness, promotion.

Every case runs on each backend and compares values, dtypes, shapes and (for float
results) the gradients of the float inputs with PyTorch's (tests/parity.py).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch
from tests.strategies import broadcastable_shapes, shapes

pytestmark = pytest.mark.extra
FEW = at_most(10)
Case = Callable[..., Any]


def _values(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """Small values of `kind` (float, int, bool) with repeats, so == and != both happen."""
    if kind == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if kind == "int":
        return np.asarray(rng.integers(-3, 4, shape), dtype=np.int64)
    return np.asarray(rng.integers(-4, 5, shape) / 2.0)


# (name, fn(lib, a, b), kind of a, kind of b): binary cases on broadcast shapes.
BINARY: list[tuple[str, Case, str, str]] = [
    ("lt", lambda lib, a, b: a < b, "float", "float"),
    ("le", lambda lib, a, b: a <= b, "float", "int"),
    ("gt", lambda lib, a, b: a > b, "int", "int"),
    ("ge", lambda lib, a, b: a >= b, "bool", "float"),
    ("eq", lambda lib, a, b: a == b, "bool", "bool"),
    ("ne", lambda lib, a, b: a != b, "float", "float"),
    ("and", lambda lib, a, b: a & b, "bool", "bool"),
    ("or", lambda lib, a, b: a | b, "bool", "bool"),
    ("xor", lambda lib, a, b: a ^ b, "bool", "bool"),
    ("int and", lambda lib, a, b: a & b, "int", "int"),
    ("int or bool", lambda lib, a, b: a | b, "int", "bool"),
    ("int xor", lambda lib, a, b: a ^ b, "int", "int"),
    ("logical_and", lambda lib, a, b: lib.logical_and(a, b), "float", "int"),
    ("logical_or", lambda lib, a, b: lib.logical_or(a, b), "float", "bool"),
    ("logical_xor", lambda lib, a, b: a.logical_xor(b), "int", "float"),
    ("bool add", lambda lib, a, b: a + b, "bool", "bool"),
    ("bool mul", lambda lib, a, b: a * b, "bool", "bool"),
    ("bool times float", lambda lib, a, b: b * a, "bool", "float"),
    ("bool plus int", lambda lib, a, b: a + b, "bool", "int"),
    ("bool over bool", lambda lib, a, b: (a / b).double(), "bool", "bool"),  # default dtype
    ("where", lambda lib, a, b: lib.where(a, b, -b), "bool", "float"),
    ("where scalar", lambda lib, a, b: lib.where(a, b, 0.5), "bool", "float"),
    ("where int", lambda lib, a, b: lib.where(a, b, 2), "bool", "int"),
    ("where mixed", lambda lib, a, b: lib.where(a > 0, a, b), "int", "float"),
    ("isclose", lambda lib, a, b: lib.isclose(a, b + 1e-9), "float", "float"),
]


@pytest.mark.parametrize("name, fn, kind_a, kind_b", BINARY, ids=[c[0] for c in BINARY])
@FEW
@given(pair=broadcastable_shapes(max_dims=3, max_side=4), seed=st.integers(0, 2**16))
def test_binary_matches_torch(backend, name, fn, kind_a, kind_b, pair, seed) -> None:  # type: ignore[no-untyped-def]
    """Values, dtype, shape and gradients agree with PyTorch, float64 and float32."""
    rng = np.random.default_rng(seed)
    arrays = [_values(rng, pair[0], kind_a), _values(rng, pair[1], kind_b)]
    for dtype in ("float64", "float32"):
        check_against_torch(fn, arrays, backend, dtype)


# (name, fn(lib, a), kind of a): unary cases.
UNARY: list[tuple[str, Case, str]] = [
    ("invert bool", lambda lib, a: ~a, "bool"),
    ("invert int", lambda lib, a: ~a, "int"),
    ("logical_not", lambda lib, a: lib.logical_not(a), "float"),
    ("bool()", lambda lib, a: a.bool(), "float"),
    ("to float", lambda lib, a: a.float(), "bool"),
    ("to long", lambda lib, a: a.long(), "bool"),
    ("to(bool)", lambda lib, a: a.to(lib.bool), "int"),
    ("all", lambda lib, a: a.all(), "float"),
    ("any", lambda lib, a: lib.any(a), "bool"),
    ("all dim", lambda lib, a: a.all(dim=-1), "int"),
    ("any dim keepdim", lambda lib, a: a.any(0, keepdim=True), "float"),
    ("sum of bool", lambda lib, a: a.sum(), "bool"),
    ("sum of bool dim", lambda lib, a: a.sum(-1), "bool"),
    ("bool plus int scalar", lambda lib, a: a + 1, "bool"),
    ("bool times float scalar", lambda lib, a: (a * 2.5).double(), "bool"),
    ("bool and True", lambda lib, a: a & True, "bool"),
    ("bool or 1", lambda lib, a: a | 1, "bool"),
    ("isnan", lambda lib, a: lib.isnan(a / a), "float"),
    ("isinf", lambda lib, a: (a / 0.0).isinf(), "float"),
    ("isfinite", lambda lib, a: lib.isfinite(1.0 / a), "float"),
    ("isinf int", lambda lib, a: a.isinf(), "int"),
    ("masked product", lambda lib, a: a * (a > 0), "float"),
    ("mask float mean", lambda lib, a: (a > 0).float().mean(), "float"),
    ("where scalars", lambda lib, a: lib.where(a > 0, 1.0, 0).double(), "float"),
    ("where ints", lambda lib, a: lib.where(a, 1, 0), "bool"),
    ("clone", lambda lib, a: a.clone().contiguous(), "bool"),
    ("permuted copy", lambda lib, a: a.T.contiguous(), "bool"),
]


@pytest.mark.parametrize("name, fn, kind", UNARY, ids=[c[0] for c in UNARY])
@FEW
@given(shape=shapes(0, 3, 1, 4), seed=st.integers(0, 2**16))
def test_unary_matches_torch(backend, name, fn, kind, shape, seed) -> None:  # type: ignore[no-untyped-def]
    """Values, dtype, shape and gradients agree with PyTorch, float64 and float32."""
    rng = np.random.default_rng(seed)
    for dtype in ("float64", "float32"):
        check_against_torch(fn, [_values(rng, shape, kind)], backend, dtype)


# (name, fn(lib, *inputs), inputs, what minifw's message names)
ERRORS: list[tuple[str, Case, list[Any], str]] = [
    ("bool minus bool", lambda lib, a: a - a, [np.array([True])], "two bool tensors"),
    ("bool minus int", lambda lib, a: a - 1, [np.array([True])], "bool tensor"),
    ("float minus bool", lambda lib, a: 1.5 - a, [np.array([True])], "bool tensor"),
    ("negate bool", lambda lib, a: -a, [np.array([True])], "Negation"),
    ("invert float", lambda lib, a: ~a, [np.array([1.0])], "integer and Boolean"),
    ("and float", lambda lib, a: a & a, [np.array([1.0])], "bitwise_and"),
    ("where float cond", lambda lib, a: lib.where(a, a, a), [np.array([1.0])], "boolean"),
    ("bool of many", lambda lib, a: bool(a), [np.array([1.0, 2.0])], "more than one"),
    ("bool of none", lambda lib, a: bool(a), [np.zeros(0)], "no values"),
    ("mean of bool", lambda lib, a: a.mean(), [np.array([True])], "floating point"),
    ("isclose dtypes", lambda lib, a, b: lib.isclose(a, b), [np.ones(1), np.ones(1, int)], "Long"),
    ("all bad dim", lambda lib, a: a.all(dim=2), [np.ones((2, 2))], "range"),
    ("grad of bool", lambda lib, a: a.bool().requires_grad_(), [np.ones(2)], "floating point"),
]


@pytest.mark.parametrize("name, fn, arrays, match", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_torch(backend, name, fn, arrays, match) -> None:  # type: ignore[no-untyped-def]
    """Bad input raises PyTorch's exception class, with a message naming the problem."""
    check_raises_like_torch(fn, arrays, backend, match=match)


def test_python_values_and_printing(backend) -> None:  # type: ignore[no-untyped-def]
    """item, tolist, bool(), repr and numpy of bool tensors are PyTorch's."""
    t = mf.tensor([True, False], backend=backend)
    assert t.dtype is mf.bool and t[0].item() is True and t.tolist() == [True, False]
    assert bool(t[0]) and not bool(mf.tensor([0.0], backend=backend))
    assert repr(t.cpu()) == "tensor([ True, False])"
    assert repr(mf.tensor([True, True])) == "tensor([True, True])"
    assert repr(mf.tensor(True)) == "tensor(True)"
    assert repr(mf.tensor([], dtype=mf.bool)) == "tensor([], dtype=minifw.bool)"
    assert t.cpu().numpy().dtype == np.bool_
    assert mf.from_numpy(np.array([True])).dtype is mf.bool
    assert mf.tensor(np.array([[False]])).dtype is mf.bool


def test_reductions_to_python(backend) -> None:  # type: ignore[no-untyped-def]
    """allclose and equal return Python bools, as PyTorch's do."""
    a = mf.tensor([1.0, 2.0, float("inf")], backend=backend)
    assert mf.allclose(a, a + 1e-9) is True and a.allclose(a * 2) is False
    assert mf.equal(a, a) is True and mf.equal(a, a[:2]) is False
    nan = mf.tensor([float("nan")], backend=backend)
    assert not mf.allclose(nan, nan) and mf.allclose(nan, nan, equal_nan=True)


def test_dtypes_and_promotion() -> None:
    """mf.bool, its aliases and PyTorch's promotion rules, tensors and Python numbers."""
    assert mf.dtypes.as_dtype(bool) is mf.bool and mf.dtypes.as_dtype("bool") is mf.bool
    assert mf.dtypes.as_dtype(np.bool_) is mf.bool and not mf.bool.is_floating_point
    assert mf.promote_types(mf.bool, mf.int64) is mf.int64
    assert mf.promote_types(mf.int64, mf.float32) is mf.float32
    f32 = mf.tensor([1.0], dtype=mf.float32)
    assert (f32 + mf.tensor(2.0, dtype=mf.float64)).dtype is mf.float32  # a 0-dim tensor
    assert (mf.tensor([1, 2]) + mf.tensor(2.5, dtype=mf.float64)).dtype is mf.float64
    assert (mf.tensor([True]) + True).dtype is mf.bool
    assert (mf.tensor([True]) + 1).dtype is mf.int64
    assert mf.tensor([1.0]).int().dtype is mf.int64  # minifw has no int32


def test_conversions_by_name() -> None:
    """type(), type(dtype), is_floating_point and the legacy constructors."""
    t = mf.tensor([1.0, 0.0], dtype=mf.float32)
    assert t.type() == "torch.FloatTensor" and t.bool().type() == "torch.BoolTensor"
    assert t.type(mf.float64).dtype is mf.float64
    assert t.type("torch.LongTensor").dtype is mf.int64
    assert t.type(mf.BoolTensor).dtype is mf.bool and not t.bool().is_floating_point()
    assert mf.Tensor([1, 2]).dtype is mf.get_default_dtype()
    assert mf.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert mf.Tensor(2, 3).shape == (2, 3) and mf.Tensor().shape == (0,)
    assert mf.Tensor(mf.Size([4])).shape == (4,)
    assert mf.FloatTensor([1]).dtype is mf.float32 and mf.DoubleTensor(2).shape == (2,)
    assert mf.LongTensor([1.7, -1.7]).tolist() == [1, -1]
    assert mf.BoolTensor([1, 0]).tolist() == [True, False]
    assert isinstance(mf.LongTensor([1]), mf.LongTensor) and isinstance(t, mf.Tensor)
    assert not isinstance(t, mf.LongTensor)
    with pytest.raises(TypeError, match="sequence"):
        mf.Tensor(3.5)


def test_save_and_load_bool() -> None:
    """mf.save / mf.load round-trip a bool tensor."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mask.pt")
        mf.save({"mask": mf.tensor([[True, False]])}, path)
        loaded = mf.load(path)["mask"]
    assert loaded.dtype is mf.bool and loaded.tolist() == [[True, False]]


def test_inplace_logic_and_comparisons_without_grad(backend) -> None:  # type: ignore[no-untyped-def]
    """`&=` writes in place; comparisons of tensors that require grad have no grad."""
    mask = mf.tensor([True, True, False], backend=backend)
    mask &= mf.tensor([True, False, True], backend=backend)
    assert mask.tolist() == [True, False, False]
    x = mf.tensor([1.0, -1.0], requires_grad=True, backend=backend)
    assert not (x > 0).requires_grad and (x > 0).dtype is mf.bool
    with pytest.raises(RuntimeError, match="Long can't be cast"):
        mask |= mf.tensor([1, 2, 3], backend=backend)
