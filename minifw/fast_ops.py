"""FastOps: the kernel contract compiled by Numba into parallel CPU loops.

What lives where. This file holds the kernels as a student writes them in Module 3:
`_map`, `_zip` and `_reduce` (task 3.1) and `_matmul` (task 3.2), readable parallel
loops over output cells. The expert fast paths (map, zip and reduce over lines of
cells in loops generated per op code, a register-tiled matmul, a vectorised e^x) live
in `minifw/fast_paths/`. `FastOps`, the "fast" backend, calls them when that folder is
present (it is in this repository, not in student repositories) and the readable
kernels otherwise; `ReadableFastOps` runs the readable kernels wherever it runs.
The layers above (nn, optim, the compiler) reach the other expert kernels (fused
updates, losses, folds, pooling) through one door, `fast_path(name)` (asked through
`backends.fast_path`, which loads this module on first use): this module decides
whether they exist.

The kernels call the very scalar functions of `scalar_math.py` and index helpers of
`tensor_data.py`, recompiled by `compile_functions` and inlined. They are module-level
functions taking an integer op code. Each launch runs a copy of the kernel compiled for
its op code alone (`_MAP[parallel][op]`, see `_jit.PerOp`): the first launch of an op
compiles only that op, and a program compiles only the ops it uses. Copies are compiled
with `cache=True`: the machine code is saved in `__pycache__` next to this file (or
NUMBA_CACHE_DIR), and a fresh process loads it without compiling anything. That cache is
keyed on the contents of every file the kernels inline (`_jit.KERNEL_SOURCES`), so
editing one of them recompiles.
"""

from __future__ import annotations

import functools
import importlib
import types
from pathlib import Path
from typing import Any

import numpy as np
from numba import prange

from minifw._jit import (
    PARALLEL_FROM,
    PerOp,
    compile_functions,
    inlined,
    njit,
    recompile_with,
    serial_twin,
)
from minifw._threads import parallel_threads
from minifw.core import operators, tensor_data
from minifw.core.tensor_data import Index
from minifw.simple_ops import HostStorage
from minifw.tensor_ops import Storage

_fns = compile_functions(
    [*operators.KERNEL_MODULES, tensor_data],
    operators.KERNEL_FUNCTIONS + tensor_data.KERNEL_FUNCTIONS,
    inlined,
)
unary = _fns.unary
binary = _fns.binary
to_index = _fns.to_index
index_to_position = _fns.index_to_position
broadcast_index = _fns.broadcast_index

# `_matmul` computes a row of out TILE_J cells at a time (its accumulator stays in cache).
TILE_J = 256


# Given helpers the kernels of task 3.1 use.


@njit(inline="always")
def _cells(shape: Any) -> int:
    """The number of cells of `shape`."""
    n = 1
    for d in range(len(shape)):
        n *= shape[d]
    return n


@njit(inline="always")
def _same_dense(out_shape: Any, out_strides: Any, shape: Any, strides: Any) -> bool:
    """True when an operand has out's shape and both are row-major: cell i is at i in both."""
    if len(shape) != len(out_shape):
        return False
    expected = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] != out_shape[d]:
            return False
        if shape[d] != 1 and (strides[d] != expected or out_strides[d] != expected):
            return False
        expected *= shape[d]
    return True


# BEGIN TASK 3.1


@njit(parallel=True, cache=True)
def _map(
    op: int, out: Any, out_shape: Any, out_strides: Any, a: Any, a_shape: Any, a_strides: Any
) -> None:
    """out[i] = unary(op, a[broadcast(i)]) for every cell i of out.

    Loop::

        if out and a are row-major with the same shape:   # cell i is at position i
            for i in prange(size): out[i] = unary(op, a[i])
        else:
            for i in prange(size):
                out_index = to_index(i); a_index = broadcast_index(out_index)
                out[position(out_index)] = unary(op, a[position(a_index)])

    Invariants: main loop parallel; index buffers thread-local (allocated in the
    parallel body); no allocation in the inner loop; each out cell written once.
    Use the given `_cells` and `_same_dense`; pass `i + 0` to the inlined `to_index`.
    """
    size = _cells(out_shape)
    if _same_dense(out_shape, out_strides, a_shape, a_strides):
        for i in prange(size):
            out[i] = unary(op, a[i])
        return
    for i in prange(size):
        out_index = np.empty(len(out_shape), np.int64)
        a_index = np.empty(len(a_shape), np.int64)
        to_index(i + 0, out_shape, out_index)  # a copy: inlined, it must not reassign i
        broadcast_index(out_index, out_shape, a_shape, a_index)
        o = index_to_position(out_index, out_strides)
        out[o] = unary(op, a[index_to_position(a_index, a_strides)])


