"""Shared test helpers: hypothesis strategies, the elementwise op table and `assert_close`.

minifw's own tests and the course graders import these, so every backend is
checked on the same inputs. Strategies draw small shapes (at most 4 dims of at
most 4 cells each, by default) and layouts that kernels must handle: contiguous,
permuted, sliced with steps and an offset, and broadcast (stride 0).

`OPS` is the table of elementwise ops: one `OpSpec` row per op, with the minifw
callable (written against the Tensor API, so the same callable also runs on
PyTorch tensors), a numpy reference, and the domain its inputs are drawn from.
The rows of the ops that have a Tensor method in the op table (`core/operators.py`)
are made from its rows: a new elementwise op adds nothing here.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minifw.backends import get_backend
from minifw.core import dtypes
from minifw.core import operators as ops
from minifw.core.tensor_data import TensorData
from minifw.tensor.creation import tensor
from minifw.tensor.tensor import Tensor
from minifw.tensor_ops import TensorBackend

MAX_DIMS = 4
MAX_SIDE = 4
LAYOUTS = ("contiguous", "permuted", "sliced", "broadcast")
_FLOAT_SENTINEL = np.nan  # fills storage cells outside a sliced view: misreads show up
_INT_SENTINEL = -987654


def small_floats(low: float = -5.0, high: float = 5.0) -> st.SearchStrategy[float]:
    """Finite floats in [low, high], without subnormals (which kernels may flush)."""
    return st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def shapes(
    min_dims: int = 0, max_dims: int = MAX_DIMS, min_side: int = 1, max_side: int = MAX_SIDE
) -> st.SearchStrategy[tuple[int, ...]]:
    """Small shapes: `min_dims`..`max_dims` dims of `min_side`..`max_side` cells."""
    return hnp.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


class Domain(ops.Domain):
    """Where an op's argument is drawn from: [low, high], with |x| >= min_abs."""

    __slots__ = ()

    def elements(self) -> st.SearchStrategy[float]:
        """The strategy drawing one argument value."""
        values = small_floats(self.low, self.high)
        if self.min_abs > 0.0:
            floor = self.min_abs
            values = values.map(lambda x: x if abs(x) >= floor else (floor if x >= 0 else -floor))
        return values


class Strided(NamedTuple):
    """A drawn TensorData (numpy storage), the values it holds, and its layout kind."""

    data: TensorData
    values: np.ndarray
    kind: str


@st.composite
def strided(
    draw: st.DrawFn,
    shape: Sequence[int] | None = None,
    dtype: Any = np.float64,
    elements: st.SearchStrategy[Any] | None = None,
    layouts: Sequence[str] = LAYOUTS,
) -> Strided:
    """A TensorData of `shape` (drawn if None) in one of `layouts`, with its values.

    "permuted" stores the cells in another dim order; "sliced" places them with
    steps and an offset inside a bigger buffer whose other cells hold NaN (or a
    sentinel int); "broadcast" repeats cells along some dims with stride 0.
    """
    shape = tuple(draw(shapes()) if shape is None else shape)
    dtype = np.dtype(dtype)
    if elements is None:
        elements = st.integers(-9, 9) if dtype.kind == "i" else small_floats()
    kind = draw(st.sampled_from(list(layouts)))
    if kind == "broadcast":
        stretched = [i for i, s in enumerate(shape) if s > 1]
        keep = draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
        small = tuple(1 if (i in stretched and not keep[i]) else s for i, s in enumerate(shape))
        values = draw(hnp.arrays(dtype, small, elements=elements))
        data = TensorData(values.reshape(-1).copy(), small).expand(shape)
        return Strided(data, np.broadcast_to(values, shape).copy(), kind)
    values = draw(hnp.arrays(dtype, shape, elements=elements))
    order = list(range(len(shape)))
    if kind in ("permuted", "sliced") and len(shape) > 1:
        order = draw(st.permutations(order))
    stored = values.transpose(order)  # stored dim j is values dim order[j]
    if kind == "sliced":
        data = _sliced(draw, stored, dtype)
    else:
        data = TensorData(np.ascontiguousarray(stored).reshape(-1), stored.shape)
    inverse = [order.index(i) for i in range(len(order))]
    return Strided(data.permute(*inverse), values, kind)


