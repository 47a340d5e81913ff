"""FastOps: the kernel contract compiled by Numba into parallel CPU loops.

The kernels call the very scalar functions of `operators.py` and index helpers of
`tensor_data.py`, recompiled by `compile_functions` and inlined. They are module-level
functions taking an integer op code, compiled with `cache=True`: the machine code is
saved in `__pycache__` next to this file (or NUMBA_CACHE_DIR), and a fresh process
loads it without compiling anything. Numba keys that cache on this file alone: after
editing `operators.py` or `tensor_data.py`, delete `minifw/__pycache__/fast_ops*.nb*`.
Each kernel also has a serial twin (same code, `parallel` off) that `FastOps` runs on
small inputs, where waking the thread pool would cost more than the work.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
from numba import prange

from . import operators, tensor_data
from ._jit import compile_functions, njit
from .operators import ADD, MAX
from .simple_ops import HostStorage
from .tensor_data import Index
from .tensor_ops import Storage

_fns = compile_functions(
    [operators, tensor_data],
    operators.KERNEL_FUNCTIONS + tensor_data.KERNEL_FUNCTIONS,
    lambda fn: njit(fn, inline="always"),
)
unary = _fns.unary
binary = _fns.binary
to_index = _fns.to_index
index_to_position = _fns.index_to_position
broadcast_index = _fns.broadcast_index

# Work split. A map/zip task covers about CHUNK cells (whole rows of the last dim);
# a reduction over a dim other than the last handles REDUCE_BLOCK output columns per task.
CHUNK = 16384
REDUCE_BLOCK = 128
# matmul: each task computes one TILE_I x TILE_J tile of out, walking k in TILE_K steps;
# the innermost block is a 4 x 4 register tile (see `_micro_4x4`).
TILE_I = 64
TILE_J = 64
TILE_K = 256
# Operands whose k dim is not contiguous are first copied in BLOCK x BLOCK blocks.
BLOCK = 32
# Below this much work (cells, or multiply-adds / 8 for matmul) a kernel runs its serial
# twin: waking the thread pool costs more than it saves, and far more on a busy machine.
PARALLEL_FROM = 32768
# `reassoc` lets the matmul dot products and reductions run in SIMD lanes and `contract`
# fuses multiply-adds: both only change the rounding of sums. No nnan/ninf.
SUM_MATH = {"reassoc", "contract"}


@njit(inline="always")
def _is_row_major(shape: Any, strides: Any) -> bool:
    """True when `strides` are the row-major strides of `shape` (size-1 dims ignored)."""
    expected = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] != 1 and strides[d] != expected:
            return False
        expected *= shape[d]
    return True


@njit(inline="always")
def _same_dense(out_shape: Any, out_strides: Any, shape: Any, strides: Any) -> bool:
    """True when an operand has out's shape and both are row-major (no index math needed)."""
    if len(shape) != len(out_shape):
        return False
    for d in range(len(shape)):
        if shape[d] != out_shape[d]:
            return False
    return _is_row_major(out_shape, out_strides) and _is_row_major(shape, strides)


@njit(inline="always")
def _numel(shape: Any) -> int:
    """The number of cells of `shape`."""
    n = 1
    for d in range(len(shape)):
        n *= shape[d]
    return n


@njit(inline="always")
def _last_step(out_shape: Any, shape: Any, strides: Any) -> int:
    """The step in storage of an operand along out's last dim (0 where it broadcasts)."""
    if len(shape) == 0 or len(out_shape) == 0 or shape[len(shape) - 1] == 1:
        return 0
    return int(strides[len(strides) - 1])


# BEGIN TASK 3.1