@njit(parallel=True, cache=True)
def _zip(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
) -> None:  # fmt: skip
    """out[i] = binary(op, a[broadcast(i)], b[broadcast(i)]) for every cell i of out.

    Loop::

        if out, a and b are row-major with the same shape:   # cell i is at position i
            for i in prange(size): out[i] = binary(op, a[i], b[i])
        else:
            for i in prange(size):
                out_index = to_index(i); a_index, b_index = broadcast_index(out_index)
                out[position(out_index)] = binary(op, a[position(a_index)],
                                                      b[position(b_index)])

    Invariants: main loop parallel; index buffers thread-local (allocated in the
    parallel body); no allocation in the inner loop; each out cell written once.
    Use the given `_cells` and `_same_dense`; pass `i + 0` to the inlined `to_index`.
    """
    size = _cells(out_shape)
    if _same_dense(out_shape, out_strides, a_shape, a_strides) and _same_dense(
        out_shape, out_strides, b_shape, b_strides
    ):
        for i in prange(size):
            out[i] = binary(op, a[i], b[i])
        return
    for i in prange(size):
        out_index = np.empty(len(out_shape), np.int64)
        a_index = np.empty(len(a_shape), np.int64)
        b_index = np.empty(len(b_shape), np.int64)
        to_index(i + 0, out_shape, out_index)  # a copy: inlined, it must not reassign i
        broadcast_index(out_index, out_shape, a_shape, a_index)
        broadcast_index(out_index, out_shape, b_shape, b_index)
        x, y = a[index_to_position(a_index, a_strides)], b[index_to_position(b_index, b_strides)]
        out[index_to_position(out_index, out_strides)] = binary(op, x, y)


@njit(parallel=True, cache=True)
def _reduce(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, dim: int,
) -> None:  # fmt: skip
    """out[i] = fold of binary(op) over the cells of a along `dim`, starting from out[i].

    Loop::

        for i in prange(size of out):
            index = to_index(i)                   # index[dim] == 0: out has size 1 there
            o, p = position of index in out, in a
            acc = out[o]
            for k in range(a_shape[dim]): acc = binary(op, acc, a[p + k * a_strides[dim]])
            out[o] = acc

    Invariants: main loop parallel; index buffer thread-local (allocated in the
    parallel body); no allocation in the inner loop; each out cell written once.
    Use the given `_cells`; pass `i + 0` to the inlined `to_index`.
    """
    n, step = a_shape[dim], a_strides[dim]
    for i in prange(_cells(out_shape)):
        index = np.empty(len(out_shape), np.int64)
        to_index(i + 0, out_shape, index)  # a copy: inlined, it must not reassign i
        o = index_to_position(index, out_strides)
        p = index_to_position(index, a_strides)
        acc = out[o]
        for k in range(n):
            acc = binary(op, acc, a[p + k * step])
        out[o] = acc


# END TASK 3.1

# BEGIN TASK 3.2


