"""Advanced indexing against PyTorch: t[idx], t[mask], t[idx] = v, index_put_.

Each case is one function written against the shared API and run on minifw and on torch
(tests/parity.py): values, dtypes, shapes and the gradients of every float input.
"""

from __future__ import annotations

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

few = at_most(10)
Case = Callable[..., Any]


@st.composite
def indexed(draw: st.DrawFn, dtype: str = "float64") -> dict[str, Any]:
    """A (a, b, c) array with int indices for dims 0 and 2 and masks of several shapes."""
    a, b, c = (draw(st.integers(1, 4)) for _ in range(3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n = draw(st.integers(1, 3))
    values = rng.standard_normal((a, b, c))
    if dtype == "int64":
        values = rng.integers(-9, 9, (a, b, c))
    return {
        "x": values,
        "i": rng.integers(-a, a, n),  # repeats allowed: gradients accumulate
        "j": rng.integers(-c, c, n),
        "u": rng.permutation(a)[: min(n, a)],  # distinct: where an assignment writes
        "m0": rng.random(a) < 0.5,
        "m12": rng.random((b, c)) < 0.5,
        "m": rng.random((a, b, c)) < 0.5,
    }


ARGS = ("x", "i", "j", "u", "m0", "m12", "m")

GET_CASES: dict[str, Case] = {
    "int tensor": lambda lib, x, i, j, u, m0, m12, m: x[i],
    "separated by a slice": lambda lib, x, i, j, u, m0, m12, m: x[i, :, j],
    "last dim": lambda lib, x, i, j, u, m0, m12, m: x[:, :, j],
    "after ellipsis": lambda lib, x, i, j, u, m0, m12, m: x[..., j],
    "int then index": lambda lib, x, i, j, u, m0, m12, m: x[0, :, j],
    "index then int": lambda lib, x, i, j, u, m0, m12, m: x[i, 0],
    "with None": lambda lib, x, i, j, u, m0, m12, m: x[None, i, None],
    "none between": lambda lib, x, i, j, u, m0, m12, m: x[i, None, :, j],
    "then a step": lambda lib, x, i, j, u, m0, m12, m: x[i][:, ::2],
    "stepped dims": lambda lib, x, i, j, u, m0, m12, m: x[:, ::2, j],
    "permuted input": lambda lib, x, i, j, u, m0, m12, m: x.transpose(0, 2)[j, 0],
    "2-d index": lambda lib, x, i, j, u, m0, m12, m: x[i.view(1, -1), :, j.view(-1, 1)],
    "python list": lambda lib, x, i, j, u, m0, m12, m: x[i.tolist()],
    "numpy array": lambda lib, x, i, j, u, m0, m12, m: x[:, :, j.numpy()],
    "mask": lambda lib, x, i, j, u, m0, m12, m: x[m],
    "mask of dim 0": lambda lib, x, i, j, u, m0, m12, m: x[m0],
    "mask of dims 1-2": lambda lib, x, i, j, u, m0, m12, m: x[:, m12],
    "mask and int": lambda lib, x, i, j, u, m0, m12, m: x[m0, 0],
    "mask list": lambda lib, x, i, j, u, m0, m12, m: x[m0.tolist()],
    "True": lambda lib, x, i, j, u, m0, m12, m: x[True],
    "True and index": lambda lib, x, i, j, u, m0, m12, m: x[..., True, j],
    "0-dim bool tensor": lambda lib, x, i, j, u, m0, m12, m: x[lib.tensor(True)],
    "empty index": lambda lib, x, i, j, u, m0, m12, m: x[i[:0]],
}


@pytest.mark.parametrize("name", GET_CASES)
@few
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]))
def test_getitem_matches_torch(
    backend: TensorBackend, name: str, dtype: str, data: st.DataObject
) -> None:
    case = data.draw(indexed())
    check_against_torch(GET_CASES[name], [case[k] for k in ARGS], backend, dtype)


@pytest.mark.parametrize("name", ["int tensor", "separated by a slice", "mask", "True"])
@few
@given(data=st.data())
def test_getitem_of_int64_and_bool_tensors(
    backend: TensorBackend, name: str, data: st.DataObject
) -> None:
    case = data.draw(indexed("int64"))
    check_against_torch(GET_CASES[name], [case[k] for k in ARGS], backend)
    case["x"] = case["x"] > 0
    check_against_torch(GET_CASES[name], [case[k] for k in ARGS], backend)


