"""The readable FastOps kernels (tasks 3.1 and 3.2) against SimpleOps and numpy.

These are the kernels students write in minifw/fast_ops.py, run through their entry
points `ReadableFastOps.map`, `zip`, `reduce` and `matmul` (the "readable" backend; in a
student repository, without minifw/fast_paths/, the "fast" backend runs them too), made
to run the parallel kernels at every size (not their serial twins for small inputs). The
shared backend suite (tests/backends/test_tensor_ops.py) already runs every backend on
float64 layouts. Here the kernels, for a sample of op codes of each kind (each op code
compiles a copy of its own), are compared with the reference kernels and numpy for
float64, float32 and int64, on permuted, sliced and broadcast inputs, on shapes big
enough to split the work across threads, and on strided outputs; matmul runs on odd
sizes, batched and transposed operands. The expert fast paths are checked against these
kernels in tests/backends/test_fast_paths_backend.py. Timing is never asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minifw import fast_ops
from minifw.backends import get_backend
from minifw.core import operators as ops
from minifw.core.tensor_data import TensorData
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt

SIMPLE = get_backend("simple")


class AlwaysParallel(fast_ops.ReadableFastOps):
    """The readable kernels, parallel at any size (not their serial twins, for small inputs)."""

    parallel_from = 0
    follow_load = False  # parallel even while other processes keep the cores busy


@pytest.fixture
def fast() -> TensorBackend:
    """The parallel kernels students write in minifw/fast_ops.py, behind the launcher."""
    return PARALLEL


PARALLEL = TensorBackend(AlwaysParallel, "readable-parallel")
# Sizes past which a parallel loop surely splits its work over several threads.
CHUNK = 16384
REDUCE_BLOCK = 128
FLOATS = (np.float64, np.float32)
TOL = {np.float64: 1e-12, np.float32: 1e-5}

# ---- strategies (candidates for minifw/testing.py) ------------------------------------------


def values_of(dtype: Any, domain: mt.Domain = mt.ANY) -> st.SearchStrategy[Any]:
    """Cell values for `dtype`: small integers for int64, else floats from `domain`."""
    return st.integers(-9, 9) if np.dtype(dtype).kind == "i" else domain.elements()


@st.composite
def out_views(draw: st.DrawFn, shape: tuple[int, ...], dtype: Any) -> mt.Strided:
    """A writable output of `shape`: contiguous, permuted, or sliced in a sentinel buffer."""
    return draw(mt.strided(shape, dtype, layouts=("contiguous", "permuted", "sliced")))


@st.composite
def matmul_operands(
    draw: st.DrawFn, dtype: Any, max_side: int = 5
) -> tuple[mt.Strided, mt.Strided]:
    """3-D operands (batch, n, k) and (batch, k, m) in drawn layouts; a batch of 1 broadcasts."""
    n, k, m = (draw(st.integers(1, max_side)) for _ in range(3))
    batch_a, batch_b = draw(st.sampled_from([(1, 1), (1, 3), (3, 1), (2, 2)]))
    a = draw(mt.strided((batch_a, n, k), dtype, values_of(dtype)))
    b = draw(mt.strided((batch_b, k, m), dtype, values_of(dtype)))
    return a, b


# ---- helpers ----------------------------------------------------------------------------------


def check(result: TensorData, simple: TensorData | None, expected: Any, dtype: Any) -> None:
    """FastOps' result equals SimpleOps' (if given) and numpy's (exactly for int64)."""
    got = SIMPLE.to_numpy(result)
    refs = [np.asarray(expected).astype(got.dtype)]
    if simple is not None:
        refs.append(SIMPLE.to_numpy(simple))
        assert got.dtype == refs[1].dtype, f"dtype {got.dtype} != reference {refs[1].dtype}"
    for ref in refs:
        if np.dtype(dtype).kind == "i":
            np.testing.assert_array_equal(got, ref)
        else:
            mt.assert_close(got, ref, rtol=TOL[dtype], atol=TOL[dtype])