@njit(parallel=True, cache=True)
def _matmul(
    out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
) -> None:  # fmt: skip
    """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; a batch of 1 broadcasts.

    Write it in this one function, reading cells through the strides (operands may be
    transposed, sliced or broadcast; out may be a strided view). Loop::

        for (n, i) in prange(batches * rows):          # one row of out per task
            for j0 in range(0, cols, TILE_J):           # the row, TILE_J cells at a time
                acc[:] = 0                              # thread-local
                for k in range(depth):                  # i-k-j order: b read along a row
                    for j in range(j0, j0 + TILE_J): acc[j - j0] += a[n, i, k] * b[n, k, j]
                out[n, i, j0 : j0 + TILE_J] = acc

    Invariants: main loop parallel; acc thread-local (allocated in the parallel body);
    no allocation in the inner loop; each out cell written once. Index b in the inner
    loop with an unsigned position, `b[np.uint64(...)]`: Numba accepts negative indices
    (x[-1]) and checks every signed one, and that check stops LLVM vectorising the loop.
    """
    batches, rows, cols, depth = out_shape[0], out_shape[1], out_shape[2], a_shape[2]
    a_n = a_strides[0] if a_shape[0] > 1 else 0  # a batch of size 1 serves every n
    b_n = b_strides[0] if b_shape[0] > 1 else 0
    a_row, a_col, b_row, b_col = a_strides[1], a_strides[2], b_strides[1], b_strides[2]
    for task in prange(batches * rows):
        n, i = task // rows, task % rows
        acc = np.empty(TILE_J, out.dtype)
        for j0 in range(0, cols, TILE_J):
            w = min(TILE_J, cols - j0)
            acc[:w] = 0
            for k in range(depth):
                x = a[n * a_n + i * a_row + k * a_col]
                p = n * b_n + k * b_row + j0 * b_col  # where b[n, k, j0] is
                for j in range(w):
                    acc[j] += x * b[np.uint64(p + j * b_col)]
            o = n * out_strides[0] + i * out_strides[1] + j0 * out_strides[2]
            for j in range(w):
                out[o + j * out_strides[2]] = acc[j]


# END TASK 3.2


def _find_fast_paths() -> types.ModuleType | None:
    """`minifw.fast_paths`, or None in a repository without it (a student's).

    Only the folder beside this file counts: an import alone could find another
    checkout's copy (an editable install of the staff repository in the same venv).
    """
    if not (Path(__file__).resolve().parent / "fast_paths" / "__init__.py").is_file():
        return None
    try:
        return importlib.import_module("minifw.fast_paths")
    except ModuleNotFoundError as missing:
        if missing.name != "minifw.fast_paths":
            raise  # the folder is there but something it imports is not: a real error
        return None


# The one place that looks for the expert kernels. Setting it to None (as benchmarks do)
# makes every caller run what a student's repository runs.
fast_paths = _find_fast_paths()

# Names of fast paths turned off for a while: tests compare one with what it stands in for.
switched_off: set[str] = set()


def fast_path(name: str) -> types.ModuleType | None:
    """The expert kernel module `minifw.fast_paths.<name>`, or None to run the course's ops.

    The one door through which nn, optim and the compiler reach the fast paths
    (`fused_update`, `fused_loss`, `fused_fold`, `fused_pool`, `simd_math`). None where
    minifw/fast_paths/ is absent (a student's repository), where `fast_paths` was set to
    None, or while `name` is in `switched_off`. Callers ask at each call, so a switch
    takes effect at once.
    """
    if fast_paths is None or name in switched_off:
        return None
    return _fast_path_module(name)


@functools.cache
def _fast_path_module(name: str) -> types.ModuleType:
    """`minifw.fast_paths.<name>`, imported on its first use."""
    return importlib.import_module(f"minifw.fast_paths.{name}")


# Each kernel again without threads (same code; `prange` runs as `range`), for small
# inputs: below PARALLEL_FROM units of work, waking the thread pool costs more than the
# loop, and far more on a busy machine.
_map_serial, _zip_serial, _reduce_serial, _matmul_serial = (
    serial_twin(kernel) for kernel in (_map, _zip, _reduce, _matmul)
)


@functools.cache
def _knowing_only(op: int) -> dict[str, Any]:
    """`unary` and `binary` that know op code `op` only, calling the compiled scalar functions."""
    only = recompile_with(_fns, operators.dispatchers_for(op), operators.KERNEL_MODULES, inlined)
    return {"unary": only.unary, "binary": only.binary}


# The kernels the launchers run: `_MAP[parallel][op]` is `_map` (or its serial twin)
# compiled for op code `op` alone, on the op's first launch (see `_jit.PerOp`).
_MAP, _ZIP, _REDUCE = (
    {True: PerOp(kernel, _knowing_only), False: PerOp(serial, _knowing_only)}
    for kernel, serial in ((_map, _map_serial), (_zip, _zip_serial), (_reduce, _reduce_serial))
)


