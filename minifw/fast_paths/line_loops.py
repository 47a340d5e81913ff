"""FastOps' map, zip and reduce as generated SIMD line loops (an expert fast path).

`FastOps` calls `run_map`, `run_zip` and `run_reduce` here when `minifw/fast_paths/`
is present; the readable kernels of `fast_ops.py` compute the same cells. The work
is cut into lines (a row of the last dim, or a dense run of cells): index math runs
once per line, and each line runs in a loop that `line_source` generates with the op
code written in as a constant, so LLVM inlines the scalar function and runs the
loop in SIMD lanes (`python -m minifw.fast_paths` prints every line loop). Each
kernel is compiled per op code on that op's first launch (`_jit.PerOp`), and has a
serial twin (same code, `parallel` off) for small inputs, where waking the thread
pool would cost more than the work; the caller picks one with `parallel`.
The index helpers are called, not inlined by Numba (LLVM inlines them): Numba's own
inlining re-types each helper in every kernel, and cost more compile time than it saved.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import prange

from minifw._jit import (
    KERNELS_ONLY,
    PerOp,
    called,
    compile_functions,
    inlined,
    njit,
    recompile_with,
    respecialise,
    serial_twin,
)
from minifw.core import operators, tensor_data
from minifw.core.operators import ADD, MAX
from minifw.core.tensor_data import Index
from minifw.fast_paths import simd_math as _simd_math
from minifw.tensor_ops import Storage

# The scalar functions and index helpers, called (LLVM inlines them where it pays), and
# cached on disk: a process then loads those another one compiled (`ahead.py`).
# `exp` is the same e^x written to run in SIMD lanes (see simd_math).
_called = compile_functions(
    [*operators.KERNEL_MODULES, tensor_data],
    operators.KERNEL_FUNCTIONS + tensor_data.KERNEL_FUNCTIONS,
    called,
    replacements={"exp": _simd_math.exp},
    suffix="__line_loops",
)
to_index = _called.to_index
index_to_position = _called.index_to_position
# The same scalar functions inlined by Numba, for the reductions: so that they compile
# under the reductions' fastmath flags, which let sums run in SIMD lanes.
_inlined_ops = compile_functions(
    operators.KERNEL_MODULES,
    operators.KERNEL_FUNCTIONS,
    inlined,
    replacements={"exp": _simd_math.exp},
)
binary = _inlined_ops.binary

# Work split. A map/zip task covers about CHUNK cells (whole rows of the last dim);
# a reduction over a dim other than the last handles REDUCE_BLOCK output columns per task.
CHUNK = 16384
REDUCE_BLOCK = 128
# `reassoc` lets reductions run in SIMD lanes and `contract` fuses multiply-adds: both
# only change the rounding of sums. No nnan/ninf.
SUM_MATH = {"reassoc", "contract"}
# Steps and positions of a line passed as int64 values, never as literals: Numba compiles
# a function again for each literal argument, and all calls of a line loop share one.
ONE, ZERO = np.int64(1), np.int64(0)


@njit(cache=True, **KERNELS_ONLY)
def _is_row_major(shape: Any, strides: Any) -> bool:
    """True when `strides` are the row-major strides of `shape` (size-1 dims ignored)."""
    expected = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] != 1 and strides[d] != expected:
            return False
        expected *= shape[d]
    return True


@njit(cache=True, **KERNELS_ONLY)
def _same_dense(out_shape: Any, out_strides: Any, shape: Any, strides: Any) -> bool:
    """True when an operand has out's shape and both are row-major (no index math needed)."""
    if len(shape) != len(out_shape):
        return False
    for d in range(len(shape)):
        if shape[d] != out_shape[d]:
            return False
    return _is_row_major(out_shape, out_strides) and _is_row_major(shape, strides)


@njit(cache=True, **KERNELS_ONLY)
def _numel(shape: Any) -> int:
    """The number of cells of `shape`."""
    n = 1
    for d in range(len(shape)):
        n *= shape[d]
    return n


