"""The register-tiled matmul FastOps calls when this folder is present (an expert fast path).

`FastOps.matmul` calls `matmul` here; the readable `_matmul` of `fast_ops.py` computes
the same cells. Kernels pick the loop that suits each layout (dot products over
k-contiguous lines in 4 x 4 register tiles, or rows of b in SIMD lanes), and each is a
module-level function compiled with `cache=True` with a serial twin for small inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from minifw._jit import njit, serial_twin
from minifw.core.tensor_data import Index
from minifw.tensor_ops import Storage

# Each task computes one TILE_I x TILE_J tile of out, walking k in TILE_K steps;
# the innermost block is a 4 x 4 register tile (see `_micro_4x4`).
TILE_I = 64
TILE_J = 64
TILE_K = 256
# `_matmul_rows` computes ROWS_I x ROWS_J tiles of out, walking k in ROWS_K steps.
ROWS_I = 32
ROWS_J = 256
ROWS_K = 256
# `_matmul_rows` runs its SIMD lanes along rows of b: it needs rows of at least one
# vector (VECTOR_BYTES, an AVX-512 register). Narrower products (a matrix times a
# vector) fill the lanes better as dot products, and so do products both deep and tall
# (their long dot products, over many rows of a, pay back `_matmul`'s copy of b).
VECTOR_BYTES = 64
ROWS_MAX_DEPTH = 256
ROWS_MAX_ROWS = 128
# Operands whose k dim is not contiguous are first copied in BLOCK x BLOCK blocks.
BLOCK = 32
COPY_PARALLEL_FROM = 32768
# `reassoc` lets the dot products run in SIMD lanes and `contract` fuses multiply-adds:
# both only change the rounding of sums. No nnan/ninf.
SUM_MATH = {"reassoc", "contract"}
U = np.uint64  # an index type Numba does not check for negative values


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
                copy[U(d + k)] = src[U(s + k * k_step)]
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


@njit(inline="always")
def _store_row(out: Any, at: int, step: int, row: Any) -> None:
    """out[at + j * step] = row[j]; a plain copy (vectorised) when out's row is contiguous."""
    if step == 1:
        out[at : at + len(row)] = row
    else:
        for j in range(len(row)):
            out[at + j * step] = row[j]


