"""The gather family against PyTorch: gather, scatter, scatter_add,
index_select, masked_fill, masked_select, take, take_along_dim, index_put.

Each case is one function of the shared API run on minifw and on torch (tests/parity.py):
values, dtypes, shapes and the gradients of every float input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

from minifw.tensor_ops import TensorBackend
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch
from tests.strategies import shapes

pytestmark = pytest.mark.extra

few = at_most(10)
Case = Callable[..., Any]
ARGS = ("x", "src", "dim", "index", "distinct", "select", "mask", "flat", "along", "rows")


@st.composite
def along_a_dim(draw: st.DrawFn, dtype: str = "float64") -> dict[str, Any]:
    """An array, a dim, and every kind of index the gather family takes along it."""
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=4))
    d = draw(st.integers(-len(shape), len(shape) - 1))
    k = d % len(shape)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    sizes = [draw(st.integers(1, s)) for s in shape]
    gather_shape = (*sizes[:k], draw(st.integers(1, 4)), *sizes[k + 1 :])
    # scatter: distinct positions along the dim, so no two writes land on one cell
    order = np.argsort(rng.random((*sizes[:k], shape[k], *sizes[k + 1 :])), axis=k)
    distinct = np.take(order, range(sizes[k]), axis=k)
    src_shape = np.maximum(gather_shape, distinct.shape) + rng.integers(0, 2, len(shape))
    along_shape = [s if rng.random() < 0.5 else 1 for s in shape]
    along_shape[k] = draw(st.integers(1, 3))
    mask_dims = draw(st.integers(0, len(shape)))
    numel = int(np.prod(shape))

    def values(size: Any) -> np.ndarray:
        if dtype == "int64":
            return rng.integers(-9, 9, size)
        return rng.standard_normal(size)

    return {
        "x": values(shape),
        "src": values(tuple(src_shape)),
        "dim": d,
        "index": rng.integers(0, shape[k], gather_shape),  # repeats: gradients accumulate
        "distinct": distinct,
        "select": rng.integers(0, shape[k], draw(st.integers(0, 4))),
        "mask": np.asarray(rng.random(shape[len(shape) - mask_dims :]) < 0.5),
        "flat": np.asarray(rng.integers(-numel, numel, draw(shapes(max_dims=2, max_side=3)))),
        "along": rng.integers(0, shape[k], along_shape),
        "rows": rng.integers(-shape[0], shape[0], draw(st.integers(1, 4))),
    }


def _in_place(write: Callable[..., Any]) -> Case:
    """A case that writes into a non-leaf copy of x and returns it."""

    def run(lib: Any, x: Any, *rest: Any) -> Any:
        y = x * 1
        out = write(y, *rest)
        assert out is y
        return y

    return run


def _fit(src: Any, index: Any) -> Any:
    """The corner of src of index's shape (PyTorch's backward fails for a larger src)."""
    return src[tuple(slice(0, n) for n in index.shape)]


def _flip(t: Any) -> Any:
    """All dims reversed (a strided view)."""
    return t.permute(*reversed(range(t.dim())))


# fn(lib, x, src, dim, index, distinct, select, mask, flat, along, rows)
CASES: dict[str, Case] = {
    "gather": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.gather(d, i),
    "mf.gather": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.gather(x, d, index=i),
    "gather permuted": lambda lib, x, src, d, i, s, sel, m, f, a, r: _flip(x).gather(
        -1 - d, _flip(i)
    ),
    "scatter": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.scatter(d, s, _fit(src, s)),
    "scatter number": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.scatter(d, s, 2),
    "mf.scatter value": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.scatter(
        x, d, s, value=-1.5
    ),
    "scatter larger src": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.scatter(d, s, src),
    "scatter_add": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.scatter_add(d, i, _fit(src, i)),
    "mf.scatter_add": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.scatter_add(
        x, d, i, _fit(src, i)
    ),
    "scatter_": _in_place(lambda y, src, d, i, s, sel, m, f, a, r: y.scatter_(d, s, _fit(src, s))),
    "scatter_add_": _in_place(
        lambda y, src, d, i, s, sel, m, f, a, r: y.scatter_add_(d, i, _fit(src, i))
    ),
    "index_select": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.index_select(d, sel),
    "mf.index_select": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.index_select(x, d, sel),
    "masked_fill": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.masked_fill(m, -2),
    "masked_fill tensor": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.masked_fill(
        x, m, src.sum()
    ),
    "masked_fill broadcast": lambda lib, x, src, d, i, s, sel, m, f, a, r: x[0].masked_fill(m, 3),
    "masked_fill_": _in_place(lambda y, src, d, i, s, sel, m, f, a, r: y.masked_fill_(m, 0.5)),
    "masked_select": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.masked_select(m),
    "mf.masked_select": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.masked_select(x[0], m),
    "take": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.take(f),
    "mf.take": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.take(_flip(x), f),
    "take_along_dim": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.take_along_dim(a, d),
    "mf.take_along_dim": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.take_along_dim(
        x, a, dim=d
    ),
    "take_along_dim flat": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.take_along_dim(a),
    "index_put": lambda lib, x, src, d, i, s, sel, m, f, a, r: x.index_put((r,), src.sum()),
    "mf.index_put accumulate": lambda lib, x, src, d, i, s, sel, m, f, a, r: lib.index_put(
        x, (r,), src.sum(), accumulate=True
    ),
}


@pytest.mark.parametrize("name", [name for name in CASES if name != "scatter larger src"])
@few
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]))
def test_matches_torch(backend: TensorBackend, name: str, dtype: str, data: st.DataObject) -> None:
    case = data.draw(along_a_dim())
    check_against_torch(CASES[name], [case[k] for k in ARGS], backend, dtype)


INT_CASES = [
    "gather",
    "scatter",
    "scatter larger src",
    "scatter number",
    "scatter_add",
    "index_select",
    "masked_fill",
]
INT_CASES += ["masked_select", "take", "take_along_dim", "mf.index_put accumulate"]


@pytest.mark.parametrize("name", INT_CASES)
@few
@given(data=st.data())
def test_int64_and_bool_tensors(backend: TensorBackend, name: str, data: st.DataObject) -> None:
    case = data.draw(along_a_dim("int64"))
    check_against_torch(CASES[name], [case[k] for k in ARGS], backend)
    if "scatter_add" in name or "accumulate" in name:
        return  # PyTorch does not add bools
    case["x"], case["src"] = case["x"] > 0, case["src"] > 0
    if name == "scatter number" or name == "masked_fill":
        return  # a number into a bool tensor: PyTorch's casts differ from its numbers
    check_against_torch(CASES[name], [case[k] for k in ARGS], backend)


ERRORS: list[tuple[str, Case, str]] = [
    ("gather dims", lambda lib, x, i: x.gather(1, i[0]), "same number of dimensions"),
    ("gather range", lambda lib, x, i: x.gather(1, i + 2), "index 3 is out of bounds for dim"),
    ("gather negative", lambda lib, x, i: x.gather(0, i - 1), "index -1 is out of bounds"),
    ("gather size", lambda lib, x, i: x.gather(1, lib.cat([i, i])), r"expected index \[4, 2\]"),
    ("gather float", lambda lib, x, i: x.gather(1, i.double()), "Expected dtype int32/int64"),
    ("gather dim", lambda lib, x, i: x.gather(2, i), "Dimension out of range"),
    ("scatter dtype", lambda lib, x, i: x.scatter(1, i, x.float()), "self.dtype to be equal"),
    ("scatter src size", lambda lib, x, i: x.scatter(1, i, x[:1, :1]), "no larger size than src"),
    ("scatter_add number", lambda lib, x, i: x.scatter_add(1, i, 1.0), "must be Tensor"),
    ("index_select 2-d", lambda lib, x, i: x.index_select(0, i), "supposed to be a vector"),
    ("index_select range", lambda lib, x, i: x.index_select(1, i[0] + 2), "out of bounds"),
    ("masked_fill mask", lambda lib, x, i: x.masked_fill(x, 1.0), "only supports boolean masks"),
    (
        "masked_fill value",
        lambda lib, x, i: x.masked_fill(lib.ones(3, dtype=lib.bool), x[0]),
        "only supports a 0-dimensional value tensor",
    ),
    (
        "masked_fill_ shape",
        lambda lib, x, i: x[0].masked_fill_(lib.ones(3, 3, dtype=lib.bool), 1.0),
        "cannot be broadcast",
    ),
    ("masked_select mask", lambda lib, x, i: x.masked_select(i), "expected BoolTensor"),
    ("take range", lambda lib, x, i: x.take(i + 9), "tried to access index 9 on a tensor of 9"),
    ("take_along_dim dims", lambda lib, x, i: x.take_along_dim(i[0], 1), "same number of dim"),
]


@pytest.mark.parametrize(("name", "fn", "match"), ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_arguments_raise_like_torch(
    backend: TensorBackend, name: str, fn: Case, match: str
) -> None:
    check_raises_like_torch(
        fn, [np.ones((3, 3)), np.array([[0, 1], [1, 0]])], backend, match=match
    )


# fn(lib, x, dim, index, source): index 1-D along dim, source shaped like x but len(index)
DIM_CASES: dict[str, tuple[Case, bool]] = {  # (case, whether index must be distinct)
    "index_add": (lambda lib, x, d, i, src: x.index_add(d, i, src), False),
    "mf.index_add alpha": (lambda lib, x, d, i, src: lib.index_add(x, d, i, src, alpha=2), False),
    "index_add_": (_in_place(lambda y, d, i, src: y.index_add_(d, i, src)), False),
    "index_copy": (lambda lib, x, d, i, src: x.index_copy(d, i, src), True),
    "mf.index_copy": (lambda lib, x, d, i, src: lib.index_copy(x, d, i, src), True),
    "index_copy_": (_in_place(lambda y, d, i, src: y.index_copy_(d, i, src)), True),
    "index_fill": (lambda lib, x, d, i, src: x.index_fill(d, i - 1, -3.0), False),
    "mf.index_fill tensor": (lambda lib, x, d, i, src: lib.index_fill(x, d, i, src.sum()), False),
    "index_fill_": (_in_place(lambda y, d, i, src: y.index_fill_(d, i, 0.25)), False),
}


@pytest.mark.parametrize("name", DIM_CASES)
@few
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]))
def test_index_add_copy_fill_match_torch(
    backend: TensorBackend, name: str, dtype: str, data: st.DataObject
) -> None:
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4))
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    size = shape[d]
    fn, distinct = DIM_CASES[name]
    n = data.draw(st.integers(0, size if distinct else 4))
    index = rng.permutation(size)[:n] if distinct else rng.integers(0, size, n)
    source_shape = list(shape)
    source_shape[d] = n
    arrays = [rng.standard_normal(shape), d, index, rng.standard_normal(source_shape)]
    check_against_torch(fn, arrays, backend, dtype)
