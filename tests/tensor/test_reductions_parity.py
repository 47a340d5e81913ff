"""Reductions and scans against PyTorch: values, dtypes and gradients.

prod, cumsum, cumprod, logsumexp, norm/vector_norm, var/std with `correction=`,
var_mean/std_mean, amax/amin, count_nonzero and argmin, each case one function of the
shared API (tests/parity.py) run on minifw (every backend) and on torch.
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
def cube(draw: st.DrawFn, ties: bool = False) -> np.ndarray:
    """An (a, b, c) array, sides 1..4: standard normal, or (`ties`) drawn from -1, 0, 1."""
    shape = tuple(draw(st.integers(1, 4)) for _ in range(3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if ties:
        return rng.integers(-1, 2, size=shape).astype(np.float64)
    return rng.standard_normal(shape)


# Cases on a 3-D float tensor `x` of normal values.
CASES: dict[str, Case] = {
    "prod": lambda lib, x: x.prod(),
    "prod dim": lambda lib, x: lib.prod(x, 1),
    "prod keepdim": lambda lib, x: x.prod(-1, keepdim=True),
    "prod with zeros": lambda lib, x: x.relu().prod(0),
    "prod all with zeros": lambda lib, x: lib.prod(x.relu()),
    "cumsum": lambda lib, x: x.cumsum(1),
    "cumsum fn": lambda lib, x: lib.cumsum(x, -1),
    "cumprod": lambda lib, x: x.cumprod(2),
    "cumprod with zeros": lambda lib, x: lib.cumprod(x.relu(), 0),
    "logsumexp": lambda lib, x: x.logsumexp(1),
    "logsumexp dims": lambda lib, x: lib.logsumexp(x, (0, 2), keepdim=True),
    "logsumexp large": lambda lib, x: (x * 400).logsumexp(-1),
    "norm": lambda lib, x: x.norm(),
    "norm 1": lambda lib, x: lib.norm(x, p=1, dim=1),
    "norm inf": lambda lib, x: x.norm(p=math.inf, dim=(0, 2)),
    "norm -inf": lambda lib, x: x.norm(p=-math.inf, dim=0),
    "norm 3": lambda lib, x: x.norm(p=3, dim=-1, keepdim=True),
    "norm -2": lambda lib, x: x.norm(p=-2, dim=1),
    "norm fro": lambda lib, x: lib.norm(x, "fro", dim=(1, 2)),
    "norm of zeros": lambda lib, x: (x * 0).norm(dim=1),
    "p-norm of zeros": lambda lib, x: (x * 0).norm(p=3, dim=1),
    "vector_norm": lambda lib, x: lib.linalg.vector_norm(x, 0.5, dim=1),
    "vector_norm default": lambda lib, x: lib.linalg.vector_norm(x),
    "var": lambda lib, x: x.var(),
    "var dim unbiased": lambda lib, x: x.var(1, False),
    "var correction": lambda lib, x: x.var(correction=0),
    "var fn dims": lambda lib, x: lib.var(x, (0, 2), keepdim=True, correction=1),
    "std dim": lambda lib, x: x.std(1, keepdim=True, correction=0),
    "std fn": lambda lib, x: lib.std(x, dim=(0, 1), unbiased=False),
    "std of constant": lambda lib, x: (x * 0).std(0, correction=0),
    "var_mean": lambda lib, x: lib.stack(lib.var_mean(x, 1, correction=0)),
    "std_mean": lambda lib, x: lib.stack(lib.std_mean(x, dim=(0, 2), correction=0)),
    "var_mean unbiased": lambda lib, x: lib.stack(lib.var_mean(x, 0, True, True)),
    "amax": lambda lib, x: x.amax(),
    "amax dims": lambda lib, x: lib.amax(x, (0, 2)),
    "amin keepdim": lambda lib, x: lib.amin(x, 1, keepdim=True),
    "count_nonzero": lambda lib, x: x.relu().count_nonzero(1),
    "count_nonzero fn": lambda lib, x: lib.count_nonzero(x.relu(), dim=(0, 2)),
    "argmin": lambda lib, x: lib.argmin(x, 1),
    "max of two tensors": lambda lib, x: lib.max(x, -x),
    "min of two tensors": lambda lib, x: lib.min(x[:1], x * 0.5),
    "sum with dtype": lambda lib, x: lib.sum(x, 1, dtype=lib.float64),
}

# Cases where ties matter (values -1, 0, 1): gradients split evenly, zeros in products.
TIE_CASES: dict[str, Case] = {
    "amax ties": lambda lib, x: x.amax(1),
    "amin ties": lambda lib, x: x.amin((0, 2), keepdim=True),
    "norm inf ties": lambda lib, x: x.norm(p=math.inf, dim=-1),
    "prod zeros": lambda lib, x: x.prod(2),
    "cumprod zeros": lambda lib, x: x.cumprod(1),
    "norm 1 at zero": lambda lib, x: x.norm(p=1),
}

# Cases on int64 (and bool) inputs: PyTorch's result dtypes.
INT_CASES: dict[str, Case] = {
    "prod int": lambda lib, x: x.prod(1),
    "prod int all": lambda lib, x: x.prod(),
    "prod int to float": lambda lib, x: x.prod(0, dtype=lib.float64),
    "cumsum int": lambda lib, x: x.cumsum(0),
    "cumprod int": lambda lib, x: lib.cumprod(x, -1),
    "cumsum to float": lambda lib, x: x.cumsum(1, dtype=lib.float32),
    "amax int": lambda lib, x: x.amax(1),
    "amin int": lambda lib, x: x.amin(),
    "count_nonzero int": lambda lib, x: x.count_nonzero(),
    "sum int with dtype": lambda lib, x: lib.sum(x, (0, 1), dtype=lib.float64),
    "mean int with dtype": lambda lib, x: lib.mean(x, 1, dtype=lib.float64),
}

BOOL_CASES: dict[str, Case] = {
    "cumsum bool": lambda lib, x: x.cumsum(1),
    "prod bool": lambda lib, x: x.prod(0),
    "count_nonzero bool": lambda lib, x: x.count_nonzero(2),
    "amax bool": lambda lib, x: x.amax(1),
    "amin bool": lambda lib, x: lib.amin(x, (0, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
@few
@given(x=cube(), dtype=FLOATS)
def test_float_reductions_match_torch(
    backend: TensorBackend, name: str, x: np.ndarray, dtype: str
) -> None:
    check_against_torch(CASES[name], [x], backend, dtype)


@pytest.mark.parametrize("name", list(TIE_CASES))
@few
@given(x=cube(ties=True), dtype=FLOATS)
def test_reductions_with_ties_and_zeros_match_torch(
    backend: TensorBackend, name: str, x: np.ndarray, dtype: str
) -> None:
    check_against_torch(TIE_CASES[name], [x], backend, dtype)


@pytest.mark.parametrize("name", list(INT_CASES))
@few
@given(x=cube(ties=True))
def test_int_reductions_keep_torch_dtypes(
    backend: TensorBackend, name: str, x: np.ndarray
) -> None:
    check_against_torch(INT_CASES[name], [(x + 2).astype(np.int64)], backend)


@pytest.mark.parametrize("name", list(BOOL_CASES))
@few
@given(x=cube(ties=True))
def test_bool_reductions_promote_like_torch(
    backend: TensorBackend, name: str, x: np.ndarray
) -> None:
    check_against_torch(BOOL_CASES[name], [x > 0], backend)


def test_logsumexp_of_infinities_matches_torch(backend: TensorBackend) -> None:
    inf = math.inf
    values = np.array([[-inf, -inf], [inf, 1.0], [-inf, 2.0]])
    check_against_torch(lambda lib, x: x.logsumexp(1), [values], backend, grad=False)


def test_var_with_too_large_a_correction_matches_torch(backend: TensorBackend) -> None:
    values = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
    with pytest.warns(UserWarning):  # PyTorch warns about the degrees of freedom
        check_against_torch(lambda lib, x: x.var(1, correction=3), [values], backend, grad=False)


ERRORS: dict[str, tuple[Case, Any, str]] = {
    "norm of int": (lambda lib, x: x.long().norm(), np.ones((2, 2)), "floating point"),
    "var of int": (lambda lib, x: x.long().var(), np.ones((2, 2)), "floating point"),
    "amax of an empty dim": (lambda lib, x: x[:0].amax(0), np.ones((2, 2)), "dim 0"),
    "prod dim out of range": (lambda lib, x: x.prod(2), np.ones((2, 2)), "range"),
    "cumsum dim out of range": (lambda lib, x: x.cumsum(-3), np.ones((2, 2)), "range"),
    "logsumexp dim out of range": (lambda lib, x: x.logsumexp(5), np.ones((2, 2)), "range"),
    "var with two corrections": (
        lambda lib, x: x.var(unbiased=True, correction=1), np.ones(2), "correction",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(ERRORS))
def test_bad_input_raises_like_torch(backend: TensorBackend, name: str) -> None:
    fn, values, match = ERRORS[name]
    check_raises_like_torch(fn, [values], backend, match=match)


def test_nuclear_norm_is_not_implemented(backend: TensorBackend) -> None:
    with pytest.raises(NotImplementedError, match="singular value"):
        mf.ones(2, 2, backend=backend).norm(p="nuc")


# Second-order gradients (create_graph=True): d/dx of |d f / dx|^2, against PyTorch's.
SECOND_ORDER: dict[str, Case] = {
    "prod with a zero": lambda lib, x: (x.prod(1) ** 2).sum(),
    "cumprod": lambda lib, x: x.cumprod(1).sum(),
    "cumsum": lambda lib, x: (x.cumsum(0) ** 3).sum(),
    "logsumexp": lambda lib, x: x.logsumexp(1).sum(),
    "norm": lambda lib, x: x.norm(p=3),
    "amax": lambda lib, x: (x * x).amax(1).sum(),
    "std": lambda lib, x: x.std(1).sum(),
    "sort values": lambda lib, x: (x.sort(1).values[:, 1:] ** 3).sum(),
    "topk values": lambda lib, x: (x.topk(2).values ** 3).sum(),
    "einsum": lambda lib, x: lib.einsum("ij,kj->", x, x * x),
}


@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_second_order_gradients_match_torch(backend: TensorBackend, name: str) -> None:
    import torch

    values = [[1.0, 2.0, 0.0], [3.0, -1.0, 2.0]]
    results = []
    for lib, x in (
        (mf, mf.tensor(values, backend=backend, requires_grad=True)),
        (torch, torch.tensor(values, dtype=torch.float64, requires_grad=True)),
    ):
        (first,) = lib.autograd.grad(SECOND_ORDER[name](lib, x), x, create_graph=True)
        (first * first).sum().backward()
        results.append(x.grad.detach().cpu().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-7, atol=1e-10)