@njit(inline="always")
def _tile_of(task: int, rows: int, cols: int, tile_i: int, tile_j: int) -> Any:
    """(batch, first row, first column, height, width) of output tile number `task`."""
    row_tiles, col_tiles = (rows + tile_i - 1) // tile_i, (cols + tile_j - 1) // tile_j
    n, rest = task // (row_tiles * col_tiles), task % (row_tiles * col_tiles)
    i0, j0 = (rest // col_tiles) * tile_i, (rest % col_tiles) * tile_j
    return n, i0, j0, min(tile_i, rows - i0), min(tile_j, cols - j0)


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
    tiles = ((rows + TILE_I - 1) // TILE_I) * ((cols + TILE_J - 1) // TILE_J)
    for task in prange(batches * tiles):
        n, i0, j0, h, w = _tile_of(task, rows, cols, TILE_I, TILE_J)
        acc = np.zeros(TILE_I * TILE_J, out.dtype)
        for k0 in range(0, depth, TILE_K):
            xo, yo = n * x_n + i0 * x_row + k0, n * y_n + j0 * y_row + k0
            _tile(a, xo, x_row, b, yo, y_row, h, w, min(TILE_K, depth - k0), acc)
        o = n * out_strides[0] + i0 * out_strides[1] + j0 * out_strides[2]
        for i in range(h):
            _store_row(
                out, o + i * out_strides[1], out_strides[2], acc[i * TILE_J : i * TILE_J + w]
            )


@njit(inline="always")
def _column4(a: Any, at: int, a_row: int, h: int) -> Any:
    """a[at + r * a_row] for rows r < 4, with 0 for the rows r >= h that do not exist."""
    zero = a.dtype.type(0)
    return (
        a[at],
        a[at + a_row] if h > 1 else zero,
        a[at + 2 * a_row] if h > 2 else zero,
        a[at + 3 * a_row] if h > 3 else zero,
    )


@njit(inline="always", fastmath=SUM_MATH)
def _four_row_updates(
    acc: Any, at: int, a: Any, ao: int, a_row: int, a_k: int, h: int,
    b: Any, bo: int, b_k: int, w: int, kc: int,
) -> None:  # fmt: skip
    """acc[at + r*w + j] += sum_k a[ao + r*a_row + k*a_k] * b[bo + k*b_k + j], r < h, j < w.

    Four rows of acc (rows past `h` get zero coefficients: acc has room for them and
    they are never read back) take four rows of b at a time: each b value loaded
    feeds four multiply-adds, each acc value loaded takes four, the 16 coefficients
    stay in registers, and the j loop, contiguous in acc and b, runs in SIMD lanes.
    Indices are unsigned (`U`), so Numba adds no negative-index wraparound, and every
    row is read from acc or b itself (no slices): LLVM then tests acc against b for
    overlap once per loop, where slices made it test each pair of rows. No allocation.
    """
    t0, t1, t2, t3 = U(at), U(at + w), U(at + 2 * w), U(at + 3 * w)
    k4 = kc - kc % 4
    for k in range(0, k4, 4):
        p, q = ao + k * a_k, bo + k * b_k
        c00, c10, c20, c30 = _column4(a, p, a_row, h)
        c01, c11, c21, c31 = _column4(a, p + a_k, a_row, h)
        c02, c12, c22, c32 = _column4(a, p + 2 * a_k, a_row, h)
        c03, c13, c23, c33 = _column4(a, p + 3 * a_k, a_row, h)
        q0, q1, q2, q3 = U(q), U(q + b_k), U(q + 2 * b_k), U(q + 3 * b_k)
        for j in range(U(w)):
            v0, v1, v2, v3 = b[q0 + j], b[q1 + j], b[q2 + j], b[q3 + j]
            acc[t0 + j] += c00 * v0 + c01 * v1 + c02 * v2 + c03 * v3
            acc[t1 + j] += c10 * v0 + c11 * v1 + c12 * v2 + c13 * v3
            acc[t2 + j] += c20 * v0 + c21 * v1 + c22 * v2 + c23 * v3
            acc[t3 + j] += c30 * v0 + c31 * v1 + c32 * v2 + c33 * v3
    for k in range(k4, kc):
        c0, c1, c2, c3 = _column4(a, ao + k * a_k, a_row, h)
        q0 = U(bo + k * b_k)
        for j in range(U(w)):
            y = b[q0 + j]
            acc[t0 + j] += c0 * y
            acc[t1 + j] += c1 * y
            acc[t2 + j] += c2 * y
            acc[t3 + j] += c3 * y


@njit(parallel=True, cache=True, fastmath=SUM_MATH)
def _matmul_rows(
    out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
) -> None:  # fmt: skip
    """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] for a b with contiguous rows.

    Needs b_strides[2] == 1; a may have any strides (its entries are read one at a
    time, as coefficients). The SIMD lanes run along j, so no operand is copied and
    a short k (x.T @ g over a batch) wastes nothing.

    Loop::

        for (n, ti, tj) in prange(batches * row_tiles * col_tiles):
            acc = 0                                   # the tile's rows, thread-local
            for k0 in range(0, depth, ROWS_K):        # b's panel stays in cache
                for rows i..i+3 of the tile:             # 4 k at a time
                    acc[i:i+4, :] += a[n, i:i+4, k0:k0+kc] @ b[n, k0:k0+kc, tj]
            out[n, ti, tj] = acc

    Invariants: main loop parallel over output tiles; acc thread-local; no allocation
    in the inner loops; each out cell written once.
    """
    batches, rows, cols, depth = out_shape[0], out_shape[1], out_shape[2], a_shape[2]
    x_n, x_row, x_k = a_strides[0] if a_shape[0] > 1 else 0, a_strides[1], a_strides[2]
    y_n, y_k = b_strides[0] if b_shape[0] > 1 else 0, b_strides[1]
    tiles = ((rows + ROWS_I - 1) // ROWS_I) * ((cols + ROWS_J - 1) // ROWS_J)
    for task in prange(batches * tiles):
        n, i0, j0, h, w = _tile_of(task, rows, cols, ROWS_I, ROWS_J)
        acc = np.zeros((h + 3) // 4 * 4 * w, out.dtype)  # rows of w cells, h rounded up
        for k0 in range(0, depth, ROWS_K):
            xo, yo = n * x_n + i0 * x_row + k0 * x_k, n * y_n + k0 * y_k + j0
            kc = min(ROWS_K, depth - k0)
            for i in range(0, h, 4):
                xi, hi = xo + i * x_row, min(4, h - i)
                _four_row_updates(acc, i * w, a, xi, x_row, x_k, hi, b, yo, y_k, w, kc)
        o = n * out_strides[0] + i0 * out_strides[1] + j0 * out_strides[2]
        for i in range(h):
            _store_row(out, o + i * out_strides[1], out_strides[2], acc[i * w : i * w + w])


_matmul_serial, _k_major_serial = serial_twin(_matmul), serial_twin(_k_major)
_matmul_rows_serial = serial_twin(_matmul_rows)


def matmul(
    out: Storage, out_shape: Index, out_strides: Index,
    a: Storage, a_shape: Index, a_strides: Index,
    b: Storage, b_shape: Index, b_strides: Index, parallel: bool,
) -> None:  # fmt: skip
    """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; batch dims broadcast.

    `_matmul_rows` reads both operands where they are when b has contiguous rows at
    least one SIMD vector wide and k is short (`g.T @ x` over a batch) or out has few
    rows (`x @ w` for a batch); when instead a has contiguous columns that wide, it
    computes out.T = b.T @ a.T (`h.T @ g` into a narrow out). It also runs on a
    row-major copy of b when k is shorter than a vector (`g @ w.T` for a narrow w).
    Otherwise the dot-product kernel `_matmul` runs on k-contiguous operands: a
    row-major `x` and a transposed `w.T` are read where they are, any other layout is
    first copied by `_k_major`. `parallel` picks the kernels that use the thread pool
    (one that would run a single task runs serially).
    """
    lanes = VECTOR_BYTES // out.itemsize
    depth, rows, cols = a_shape[2], out_shape[1], b_shape[2]
    if _rows_fit(out_shape, b_strides[2], cols, depth, lanes):
        _rows(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides, parallel)
        return
    if _rows_fit(out_shape[_SWAP], a_strides[1], rows, depth, lanes):  # out.T = b.T @ a.T
        out_t = (out, out_shape[_SWAP], out_strides[_SWAP])
        b_t, a_t = (b, b_shape[_SWAP], b_strides[_SWAP]), (a, a_shape[_SWAP], a_strides[_SWAP])
        _rows(*out_t, *b_t, *a_t, parallel)
        return
    if depth < lanes <= cols:
        b, b_strides = _k_contiguous(b, b_shape, b_strides, 2, parallel)  # b row-major
        _rows(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides, parallel)
        return
    a, a_strides = _k_contiguous(a, a_shape, a_strides, 2, parallel)
    b, b_strides = _k_contiguous(b, b_shape, b_strides, 1, parallel)
    tiles = _tiles(out_shape, TILE_I, TILE_J)
    kernel = _matmul if parallel and tiles > 1 else _matmul_serial
    kernel(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)


_SWAP = np.array([0, 2, 1])  # shape or strides of a 3-D view -> those of its transpose


def _rows_fit(out_shape: Index, b_row_step: int, cols: int, depth: int, lanes: int) -> bool:
    """True if `_matmul_rows` suits a product: rows of b a vector wide, k short or few rows."""
    few_rows = out_shape[0] * out_shape[1] <= ROWS_MAX_ROWS
    return b_row_step == 1 and cols >= lanes and (depth <= ROWS_MAX_DEPTH or few_rows)


def _rows(
    out: Storage, out_shape: Index, out_strides: Index,
    a: Storage, a_shape: Index, a_strides: Index,
    b: Storage, b_shape: Index, b_strides: Index, parallel: bool,
) -> None:  # fmt: skip
    """`_matmul_rows`, or its serial twin if not `parallel` or a single tile."""
    one_tile = _tiles(out_shape, ROWS_I, ROWS_J) == 1
    kernel = _matmul_rows if parallel and not one_tile else _matmul_rows_serial
    kernel(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)


def _tiles(out_shape: Index, tile_i: int, tile_j: int) -> int:
    """How many tile_i x tile_j tiles cover out (the tasks of a tiled kernel)."""
    rows, cols = -(-int(out_shape[1]) // tile_i), -(-int(out_shape[2]) // tile_j)
    return int(out_shape[0]) * rows * cols


def _k_contiguous(
    x: Storage, shape: Index, strides: Index, k_dim: int, parallel: bool
) -> tuple[Storage, Index]:
    """`x` and its strides if dim `k_dim` has stride 1, else a copy in which it has.

    The copy runs in parallel (if `parallel`) from COPY_PARALLEL_FROM cells.
    """
    if strides[k_dim] == 1 or shape[k_dim] == 1:
        return x, strides
    line_dim = 3 - k_dim
    big = shape[0] * shape[1] * shape[2] >= COPY_PARALLEL_FROM
    copy = (_k_major if parallel and big else _k_major_serial)(x, shape, strides, line_dim, k_dim)
    new_strides = np.array([shape[1] * shape[2], 0, 0], np.int64)
    new_strides[line_dim], new_strides[k_dim] = shape[k_dim], 1
    return copy, new_strides


__all__ = ["matmul"]