class ReadableFastOps(HostStorage):
    """The readable kernels of this file only (the ones students write), on the CPU.

    Each launch runs the parallel kernel, or its serial twin below `parallel_from`
    units of work (cells; for reduce cells folded in; for matmul multiply-adds / 2).
    `FastOps` runs these where `minifw/fast_paths/` is absent; this class runs them
    anywhere, to test or time them: the "readable" backend of `minifw.backends`.
    """

    device = "cpu"
    parallel_from = PARALLEL_FROM
    follow_load = True

    @classmethod
    def parallel(cls, work: int) -> bool:
        """True to launch the parallel kernel for `work` units of work, else its serial twin.

        Parallel from `parallel_from` units on, while other processes leave this one more
        than a core (`minifw/_threads.py`: on a busy machine the pool's threads wait for
        time slices, and a serial loop is faster).
        """
        return work >= cls.parallel_from and (not cls.follow_load or parallel_threads() > 1)

    @classmethod
    def map(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = unary(op, a[i]) for every cell i of out; `a` broadcasts to out."""
        _MAP[cls.parallel(out.size)][op](op, out, out_shape, out_strides, a, a_shape, a_strides)

    @classmethod
    def zip(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = binary(op, a[i], b[i]); `a` and `b` broadcast to out."""
        _ZIP[cls.parallel(out.size)][op](
            op, out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides
        )

    @classmethod
    def reduce(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index, dim: int,
    ) -> None:  # fmt: skip
        """out[i] = fold of binary(op) along `dim` of a, starting from out's current value."""
        work = out.size * int(a_shape[dim])
        _REDUCE[cls.parallel(work)][op](
            op, out, out_shape, out_strides, a, a_shape, a_strides, dim
        )

    @classmethod
    def matmul(
        cls, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; batch dims broadcast."""
        work = out.size * int(a_shape[2]) // 2
        kernel = _matmul if cls.parallel(work) else _matmul_serial
        kernel(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)


def as_numbers(storage: Storage) -> Storage:
    """Bool storage viewed as uint8 0/1 cells (the same memory); other storage as it is.

    Kernels see bool tensors through this view: the scalar functions compile for
    numbers, and Numba does not type some of them (`float(x)`) for bools. So the ops
    that write bool tensors must give 0 or 1 (comparisons, MUL, MAX, NE, EQ, SELECT,
    ID): the Tensor layer picks them (`tensor/logic.py`).
    """
    return storage.view(np.uint8) if storage.dtype.kind == "b" else storage


class FastOps(ReadableFastOps):
    """Parallel CPU kernels compiled by Numba; storage is a numpy array, as in SimpleOps.

    With `minifw/fast_paths/` present each kernel is the fast path's, run serially
    below `parallel_from` units of work (waking the thread pool would cost more);
    without it, the readable kernels of `ReadableFastOps` (serial below it too).
    """

    @classmethod
    def map(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = unary(op, a[i]) for every cell i of out; `a` broadcasts to out."""
        out, a = as_numbers(out), as_numbers(a)
        if fast_paths is None:
            super().map(op, out, out_shape, out_strides, a, a_shape, a_strides)
        else:
            parallel = cls.parallel(out.size)
            fast_paths.run_map(op, out, out_shape, out_strides, a, a_shape, a_strides, parallel)

    @classmethod
    def zip(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = binary(op, a[i], b[i]); `a` and `b` broadcast to out."""
        out, a, b = as_numbers(out), as_numbers(a), as_numbers(b)
        args = (op, out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)
        if fast_paths is None:
            super().zip(*args)
        else:
            fast_paths.run_zip(*args, cls.parallel(out.size))

    @classmethod
    def reduce(
        cls, op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index, dim: int,
    ) -> None:  # fmt: skip
        """out[i] = fold of binary(op) along `dim` of a, starting from out's current value."""
        args = (op, out, out_shape, out_strides, a, a_shape, a_strides, dim)
        if fast_paths is None:
            super().reduce(*args)
        else:
            fast_paths.run_reduce(*args, cls.parallel(out.size * int(a_shape[dim])))

    @classmethod
    def matmul(
        cls, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; batch dims broadcast."""
        args = (out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)
        if fast_paths is None:
            super().matmul(*args)
        else:
            work = fast_paths.matmul_work(out.size, int(a_shape[2]))
            fast_paths.run_matmul(*args, cls.parallel(work))


__all__ = [
    "PARALLEL_FROM", "FastOps", "ReadableFastOps", "as_numbers", "fast_path", "switched_off",
]  # fmt: skip