def _put(write: Callable[..., None]) -> Case:
    """A case that writes into a non-leaf copy of x and returns it."""

    def run(lib: Any, x: Any, v: Any, *rest: Any) -> Any:
        y = x * 1
        write(y, v, *rest)
        return y

    return run


def _set(key: Callable[..., Any]) -> Case:
    def write(y: Any, v: Any, *rest: Any) -> None:
        y[key(*rest)] = v

    return _put(write)


# (case, shape of the value written: "row" is x's last dim, "one" a 0-dim value)
SET_CASES: dict[str, tuple[Case, str]] = {
    "distinct rows": (_set(lambda i, j, u, m0, m12, m: u), "row"),
    "rows and int": (_set(lambda i, j, u, m0, m12, m: (u, 0)), "row"),
    "mask": (_set(lambda i, j, u, m0, m12, m: m), "one"),
    "mask of dim 0": (_set(lambda i, j, u, m0, m12, m: m0), "row"),
    "mask of dims 1-2": (_set(lambda i, j, u, m0, m12, m: (slice(None), m12)), "one"),
    "with a slice": (_set(lambda i, j, u, m0, m12, m: (u, slice(None, None, 2))), "row"),
    "accumulate": (
        _put(lambda y, v, i, j, u, m0, m12, m: y.index_put_((i,), v, accumulate=True)),
        "row",
    ),
    "accumulate two indices": (
        _put(lambda y, v, i, j, u, m0, m12, m: y.index_put_((i, i * 0, j), v, True)),
        "one",
    ),
}


@pytest.mark.parametrize("name", SET_CASES)
@few
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]))
def test_setitem_matches_torch(
    backend: TensorBackend, name: str, dtype: str, data: st.DataObject
) -> None:
    case = data.draw(indexed())
    fn, kind = SET_CASES[name]
    value = np.array(2.5) if kind == "one" else np.linspace(-1.0, 1.0, case["x"].shape[2])
    arrays = [case["x"], value, *(case[k] for k in ARGS[1:])]
    check_against_torch(fn, arrays, backend, dtype)


@pytest.mark.parametrize("name", ["distinct rows", "mask", "accumulate"])
@few
@given(data=st.data())
def test_setitem_of_int64_tensors(backend: TensorBackend, name: str, data: st.DataObject) -> None:
    case = data.draw(indexed("int64"))
    fn, kind = SET_CASES[name]
    value = np.array(3) if kind == "one" else np.arange(case["x"].shape[2])
    arrays = [case["x"], value, *(case[k] for k in ARGS[1:])]
    check_against_torch(fn, arrays, backend)


def test_numbers_and_lists_as_values(backend: TensorBackend) -> None:
    x = mf.zeros(3, 2, backend=backend)
    x[[0, 2]] = 1.5
    x[mf.tensor([False, True, False], backend=backend)] = [7.0, 8.0]
    ints = mf.zeros(3, dtype=mf.int64, backend=backend)
    ints[[1]] = 2.9  # a float number is truncated into an int tensor, as in PyTorch
    assert x.tolist() == [[1.5, 1.5], [7.0, 8.0], [1.5, 1.5]]
    assert ints.tolist() == [0, 2, 0]


def test_assignment_writes_through_views_and_bumps_the_version(backend: TensorBackend) -> None:
    base = mf.zeros(3, 4, backend=backend)
    before = base._version
    base[:, 1:][[0, 2]] = 1.0  # the view's cells are the base's
    base.T[[3]] = mf.tensor([[5.0, 6.0, 7.0]], backend=backend)
    expected = np.zeros((3, 4))
    expected[[0, 2], 1:] = 1.0
    expected[:, 3] = [5.0, 6.0, 7.0]
    np.testing.assert_array_equal(base.numpy(), expected)
    assert base._version > before
    r = mf.arange(5.0, backend=backend)
    r[[1, 2, 3, 4]] = r[[0, 1, 2, 3]]  # reads every old value before writing
    s = mf.arange(5.0, backend=backend)
    s[1:][[0, 1, 2, 3]] = s[:4]  # the source shares the target's storage
    assert r.tolist() == s.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]