def layout(values: np.ndarray, kind: str) -> TensorData:
    """`values` stored contiguously, transposed (then permuted back) or inside a wider buffer."""
    if kind == "contiguous":
        return TensorData(values.reshape(-1).copy(), values.shape)
    if kind == "permuted":
        order = list(range(values.ndim))[::-1]
        return TensorData(values.transpose(order).reshape(-1).copy(), values.shape[::-1]).permute(
            *order
        )
    sentinel = -987654 if values.dtype.kind == "i" else np.nan
    wide = np.full(values.shape[:-1] + (values.shape[-1] * 2 + 1,), sentinel, values.dtype)
    wide[..., 1::2] = values
    inner = TensorData(wide.reshape(-1), wide.shape)
    return inner.narrow(values.ndim - 1, slice(1, None, 2))


# ---- task 3.1: map, zip, reduce ---------------------------------------------------------------

# Each op code compiles its own copy of a readable kernel (about 3 s per op and dtype), and
# the loops are the same for every op: these tests run a sample of op codes of each kind.
# Every op code's scalar function runs through every backend in tests/backends/test_op_table.py
# (and, in a student repository, the "fast" backend runs these kernels for every op there).
# ADD, SUB, MUL, DIV and NEG also run below in other tests, so they cost no extra compiling.
UNARY_SAMPLE = ("neg", "log", "sigmoid", "relu")
BINARY_SAMPLE = ("add", "sub", "mul", "div", "lt", "eq")
UNARY = [spec for spec in mt.OPS if spec.code is not None and spec.name in UNARY_SAMPLE]
BINARY = [spec for spec in mt.OPS if spec.code is not None and spec.name in BINARY_SAMPLE]
INT_UNARY = [ops.NEG, ops.ABS]
INT_BINARY = [ops.ADD, ops.SUB, ops.MUL, ops.MAX, ops.LT]
COMPARISONS = {ops.LT, ops.GT, ops.LE, ops.GE, ops.EQ, ops.NE}
NUMPY_BINARY = {
    ops.ADD: np.add, ops.SUB: np.subtract, ops.MUL: np.multiply, ops.MAX: np.maximum,
    ops.MIN: np.minimum, ops.LT: np.less, ops.GT: np.greater, ops.LE: np.less_equal,
    ops.GE: np.greater_equal, ops.EQ: np.equal, ops.NE: np.not_equal,
}  # fmt: skip
BACKWARD = [ops.DERIVATIVES[ops.LOG], ops.DERIVATIVES[ops.RELU]]
REDUCE = {ops.ADD: np.sum, ops.MUL: np.prod, ops.MAX: np.max, ops.MIN: np.min}
FLOAT_IDS = {"ids": lambda d: np.dtype(d).name}


@pytest.mark.task3_1
@pytest.mark.parametrize("dtype", FLOATS, **FLOAT_IDS)
@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
@given(data=st.data())
def test_map_float_ops(
    fast: TensorBackend, spec: mt.OpSpec, dtype: Any, data: st.DataObject
) -> None:
    a = data.draw(mt.strided(dtype=dtype, elements=spec.domain[0].elements()))
    code: Any = spec.code
    check(fast.map(code, a.data), SIMPLE.map(code, a.data), spec.ref(a.values), dtype)


@pytest.mark.task3_1
@pytest.mark.parametrize("code", INT_UNARY, ids=lambda c: ops.UNARY_NAMES[c])
@given(data=st.data())
def test_map_int64_ops(fast: TensorBackend, code: int, data: st.DataObject) -> None:
    a = data.draw(mt.strided(dtype=np.int64, elements=values_of(np.int64)))
    expected = {ops.NEG: -a.values, ops.ABS: np.abs(a.values)}[code]
    check(fast.map(code, a.data), SIMPLE.map(code, a.data), expected, np.int64)


