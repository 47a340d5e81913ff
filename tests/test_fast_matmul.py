"""The matmul kernels of minifw/fast_matmul.py, each called directly, against numpy.

tests/test_fast_ops.py checks `FastOps.matmul` end to end (which kernel runs depends on
sizes and layouts); here each kernel (and the tiled one's serial twin) gets the same drawn
operands: broadcast batches, transposed a, k from 0 up, and an out that is a strided
window of a bigger array. Timing is never asserted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minifw import fast_matmul as fm

pytestmark = pytest.mark.task3_2

DTYPES = [np.float64, np.float32, np.int64]


def flat(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(storage, shape, strides in cells) of a view of a 1-D base array."""
    base = x.base if x.base is not None else x
    while base.base is not None:
        base = base.base
    offset = (x.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // x.itemsize
    strides = np.array([s // x.itemsize for s in x.strides], np.int64)
    storage = base.reshape(-1)[offset:]
    return storage, np.array(x.shape, np.int64), strides


@st.composite
def operands(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """a (n or 1, i, k) possibly transposed, b (n or 1, k, j) row-major, and n."""
    n, i, k, j = (draw(st.integers(lo, hi)) for lo, hi in ((1, 3), (1, 9), (0, 11), (1, 40)))
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a_n, b_n = draw(st.sampled_from([(n, n), (1, n), (n, 1)]))
    a = rng.integers(-5, 6, (a_n, i, k)).astype(dtype)
    if draw(st.booleans()):  # a stored transposed: its k dim is not contiguous
        a = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
    b = rng.integers(-5, 6, (b_n, k, j)).astype(dtype)
    return a, b, n


def run(kernel: Any, a: np.ndarray, b: np.ndarray, n: int, k_contiguous: bool) -> np.ndarray:
    """`kernel`'s result written into a strided window of a bigger out array."""
    i, j = a.shape[1], b.shape[2]
    big = np.full((n, i, 2 * j), -7, a.dtype)
    window = big[:, :, ::2]
    a_s, a_shape, a_strides = flat(a)
    b_s, b_shape, b_strides = flat(b)
    if k_contiguous:  # `_matmul` needs rows of a and columns of b contiguous
        a_s, a_strides = fm._k_contiguous(a_s, a_shape, a_strides, 2, False)
        b_s, b_strides = fm._k_contiguous(b_s, b_shape, b_strides, 1, False)
    o_s, o_shape, o_strides = flat(window)
    kernel(o_s, o_shape, o_strides, a_s, a_shape, a_strides, b_s, b_shape, b_strides)
    assert np.all(big[:, :, 1::2] == -7), "a kernel wrote outside its out window"
    return window


KERNELS = {
    "rows": (fm._matmul_rows, False),
    "rows serial": (fm._matmul_rows_serial, False),
    "tiled": (fm._matmul, True),
    "tiled serial": (fm._matmul_serial, True),
}


@pytest.mark.parametrize("name", KERNELS)
@settings(deadline=None)
@given(operands())
def test_each_kernel_matches_numpy(name: str, case: tuple[np.ndarray, np.ndarray, int]) -> None:
    a, b, n = case
    kernel, k_contiguous = KERNELS[name]
    expected = np.matmul(a, b)
    np.testing.assert_array_equal(run(kernel, a, b, n, k_contiguous), expected)


@pytest.mark.parametrize("name", KERNELS)
def test_each_kernel_across_tile_edges(name: str) -> None:
    # One tile and a ragged one in every dim of both tilings, k not a multiple of 4.
    rng = np.random.default_rng(3)
    kernel, k_contiguous = KERNELS[name]
    i, k, j = fm.ROWS_I + fm.TILE_I + 5, fm.ROWS_K + fm.TILE_K + 3, fm.ROWS_J + 7
    a = rng.integers(-3, 4, (2, i, k)).astype(np.float64)
    b = rng.integers(-3, 4, (1, k, j)).astype(np.float64)
    np.testing.assert_array_equal(run(kernel, a, b, 2, k_contiguous), np.matmul(a, b))


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("depth", [1, 4, 7, 129, fm.ROWS_MAX_DEPTH + 1])
@pytest.mark.parametrize("cols", [fm.ROWS_MIN_COLS - 1, 70])
@pytest.mark.parametrize("rows", [5, fm.ROWS_MAX_ROWS + 1])
def test_matmul_entry_picks_a_kernel_that_is_right(
    parallel: bool, depth: int, cols: int, rows: int
) -> None:
    rng = np.random.default_rng(depth)
    a, b = rng.standard_normal((2, rows, depth)), rng.standard_normal((2, depth, cols))
    for left in (a, np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)):
        for right in (b, np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)):
            out = np.empty((2, rows, cols))
            fm.matmul(*flat(out), *flat(left), *flat(right), parallel)
            np.testing.assert_allclose(out, left @ right, rtol=1e-12, atol=1e-12)