@njit(cache=True, **KERNELS_ONLY)
def _steps_along(out_shape: Any, shape: Any, strides: Any) -> Any:
    """An operand's step in storage along each dim of out (0 where it broadcasts)."""
    extra = len(out_shape) - len(shape)
    steps = np.zeros(len(out_shape), np.int64)
    for d in range(extra, len(out_shape)):
        if shape[d - extra] > 1:
            steps[d] = strides[d - extra]
    return steps


@njit(cache=True, **KERNELS_ONLY)
def _line_step(steps: Any) -> int:
    """The step along the last dim, where a line runs (0 for a 0-dim tensor)."""
    return int(steps[len(steps) - 1]) if len(steps) else 0


@njit(cache=True, **KERNELS_ONLY)
def _row_jumps(shape: Any, steps: Any, dims: int) -> Any:
    """jumps[d]: how far a position moves when `_next_row` raises dim d by one.

    That also sets dims d+1 .. dims-1 back to 0: jumps[d] = steps[d] minus
    (shape[e] - 1) * steps[e] for each of them.
    """
    jumps = np.zeros(max(dims, 1), np.int64)
    back = 0
    for d in range(dims - 1, -1, -1):
        jumps[d] = steps[d] - back
        back += (shape[d] - 1) * steps[d]
    return jumps


@njit(cache=True, **KERNELS_ONLY)
def _next_row(index: Any, shape: Any, dims: int) -> int:
    """Step `index` to the next row, an odometer over its first `dims` dims.

    Returns the dim that went up by one (the dims after it went back to 0). The caller
    calls it only when there is a next row, so some dim below `dims` can go up.
    """
    d = dims - 1
    while index[d] == shape[d] - 1:
        index[d] = 0
        d -= 1
    index[d] += 1
    return d