@pytest.mark.task3_1
@pytest.mark.parametrize("dtype", (*FLOATS, np.int64), **FLOAT_IDS)
@given(data=st.data())
def test_map_writes_into_a_strided_out_view_with_broadcasting(
    fast: TensorBackend, dtype: Any, data: st.DataObject
) -> None:
    small, other = data.draw(mt.broadcastable_shapes())
    shape = np.broadcast_shapes(small, other)
    a = data.draw(mt.strided(small, dtype, values_of(dtype)))
    out = data.draw(out_views(shape, dtype))
    expected = out.data.base.copy()  # sentinels outside the view must survive
    mine = TensorData(expected, out.data.shape, out.data.strides, out.data.offset)
    for index in mine.indices():
        mine.set(index, -np.broadcast_to(a.values, shape)[index])
    fast.map(ops.NEG, a.data, out.data)
    np.testing.assert_array_equal(out.data.base, expected)


@pytest.mark.task3_1
@pytest.mark.parametrize("dtype", FLOATS, **FLOAT_IDS)
@pytest.mark.parametrize("spec", BINARY, ids=lambda s: s.name)
@given(data=st.data())
def test_zip_float_ops_with_broadcasting(
    fast: TensorBackend, spec: mt.OpSpec, dtype: Any, data: st.DataObject
) -> None:
    shape_a, shape_b = data.draw(mt.broadcastable_shapes())
    a = data.draw(mt.strided(shape_a, dtype, spec.domain[0].elements()))
    b = data.draw(mt.strided(shape_b, dtype, spec.domain[1].elements()))
    code: Any = spec.code
    expected = spec.ref(a.values, b.values)
    check(fast.zip(code, a.data, b.data), SIMPLE.zip(code, a.data, b.data), expected, dtype)


@pytest.mark.task3_1
@pytest.mark.parametrize("code", INT_BINARY, ids=lambda c: ops.BINARY_NAMES[c])
@given(data=st.data())
def test_zip_int64_ops_with_broadcasting(
    fast: TensorBackend, code: int, data: st.DataObject
) -> None:
    shape_a, shape_b = data.draw(mt.broadcastable_shapes())
    a = data.draw(mt.strided(shape_a, np.int64, values_of(np.int64)))
    b = data.draw(mt.strided(shape_b, np.int64, values_of(np.int64)))
    out_dtype = np.float64 if code in COMPARISONS else np.int64
    expected = NUMPY_BINARY[code](a.values, b.values).astype(out_dtype)
    got = fast.to_numpy(fast.zip(code, a.data, b.data, out_dtype))
    assert got.dtype == out_dtype
    np.testing.assert_array_equal(
        got, SIMPLE.to_numpy(SIMPLE.zip(code, a.data, b.data, out_dtype))
    )
    np.testing.assert_array_equal(got, expected)


@pytest.mark.task3_1
@pytest.mark.parametrize("dtype", FLOATS, **FLOAT_IDS)
@pytest.mark.parametrize("code", [ops.MAX, ops.POW, *BACKWARD],
                         ids=lambda c: ops.BINARY_NAMES[c])  # fmt: skip
@given(data=st.data())
def test_zip_other_binary_codes_match_simple(
    fast: TensorBackend, code: int, dtype: Any, data: st.DataObject
) -> None:
    shape = data.draw(mt.shapes())
    a = data.draw(mt.strided(shape, dtype, mt.POSITIVE.elements()))
    b = data.draw(mt.strided(shape, dtype, mt.ANY.elements()))
    got, ref = fast.zip(code, a.data, b.data), SIMPLE.zip(code, a.data, b.data)
    tol = TOL[dtype] * 10
    mt.assert_close(fast.to_numpy(got), SIMPLE.to_numpy(ref), rtol=tol, atol=tol)


@pytest.mark.task3_1
@pytest.mark.parametrize("dtype", (*FLOATS, np.int64), **FLOAT_IDS)
@pytest.mark.parametrize("code", list(REDUCE), ids=lambda c: ops.BINARY_NAMES[c])
@given(data=st.data())
def test_reduce_every_dim(fast: TensorBackend, code: int, dtype: Any, data: st.DataObject) -> None:
    shape = data.draw(mt.shapes(min_dims=1))
    a = data.draw(mt.strided(shape, dtype, values_of(dtype, mt.Domain(-2.0, 2.0))))
    for dim in range(len(shape)):
        expected = REDUCE[code](a.values, axis=dim, keepdims=True)
        check(fast.reduce(code, a.data, dim), SIMPLE.reduce(code, a.data, dim), expected, dtype)


