"""The packed matmul FastOps calls when this folder is present (an expert fast path).

`FastOps.matmul` calls `matmul` here; the readable `_matmul` of `fast_ops.py` computes
the same cells. This is how a BLAS computes a product (the GotoBLAS scheme), with blocks
sized for the CPU's caches:

    for panel in prange(a's and then b's panels):   # two launches of parallel loops
        pack it, k block (KC) by k block              # k-major: later reads in order
    for (row block, column block) in prange(tasks):   # up to 16 panels of a, 16 of b
        for each k block:
            for each b panel of the column block:     # KC x NR: stays in L1 cache
                for each a panel of the row block:    # the block stays in L2
                    fetch a share of the next panels into L2   # memory is slow to start
                    out[block] (+)= micro_kernel(a panel, b panel)   # = for the first k

Packing copies each operand once per product, whatever its strides (a transposed `w.T`
costs no more than a row-major `w`), and pads the last panels with zeros, so the
micro-kernel (`micro_kernel.py`, written in LLVM vector code, MR x NR sums held in
vector registers) always computes full blocks; only blocks on a ragged edge go through
a small tile. The panels live in a workspace reused from product to product: fresh
pages would be faulted in on every call. An operand of up to IN_PLACE_BYTES stays in
the caches anyway: it is read where it lies, and the copy is saved (`in_place`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
from numba import prange
from numba.extending import register_jitable

from minifw._jit import njit
from minifw._threads import thread_count_functions
from minifw.core.tensor_data import Index
from minifw.fast_paths.line_loops import SUM_MATH
from minifw.fast_paths.micro_kernel import (
    PANEL,
    ROW_STEP,
    VECTOR_BYTES,
    lanes,
    micro_kernel,
    panel_rows,
    panel_width,
    prefetch,
    transpose_block,
    vectors_per_row,
)
from minifw.tensor_ops import Storage


def _l1_data_bytes() -> int:
    """The L1 data cache of one core, as Linux reports it (32 KiB where it does not)."""
    try:
        for cache in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
            level, kind = (cache / "level").read_text(), (cache / "type").read_text()
            if level.strip() == "1" and kind.strip() == "Data":
                size = (cache / "size").read_text().strip()
                return int(size.removesuffix("K")) * 1024 if size.endswith("K") else int(size)
    except (OSError, ValueError):
        pass
    return 32 * 1024


L1_BYTES = _l1_data_bytes()
BLOCK_PANELS = 16  # a task covers at most 16 panels of a (16 MR rows) and 16 of b
TASKS_PER_THREAD = 4  # fewer, smaller row blocks when a product has fewer tasks than this
MULTIPLY_ADDS_PER_UNIT = 32  # a product's work, counted as FastOps counts a map's cells
# A workspace up to this size (128 MiB of float64, a 2048 x 2048 product) is kept for
# reuse: faulting in fresh pages costs a tenth of such a product.
KEEP_CELLS = 1 << 24
LINE_BYTES = 64  # a cache line
K_ALIGN = 16  # k blocks start at multiples of this (a cache line of float32)
IN_PLACE_BYTES = 1 << 20  # operands up to this size (1 MiB) are read where they lie
DOT_DEPTH = 32  # `_dots` computes narrow serial products of at least this depth
TWO_ROW_STEPS = 2 * ROW_STEP  # a micro-kernel's rows must be a constant, not an expression
U = np.uint64  # an index type Numba does not check for negative values


@register_jitable
def k_depth(itemsize: int) -> int:
    """KC, the k of a block: a KC x NR panel of b fills half the L1 cache.

    The a panel and out's tile share the rest: with 48 KiB (AVX-512) 192 for float32,
    128 for float64 (NR of 24 cells); 256 with AVX2 and 32 KiB.
    """
    return max(64, L1_BYTES // 2 // (vectors_per_row(itemsize) * VECTOR_BYTES))


# The packing loops and a task's loop are compiled once each as functions of their own
# (plain @njit), not inlined into `_matmul`: Numba copies a function's IR into every
# place it inlines it, and the inlined kernel took 2-3 s longer to compile (8.4 -> 6.0 s
# for float64), for no measurable speed.


@njit
def _pack_a(panels: Any, at: int, a: Any, ao: int, a_row: int, a_k: int, rows: int,
            kc: int, mr: int) -> None:  # fmt: skip
    """panels[at + k*mr + r] = a[ao + r*a_row + k*a_k] for k < kc, r < mr; 0 past `rows`."""
    if rows >= mr:  # a whole panel: no test per cell
        for k in range(kc):
            column = ao + k * a_k
            for r in range(mr):
                panels[U(at + k * mr + r)] = a[U(column + r * a_row)]
        return
    for k in range(kc):  # a ragged panel: its rows, then zeros (no test per cell)
        column, to = ao + k * a_k, at + k * mr
        for r in range(rows):
            panels[U(to + r)] = a[U(column + r * a_row)]
        for r in range(rows, mr):
            panels[U(to + r)] = 0


@njit
def _pack_b(panels: Any, at: int, b: Any, bo: int, b_k: int, b_col: int, cols: int,
            kc: int, nr: int) -> None:  # fmt: skip
    """panels[at + k*nr + c] = b[bo + k*b_k + c*b_col] for k < kc, c < nr; 0 past `cols`."""
    if cols >= nr and b_col == 1:  # a whole panel of contiguous rows: a vectorised copy
        for k in range(kc):
            to, start = U(at + k * nr), U(bo + k * b_k)
            for c in range(U(nr)):
                panels[to + c] = b[start + c]
    elif cols >= nr:  # a whole panel of strided rows
        first = 0
        if b_k == 1:  # columns contiguous along k (w.T): square blocks transposed in registers
            width, size = lanes(b.itemsize), b.itemsize
            source, packed = np.intp(b.ctypes.data), np.intp(panels.ctypes.data)
            first = kc - kc % width
            for k in range(0, first, width):
                for c in range(0, nr, width):
                    from_at = source + (bo + k + c * b_col) * size
                    transpose_block(panels, from_at, b_col, packed + (at + k * nr + c) * size, nr)
        for k in range(first, kc):  # one cell at a time: every k, or those blocks left
            to, row = U(at + k * nr), bo + k * b_k
            for c in range(U(nr)):
                panels[to + c] = b[U(row + c * b_col)]
    else:  # a ragged panel: its columns, then zeros (no test per cell)
        for k in range(kc):
            row, dest = bo + k * b_k, at + k * nr
            for c in range(cols):
                panels[U(dest + c)] = b[U(row + c * b_col)]
            for c in range(cols, nr):
                panels[U(dest + c)] = 0


@njit(inline="always")
def _store(out: Any, o: int, o_row: int, o_col: int, tile: Any, nr: int, h: int, w: int,
           add: bool) -> None:  # fmt: skip
    """out[o + r*o_row + c*o_col] = tile[r*nr + c] (+= if `add`) for r < h, c < w."""
    for r in range(h):
        at = o + r * o_row
        for c in range(w):
            cell = U(at + c * o_col)
            out[cell] = out[cell] + tile[r * nr + c] if add else tile[r * nr + c]


@njit(inline="always")
def _k_block(block: int, blocks: int, depth: int) -> Any:
    """(first k, length) of k block number `block` of `blocks` nearly equal ones.

    Blocks start at multiples of K_ALIGN: a row of w.T packed by whole cache lines.
    """
    k0 = block * depth // blocks // K_ALIGN * K_ALIGN
    end = depth if block + 1 == blocks else (block + 1) * depth // blocks // K_ALIGN * K_ALIGN
    return k0, end - k0


@njit(inline="always")
def _split(block: int, blocks: int, panels: int, first: int) -> Any:
    """The panels of block `block` of `blocks` nearly equal ones, numbered from `first`."""
    return range(first + block * panels // blocks, first + (block + 1) * panels // blocks)


@njit(parallel=True, cache=True)
def _matmul(
    out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
    workspace: Any, row_blocks: int, col_blocks: int, in_place: Any,
) -> None:  # fmt: skip
    """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] for depth >= 1; a batch of 1 broadcasts.

    `workspace` receives every batch of a and of b packed (`workspace_cells`): k block
    by k block, a's panels of MR rows, then b's panels of NR columns; except an operand
    whose flag in `in_place` (a's, b's) is set: the micro-kernel reads that one where it
    lies (`_plan` sets it for small operands with whole panels). Each batch of out is
    split into row_blocks x col_blocks tasks of nearly equal size. Invariants: all three
    main loops parallel; each task writes its own block of out; no allocation but one
    MR x NR tile per task.
    """
    batches, rows, cols, depth = out_shape[0], out_shape[1], out_shape[2], a_shape[2]
    mr, nr, kc_max = panel_rows(out.itemsize), panel_width(out.itemsize), k_depth(out.itemsize)
    a_n, a_row, a_k = a_strides[0] if a_shape[0] > 1 else 0, a_strides[1], a_strides[2]
    b_n, b_k, b_col = b_strides[0] if b_shape[0] > 1 else 0, b_strides[1], b_strides[2]
    o_n, o_row, o_col = out_strides[0], out_strides[1], out_strides[2]
    row_panels, col_panels = (rows + mr - 1) // mr, (cols + nr - 1) // nr
    a_panels, b_panels = a_shape[0] * row_panels, b_shape[0] * col_panels
    k_blocks, b_start = (depth + kc_max - 1) // kc_max, a_panels * mr * depth
    if not in_place[0]:
        for panel in prange(a_panels):
            m, p = panel // row_panels, panel % row_panels
            for kb in range(k_blocks):
                k0, kc = _k_block(kb, k_blocks, depth)
                ao = m * a_n + p * mr * a_row + k0 * a_k
                at = _panel_at(0, a_panels, mr, k_blocks, depth, kb, panel)
                _pack_a(workspace, at, a, ao, a_row, a_k, rows - p * mr, kc, mr)
    if not in_place[1]:
        for panel in prange(b_panels):
            m, q = panel // col_panels, panel % col_panels
            for kb in range(k_blocks):
                k0, kc = _k_block(kb, k_blocks, depth)
                bo = m * b_n + k0 * b_k + q * nr * b_col
                at = _panel_at(b_start, b_panels, nr, k_blocks, depth, kb, panel)
                _pack_b(workspace, at, b, bo, b_k, b_col, cols - q * nr, kc, nr)
    a_source = (in_place[0], np.intp(a.ctypes.data), a_n, a_row, a_k, a_panels)
    b_source = (in_place[1], np.intp(b.ctypes.data), b_n, b_k, b_start, b_panels)
    for task in prange(batches * row_blocks * col_blocks):
        n, block = task // (row_blocks * col_blocks), task % (row_blocks * col_blocks)
        a_first = (n if a_shape[0] > 1 else 0) * row_panels
        b_first = (n if b_shape[0] > 1 else 0) * col_panels
        # With a read in place, tasks go down a column block first: a thread's run of
        # tasks (the pool splits the loop into one run each) then computes with the b
        # panels it packed itself (x @ W1.T, 64 x 784 @ 784 x 128 float32: 76 -> 65 us).
        # With both packed, along a row block (512 x 512 float64: 8% faster).
        row_block, col_block = block // col_blocks, block % col_blocks
        if in_place[0]:
            row_block, col_block = block % row_blocks, block // row_blocks
        a_span = _split(row_block, row_blocks, row_panels, a_first)
        b_span = _split(col_block, col_blocks, col_panels, b_first)
        spans = (n, a_first, a_span, b_first, b_span)
        o_layout = (n * o_n, o_row, o_col)
        _multiply_block(workspace, a_source, b_source, out, o_layout, rows, cols, depth, spans)


@njit
def _multiply_block(
    workspace: Any, a_source: Any, b_source: Any, out: Any, o_layout: Any,
    rows: int, cols: int, depth: int, spans: Any,
) -> None:  # fmt: skip
    """One task: its block of out from a's panels `a_span` and b's `b_span`.

    The sources say where each operand's panels are (`_a_panel`, `_b_panel`);
    `o_layout` is (this batch's first cell, row stride, column stride) of out; `spans`
    is (batch, a_first, a_span, b_first, b_span): the batch's first panel and the
    task's panels of each operand. A panel read in place that would cross a ragged
    edge starts early instead, to end at the edge: its first rows (or columns) belong
    to the panel before, so its tile is computed whole and stored in part.
    """
    n, a_first, a_span, b_first, b_span = spans
    a_packed, b_packed, a_panels = not a_source[0], not b_source[0], a_source[5]
    b_start, b_panels = b_source[4], b_source[5]
    o_start, o_row, o_col = o_layout
    mr, nr, kc_max = panel_rows(out.itemsize), panel_width(out.itemsize), k_depth(out.itemsize)
    line, size = LINE_BYTES // out.itemsize, out.itemsize
    tile, ws = np.empty(mr * nr, out.dtype), np.intp(workspace.ctypes.data)
    tile_at, out_at = np.intp(tile.ctypes.data), np.intp(out.ctypes.data)
    k_blocks, calls = (depth + kc_max - 1) // kc_max, len(a_span) * len(b_span)
    for kb in range(k_blocks):
        k0, kc = _k_block(kb, k_blocks, depth)
        # While the micro-kernel works, the next packed panel of b and the next k block
        # of this task's packed a panels are fetched into L2, a share per call (past the
        # last k block, the hints point at cells no one reads: a hint never faults).
        a_next = _panel_at(0, a_panels, mr, k_blocks, depth, kb + 1, a_span.start)
        a_share = _lines(len(a_span) * mr * kc, calls, line) if a_packed else 0
        b_share = _lines(nr * kc, len(a_span), line) if b_packed else 0
        for q in b_span:
            col = (q - b_first) * nr
            first_col = col if b_packed else min(col, cols - nr)
            b_at = _panel_at(b_start, b_panels, nr, k_blocks, depth, kb, q)
            b_next = b_at + nr * kc
            if q + 1 == b_span.stop:
                b_next = _panel_at(b_start, b_panels, nr, k_blocks, depth, kb + 1, b_span.start)
            b_panel = _b_panel(b_source, ws + b_at * size, n * b_source[2] + first_col, k0, size)
            for p in a_span:
                _prefetch(workspace, b_next, b_share, line)
                _prefetch(workspace, a_next, a_share, line)
                b_next, a_next = b_next + b_share, a_next + a_share
                row = (p - a_first) * mr
                h, w = min(mr, rows - row), min(nr, cols - col)
                a_at = ws + _panel_at(0, a_panels, mr, k_blocks, depth, kb, p) * size
                o = o_start + row * o_row + col * o_col
                # A block of MR, 2 ROW_STEP or ROW_STEP whole rows goes straight into out;
                # any other through the tile (MR rows: fewer variants, less compiling).
                kernel_rows = min(mr, (h + ROW_STEP - 1) // ROW_STEP * ROW_STEP)
                if h == kernel_rows and w == nr and o_col == 1:
                    a_panel = _a_panel(a_source, a_at, n * a_source[2], row, k0, size)
                    dest = (out_at + o * size, o_row, kb > 0)
                    _micro_kernel(kernel_rows, out, a_panel, b_panel, kc, dest)
                else:
                    first_row = row if a_packed else min(row, rows - mr)
                    a, a_row, a_k = _a_panel(a_source, a_at, n * a_source[2], first_row, k0, size)
                    b, b_k = b_panel
                    micro_kernel(PANEL, out, a, a_row, a_k, b, b_k, kc, tile_at, nr, False)
                    skip = (row - first_row) * nr + col - first_col
                    _store(out, o, o_row, o_col, tile[skip:], nr, h, w, kb > 0)


@njit(inline="always")
def _micro_kernel(rows: int, out: Any, a_panel: Any, b_panel: Any, kc: int, dest: Any) -> None:
    """`micro_kernel` for `rows` rows (MR, 2 ROW_STEP or ROW_STEP): a constant for each.

    (Its arguments are spelled out: a constant passed through `*args` is no longer one.)
    """
    (a, a_row, a_k), (b, b_k), (d, d_row, add) = a_panel, b_panel, dest
    if rows == panel_rows(out.itemsize):
        micro_kernel(PANEL, out, a, a_row, a_k, b, b_k, kc, d, d_row, add)
    elif rows == TWO_ROW_STEPS:
        micro_kernel(TWO_ROW_STEPS, out, a, a_row, a_k, b, b_k, kc, d, d_row, add)
    else:
        micro_kernel(ROW_STEP, out, a, a_row, a_k, b, b_k, kc, d, d_row, add)


@njit(inline="always")
def _a_panel(source: Any, packed_at: int, origin: int, first_row: int, k0: int,
             size: int) -> Any:  # fmt: skip
    """(address, row step, k step) of a's panel from `first_row`, k block from k0.

    `source` is (in place, a's address, batch step, row step, k step, panels);
    `packed_at` is the panel's address in the workspace, `origin` its batch's first cell.
    """
    in_place, address, _, a_row, a_k, _ = source
    if in_place:
        return address + (origin + first_row * a_row + k0 * a_k) * size, a_row, a_k
    return packed_at, 1, panel_rows(size)


@njit(inline="always")
def _b_panel(source: Any, packed_at: int, origin: int, k0: int, size: int) -> Any:
    """(address, k step) of b's panel, k block from k0 (its columns contiguous).

    `source` is (in place, b's address, batch step, k step, ...); `packed_at` is the
    panel's address in the workspace, `origin` its batch's first cell plus its first
    column.
    """
    in_place, address, _, b_k = source[0], source[1], source[2], source[3]
    if in_place:
        return address + (origin + k0 * b_k) * size, b_k
    return packed_at, panel_width(size)


@njit(inline="always")
def _panel_at(start: int, panels: int, width: int, k_blocks: int, depth: int, kb: int,
              panel: int) -> Any:  # fmt: skip
    """Where panel `panel` (of `panels` of `width` columns) of k block `kb` is packed."""
    k0, kc = _k_block(kb, k_blocks, depth)
    return start + panels * width * k0 + panel * width * kc


@njit(inline="always")
def _lines(cells: int, parts: int, line: int) -> int:
    """Cells in one of `parts` shares of `cells`, rounded up to whole cache lines."""
    return (cells // line + parts - 1) // parts * line


@njit(inline="always")
def _prefetch(array: Any, at: int, cells: int, line: int) -> None:
    """Hints the CPU to fetch array[at : at + cells] into L2 (a hint: never faults)."""
    for cell in range(at, at + cells, line):
        prefetch(array, cell)


_workspaces = threading.local()  # per thread: {dtype: array}


def workspace_cells(out_shape: Index, a_shape: Index, b_shape: Index, itemsize: int) -> int:
    """Cells `_matmul` packs: every batch of a in panels of MR rows, of b in NR columns."""
    mr, nr = panel_rows(itemsize), panel_width(itemsize)
    rows, cols, depth = int(out_shape[1]), int(out_shape[2]), int(a_shape[2])
    a_cells = int(a_shape[0]) * _ceil_div(rows, mr) * mr * depth
    return a_cells + int(b_shape[0]) * _ceil_div(cols, nr) * nr * depth


def _workspace(dtype: np.dtype, cells: int) -> Storage:
    """A packing array of `dtype`, at least `cells` long: this thread's kept one if it fits.

    Kept up to KEEP_CELLS cells; a bigger product gets its own (its pages cost little
    beside its work) and leaves nothing behind.
    """
    if cells > KEEP_CELLS:
        return np.empty(cells, dtype)
    kept = getattr(_workspaces, "arrays", None)
    if kept is None:
        kept = _workspaces.arrays = {}
    array = kept.get(dtype)
    if array is None or array.size < cells:
        array = kept[dtype] = np.empty(max(cells, 4096), dtype)
    return array


def blocks(out_shape: Index, itemsize: int, threads: int) -> tuple[int, int]:
    """How many blocks of rows and of columns each batch of out is split into (tasks).

    Blocks of BLOCK_PANELS panels at most; then, until each thread has TASKS_PER_THREAD
    tasks, as many as every other thread, or blocks are single panels, more blocks of
    columns first, then of rows. A thread then computes mostly with the b panels it
    packed itself, still in its own L2 cache (for 128 x 64 @ 64 x 784 in float32: 65 us
    split by columns, 87 us by rows too). The pool gives each thread an equal run of
    tasks: 9 tasks on 2 threads leave one idle a ninth of the time (512 x 512 float64:
    3 x 3 blocks 117-119 GFLOP/s, 3 x 4 124-131).
    """
    batches, rows, cols = (int(size) for size in out_shape)
    mr, nr = panel_rows(itemsize), panel_width(itemsize)
    row_panels, col_panels = _ceil_div(rows, mr), _ceil_div(cols, nr)
    row_blocks = _ceil_div(row_panels, BLOCK_PANELS)
    col_blocks = _ceil_div(col_panels, BLOCK_PANELS)
    while (tasks := batches * row_blocks * col_blocks) < TASKS_PER_THREAD * threads or (
        tasks % threads
    ):
        if col_blocks < col_panels:
            col_blocks += 1
        elif row_blocks < row_panels:
            row_blocks += 1
        else:
            break
    return row_blocks, col_blocks


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def work(cells: int, depth: int) -> int:
    """A product's units of work as `FastOps.parallel` counts them (a map's cells).

    Its multiply-adds / MULTIPLY_ADDS_PER_UNIT: the micro-kernel does that many in about
    the time a map spends on a cell, so products run in parallel from about a million
    multiply-adds (64 x 64 x 64 runs faster serially: 25 against 40 us).
    """
    return cells * depth // MULTIPLY_ADDS_PER_UNIT


def in_place(out_shape: Index, a_shape: Index, b_shape: Index, b_rows: bool,
             itemsize: int) -> tuple[bool, bool]:  # fmt: skip
    """Whether `_matmul` reads a, and b, where they lie instead of packing them.

    An operand is read in place when one batch of it takes at most IN_PLACE_BYTES (it
    stays in the caches, whatever its strides) and its panels are all whole or can
    start early at a ragged edge (at least MR rows of out, or NR columns); b also needs
    contiguous rows (`b_rows`). Packing such an operand costs more than it saves:
    64 x 784 @ 784 x 128 in float32 took 24 us of packing beside 80 of computing;
    reading a in place, 76 us in all (87 before); 256 x 256 float32 96 us (150).
    """
    rows, cols, depth = int(out_shape[1]), int(out_shape[2]), int(a_shape[2])
    a_small = rows * depth * itemsize <= IN_PLACE_BYTES
    b_small = depth * cols * itemsize <= IN_PLACE_BYTES
    whole_a, whole_b = rows >= panel_rows(itemsize), cols >= panel_width(itemsize)
    return a_small and whole_a, b_small and b_rows and whole_b


# (shapes as bytes, b's rows contiguous, itemsize, threads) -> `_plan`: training
# repeats the same products
Plan = tuple[int, int, int, tuple[bool, bool]]
_plans: dict[tuple[bytes, bytes, bytes, bool, int, int], Plan] = {}
PLANS_KEPT = 1024


def _plan(
    out_shape: Index, a_shape: Index, b_shape: Index, b_rows: bool, itemsize: int,
    threads: int,
) -> Plan:  # fmt: skip
    """(workspace cells, row blocks, column blocks, `in_place`) of a product, once per layout."""
    key = (out_shape.tobytes(), a_shape.tobytes(), b_shape.tobytes(), b_rows, itemsize, threads)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= PLANS_KEPT:
            _plans.clear()
        cells = workspace_cells(out_shape, a_shape, b_shape, itemsize)
        place = in_place(out_shape, a_shape, b_shape, b_rows, itemsize)
        plan = _plans[key] = (cells, *blocks(out_shape, itemsize, threads), place)
    return plan


@njit(cache=True, fastmath=SUM_MATH)
def _dots(
    out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, b: Any, b_shape: Any, b_strides: Any,
) -> None:  # fmt: skip
    """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j], one dot product per cell of out.

    For a narrow product (fewer rows than MR or columns than NR) whose operands are
    both contiguous along k: the panels of `_matmul` would be mostly padding there, and
    a dot of two contiguous rows runs in SIMD lanes (SUM_MATH: sums in any order).
    64 products of 8 x 64 @ 64 x 9 (a conv's weight gradient) took 72 us packed, 16 here.
    """
    batches, rows, cols, depth = out_shape[0], out_shape[1], out_shape[2], a_shape[2]
    a_n, b_n = a_strides[0] if a_shape[0] > 1 else 0, b_strides[0] if b_shape[0] > 1 else 0
    for n in range(batches):
        for i in range(rows):
            a_at = n * a_n + i * a_strides[1]
            for j in range(cols):
                b_at = n * b_n + j * b_strides[2]
                out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = _dot(
                    a, a_at, b, b_at, depth
                )


@njit(inline="always", fastmath=SUM_MATH)
def _dot(a: Any, a_at: int, b: Any, b_at: int, depth: int) -> Any:
    """sum_k a[a_at + k] * b[b_at + k] for k < depth, in any order (SIMD lanes)."""
    total = a.dtype.type(0)
    for k in range(U(depth)):
        total += a[U(a_at) + k] * b[U(b_at) + k]
    return total


def _dots_pay(out_shape: Index, a_strides: Index, b_strides: Index, depth: int,
              itemsize: int) -> bool:  # fmt: skip
    """True to compute a serial product with `_dots` (see there)."""
    narrow = out_shape[1] < panel_rows(itemsize) or out_shape[2] < panel_width(itemsize)
    return narrow and depth >= DOT_DEPTH and a_strides[2] == 1 and b_strides[1] == 1


def matmul(
    out: Storage, out_shape: Index, out_strides: Index,
    a: Storage, a_shape: Index, a_strides: Index,
    b: Storage, b_shape: Index, b_strides: Index, parallel: bool,
) -> None:  # fmt: skip
    """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; batch dims broadcast.

    Needs k >= 1 (the launcher fills out with zeros for k = 0). `parallel` False runs
    the kernel on the calling thread alone.
    """
    if not parallel and _dots_pay(out_shape, a_strides, b_strides, int(a_shape[2]), out.itemsize):
        _dots(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)
        return
    set_threads, get_threads = thread_count_functions()
    threads = get_threads()
    cells, row_blocks, col_blocks, place = _plan(
        out_shape, a_shape, b_shape, int(b_strides[2]) == 1, out.itemsize,
        threads if parallel else 1,
    )  # fmt: skip
    workspace = _workspace(out.dtype, cells)
    if not parallel:
        # The same kernel on this thread alone (a few microseconds more than a serial
        # twin, which would cost seconds of compiling on a program's first run).
        set_threads(1)
    try:
        _matmul(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides,
                workspace, row_blocks, col_blocks, place)  # fmt: skip
    finally:
        if not parallel:
            set_threads(threads)


__all__ = ["matmul", "work", "workspace_cells"]