@njit(cache=True, **KERNELS_ONLY)
def _row_tasks(rows: int, last: int) -> tuple[int, int, int, int]:
    """(tasks, rows per task, pieces per row, piece width) for about CHUNK cells a task.

    Short rows are grouped, whole, into a task; a row longer than CHUNK (a 1-D tensor
    times a scalar) is cut into pieces, so that it too runs on every thread.
    """
    pieces = max(1, (last + CHUNK - 1) // CHUNK)
    per_task = max(1, CHUNK // max(last, 1))
    return (rows + per_task - 1) // per_task * pieces, per_task, pieces, -(-last // pieces)


def line_source(name: str, op: int | None, arity: int) -> str:
    """The source of a line loop `name`: `rows` lines of op code `op` (of `arity` inputs).

    Its arguments: (op, out, o, o_step, a, p, a_step, b, q, b_step, n, rows, index, shape,
    o_jumps, a_jumps, b_jumps). Each line sets out[o + j * o_step] = f(x) (or f(x, y))
    with x = a[p + j * a_step], y = b[q + j * b_step] for j < n: a row of the last dim,
    or a dense run with steps 1.
    From one line to the next, `index` (the line's index into `shape`) steps like an
    odometer, and o, p, q move by the jumps of the dim that went up (`_row_jumps`): one
    call runs a task's lines (a call per line cost ~40 ns, more than a short row).
    f is the scalar function of op code `op`, called by name: the compiler sees which
    function the loop applies, inlines it and (when the steps are 1 at run time) runs
    the loop in SIMD lanes, which a loop testing `op` cell by cell cannot do. (`op`
    None: the loop dispatches on the `op` it is given, for any op.)
    Positions are never negative: unsigned indices spare Numba's wraparound check.
    The ops of IN_PLACE also get a loop for an `a` that is out's own line (`x += y`)
    reading x from out: two arrays over the same cells fail the compiler's run-time
    overlap test, which would keep the loop out of SIMD lanes.
    """
    args = "{x}" if arity == 1 else "{x}, {y}"
    if op is None:
        call = ("unary" if arity == 1 else "binary") + "(op, " + args + ")"
    else:
        call = operators.OP_TABLE[op].name + "(" + args + ")"
    x, y = "a[np.uint64(p + j * a_step)]", "b[np.uint64(q + j * b_step)]"
    own_x = "out[np.uint64(o + j * o_step)]"
    store = "for j in range(n): out[np.uint64(o + j * o_step)] = "
    in_place = op in IN_PLACE
    own_line = "shared and p == o and a_step == o_step"
    lines = [
        f"def {name}(op, out, o, o_step, a, p, a_step, b, q, b_step, n, rows, index, shape,",
        "        o_jumps, a_jumps, b_jumps):",
    ]
    if in_place:
        lines.append("    shared = a.ctypes.data == out.ctypes.data")
    lines.append("    for row in range(rows):")
    if arity == 2:  # b broadcast along the line (x * 2, x - row_max): y read once
        lines += ["        if b_step == 0:", "            y = b[q]"]
        if in_place:
            lines += [
                f"            if {own_line}:",
                f"                {store}{call.format(x=own_x, y='y')}",
            ]
            lines += ["            else:", f"                {store}{call.format(x=x, y='y')}"]
        else:
            lines += [f"            {store}{call.format(x=x, y='y')}"]
        if in_place:
            lines += [
                f"        elif {own_line}:",
                f"            {store}{call.format(x=own_x, y=y)}",
            ]
        lines += ["        else:", f"            {store}{call.format(x=x, y=y)}"]
    else:
        lines.append(f"        {store}{call.format(x=x, y=y)}")
    return "\n".join(lines + _NEXT_LINE[arity])


# The end of a line loop's row: step the index to the next line, move the positions.
_NEXT_LINE = {
    arity: [
        "        if row + 1 < rows:",
        "            d = _next_row(index, shape, len(shape) - 1)",
        "            " + moves,
    ]
    for arity, moves in (
        (1, "o, p = o + o_jumps[d], p + a_jumps[d]"),
        (2, "o, p, q = o + o_jumps[d], p + a_jumps[d], q + b_jumps[d]"),
    )
}


@functools.cache  # one per op, shared by the op's parallel and serial kernels
def _line_loop(name: str, op: int | None, arity: int) -> Any:
    """`line_source(name, op, arity)` compiled, calling the compiled scalar functions."""
    source = line_source(name, op, arity)
    namespace = {**vars(_called), "np": np, "_next_row": _next_row}
    exec(compile(source, f"<minifw.fast_paths.line_loops.{name}>", "exec"), namespace)
    return called(namespace[name])


@functools.cache
def _inlined_knowing_only(op: int) -> Any:
    """`unary` and `binary` that know op code `op` only, to be inlined by Numba."""
    return recompile_with(
        _inlined_ops, operators.dispatchers_for(op), operators.KERNEL_MODULES, inlined
    )


# x += y, x -= y, x *= y, x /= y: the ops that get a loop for a line updated in place
IN_PLACE = (operators.ADD, operators.SUB, operators.MUL, operators.DIV)

# The line loops for any op (the op read at run time), as `_map` and `_zip` below are
# written; each op's copy of them (`_MAP[parallel][op]`, ...) calls that op's own loop.
_map_lines = _line_loop("map_lines", None, 1)
_zip_lines = _line_loop("zip_lines", None, 2)


@njit(parallel=True, cache=True)
def _map(
    op: int, out: Any, out_shape: Any, out_strides: Any, a: Any, a_shape: Any, a_strides: Any
) -> None:
    """out[i] = unary(op, a[broadcast(i)]) for every cell i of out.

    Loop::

        if out and a are row-major with the same shape:
            for chunk in prange(size / CHUNK):       # one loop per op (`_op_by_op`)
                for i in chunk: out[i] = unary(op, a[i])
        else:
            for task in prange(tasks):     # whole rows of the last dim, or a piece of one
                index, o, p = first row (or piece) of the task, its start in out, in a
                for row in task:
                    for j in range(width): out[o + j*o_step] = unary(op, a[p + j*a_step])
                    index, o, p = next row: an odometer, positions moved by jumps

    Each task finds its first row's position from its index once; from row to row,
    positions move by a precomputed jump per dim (`_row_jumps`), so rows of a few cells
    (a pooling window, an unfolded image) cost no divisions. Invariants: main loop
    parallel; index buffer thread-local (allocated per task); no allocation or call in
    the inner loop; each out cell written once.
    """
    size = _numel(out_shape)
    if _same_dense(out_shape, out_strides, a_shape, a_strides):
        for task in prange((size + CHUNK - 1) // CHUNK):
            start = task * CHUNK
            n = min(CHUNK, size - start)
            # One line: the odometer's arrays (any int64 arrays) are not read.
            unread = out_shape
            _map_lines(op, out, start, ONE, a, start, ONE, a, ZERO, ZERO, n, ONE,
                       unread, unread, unread, unread, unread)  # fmt: skip
        return
    nd = len(out_shape)
    last = out_shape[nd - 1] if nd else 1
    o_steps = _steps_along(out_shape, out_shape, out_strides)
    a_steps = _steps_along(out_shape, a_shape, a_strides)
    o_step, a_step = _line_step(o_steps), _line_step(a_steps)
    o_jumps = _row_jumps(out_shape, o_steps, nd - 1)
    a_jumps = _row_jumps(out_shape, a_steps, nd - 1)
    rows = size // last
    tasks, per_task, pieces, width = _row_tasks(rows, last)
    for task in prange(tasks):
        index = np.empty(nd, np.int64)
        group, j = task // pieces, (task % pieces) * width
        first, end, n = group * per_task, min(rows, (group + 1) * per_task), min(width, last - j)
        to_index(first * last + j, out_shape, index)
        o, p = index_to_position(index, o_steps), index_to_position(index, a_steps)
        _map_lines(op, out, o, o_step, a, p, a_step, a, ZERO, ZERO, n, end - first,
                   index, out_shape, o_jumps, a_jumps, a_jumps)  # fmt: skip


@njit(parallel=True, cache=True)
def _zip(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
) -> None:  # fmt: skip
    """out[i] = binary(op, a[broadcast(i)], b[broadcast(i)]) for every cell i of out.

    Loop::

        if out, a and b are row-major with the same shape:
            for chunk in prange(size / CHUNK):       # one loop per op (`_op_by_op`)
                for i in chunk: out[i] = binary(op, a[i], b[i])
        else:
            for task in prange(tasks):     # whole rows of the last dim, or a piece of one
                index, o, p, q = first row (or piece) of the task, its start in out, a, b
                for row in task:
                    for j in range(width):
                        out[o + j*o_step] = binary(op, a[p + j*a_step], b[q + j*b_step])
                    index, o, p, q = next row: an odometer, positions moved by jumps

    A broadcast operand has step 0 along each dim it broadcasts, so `x + row_vector`
    runs without index math per cell. Rows are stepped as in `_map`. Invariants: main
    loop parallel; index buffer thread-local; no allocation or call in the inner loop;
    each out cell written once.
    """
    size = _numel(out_shape)
    if _same_dense(out_shape, out_strides, a_shape, a_strides) and _same_dense(
        out_shape, out_strides, b_shape, b_strides
    ):
        for task in prange((size + CHUNK - 1) // CHUNK):
            start = task * CHUNK
            n = min(CHUNK, size - start)
            # One line: the odometer's arrays (any int64 arrays) are not read.
            unread = out_shape
            _zip_lines(op, out, start, ONE, a, start, ONE, b, start, ONE, n, ONE,
                       unread, unread, unread, unread, unread)  # fmt: skip
        return
    nd = len(out_shape)
    last = out_shape[nd - 1] if nd else 1
    o_steps = _steps_along(out_shape, out_shape, out_strides)
    a_steps = _steps_along(out_shape, a_shape, a_strides)
    b_steps = _steps_along(out_shape, b_shape, b_strides)
    o_step, a_step, b_step = _line_step(o_steps), _line_step(a_steps), _line_step(b_steps)
    o_jumps = _row_jumps(out_shape, o_steps, nd - 1)
    a_jumps = _row_jumps(out_shape, a_steps, nd - 1)
    b_jumps = _row_jumps(out_shape, b_steps, nd - 1)
    rows = size // last
    tasks, per_task, pieces, width = _row_tasks(rows, last)
    for task in prange(tasks):
        index = np.empty(nd, np.int64)
        group, j = task // pieces, (task % pieces) * width
        first, end, n = group * per_task, min(rows, (group + 1) * per_task), min(width, last - j)
        to_index(first * last + j, out_shape, index)
        o, p = index_to_position(index, o_steps), index_to_position(index, a_steps)
        q = index_to_position(index, b_steps)
        _zip_lines(op, out, o, o_step, a, p, a_step, b, q, b_step, n, end - first,
                   index, out_shape, o_jumps, a_jumps, b_jumps)  # fmt: skip


@njit(inline="always", fastmath=SUM_MATH)
def _fold(op: int, acc: Any, a: Any, p: int, step: int, n: int) -> Any:
    """Return `acc` folded with binary(op) over a[p + k * step] for k < n.

    Sum and max get a loop of their own (`_fold_sum`, `_fold_max`), where the op is a
    constant; each op's copy of a reduction calls the fold of its op (`_FOLDS`), and
    this one for the other ops. (It must not call those two: each would inline the
    dispatch over every op, which took minutes to compile for int64.) Positions are
    never negative; an unsigned index spares Numba's wraparound check, which would
    block vectorising.
    """
    for k in range(n):
        acc = binary(op, acc, a[np.uint64(p + k * step)])
    return acc


@njit(inline="always", fastmath=SUM_MATH)
def _fold_sum(op: int, acc: Any, a: Any, p: int, step: int, n: int) -> Any:
    """`_fold` for ADD: the compiler drops the dispatch and vectorises it (`reassoc`)."""
    for k in range(n):
        acc = binary(ADD, acc, a[np.uint64(p + k * step)])
    return acc


@njit(inline="always", fastmath=SUM_MATH)
def _fold_max(op: int, acc: Any, a: Any, p: int, step: int, n: int) -> Any:
    """`_fold` for MAX: four independent chains, which overlap in the pipeline.

    (Max propagates nan, so LLVM does not vectorise it.)
    """
    acc1, acc2, acc3, k = acc, acc, acc, 0
    while k + 4 <= n:
        acc = binary(MAX, acc, a[np.uint64(p + k * step)])
        acc1 = binary(MAX, acc1, a[np.uint64(p + (k + 1) * step)])
        acc2 = binary(MAX, acc2, a[np.uint64(p + (k + 2) * step)])
        acc3 = binary(MAX, acc3, a[np.uint64(p + (k + 3) * step)])
        k += 4
    for j in range(k, n):
        acc = binary(MAX, acc, a[np.uint64(p + j * step)])
    return binary(MAX, binary(MAX, acc, acc1), binary(MAX, acc2, acc3))


@njit(inline="always")
def _fold_block(op: int, acc: Any, a: Any, q: int, step: int, w: int) -> None:
    """acc[c] = binary(op, acc[c], a[q + c * step]) for c < w (sum and max: `_FOLDS`)."""
    for c in range(w):
        acc[c] = binary(op, acc[c], a[np.uint64(q + c * step)])


@njit(inline="always")
def _fold_block_sum(op: int, acc: Any, a: Any, q: int, step: int, w: int) -> None:
    """`_fold_block` for ADD (a loop the compiler vectorises)."""
    for c in range(w):
        acc[c] = binary(ADD, acc[c], a[np.uint64(q + c * step)])


@njit(inline="always")
def _fold_block_max(op: int, acc: Any, a: Any, q: int, step: int, w: int) -> None:
    """`_fold_block` for MAX."""
    for c in range(w):
        acc[c] = binary(MAX, acc[c], a[np.uint64(q + c * step)])


# The folds each op's copy of the reductions calls: the op's own, or the one for any op.
_FOLDS = {ADD: (_fold_sum, _fold_block_sum), MAX: (_fold_max, _fold_block_max)}


@njit(parallel=True, cache=True, fastmath=SUM_MATH)
def _reduce_along(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, dim: int,
) -> None:  # fmt: skip
    """Fold each out cell's line of `a` along `dim` (used when `dim` is the last dim).

    Loop::

        for task in prange(tasks):                 # a run of CHUNK // n out cells
            index, o, p = the task's first cell, its position in out, in a (index[dim] = 0)
            for cell in task:
                out[o] = fold(binary(op), a[p + k * step] for k < n, start=out[o])
                index, o, p = next cell: an odometer over out's dims, as in `_map`

    Invariants: main loop parallel; index buffer thread-local; no allocation or
    call in the inner loop; each out cell written once.
    """
    nd, cells = len(out_shape), _numel(out_shape)
    n, step = a_shape[dim], a_strides[dim]
    o_jumps, a_jumps = _row_jumps(out_shape, out_strides, nd), _row_jumps(out_shape, a_strides, nd)
    per_task = max(1, CHUNK // max(n, 1))
    for task in prange((cells + per_task - 1) // per_task):
        index = np.empty(nd, np.int64)
        first, end = task * per_task, min(cells, (task + 1) * per_task)
        to_index(first, out_shape, index)
        o, p = index_to_position(index, out_strides), index_to_position(index, a_strides)
        for cell in range(first, end):
            out[o] = _fold(op, out[o], a, p, step, n)
            if cell + 1 < end:
                d = _next_row(index, out_shape, nd)
                o, p = o + o_jumps[d], p + a_jumps[d]


@njit(parallel=True, cache=True)
def _reduce_across(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, dim: int,
) -> None:  # fmt: skip
    """Fold `a` along `dim` (not the last dim) a block of last-dim columns at a time.

    Loop::

        for task in prange(groups * blocks):   # rows: out cells with last index 0
            for row in the task's group:            # one row, or several short ones
                acc[:w] = out[row, block]           # thread-local buffer
                for k in range(n):                  # walk dim; the inner loop is contiguous
                    for c in range(w): acc[c] = binary(op, acc[c], a[row, k, block[c]])
                out[row, block] = acc[:w]
                next row: an odometer, as in `_map`

    A task folds about CHUNK cells of `a`: rows of a few columns (the pooling windows
    of a small image) are grouped, so that a task is not mostly its own set-up.
    Invariants: main loop parallel; index and acc buffers thread-local; no allocation
    or call in the inner loop; each out cell written once.
    """
    nd = len(out_shape)
    last = out_shape[nd - 1]
    rows, blocks = _numel(out_shape) // last, (last + REDUCE_BLOCK - 1) // REDUCE_BLOCK
    n, step = a_shape[dim], a_strides[dim]
    o_step, a_step = out_strides[nd - 1], a_strides[nd - 1]
    per_task = max(1, CHUNK // max(1, n * last)) if blocks == 1 else 1
    groups = (rows + per_task - 1) // per_task
    o_jumps = _row_jumps(out_shape, out_strides, nd - 1)
    a_jumps = _row_jumps(out_shape, a_strides, nd - 1)
    for task in prange(groups * blocks):
        index = np.empty(nd, np.int64)
        acc = np.empty(REDUCE_BLOCK, out.dtype)
        group, c0 = task // blocks, (task % blocks) * REDUCE_BLOCK
        w = min(REDUCE_BLOCK, last - c0)
        first, end = group * per_task, min(rows, (group + 1) * per_task)
        to_index(first * last + c0, out_shape, index)
        o, p = index_to_position(index, out_strides), index_to_position(index, a_strides)
        for row in range(first, end):
            for c in range(w):
                acc[c] = out[o + c * o_step]
            for k in range(n):
                _fold_block(op, acc, a, p + k * step, a_step, w)
            for c in range(w):
                out[o + c * o_step] = acc[c]
            if row + 1 < end:
                d = _next_row(index, out_shape, nd - 1)
                o, p = o + o_jumps[d], p + a_jumps[d]


_map_serial, _zip_serial = serial_twin(_map), serial_twin(_zip)
_reduce_along_serial, _reduce_across_serial = (
    serial_twin(_reduce_along),
    serial_twin(_reduce_across),
)


def _op_name(op: int) -> str:
    """The op table's name of `op` (`exp`), for the names of its line loops."""
    return operators.UNARY_NAMES.get(op) or operators.BINARY_NAMES[op]


def _map_helpers(op: int) -> dict[str, Any]:
    """What `_map`'s copy for op `op` calls: that op's own line loop."""
    return {"_map_lines": _line_loop(f"map_lines_{_op_name(op)}", op, 1)}


def _zip_helpers(op: int) -> dict[str, Any]:
    """What `_zip`'s copy for op `op` calls: that op's own line loop."""
    return {"_zip_lines": _line_loop(f"zip_lines_{_op_name(op)}", op, 2)}


def _reduce_helpers(op: int) -> dict[str, Any]:
    """What the reductions' copies for op `op` call: the folds of `op` alone.

    Those of `_FOLDS` for sum and max, else the folds for any op; their `binary` knows
    `op` only.
    """
    only = {"binary": _inlined_knowing_only(op).binary}
    fold, fold_block = _FOLDS.get(op, (_fold, _fold_block))
    return {name: respecialise(fn, f"__op{op}", only) for name, fn in
            (("_fold", fold), ("_fold_block", fold_block))}  # fmt: skip


# The kernels `run_*` launch: `_MAP[parallel][op]` is `_map` (or its serial twin) with the
# line loop of op code `op`, compiled on that op's first launch (see `_jit.PerOp`).
_MAP = {True: PerOp(_map, _map_helpers), False: PerOp(_map_serial, _map_helpers)}
_ZIP = {True: PerOp(_zip, _zip_helpers), False: PerOp(_zip_serial, _zip_helpers)}
_REDUCE_ALONG = {
    True: PerOp(_reduce_along, _reduce_helpers),
    False: PerOp(_reduce_along_serial, _reduce_helpers),
}
_REDUCE_ACROSS = {
    True: PerOp(_reduce_across, _reduce_helpers),
    False: PerOp(_reduce_across_serial, _reduce_helpers),
}


def run_map(
    op: int, out: Storage, out_shape: Index, out_strides: Index,
    a: Storage, a_shape: Index, a_strides: Index, parallel: bool,
) -> None:  # fmt: skip
    """out[i] = unary(op, a[i]) for every cell i of out; `a` broadcasts to out."""
    _MAP[parallel][op](op, out, out_shape, out_strides, a, a_shape, a_strides)


def run_zip(
    op: int, out: Storage, out_shape: Index, out_strides: Index,
    a: Storage, a_shape: Index, a_strides: Index,
    b: Storage, b_shape: Index, b_strides: Index, parallel: bool,
) -> None:  # fmt: skip
    """out[i] = binary(op, a[i], b[i]); `a` and `b` broadcast to out."""
    kernel = _ZIP[parallel][op]
    kernel(op, out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)


def run_reduce(
    op: int, out: Storage, out_shape: Index, out_strides: Index,
    a: Storage, a_shape: Index, a_strides: Index, dim: int, parallel: bool,
) -> None:  # fmt: skip
    """out[i] = fold of binary(op) along `dim` of a, starting from out's current value.

    The last dim is walked line by line (`_reduce_along`); another dim a block of
    contiguous columns at a time (`_reduce_across`), streaming through memory.
    """
    last = len(a_shape) - 1
    kernels = _REDUCE_ALONG if dim == last or a_shape[last] == 1 else _REDUCE_ACROSS
    kernels[parallel][op](op, out, out_shape, out_strides, a, a_shape, a_strides, dim)


def line_sources() -> dict[str, str]:
    """Name -> source of the line loop of every op code, as the kernels compile them."""
    sources = {}
    for op, name in operators.UNARY_NAMES.items():
        sources[f"map_lines_{name}"] = line_source(f"map_lines_{name}", op, 1)
    for op, name in operators.BINARY_NAMES.items():
        sources[f"zip_lines_{name}"] = line_source(f"zip_lines_{name}", op, 2)
    return sources


__all__ = ["CHUNK", "REDUCE_BLOCK", "line_sources", "run_map", "run_reduce", "run_zip"]
