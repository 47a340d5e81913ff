"""Sorting and searching against PyTorch: sort, argsort, msort, topk,
kthvalue, unique, nonzero/argwhere, searchsorted and bucketize.

Values of sort, topk and kthvalue carry gradients (checked against PyTorch's); indices
are int64. Float cases draw distinct values (PyTorch leaves the order of ties to its
algorithm unless `stable=True`); the int cases check ties with `stable=True`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import minifw as mf
from minifw.tensor_ops import TensorBackend
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch

pytestmark = pytest.mark.extra

few = at_most(3)
Case = Callable[..., Any]
FLOATS = st.sampled_from(["float64", "float32"])


@st.composite
def cube(draw: st.DrawFn, ints: bool = False) -> np.ndarray:
    """An (a, b, c) array, sides 1..4: distinct normal values, or (`ints`) ints in 0..3."""
    shape = tuple(draw(st.integers(1, 4)) for _ in range(3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if ints:
        return rng.integers(0, 4, size=shape)
    return rng.standard_normal(shape)


# Float cases (distinct values): one tensor out each, so every gradient is compared.
CASES: dict[str, Case] = {
    "sort values": lambda lib, x: x.sort().values,
    "sort indices": lambda lib, x: x.sort(1)[1],
    "sort descending values": lambda lib, x: lib.sort(x, 0, descending=True)[0],
    "sort descending indices": lambda lib, x: lib.sort(x, dim=-1, descending=True).indices,
    "argsort": lambda lib, x: x.argsort(1),
    "argsort descending": lambda lib, x: lib.argsort(x, dim=0, descending=True),
    "msort": lambda lib, x: lib.msort(x),
    "topk values": lambda lib, x: x.topk(1).values,
    "topk indices": lambda lib, x: x.topk(1, dim=0).indices,
    "topk smallest values": lambda lib, x: lib.topk(x, x.shape[1], dim=1, largest=False)[0],
    "kthvalue values": lambda lib, x: x.kthvalue(1, 0).values,
    "kthvalue keepdim indices": lambda lib, x: lib.kthvalue(x, x.shape[2], 2, True).indices,
    "nonzero": lambda lib, x: (x.relu()).nonzero(),
    "argwhere": lambda lib, x: lib.argwhere(x.relu()),
    "nonzero as_tuple": lambda lib, x: x.relu().nonzero(as_tuple=True),
    "unique": lambda lib, x: lib.unique(x.detach()),  # PyTorch has no gradient for it
}

# Int cases (values 0..3, many ties): stable order, PyTorch's dtypes.
INT_CASES: dict[str, Case] = {
    "stable sort": lambda lib, x: x.sort(dim=1, stable=True),
    "stable sort descending": lambda lib, x: lib.sort(x, dim=0, descending=True, stable=True),
    "stable argsort": lambda lib, x: lib.argsort(x, dim=-1, stable=True),
    "unique all": lambda lib, x: x.unique(return_inverse=True, return_counts=True),
    "unique dim": lambda lib, x: lib.unique(x, dim=1, return_inverse=True, return_counts=True),
    "unique counts": lambda lib, x: lib.unique(x, sorted=True, return_counts=True),
    "nonzero int": lambda lib, x: x.nonzero(),
    "searchsorted": lambda lib, x: lib.searchsorted(lib.tensor([0, 1, 1, 3]), x),
    "searchsorted right": lambda lib, x: lib.searchsorted(lib.tensor([0, 1, 1, 3]), x, right=True),
    "searchsorted rows": lambda lib, x: lib.searchsorted(x.sort(-1).values, x, side="right"),
    "bucketize": lambda lib, x: lib.bucketize(x, lib.tensor([1, 2])),
    "bucketize right": lambda lib, x: lib.bucketize(x, lib.tensor([1, 2]), right=True),
}


@pytest.mark.parametrize("name", list(CASES))
@few
@given(x=cube(), dtype=FLOATS)
def test_sorting_matches_torch(
    backend: TensorBackend, name: str, x: np.ndarray, dtype: str
) -> None:
    check_against_torch(CASES[name], [x], backend, dtype)


@pytest.mark.parametrize("name", list(INT_CASES))
@few
@given(x=cube(ints=True))
def test_int_sorting_with_ties_matches_torch(
    backend: TensorBackend, name: str, x: np.ndarray
) -> None:
    check_against_torch(INT_CASES[name], [x], backend)


NAN_CASES: dict[str, Case] = {
    "sort": lambda lib, x: x.sort(),
    "sort descending": lambda lib, x: x.sort(descending=True),
    "argsort": lambda lib, x: x.argsort(),
    "topk": lambda lib, x: x.topk(2),
    "topk smallest": lambda lib, x: x.topk(2, largest=False),
}


BOOL_CASES: dict[str, Case] = {
    "sort bool": lambda lib, x: x.sort(dim=1, stable=True),
    "unique bool": lambda lib, x: x.unique(return_counts=True),
    "nonzero bool": lambda lib, x: lib.nonzero(x),
}


@pytest.mark.parametrize("name", list(BOOL_CASES))
@few
@given(x=cube(ints=True))
def test_bool_sorting_matches_torch(backend: TensorBackend, name: str, x: np.ndarray) -> None:
    check_against_torch(BOOL_CASES[name], [x > 1], backend)


@pytest.mark.parametrize("name", list(NAN_CASES))
def test_nan_sorts_as_the_largest_value(backend: TensorBackend, name: str) -> None:
    values = np.array([3.0, math.nan, 1.0, math.inf, -math.inf])
    check_against_torch(NAN_CASES[name], [values], backend, grad=False)


def test_sort_of_a_zero_dim_tensor_matches_torch(backend: TensorBackend) -> None:
    check_against_torch(lambda lib, x: x[0].sort(), [np.array([2.5])], backend, grad=False)
    check_against_torch(lambda lib, x: x[0].topk(1).values, [np.array([2.5])], backend)
    check_against_torch(lambda lib, x: x[0].nonzero(), [np.array([2.5])], backend)
    check_against_torch(lambda lib, x: x[0].nonzero(as_tuple=True), [np.array([0.0])], backend)


def test_sort_values_grad_is_a_permutation(backend: TensorBackend) -> None:
    x = mf.tensor([[3.0, 1.0, 2.0]], backend=backend, requires_grad=True)
    values, _ = x.sort(descending=True)
    values.backward(mf.tensor([[10.0, 20.0, 30.0]], backend=backend))
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [[10.0, 30.0, 20.0]])


def _vec(*values: float) -> np.ndarray:
    return np.array(values)


ERRORS: dict[str, tuple[Case, list[Any], str]] = {
    "topk k too large": (lambda lib, x: x.topk(4), [_vec(1, 2, 3)], "k out of range"),
    "kthvalue k out of range": (lambda lib, x: x.kthvalue(0), [_vec(1, 2)], "out of range"),
    "sort dim out of range": (lambda lib, x: x.sort(1), [_vec(1, 2)], "range"),
    "searchsorted shapes": (
        lambda lib, b, v: lib.searchsorted(b, v), [np.ones((2, 2)), np.ones((1, 3))], r"\[2, 2\]"
    ),
    "bucketize 2-D boundaries": (
        lambda lib, v, b: lib.bucketize(v, b), [_vec(1), np.ones((2, 2))], "1 dimension"
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(ERRORS))
def test_bad_input_raises_like_torch(backend: TensorBackend, name: str) -> None:
    fn, arrays, match = ERRORS[name]
    check_raises_like_torch(fn, arrays, backend, match=match)
