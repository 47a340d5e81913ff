"""The matmul kernels of minifw/fast_paths/matmul.py, each called directly, against numpy.

tests/backends/test_fast_ops.py checks `FastOps.matmul` end to end (which kernel runs depends
on sizes and layouts); here each kernel (and the tiled one's serial twin) gets the same drawn
operands: broadcast batches, transposed a, k from 0 up, and an out that is a strided
window of a bigger array. Timing is never asserted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minifw.fast_paths import matmul as fm

pytestmark = pytest.mark.extra  # expert code: never a course task

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


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("depth", [1, 4, 7, 15, 129, fm.ROWS_MAX_DEPTH + 1])
@pytest.mark.parametrize("cols", [7, 15, 70])
@pytest.mark.parametrize("rows", [5, 15, fm.ROWS_MAX_ROWS + 1])
def test_matmul_entry_picks_a_kernel_that_is_right(
    dtype: Any, parallel: bool, depth: int, cols: int, rows: int
) -> None:
    # Both layouts of each operand, around one vector of lanes (8 float64, 16 float32):
    # every path of the entry (rows kernel, on out.T, on a row-major copy of b, tiled).
    rng = np.random.default_rng(depth)
    a = rng.integers(-4, 5, (2, rows, depth)).astype(dtype)
    b = rng.integers(-4, 5, (2, depth, cols)).astype(dtype)
    for left in (a, np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)):
        for right in (b, np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)):
            out = np.empty((2, rows, cols), dtype)
            fm.matmul(*flat(out), *flat(left), *flat(right), parallel)
            np.testing.assert_array_equal(out, left @ right)


@pytest.mark.parametrize(
    ("left", "right", "kernel"),
    [
        ((64, 784), (784, 128), "_matmul_rows"),  # x @ w1: few rows
        ((64, 784, "T"), (64, 128), "_matmul_rows"),  # x.T @ g: k = batch
        ((64, 128), (128, 10), "_matmul_serial"),  # h @ w2: out narrower than a vector
        ((64, 10), (128, 10, "T"), "_matmul_rows"),  # g @ w2.T: k = 10, b copied row-major
        ((64, 128, "T"), (64, 10), "_matmul_rows_serial"),  # h.T @ g: out.T = g.T @ h
    ],
)
def test_the_mlp_products_take_the_kernels_meant_for_them(
    left: tuple[Any, ...], right: tuple[Any, ...], kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (rows, cols, "T") is a row-major (rows, cols) array seen transposed (as w.T, x.T).
    rng = np.random.default_rng(0)
    a, b = (
        rng.standard_normal(shape[:2]).astype(np.float32).T
        if len(shape) == 3
        else rng.standard_normal(shape).astype(np.float32)
        for shape in (left, right)
    )
    called: list[str] = []
    for name in ("_matmul_rows", "_matmul_rows_serial", "_matmul", "_matmul_serial"):
        original = getattr(fm, name)
        monkeypatch.setattr(
            fm, name, lambda *args, _n=name, _f=original: (called.append(_n), _f(*args))
        )
    out = np.empty((a.shape[0], b.shape[1]), np.float32)
    fm.matmul(*flat(out[None]), *flat(a[None]), *flat(b[None]), True)
    assert called == [kernel]
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