def _sliced(draw: st.DrawFn, stored: np.ndarray, dtype: np.dtype[Any]) -> TensorData:
    """`stored`'s cells placed with steps and an offset inside a sentinel-filled buffer."""
    n = stored.ndim
    starts = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    steps = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    outer = tuple(
        start + step * max(size - 1, 0) + 1 + 1
        for start, step, size in zip(starts, steps, stored.shape, strict=True)
    )
    sentinel = _INT_SENTINEL if dtype.kind == "i" else _FLOAT_SENTINEL
    buffer = np.full(outer, sentinel, dtype=dtype)
    window = tuple(
        slice(start, start + step * size, step)
        for start, step, size in zip(starts, steps, stored.shape, strict=True)
    )
    buffer[window] = stored
    unit = [s // buffer.itemsize for s in buffer.strides]
    strides = [u * step for u, step in zip(unit, steps, strict=True)]
    offset = sum(u * start for u, start in zip(unit, starts, strict=True))
    return TensorData(buffer.reshape(-1), stored.shape, strides, offset)


def tensor_data(
    shape: Sequence[int] | None = None,
    dtype: Any = np.float64,
    elements: st.SearchStrategy[Any] | None = None,
    layouts: Sequence[str] = LAYOUTS,
) -> st.SearchStrategy[TensorData]:
    """A TensorData with a contiguous, permuted, sliced or broadcast layout."""
    return strided(shape, dtype, elements, layouts).map(lambda s: s.data)


def on_backend(data: TensorData, backend: TensorBackend) -> TensorData:
    """The same layout over a copy of the storage on `backend`'s device."""
    if backend.device == "cpu":
        return data
    storage = backend.ops.from_numpy(np.asarray(data.base))
    return TensorData(storage, data.shape, data.strides, data.offset)


@st.composite
def tensors(
    draw: st.DrawFn,
    shape: Sequence[int] | None = None,
    dtype: Any = dtypes.float64,
    backend: TensorBackend | str | None = None,
    elements: st.SearchStrategy[Any] | None = None,
    layouts: Sequence[str] = LAYOUTS,
    requires_grad: bool = False,
) -> Tensor:
    """A Tensor in a drawn layout (see `strided`) on `backend` (the default one if None).

    `dtype` is a minifw dtype or a strategy drawing one. With `requires_grad` the
    tensor is a leaf requiring grad, and broadcast layouts are left out (gradcheck
    needs every entry in its own storage cell).
    """
    if isinstance(dtype, st.SearchStrategy):
        dtype = draw(dtype)
    kind = dtypes.as_dtype(dtype)
    if requires_grad:
        layouts = [k for k in layouts if k != "broadcast"] or ["contiguous"]
    drawn = draw(strided(shape, kind.numpy, elements, layouts))
    chosen = get_backend(backend) if backend is not None else _default()
    made = Tensor(on_backend(drawn.data, chosen), chosen)
    return made.requires_grad_(True) if requires_grad else made


def _default() -> TensorBackend:
    from minifw.backends import default_backend

    return default_backend("cpu")


@st.composite
def broadcastable_shapes(
    draw: st.DrawFn, max_dims: int = MAX_DIMS, max_side: int = MAX_SIDE
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast together: dims dropped from the front or set to 1."""
    out = draw(shapes(0, max_dims, 1, max_side))
    pair = []
    for _ in range(2):
        dropped = draw(st.integers(0, len(out)))
        kept = list(out[dropped:])
        ones = draw(st.lists(st.booleans(), min_size=len(kept), max_size=len(kept)))
        pair.append(tuple(1 if one else s for s, one in zip(kept, ones, strict=True)))
    return pair[0], pair[1]


@st.composite
def matmul_shapes(
    draw: st.DrawFn, max_batch_dims: int = 2, max_side: int = MAX_SIDE
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shapes a and b with a valid a @ b: 1-D, 2-D, or batched with broadcast batch dims."""
    n, k, m = (draw(st.integers(1, max_side)) for _ in range(3))
    form = draw(st.sampled_from(["vec-vec", "mat-vec", "vec-mat", "mat-mat", "batched"]))
    if form == "vec-vec":
        return (k,), (k,)
    if form == "mat-vec":
        return (n, k), (k,)
    if form == "vec-mat":
        return (k,), (k, m)
    if form == "mat-mat":
        return (n, k), (k, m)
    batch_a, batch_b = draw(broadcastable_shapes(max_batch_dims, 3))
    return (*batch_a, n, k), (*batch_b, k, m)


class OpSpec(NamedTuple):
    """One elementwise op: how to call it, its numpy reference and its input domain.

    `fn` uses only the Tensor API (methods and operators), so it runs on minifw
    and on PyTorch tensors alike. `code` is the op code of the kernel op it maps
    to one-to-one (None for ops built from several). `grad_domain` keeps gradient
    checks away from kinks (relu and abs at 0).
    """

    name: str
    arity: int
    fn: Callable[..., Any]
    ref: Callable[..., np.ndarray]
    domain: tuple[Domain, ...]
    differentiable: bool = True
    code: int | None = None
    grad_domain: tuple[Domain, ...] | None = None

    def domains(self, for_grad: bool = False) -> tuple[Domain, ...]:
        """The domain of each argument (the gradient-check one if asked and set)."""
        return self.grad_domain if for_grad and self.grad_domain else self.domain


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


ANY, POSITIVE, NONZERO = Domain(*ops.ANY), Domain(*ops.POSITIVE), Domain(*ops.NONZERO)
AWAY_FROM_KINK = Domain(*ops.AWAY_FROM_KINK)
# numpy's function for a Tensor method of another name, or one numpy lacks.
NUMPY_NAMES = {"neg": "negative", "asin": "arcsin", "acos": "arccos", "atan": "arctan"}
REFERENCES: dict[str, Callable[..., np.ndarray]] = {
    "sigmoid": _sigmoid,
    "relu": lambda a: np.maximum(a, 0),
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "rsqrt": lambda a: 1.0 / np.sqrt(a),
    "frac": lambda a: a - np.trunc(a),
    "atan2": np.arctan2,
}


def reference(row: ops.OpRow) -> Callable[..., np.ndarray]:
    """numpy's function of `row`'s method, else its own scalar function cell by cell.

    An op numpy lacks is then checked against its scalar function here (every backend
    and layout must compute what it computes), and against PyTorch elsewhere.
    """
    assert row.method is not None
    found = REFERENCES.get(row.method) or getattr(
        np, NUMPY_NAMES.get(row.method, row.method), None
    )
    return found or np.vectorize(row.function, otypes=[np.float64])


# The Python operator of a method, which also takes a number on its left (2.0 % t).
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "remainder": operator.mod,
    "floor_divide": operator.floordiv,
}


def spec_of(row: ops.OpRow) -> OpSpec:
    """The OpSpec of an op-table row with a Tensor method: the method (or its operator)."""
    method = row.method
    assert method is not None
    return OpSpec(
        method,
        row.arity,
        OPERATORS.get(method) or (lambda *args: getattr(args[0], method)(*args[1:])),
        reference(row),
        tuple(Domain(*d) for d in row.domain),
        row.grad_domain is not None,
        row.code,
        None if row.grad_domain is None else tuple(Domain(*d) for d in row.grad_domain),
    )


def _cmp(f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], np.ndarray]:
    return lambda a, b: np.asarray(f(a, b), dtype=np.asarray(a).dtype)