_CHOSEN: dict[tuple[Any, ...], BaseException | None] = {}


def chosen_case_once(check_chosen: Callable[[], None], *key: Any) -> None:
    """Run a test's costly chosen case once per `key` and replay its outcome afterwards.

    Hypothesis runs the test's body once per drawn example; the chosen case does not
    change between examples, so it runs the first time and later calls raise what it
    raised (the same failure every time, never a flaky one).
    """
    if key not in _CHOSEN:
        try:
            check_chosen()
            _CHOSEN[key] = None
        except Exception as error:  # noqa: BLE001 - replayed to every later example
            _CHOSEN[key] = error
    failure = _CHOSEN[key]
    if failure is not None:
        raise failure


def check_drawn_kernels(fast: TensorBackend, dtype: Any, data: st.DataObject) -> None:
    """map, zip (broadcasting) and reduce of drawn operands in drawn layouts, against numpy.

    Every test of chosen inputs checks these too, so kernels fitted to them do not pass.
    """
    shape_a, shape_b = data.draw(mt.broadcastable_shapes(), label="shapes")
    a = data.draw(mt.strided(shape_a, dtype, values_of(dtype, mt.Domain(-2.0, 2.0))))
    b = data.draw(mt.strided(shape_b, dtype, values_of(dtype, mt.Domain(-2.0, 2.0))))
    check(fast.map(ops.NEG, a.data), None, -a.values, dtype)
    check(fast.zip(ops.ADD, a.data, b.data), None, a.values + b.values, dtype)
    for dim in range(len(shape_a)):
        check(fast.reduce(ops.ADD, a.data, dim), None,
              a.values.sum(axis=dim, keepdims=True), dtype)  # fmt: skip


@pytest.mark.task3_1
@pytest.mark.parametrize("kind", ["contiguous", "permuted", "sliced"])
@pytest.mark.parametrize("dtype", (*FLOATS, np.int64), **FLOAT_IDS)
@settings(max_examples=3)  # the big arrays dominate: a few draws are enough
@given(data=st.data())
def test_big_inputs_cross_task_and_block_boundaries(
    fast: TensorBackend, kind: str, dtype: Any, data: st.DataObject
) -> None:
    """Shapes larger than CHUNK and REDUCE_BLOCK, so the parallel loops split the work.

    Compared with numpy only: SimpleOps would take seconds on 55 000 cells.
    """
    check_drawn_kernels(fast, dtype, data)

    def chosen() -> None:
        rng = np.random.default_rng(3)
        big = (rng.integers(-9, 10, (3, 70, 2 * REDUCE_BLOCK + 5))).astype(dtype)
        row = rng.integers(-9, 10, (1, 70, 1)).astype(dtype)
        assert big.size > CHUNK
        a, r = layout(big, kind), layout(row, kind)
        check(fast.map(ops.NEG, a), None, -big, dtype)
        check(fast.zip(ops.ADD, a, r), None, big + row, dtype)
        check(fast.zip(ops.MUL, a, a), None, big * big, dtype)
        for dim in range(3):
            check(fast.reduce(ops.ADD, a, dim), None, big.sum(axis=dim, keepdims=True), dtype)
            check(fast.reduce(ops.MAX, a, dim), None, big.max(axis=dim, keepdims=True), dtype)

    chosen_case_once(chosen, "big", kind, dtype)