def test_saved_values_see_the_write(backend: TensorBackend) -> None:
    x = mf.tensor([1.0, 2.0, 3.0], requires_grad=True, backend=backend)
    y = x * 1
    z = y * y  # saves y: writing into y afterwards invalidates it, as in PyTorch
    y[[0]] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with mf.no_grad():
        x[[0, 2]] = 0.0  # a leaf requiring grad may be written under no_grad
    assert x.tolist() == [0.0, 2.0, 0.0] and x.is_leaf


def test_results_are_copies_with_a_grad_fn(backend: TensorBackend) -> None:
    x = mf.arange(6.0, backend=backend).view(2, 3).requires_grad_()
    picked = x[[1, 1]]
    assert picked.grad_fn is not None and picked.grad_fn.name() == "IndexBackward"
    picked.sum().backward()
    assert x.grad is not None and x.grad.tolist() == [[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]]
    plain = mf.arange(3.0, backend=backend)
    copy = plain[[0, 1]]
    copy += 10.0
    assert plain.tolist() == [0.0, 1.0, 2.0]


ERRORS: list[tuple[str, Case, str]] = [
    ("out of range", lambda lib, x: x[[0, 5]], "index 5 is out of bounds for dimension 0"),
    ("negative out of range", lambda lib, x: x[:, [-4]], "index -4 is out of bounds"),
    ("mask shape", lambda lib, x: x[lib.tensor([True, False, True])], r"mask \[3\] at index 0"),
    ("mask dims", lambda lib, x: x[lib.ones(3, 2, dtype=lib.bool)], r"mask \[3, 2\] at index 0"),
    (
        "float index",
        lambda lib, x: x[lib.tensor([0.0])],
        "tensors used as indices must be long, int, byte or bool",
    ),
    ("float key", lambda lib, x: x[[0], 1.5], "only integers, slices"),
    ("no broadcast", lambda lib, x: x[[0, 1], [0, 1, 2]], r"shapes \[2\], \[3\]"),
    ("False and index", lambda lib, x: x[..., False, [0, 1]], r"shapes \[0\], \[2\]"),
    ("too many", lambda lib, x: x[[0], 0, 0, 0], "too many indices for tensor of dimension 3"),
    ("leaf", lambda lib, x: x.requires_grad_().__setitem__([0], 1.0), "a leaf Variable"),
    (
        "value shape",
        lambda lib, x: x.__setitem__([0, 1], x[0, :, 0]),
        r"value tensor of shape \[3\] cannot be broadcast to indexing result of shape",
    ),
    (
        "value dtype",
        lambda lib, x: x.__setitem__([0], x[0, 0].float()),
        "Index put requires the source and destination dtypes match",
    ),
]


@pytest.mark.parametrize(("name", "fn", "match"), ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_indices_raise_like_torch(
    backend: TensorBackend, name: str, fn: Case, match: str
) -> None:
    check_raises_like_torch(fn, [np.ones((2, 3, 2))], backend, match=match)


def test_basic_keys_stay_views() -> None:
    x = mf.arange(12.0, backend="simple").view(3, 4)
    for key in (1, (slice(None), 2), (None, Ellipsis, slice(1, 3)), mf.tensor(2)):
        view = x[key]
        assert view._data.base is x._data.base


def _second_order(lib: Any, x: Any, i: Any, m: Any) -> Any:
    """The gradient of a loss through every index op, itself differentiable (create_graph)."""
    y = x * 1
    y[i[:1]] = x[i[-1:]] ** 2
    loss = (y[i] ** 3).sum() + (x.gather(0, i) ** 2).sum() + x.masked_select(m).pow(3).sum()
    loss = loss + x.scatter_add(0, i, x[i] ** 2).pow(2).sum() + x.index_select(0, i).exp().sum()
    return lib.autograd.grad(loss, x, create_graph=True)[0]


@few
@given(data=st.data())
def test_second_derivatives_through_indexing(backend: TensorBackend, data: st.DataObject) -> None:
    n = data.draw(st.integers(2, 5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    arrays = [rng.standard_normal(n), rng.integers(0, n, 3), rng.random(n) < 0.5]
    check_against_torch(_second_order, arrays, backend)