# The rows of the op table's methods. The shared per-row tests (every backend, dtype and
# layout) run the course's ops and one op per family of the others; MORE_OPS holds the
# rest, which tests/tensor/test_math_ops.py checks against PyTorch.
TABLE_OPS = tuple(spec_of(row) for row in ops.OP_TABLE.values() if row.method)
SHARED = {"sin", "log1p", "erf", "square", "floor", "atan2", "remainder"}
_SHARED_TABLE_OPS = tuple(
    s for s in TABLE_OPS if s.code is not None and s.code < 10 or s.name in SHARED
)
OPS: tuple[OpSpec, ...] = _SHARED_TABLE_OPS + (
    OpSpec("pow_2", 1, lambda a: a**2, np.square, (ANY,)),
    OpSpec("pow_1.5", 1, lambda a: a**1.5, lambda a: a**1.5, (POSITIVE,)),
    OpSpec("pow_-2", 1, lambda a: a**-2, lambda a: a**-2.0, (NONZERO,)),
    OpSpec("add_number", 1, lambda a: a + 1.5, lambda a: a + 1.5, (ANY,)),
    OpSpec("number_sub", 1, lambda a: 2.0 - a, lambda a: 2.0 - a, (ANY,)),
    OpSpec("mul_number", 1, lambda a: a * -0.5, lambda a: a * -0.5, (ANY,)),
    OpSpec("number_div", 1, lambda a: 2.0 / a, lambda a: 2.0 / a, (NONZERO,)),
    OpSpec("add", 2, lambda a, b: a + b, np.add, (ANY, ANY), code=ops.ADD),
    OpSpec("sub", 2, lambda a, b: a - b, np.subtract, (ANY, ANY), code=ops.SUB),
    OpSpec("mul", 2, lambda a, b: a * b, np.multiply, (ANY, ANY), code=ops.MUL),
    OpSpec("div", 2, lambda a, b: a / b, np.divide, (ANY, NONZERO), code=ops.DIV),
    OpSpec("lt", 2, lambda a, b: a < b, _cmp(np.less), (ANY, ANY), False, ops.LT),
    OpSpec("gt", 2, lambda a, b: a > b, _cmp(np.greater), (ANY, ANY), False, ops.GT),
    OpSpec("le", 2, lambda a, b: a <= b, _cmp(np.less_equal), (ANY, ANY), False, ops.LE),
    OpSpec("ge", 2, lambda a, b: a >= b, _cmp(np.greater_equal), (ANY, ANY), False, ops.GE),
    OpSpec("eq", 2, lambda a, b: a == b, _cmp(np.equal), (ANY, ANY), False, ops.EQ),
    OpSpec("ne", 2, lambda a, b: a != b, _cmp(np.not_equal), (ANY, ANY), False, ops.NE),
)  # fmt: skip
MORE_OPS: tuple[OpSpec, ...] = tuple(s for s in TABLE_OPS if s not in _SHARED_TABLE_OPS) + (
    OpSpec("maximum", 2, lambda a, b: a.maximum(b), np.maximum, (ANY, ANY), False),
    OpSpec("minimum", 2, lambda a, b: a.minimum(b), np.minimum, (ANY, ANY), False),
)
ALL_OPS = OPS + MORE_OPS
OPS_BY_NAME = {spec.name: spec for spec in ALL_OPS}