@pytest.mark.task3_1
@pytest.mark.parametrize("kind", ["contiguous", "permuted", "sliced"])
@settings(max_examples=3)
@given(data=st.data())
def test_rows_longer_than_a_chunk_are_cut_into_pieces(
    fast: TensorBackend, kind: str, data: st.DataObject
) -> None:
    check_drawn_kernels(fast, np.float64, data)

    def chosen() -> None:
        # 1-D and few-row outputs with a broadcast operand: each row spans several tasks.
        rng = np.random.default_rng(4)
        long = 2 * CHUNK + 7
        for shape, other in (((long,), ()), ((3, long), (long,)), ((2, long), (2, 1))):
            x, y = rng.integers(-9, 10, shape).astype(np.float64), rng.uniform(1, 2, other)
            a = layout(x, kind)
            check(fast.zip(ops.MUL, a, fast.from_numpy(y)), None, x * y, np.float64)
            check(fast.zip(ops.SUB, fast.from_numpy(y), a), None, y - x, np.float64)
            check(fast.map(ops.NEG, a.permute(*reversed(range(a.dims)))), None, -x.T, np.float64)

    chosen_case_once(chosen, "long rows", kind)


@pytest.mark.task3_1
@pytest.mark.parametrize(
    ("dtype", "code"),
    [(d, c) for d in (*FLOATS, np.int64) for c in (ops.ADD, ops.SUB, ops.MUL, ops.DIV)
     if not (d == np.int64 and c == ops.DIV)],  # int64 `/=` is refused before any kernel
    ids=lambda v: np.dtype(v).name if isinstance(v, type) else ops.BINARY_NAMES[v],
)  # fmt: skip
@settings(max_examples=3)
@given(data=st.data())
def test_zip_into_its_own_first_operand(
    fast: TensorBackend, dtype: Any, code: int, data: st.DataObject
) -> None:
    check_drawn_kernels(fast, dtype, data)

    def chosen() -> None:
        # `x op= y`: out is a itself, so the kernel's loops that read x from out run.
        rng = np.random.default_rng(code)
        start = rng.integers(1, 9, (3, CHUNK // 3 + 5)).astype(dtype)
        for other in (rng.integers(1, 9, start.shape), rng.integers(1, 9, (3, 1)), np.array(3)):
            x, y = fast.from_numpy(start), fast.from_numpy(other.astype(dtype))
            fast.zip(code, x, y, out=x)
            ufunc = {ops.ADD: np.add, ops.SUB: np.subtract, ops.MUL: np.multiply}.get(
                code, np.divide
            )
            check(x, None, ufunc(start, other.astype(dtype)), dtype)

    chosen_case_once(chosen, "own operand", dtype, code)


@pytest.mark.task3_1
@settings(max_examples=3)
@given(data=st.data())
def test_reduce_of_a_long_vector_and_of_an_expanded_input(
    fast: TensorBackend, data: st.DataObject
) -> None:
    check_drawn_kernels(fast, np.float64, data)

    def chosen() -> None:
        values = np.arange(40_000, dtype=np.float64) % 7 - 3
        out = fast.reduce(ops.ADD, fast.from_numpy(values), 0)
        assert fast.to_numpy(out).tolist() == [values.sum()]
        column = TensorData(np.array([1.0, 2.0, 3.0]), (3, 1)).expand((3, 300))
        expected = np.broadcast_to([[1.0], [2.0], [3.0]], (3, 300))
        for dim in (0, 1):
            got = fast.to_numpy(fast.reduce(ops.ADD, column, dim))
            np.testing.assert_array_equal(got, expected.sum(axis=dim, keepdims=True))

    chosen_case_once(chosen, "long vector")


# ---- task 3.2: matmul -------------------------------------------------------------------------

ODD = [(1, 1, 1), (1, 129, 7), (7, 33, 65), (33, 65, 129), (65, 7, 33), (129, 129, 129),
       (65, 300, 67)]  # fmt: skip
MATMUL_DTYPES = (*FLOATS, np.int64)


def _operands(shape_a: tuple[int, ...], shape_b: tuple[int, ...], dtype: Any) -> Any:
    rng = np.random.default_rng(sum(shape_a) * 31 + sum(shape_b))
    if np.dtype(dtype).kind == "i":
        return rng.integers(-9, 10, shape_a), rng.integers(-9, 10, shape_b)
    return rng.uniform(-1, 1, shape_a).astype(dtype), rng.uniform(-1, 1, shape_b).astype(dtype)


def check_matmul(
    fast: TensorBackend, a: TensorData, b: TensorData, expected: np.ndarray, dtype: Any
) -> None:
    """FastOps' product equals numpy's (exactly for int64; float32 to 1e-4)."""
    got = fast.to_numpy(fast.matmul(a, b))
    assert got.dtype == np.dtype(dtype)
    if np.dtype(dtype).kind == "i":
        np.testing.assert_array_equal(got, expected)
    else:
        tol = 1e-10 if dtype == np.float64 else 1e-4
        mt.assert_close(got, expected, rtol=tol, atol=tol)


def check_drawn_matmul(fast: TensorBackend, dtype: Any, data: st.DataObject) -> None:
    """FastOps' matmul of drawn small operands in drawn layouts equals numpy's.

    Every test of chosen shapes checks one too, so a kernel fitted to them does not pass.
    """
    a, b = data.draw(matmul_operands(dtype, max_side=4), label="operands")
    check(fast.matmul(a.data, b.data), None, np.matmul(a.values, b.values), dtype)


@pytest.mark.task3_2
@pytest.mark.parametrize("dtype", MATMUL_DTYPES, **FLOAT_IDS)
@pytest.mark.parametrize(("n", "k", "m"), ODD, ids=str)
@settings(max_examples=3)  # one matmul more per case: a few draws are enough
@given(data=st.data())
def test_matmul_odd_sizes(
    fast: TensorBackend, n: int, k: int, m: int, dtype: Any, data: st.DataObject
) -> None:
    check_drawn_matmul(fast, dtype, data)
    a, b = _operands((n, k), (k, m), dtype)
    check_matmul(fast, fast.from_numpy(a), fast.from_numpy(b), a @ b, dtype)


@pytest.mark.task3_2
@pytest.mark.parametrize("dtype", MATMUL_DTYPES, **FLOAT_IDS)
@pytest.mark.parametrize(
    ("shape_a", "shape_b"),
    [((3, 7, 33), (3, 33, 5)), ((1, 7, 33), (4, 33, 5)), ((4, 65, 9), (9, 66)),
     ((2, 1, 7, 9), (3, 9, 4)), ((33,), (2, 33, 7)), ((5, 7, 129), (129,))],
)  # fmt: skip
@settings(max_examples=3)
@given(data=st.data())
def test_matmul_batched_and_broadcast_batch(
    fast: TensorBackend,
    shape_a: tuple[int, ...],
    shape_b: tuple[int, ...],
    dtype: Any,
    data: st.DataObject,
) -> None:
    check_drawn_matmul(fast, dtype, data)
    a, b = _operands(shape_a, shape_b, dtype)
    check_matmul(fast, fast.from_numpy(a), fast.from_numpy(b), np.matmul(a, b), dtype)


@pytest.mark.task3_2
@pytest.mark.parametrize("dtype", MATMUL_DTYPES, **FLOAT_IDS)
@pytest.mark.parametrize("kind_a", ["contiguous", "permuted", "sliced"])
@pytest.mark.parametrize("kind_b", ["contiguous", "permuted", "sliced"])
@settings(max_examples=3)
@given(data=st.data())
def test_matmul_transposed_and_sliced_operands(
    fast: TensorBackend, kind_a: str, kind_b: str, dtype: Any, data: st.DataObject
) -> None:
    """Operands whose k dim is strided are copied first; a transposed b is read in place."""
    check_drawn_matmul(fast, dtype, data)
    a, b = _operands((2, 65, 70), (2, 70, 33), dtype)
    check_matmul(fast, layout(a, kind_a), layout(b, kind_b), np.matmul(a, b), dtype)


@pytest.mark.task3_2
@pytest.mark.parametrize("dtype", MATMUL_DTYPES, **FLOAT_IDS)
@settings(max_examples=3)
@given(data=st.data())
def test_matmul_expanded_operands(fast: TensorBackend, dtype: Any, data: st.DataObject) -> None:
    """Stride-0 operands: a row repeated down a (k stride 1) and b repeated along k."""
    check_drawn_matmul(fast, dtype, data)
    a, b = _operands((1, 40), (1, 9), dtype)
    wide_a = TensorData(a.reshape(-1).copy(), (1, 40)).expand((37, 40))
    tall_b = TensorData(b.reshape(-1).copy(), (1, 9)).expand((40, 9))
    expected = np.broadcast_to(a, (37, 40)) @ np.broadcast_to(b, (40, 9))
    check_matmul(fast, wide_a, tall_b, expected, dtype)


@pytest.mark.task3_2
@pytest.mark.parametrize("dtype", MATMUL_DTYPES, **FLOAT_IDS)
@given(data=st.data())
def test_matmul_drawn_layouts_match_simple(
    fast: TensorBackend, dtype: Any, data: st.DataObject
) -> None:
    a, b = data.draw(matmul_operands(dtype))
    expected = np.matmul(a.values, b.values)
    check(fast.matmul(a.data, b.data), SIMPLE.matmul(a.data, b.data), expected, dtype)


@pytest.mark.task3_2
@settings(max_examples=3)
@given(data=st.data())
def test_matmul_kernel_writes_a_strided_out(fast: TensorBackend, data: st.DataObject) -> None:
    """The kernel honours out's strides: here a transposed view inside a NaN buffer."""
    check_drawn_matmul(fast, np.float64, data)
    a, b = _operands((1, 9, 70), (1, 70, 11), np.float64)
    buffer = np.full(2 * 11 * 9 + 1, np.nan)
    wide = TensorData(buffer, (1, 11, 9), None, 1)
    out = wide.permute(0, 2, 1)  # (1, 9, 11) with strides (99, 1, 9)
    fast.ops.matmul(*out.tuple(), *fast.from_numpy(a).tuple(), *fast.from_numpy(b).tuple())
    mt.assert_close(fast.to_numpy(out), np.matmul(a, b), rtol=1e-12, atol=1e-12)
    assert np.isnan(buffer[0]) and np.isnan(buffer[1 + wide.size :]).all()


# ---- the disk cache ---------------------------------------------------------------------------

CHILD = """
import numpy as np
from numba.core.registry import CPUDispatcher
from minifw._jit import PerOp
from minifw import fast_ops
from minifw.core import operators
from minifw.backends import get_backend
fast = get_backend("fast")
for n in (6, 2 * fast_ops.PARALLEL_FROM):  # the serial twin, then the parallel kernel
    x = fast.from_numpy(np.arange(float(n)))
    fast.zip(operators.ADD, x, x)
modules = [fast_ops] + ([fast_ops.fast_paths.line_loops] if fast_ops.fast_paths else [])
copies = [copy for table in PerOp.tables for copy in table.copies.values()]
ran = [k for m in modules for k in vars(m).values() if isinstance(k, CPUDispatcher)] + copies
ran = [k for k in ran if k.signatures]
print(len(ran), sum(sum(k.stats.cache_hits.values()) for k in ran),
      sum(sum(k.stats.cache_misses.values()) for k in ran))
"""


@pytest.mark.extra  # the disk cache is given code, no course task
def test_a_second_process_loads_the_kernels_from_the_disk_cache() -> None:
    from numba import config

    if config.DISABLE_JIT:
        pytest.skip("NUMBA_DISABLE_JIT=1: nothing is compiled, so nothing is cached")
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    # MINIFW_FOLLOW_LOAD=0: the parallel kernel runs even while other tests keep the cores busy
    env = {**os.environ, "PYTHONPATH": path, "MINIFW_FOLLOW_LOAD": "0"}
    command = [sys.executable, "-c", CHILD]
    for _ in range(2):  # the first run fills the cache if no earlier test did
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    ran, hits, misses = map(int, done.stdout.split())
    # A serial twin, then the parallel kernel (the fast paths' or the readable ones).
    assert ran == 2, f"kernels that ran: {done.stdout}"
    assert (hits, misses) == (ran, 0), f"second process: (kernels, hits, misses) {done.stdout}"
