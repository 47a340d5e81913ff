"""FastOps with the expert kernels of minifw/fast_paths/ agrees with the readable kernels.

The readable kernels (the course's, tests/backends/test_fast_ops.py) are checked against
SimpleOps and numpy; here FastOps runs each fast path both as its serial twin and in
parallel on the same drawn inputs and must give the same cells. Sizes cross the fast
paths' chunk and block boundaries. Expert code, no course task: every test is `extra`
(student repositories have no minifw/fast_paths/ and no copy of this file).

The reference is what the readable kernels are held to there: SimpleOps (the specification)
on the small drawn inputs, and numpy on the big inputs and matmul, whose integer-valued
cells make every sum exact. Neither needs compiling: the readable kernels as a reference
compiled copies (their serial twins, per op and dtype) that no other test runs, a good
part of this file's time with a cold kernel cache, as in CI.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minifw import fast_ops
from minifw.backends import get_backend
from minifw.core import operators as ops
from minifw.core.tensor_data import TensorData
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt

pytest.importorskip("minifw.fast_paths", reason="no minifw/fast_paths/ in this repository")
pytestmark = pytest.mark.extra  # expert code: never a course task


class AlwaysSerial(fast_ops.FastOps):
    """FastOps running the serial twins of its fast paths at any size."""

    parallel_from = 2**62


class AlwaysParallel(fast_ops.FastOps):
    """FastOps running its parallel fast paths at any size."""

    parallel_from = 0
    follow_load = False  # parallel even while other processes keep the cores busy


SIMPLE = get_backend("simple")
each_path = pytest.mark.parametrize(
    "fast",
    [TensorBackend(AlwaysSerial, "fast-serial"), TensorBackend(AlwaysParallel, "fast-par")],
    ids=["serial", "parallel"],
)
DTYPES = (np.float64, np.float32, np.int64)
# A sample of op codes (each compiles loops of its own, a few seconds in parallel form);
# every op code runs through the fast backend in tests/backends/test_op_table.py.
UNARY = [ops.ID, ops.NEG, ops.ABS, ops.EXP]
BINARY = [ops.ADD, ops.MUL, ops.MAX, ops.LT]
REDUCE = [ops.ADD, ops.MUL, ops.MAX, ops.MIN]


def same(got: TensorData, expected: TensorData | np.ndarray, dtype: Any) -> None:
    """Equal cells (to float32 rounding for float32: e^x is computed differently)."""
    x = SIMPLE.to_numpy(got)
    y = expected if isinstance(expected, np.ndarray) else SIMPLE.to_numpy(expected)
    assert x.dtype == y.dtype and x.shape == y.shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    mt.assert_close(x, y, rtol=tol, atol=tol)


def values(dtype: Any) -> st.SearchStrategy[Any]:
    """Small integers for int64, else floats in [-3, 3] (e^x stays finite)."""
    return st.integers(-9, 9) if np.dtype(dtype).kind == "i" else mt.Domain(-3.0, 3.0).elements()


@each_path
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@given(data=st.data())
def test_map_zip_reduce_match_the_specification(
    fast: TensorBackend, dtype: Any, data: st.DataObject
) -> None:
    shape_a, shape_b = data.draw(mt.broadcastable_shapes())
    a = data.draw(mt.strided(shape_a, dtype, values(dtype))).data
    b = data.draw(mt.strided(shape_b, dtype, values(dtype))).data
    float_ok = np.dtype(dtype).kind == "f"
    unary = data.draw(st.sampled_from(UNARY if float_ok else UNARY[:3]))
    binary = data.draw(st.sampled_from(BINARY))
    same(fast.map(unary, a), SIMPLE.map(unary, a), dtype)
    same(fast.zip(binary, a, b), SIMPLE.zip(binary, a, b), dtype)
    for dim in range(a.dims):
        code = data.draw(st.sampled_from(REDUCE))
        same(fast.reduce(code, a, dim), SIMPLE.reduce(code, a, dim), dtype)


@each_path
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_big_and_long_inputs_cross_chunks_and_blocks(fast: TensorBackend, dtype: Any) -> None:
    lines = fast_ops.fast_paths.line_loops
    rng = np.random.default_rng(7)
    big = rng.integers(-9, 10, (3, 40, 2 * lines.REDUCE_BLOCK + 5)).astype(dtype)
    long = rng.integers(-9, 10, (2, 2 * lines.CHUNK + 7)).astype(dtype)
    for x in (big, long):
        a = fast.from_numpy(x)
        t = a.permute(*reversed(range(a.dims)))
        x_t = x.transpose(*reversed(range(x.ndim)))
        same(fast.map(ops.NEG, t), -x_t, dtype)
        same(fast.zip(ops.MUL, a, a), x * x, dtype)
        for dim in range(a.dims):
            same(fast.reduce(ops.ADD, t, dim), x_t.sum(axis=dim, keepdims=True), dtype)


@each_path
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("n", "k", "m"), [(1, 1, 1), (7, 33, 65), (65, 300, 67)], ids=str)
def test_matmul_matches_numpy(fast: TensorBackend, n: int, k: int, m: int, dtype: Any) -> None:
    rng = np.random.default_rng(n + k + m)
    x = rng.integers(-9, 10, (2, n, k)).astype(dtype)
    y = rng.integers(-9, 10, (k, m)).astype(dtype)
    a, b = fast.from_numpy(x), fast.from_numpy(y)
    same(fast.matmul(a, b), x @ y, dtype)
    a_t = fast.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 1))).permute(0, 2, 1)
    same(fast.matmul(a_t, b), x @ y, dtype)