def as_numpy(value: Any) -> np.ndarray:
    """A host numpy array of a minifw tensor, a PyTorch tensor, an array or a number."""
    if isinstance(value, Tensor):
        return np.asarray(value.detach().cpu().numpy())
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch.Tensor
        return np.asarray(value.detach().cpu().double().numpy())
    return np.asarray(value)


def assert_close(actual: Any, expected: Any, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Assert equal shapes, NaN in the same cells and |actual - expected| <= atol + rtol|e|.

    The message names both shapes, the worst cell, its two values and the tolerances.
    """
    got, want = as_numpy(actual), as_numpy(expected)
    if got.shape != want.shape:
        raise AssertionError(f"shape mismatch: actual {got.shape}, expected {want.shape}")
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    nan_got, nan_want = np.isnan(got64), np.isnan(want64)
    if np.any(nan_got != nan_want):
        cell = tuple(int(i) for i in np.argwhere(nan_got != nan_want)[0])
        raise AssertionError(
            f"NaN mismatch at {cell} of shape {got.shape}: actual {got64[cell]}, "
            f"expected {want64[cell]}"
        )
    same_inf = np.isinf(want64) & (got64 == want64)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.where(nan_want | same_inf, 0.0, np.abs(got64 - want64))
    allowed = atol + rtol * np.abs(np.where(np.isfinite(want64), want64, 0.0))
    bad = ~(error <= allowed)
    if np.any(bad):
        cell = tuple(int(i) for i in np.argwhere(bad)[np.argmax(error[bad])])
        raise AssertionError(
            f"values differ at {cell} of shape {got.shape} ({int(bad.sum())} of {got.size} "
            f"cells): actual {got64[cell]!r}, expected {want64[cell]!r}, |diff| "
            f"{error[cell]:.3g} > atol {atol} + rtol {rtol} * |expected|"
        )


def compare_with_torch(
    mf_fn: Callable[..., Tensor],
    torch_fn: Callable[..., Any],
    arrays: Sequence[np.ndarray],
    seed: int = 0,
    tolerances: tuple[float, float] = (1e-9, 1e-12),
    grad_tolerances: tuple[float, float] = (1e-8, 1e-11),
) -> None:
    """Run a function on minifw and PyTorch leaves made from `arrays`; compare both passes.

    Asserts the outputs agree within (rtol, atol) = `tolerances`, then back-propagates
    one random upstream gradient through both and asserts every input gradient agrees
    within `grad_tolerances`. PyTorch must be installed (tests skip without it).
    """
    import torch

    ours = [tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = mf_fn(*ours), torch_fn(*theirs)
    assert_close(out, ref, *tolerances)
    upstream = np.random.default_rng(seed).standard_normal(tuple(ref.shape))
    out.backward(tensor(upstream))
    ref.backward(torch.tensor(upstream))
    for mine, want in zip(ours, theirs, strict=True):
        assert mine.grad is not None, "an input got no gradient"
        assert_close(mine.grad, want.grad, *grad_tolerances)
