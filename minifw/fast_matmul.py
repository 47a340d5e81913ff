"""The FastOps matmul: tiled, parallel over output tiles, compiled by Numba and cached.

`FastOps.matmul` calls `matmul` here. Like the other FastOps kernels, each kernel is a
module-level function compiled with `cache=True` and has a serial twin for small inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ._jit import njit, serial_twin
from .tensor_data import Index
from .tensor_ops import Storage

# Each task computes one TILE_I x TILE_J tile of out, walking k in TILE_K steps;
# the innermost block is a 4 x 4 register tile (see `_micro_4x4`).
TILE_I = 64
TILE_J = 64
TILE_K = 256
# Operands whose k dim is not contiguous are first copied in BLOCK x BLOCK blocks.
BLOCK = 32
# `reassoc` lets the dot products run in SIMD lanes and `contract` fuses multiply-adds:
# both only change the rounding of sums. No nnan/ninf.
SUM_MATH = {"reassoc", "contract"}


# BEGIN TASK 3.2


@njit(parallel=True, cache=True)
def _k_major(src: Any, shape: Any, strides: Any, line_dim: int, k_dim: int) -> Any:
    """A copy of 3-D `src` in which each line (a row of a, a column of b) is k-contiguous.

    Loop::

        for (n, line block, k block) in prange(blocks):     # BLOCK x BLOCK each
            for line in line block: for k in k block:
                copy[n, line, k] = src[n, line, k]          # read with src's strides

    `line_dim` and `k_dim` say which of dims 1, 2 hold lines and k. Square blocks keep
    both the strided reads and the contiguous writes in cache. Invariants: main loop
    parallel; no allocation in it; each copy cell written once; a batch of 1 copied once.
    """
    batches, lines, depth = shape[0], shape[line_dim], shape[k_dim]
    l_step, k_step = strides[line_dim], strides[k_dim]
    copy = np.empty(batches * lines * depth, src.dtype)
    l_blocks, k_blocks = (lines + BLOCK - 1) // BLOCK, (depth + BLOCK - 1) // BLOCK
    for task in prange(batches * l_blocks * k_blocks):
        n, rest = task // (l_blocks * k_blocks), task % (l_blocks * k_blocks)
        l0, k0 = (rest // k_blocks) * BLOCK, (rest % k_blocks) * BLOCK
        for line in range(l0, min(lines, l0 + BLOCK)):
            s = n * strides[0] + line * l_step
            d = (n * lines + line) * depth
            for k in range(k0, min(depth, k0 + BLOCK)):
                copy[d + k] = src[s + k * k_step]
    return copy


@njit(inline="always", fastmath=SUM_MATH)
def _micro_4x4(
    x: Any, xo: int, x_row: int, y: Any, yo: int, y_row: int, kc: int, acc: Any, at: int
) -> None:
    """acc[at + r * TILE_J + c] += sum_k x[xo + r*x_row + k] * y[yo + c*y_row + k], r, c < 4.

    Sixteen dot products at once over k-contiguous lines: each value loaded feeds
    four multiply-adds and the sixteen sums stay in registers (LLVM vectorises the
    k loop, `reassoc` letting it split each sum across SIMD lanes). The lines are
    slices, so indexing needs no negative-index check. No allocation.
    """
    zero = acc.dtype.type(0)
    s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = zero
    s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = zero
    x0, x1 = x[xo : xo + kc], x[xo + x_row : xo + x_row + kc]
    x2, x3 = x[xo + 2 * x_row : xo + 2 * x_row + kc], x[xo + 3 * x_row : xo + 3 * x_row + kc]
    y0, y1 = y[yo : yo + kc], y[yo + y_row : yo + y_row + kc]
    y2, y3 = y[yo + 2 * y_row : yo + 2 * y_row + kc], y[yo + 3 * y_row : yo + 3 * y_row + kc]
    for k in range(kc):
        a0, a1, a2, a3, b0, b1, b2, b3 = x0[k], x1[k], x2[k], x3[k], y0[k], y1[k], y2[k], y3[k]
        s00 += a0 * b0; s01 += a0 * b1; s02 += a0 * b2; s03 += a0 * b3  # fmt: skip # noqa: E702
        s10 += a1 * b0; s11 += a1 * b1; s12 += a1 * b2; s13 += a1 * b3  # fmt: skip # noqa: E702
        s20 += a2 * b0; s21 += a2 * b1; s22 += a2 * b2; s23 += a2 * b3  # fmt: skip # noqa: E702
        s30 += a3 * b0; s31 += a3 * b1; s32 += a3 * b2; s33 += a3 * b3  # fmt: skip # noqa: E702
    for r, (c0, c1, c2, c3) in enumerate(
        ((s00, s01, s02, s03), (s10, s11, s12, s13), (s20, s21, s22, s23), (s30, s31, s32, s33))
    ):
        row = at + r * TILE_J
        acc[row] += c0; acc[row + 1] += c1; acc[row + 2] += c2; acc[row + 3] += c3  # fmt: skip # noqa: E702


@njit(inline="always", fastmath=SUM_MATH)
def _tile(
    x: Any, xo: int, x_row: int, y: Any, yo: int, y_row: int, h: int, w: int, kc: int, acc: Any
) -> None:
    """acc[i * TILE_J + j] += sum_k x[xo + i*x_row + k] * y[yo + j*y_row + k], i < h, j < w.

    4 x 4 register tiles where they fit, single dot products on the ragged edge.
    No allocation; every inner loop is contiguous.
    """
    h4, w4 = h - h % 4, w - w % 4
    for i in range(0, h4, 4):
        for j in range(0, w4, 4):
            _micro_4x4(x, xo + i * x_row, x_row, y, yo + j * y_row, y_row, kc, acc, i * TILE_J + j)
    for i in range(h):
        row = x[xo + i * x_row : xo + i * x_row + kc]
        for j in range(w4 if i < h4 else 0, w):
            col = y[yo + j * y_row : yo + j * y_row + kc]
            s = acc.dtype.type(0)
            for k in range(kc):
                s += row[k] * col[k]
            acc[i * TILE_J + j] += s


@njit(parallel=True, cache=True, fastmath=SUM_MATH)
def _matmul(
    out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
) -> None:  # fmt: skip
    """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j], tiled; a batch of size 1 broadcasts.

    Needs k-contiguous operands, a_strides[2] == 1 == b_strides[1]: the rows of a and
    the columns of b are contiguous lines (`FastOps.matmul` copies an operand if not).

    Loop::

        for (n, ti, tj) in prange(batches * row_tiles * col_tiles):
            acc = 0                                # TILE_I x TILE_J, thread-local
            for k0 in range(0, depth, TILE_K):     # rows of a and columns of b, in blocks
                acc += a[n, ti, k0:k0+kc] @ b[n, k0:k0+kc, tj]   # 4 x 4 register tiles
            out[n, ti, tj] = acc

    Invariants: main loop parallel over output tiles; acc thread-local; no allocation
    or call in the inner loops; each out cell written once.
    """
    batches, rows, cols, depth = out_shape[0], out_shape[1], out_shape[2], a_shape[2]
    x_n, x_row = a_strides[0] if a_shape[0] > 1 else 0, a_strides[1]
    y_n, y_row = b_strides[0] if b_shape[0] > 1 else 0, b_strides[2]
    row_tiles, col_tiles = (rows + TILE_I - 1) // TILE_I, (cols + TILE_J - 1) // TILE_J
    for task in prange(batches * row_tiles * col_tiles):
        n, rest = task // (row_tiles * col_tiles), task % (row_tiles * col_tiles)
        i0, j0 = (rest // col_tiles) * TILE_I, (rest % col_tiles) * TILE_J
        h, w = min(TILE_I, rows - i0), min(TILE_J, cols - j0)
        acc = np.zeros(TILE_I * TILE_J, out.dtype)
        for k0 in range(0, depth, TILE_K):
            xo, yo = n * x_n + i0 * x_row + k0, n * y_n + j0 * y_row + k0
            _tile(a, xo, x_row, b, yo, y_row, h, w, min(TILE_K, depth - k0), acc)
        o = n * out_strides[0] + i0 * out_strides[1] + j0 * out_strides[2]
        for i in range(h):
            for j in range(w):
                out[o + i * out_strides[1] + j * out_strides[2]] = acc[i * TILE_J + j]


@njit(cache=True, fastmath=SUM_MATH)
def _matmul_rows(
    out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
) -> None:  # fmt: skip
    """out[n, i, :] = sum_k a[n, i, k] * b[n, k, :], a row of out at a time; serial.

    Needs b's rows contiguous (b_strides[2] == 1); a may have any strides. For small
    products, where `_matmul`'s dot products are too short to fill SIMD lanes and
    copying an operand costs more than the arithmetic: here the lanes run along j.

    Loop::

        for (n, i) in range(batches * rows):
            acc = 0                                   # one row, reused
            for k in range(depth): acc += a[n, i, k] * b[n, k, :]
            out[n, i, :] = acc

    Invariants: no allocation in the loops; each out cell written once.
    """
    batches, rows, cols, depth = out_shape[0], out_shape[1], out_shape[2], a_shape[2]
    x_n, x_row, x_k = a_strides[0] if a_shape[0] > 1 else 0, a_strides[1], a_strides[2]
    y_n, y_k = b_strides[0] if b_shape[0] > 1 else 0, b_strides[1]
    acc = np.empty(cols, out.dtype)
    for task in range(batches * rows):
        n, i = task // rows, task % rows
        acc[:] = 0
        for k in range(depth):
            x = a[n * x_n + i * x_row + k * x_k]
            line = b[n * y_n + k * y_k : n * y_n + k * y_k + cols]
            for j in range(cols):
                acc[j] += x * line[j]
        o = n * out_strides[0] + i * out_strides[1]
        for j in range(cols):
            out[o + j * out_strides[2]] = acc[j]


# END TASK 3.2

_matmul_serial, _k_major_serial = serial_twin(_matmul), serial_twin(_k_major)


def matmul(
    out: Storage, out_shape: Index, out_strides: Index,
    a: Storage, a_shape: Index, a_strides: Index,
    b: Storage, b_shape: Index, b_strides: Index, parallel: bool,
) -> None:  # fmt: skip
    """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; batch dims broadcast.

    Small products with a row-major b go to `_matmul_rows`, which reads both as they are.
    Otherwise an operand whose k dim is strided (b in `x @ w`, a in `x.T @ g`) is first
    copied by `_k_major`; row-major `x` and a transposed `w.T` are read where they are.
    `parallel` picks the kernels that use the thread pool.
    """
    if not parallel and b_strides[2] == 1:
        _matmul_rows(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)
        return
    a, a_strides = _k_contiguous(a, a_shape, a_strides, 2, parallel)
    b, b_strides = _k_contiguous(b, b_shape, b_strides, 1, parallel)
    kernel = _matmul if parallel else _matmul_serial
    kernel(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)


def _k_contiguous(
    x: Storage, shape: Index, strides: Index, k_dim: int, parallel: bool
) -> tuple[Storage, Index]:
    """`x` and its strides if dim `k_dim` has stride 1, else a copy in which it has."""
    if strides[k_dim] == 1 or shape[k_dim] == 1:
        return x, strides
    line_dim = 3 - k_dim
    copy = (_k_major if parallel else _k_major_serial)(x, shape, strides, line_dim, k_dim)
    new_strides = np.array([shape[1] * shape[2], 0, 0], np.int64)
    new_strides[line_dim], new_strides[k_dim] = shape[k_dim], 1
    return copy, new_strides


__all__ = ["matmul"]