@njit(parallel=True, cache=True)
def _map(
    op: int, out: Any, out_shape: Any, out_strides: Any, a: Any, a_shape: Any, a_strides: Any
) -> None:
    """out[i] = unary(op, a[broadcast(i)]) for every cell i of out.

    Loop::

        if out and a are row-major with the same shape:
            for i in prange(size): out[i] = unary(op, a[i])
        else:
            for task in prange(tasks):             # a run of whole rows of the last dim
                (index buffers for this task)
                for row in task: o, p = start of row in out, in a
                    for j in range(last): out[o + j*o_step] = unary(op, a[p + j*a_step])

    Invariants: main loop parallel; index buffers thread-local (allocated per task);
    no allocation or call in the inner loop; each out cell written once.
    """
    size = _numel(out_shape)
    if _same_dense(out_shape, out_strides, a_shape, a_strides):
        for i in prange(size):
            out[i] = unary(op, a[i])
        return
    last = out_shape[len(out_shape) - 1] if len(out_shape) else 1
    o_step = _last_step(out_shape, out_shape, out_strides)
    a_step = _last_step(out_shape, a_shape, a_strides)
    rows = size // last
    per_task = max(1, CHUNK // last)
    for task in prange((rows + per_task - 1) // per_task):
        out_index = np.empty(len(out_shape), np.int64)
        a_index = np.empty(len(a_shape), np.int64)
        for row in range(task * per_task, min(rows, (task + 1) * per_task)):
            to_index(row * last, out_shape, out_index)
            broadcast_index(out_index, out_shape, a_shape, a_index)
            o = index_to_position(out_index, out_strides)
            p = index_to_position(a_index, a_strides)
            for j in range(last):  # unsigned indices: no wraparound check (see `_fold`)
                out[np.uint64(o + j * o_step)] = unary(op, a[np.uint64(p + j * a_step)])


@njit(parallel=True, cache=True)
def _zip(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
) -> None:  # fmt: skip
    """out[i] = binary(op, a[broadcast(i)], b[broadcast(i)]) for every cell i of out.

    Loop::

        if out, a and b are row-major with the same shape:
            for i in prange(size): out[i] = binary(op, a[i], b[i])
        else:
            for task in prange(tasks):             # a run of whole rows of the last dim
                (index buffers for this task)
                for row in task: o, p, q = start of row in out, a, b
                    for j in range(last):
                        out[o + j*o_step] = binary(op, a[p + j*a_step], b[q + j*b_step])

    A broadcast operand has step 0 along the last dim, so `x + row_vector` runs
    without index math per cell. Invariants: main loop parallel; index buffers
    thread-local; no allocation or call in the inner loop; each out cell written once.
    """
    size = _numel(out_shape)
    if _same_dense(out_shape, out_strides, a_shape, a_strides) and _same_dense(
        out_shape, out_strides, b_shape, b_strides
    ):
        for i in prange(size):
            out[i] = binary(op, a[i], b[i])
        return
    last = out_shape[len(out_shape) - 1] if len(out_shape) else 1
    o_step = _last_step(out_shape, out_shape, out_strides)
    a_step = _last_step(out_shape, a_shape, a_strides)
    b_step = _last_step(out_shape, b_shape, b_strides)
    rows = size // last
    per_task = max(1, CHUNK // last)
    for task in prange((rows + per_task - 1) // per_task):
        out_index = np.empty(len(out_shape), np.int64)
        a_index = np.empty(len(a_shape), np.int64)
        b_index = np.empty(len(b_shape), np.int64)
        for row in range(task * per_task, min(rows, (task + 1) * per_task)):
            to_index(row * last, out_shape, out_index)
            broadcast_index(out_index, out_shape, a_shape, a_index)
            broadcast_index(out_index, out_shape, b_shape, b_index)
            o = index_to_position(out_index, out_strides)
            p = index_to_position(a_index, a_strides)
            q = index_to_position(b_index, b_strides)
            for j in range(last):
                x, y = a[np.uint64(p + j * a_step)], b[np.uint64(q + j * b_step)]
                out[np.uint64(o + j * o_step)] = binary(op, x, y)


@njit(inline="always", fastmath=SUM_MATH)
def _fold(op: int, acc: Any, a: Any, p: int, step: int, n: int) -> Any:
    """Return `acc` folded with binary(op) over a[p + k * step] for k < n.

    Sum and max get a loop of their own, where the op is a constant: the compiler drops
    the dispatch and vectorises sums (`reassoc`). Positions are never negative; an
    unsigned index spares Numba's wraparound check, which would block vectorising.
    """
    if op == ADD:
        for k in range(n):
            acc = binary(ADD, acc, a[np.uint64(p + k * step)])
    elif op == MAX:
        for k in range(n):
            acc = binary(MAX, acc, a[np.uint64(p + k * step)])
    else:
        for k in range(n):
            acc = binary(op, acc, a[np.uint64(p + k * step)])
    return acc


@njit(inline="always")
def _fold_block(op: int, acc: Any, a: Any, q: int, step: int, w: int) -> None:
    """acc[c] = binary(op, acc[c], a[q + c * step]) for c < w; sum and max specialised."""
    if op == ADD:
        for c in range(w):
            acc[c] = binary(ADD, acc[c], a[np.uint64(q + c * step)])
    elif op == MAX:
        for c in range(w):
            acc[c] = binary(MAX, acc[c], a[np.uint64(q + c * step)])
    else:
        for c in range(w):
            acc[c] = binary(op, acc[c], a[np.uint64(q + c * step)])


@njit(parallel=True, cache=True, fastmath=SUM_MATH)
def _reduce_along(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, dim: int,
) -> None:  # fmt: skip
    """Fold each out cell's line of `a` along `dim` (used when `dim` is the last dim).

    Loop::

        for task in prange(tasks):                 # a run of CHUNK // n out cells
            (index buffer for this task)
            for cell in task:
                o, p = position of cell in out, in a (index[dim] = 0)
                out[o] = fold(binary(op), a[p + k * step] for k < n, start=out[o])

    Invariants: main loop parallel; index buffer thread-local; no allocation or
    call in the inner loop; each out cell written once.
    """
    cells = _numel(out_shape)
    n, step = a_shape[dim], a_strides[dim]
    per_task = max(1, CHUNK // max(n, 1))
    for task in prange((cells + per_task - 1) // per_task):
        index = np.empty(len(out_shape), np.int64)
        for cell in range(task * per_task, min(cells, (task + 1) * per_task)):
            to_index(cell, out_shape, index)
            o = index_to_position(index, out_strides)
            p = index_to_position(index, a_strides)
            out[o] = _fold(op, out[o], a, p, step, n)


@njit(parallel=True, cache=True)
def _reduce_across(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, dim: int,
) -> None:  # fmt: skip
    """Fold `a` along `dim` (not the last dim) a block of last-dim columns at a time.

    Loop::

        for task in prange(rows * blocks):         # rows: out cells with last index 0
            acc[:w] = out[row, block]               # thread-local buffer
            for k in range(n):                      # walk dim; the inner loop is contiguous
                for c in range(w): acc[c] = binary(op, acc[c], a[row, k, block[c]])
            out[row, block] = acc[:w]

    Invariants: main loop parallel; index and acc buffers thread-local; no allocation
    or call in the inner loop; each out cell written once.
    """
    nd = len(out_shape)
    last = out_shape[nd - 1]
    rows, blocks = _numel(out_shape) // last, (last + REDUCE_BLOCK - 1) // REDUCE_BLOCK
    n, step = a_shape[dim], a_strides[dim]
    o_step, a_step = out_strides[nd - 1], a_strides[nd - 1]
    for task in prange(rows * blocks):
        index = np.empty(nd, np.int64)
        acc = np.empty(REDUCE_BLOCK, out.dtype)
        row, c0 = task // blocks, (task % blocks) * REDUCE_BLOCK
        w = min(REDUCE_BLOCK, last - c0)
        to_index(row * last + c0, out_shape, index)
        o = index_to_position(index, out_strides)
        p = index_to_position(index, a_strides)
        for c in range(w):
            acc[c] = out[o + c * o_step]
        for k in range(n):
            _fold_block(op, acc, a, p + k * step, a_step, w)
        for c in range(w):
            out[o + c * o_step] = acc[c]


# END TASK 3.1

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


# END TASK 3.2


def _serial(kernel: Any) -> Any:
    """`kernel` compiled again without `parallel` (prange runs as range), cached apart."""
    fn = getattr(kernel, "py_func", None)
    if fn is None:  # NUMBA_DISABLE_JIT: kernels are plain Python already
        return kernel
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial")
    twin.__qualname__ = fn.__qualname__ + "_serial"  # its own cache file
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "nopython")}
    return njit(twin, cache=True, **options)


_map_serial, _zip_serial = _serial(_map), _serial(_zip)
_reduce_along_serial, _reduce_across_serial = _serial(_reduce_along), _serial(_reduce_across)
_matmul_serial, _k_major_serial = _serial(_matmul), _serial(_k_major)


class FastOps(HostStorage):
    """Parallel CPU kernels compiled by Numba; storage is a numpy array, as in SimpleOps."""

    device = "cpu"
    parallel_from = PARALLEL_FROM

    @classmethod
    def map(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = unary(op, a[i]) for every cell i of out; `a` broadcasts to out."""
        kernel = _map if out.size >= cls.parallel_from else _map_serial
        kernel(op, out, out_shape, out_strides, a, a_shape, a_strides)

    @classmethod
    def zip(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = binary(op, a[i], b[i]); `a` and `b` broadcast to out."""
        kernel = _zip if out.size >= cls.parallel_from else _zip_serial
        kernel(op, out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)

    @classmethod
    def reduce(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index, dim: int,
    ) -> None:  # fmt: skip
        """out[i] = fold of binary(op) along `dim` of a, starting from out's current value.

        The last dim is walked line by line (`_reduce_along`); another dim a block of
        contiguous columns at a time (`_reduce_across`), streaming through memory.
        """
        last, parallel = len(a_shape) - 1, out.size * int(a_shape[dim]) >= cls.parallel_from
        if dim == last or a_shape[last] == 1:
            kernel = _reduce_along if parallel else _reduce_along_serial
        else:
            kernel = _reduce_across if parallel else _reduce_across_serial
        kernel(op, out, out_shape, out_strides, a, a_shape, a_strides, dim)

    @classmethod
    def matmul(
        cls, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; batch dims broadcast.

        An operand whose k dim is strided (b in `x @ w`, a in `x.T @ g`) is first copied
        by `_k_major`; row-major `x` and a transposed `w.T` are read where they are.
        """
        parallel = out.size * int(a_shape[2]) // 8 >= cls.parallel_from
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


__all__ = ["FastOps"]
