"""The packed matmul of minifw/fast_paths/matmul.py (and its micro-kernel) against numpy.

tests/backends/test_fast_ops.py checks `FastOps.matmul` end to end; here the kernel, on
the thread pool and on the calling thread alone, gets drawn operands (broadcast
batches, either operand stored transposed, k from 1 up, an out that is a strided window
of a bigger array), products that cross every block edge, and every dtype the
micro-kernel is built for. Operands hold small
integers, so every float sum is exact and results must be equal. Timing is never asserted.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minifw.fast_paths import matmul as fm
from minifw.fast_paths.micro_kernel import panel_rows, panel_width

pytestmark = pytest.mark.extra  # expert code: never a course task

DTYPES = [np.float64, np.float32, np.int64]


def shape_of(dtype: Any) -> tuple[int, int, int]:
    """(MR, NR, KC) of the kernel for `dtype`: rows and columns of a panel, k of a block."""
    itemsize = np.dtype(dtype).itemsize
    return panel_rows(itemsize), panel_width(itemsize), fm.k_depth(itemsize)


def flat(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(storage, shape, strides in cells) of a view of a 1-D base array."""
    base = x.base if x.base is not None else x
    while base.base is not None:
        base = base.base
    offset = (x.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // x.itemsize
    strides = np.array([s // x.itemsize for s in x.strides], np.int64)
    storage = base.reshape(-1)[offset:]
    return storage, np.array(x.shape, np.int64), strides


def transposed_storage(x: np.ndarray) -> np.ndarray:
    """x with the same values, its last two dims stored the other way round."""
    return np.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1)


@st.composite
def operands(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """a (n or 1, i, k) and b (n or 1, k, j), each maybe stored transposed, and n."""
    n, i, k, j = (draw(st.integers(lo, hi)) for lo, hi in ((1, 3), (1, 20), (1, 11), (1, 40)))
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a_n, b_n = draw(st.sampled_from([(n, n), (1, n), (n, 1)]))
    a = rng.integers(-5, 6, (a_n, i, k)).astype(dtype)
    b = rng.integers(-5, 6, (b_n, k, j)).astype(dtype)
    a = transposed_storage(a) if draw(st.booleans()) else a
    b = transposed_storage(b) if draw(st.booleans()) else b
    return a, b, n


def run(a: np.ndarray, b: np.ndarray, n: int, parallel: bool, window: bool) -> np.ndarray:
    """`fm.matmul`'s result, written into out or into a strided window of a bigger array."""
    i, j = a.shape[1], b.shape[2]
    big = np.full((n, i, 2 * j), -7, a.dtype)
    out = big[:, :, ::2] if window else np.full((n, i, j), -7, a.dtype)
    fm.matmul(*flat(out), *flat(a), *flat(b), parallel)
    assert np.all(big[:, :, 1::2] == -7), "the kernel wrote outside its out window"
    return out


@pytest.mark.parametrize("parallel", [True, False])
@settings(deadline=None)
@given(operands(), st.booleans())
def test_matmul_matches_numpy(
    parallel: bool, case: tuple[np.ndarray, np.ndarray, int], window: bool
) -> None:
    a, b, n = case
    np.testing.assert_array_equal(run(a, b, n, parallel, window), np.matmul(a, b))


IN_PLACE = [(False, False), (True, False), (False, True), (True, True)]


def run_kernel(
    a: np.ndarray, b: np.ndarray, n: int, blocks: tuple[int, int], in_place: tuple[bool, bool]
) -> np.ndarray:
    """`fm._matmul`'s result with the given task split and operands read in place or packed."""
    junk = np.nan if a.dtype.kind == "f" else -7  # what any cell not written keeps
    out = np.full((n, a.shape[1], b.shape[2]), junk, a.dtype)
    cells = fm.workspace_cells(out.shape, a.shape, b.shape, a.itemsize)
    workspace = np.full(cells, junk, a.dtype)
    fm._matmul(*flat(out), *flat(a), *flat(b), workspace, *blocks, in_place)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("parallel", [True, False])
def test_matmul_across_block_edges(dtype: Any, parallel: bool) -> None:
    # Several k blocks (the later ones add to out), more row and column panels than a
    # block holds, and a ragged last panel in both: every store path of the kernel.
    rng = np.random.default_rng(3)
    mr, nr, kc = shape_of(dtype)
    i, k, j = fm.BLOCK_PANELS * mr + 5, 2 * kc + 3, fm.BLOCK_PANELS * nr + 7
    a = rng.integers(-3, 4, (2, i, k)).astype(dtype)
    b = rng.integers(-3, 4, (1, k, j)).astype(dtype)
    for window in (False, True):
        np.testing.assert_array_equal(run(a, b, 2, parallel, window), np.matmul(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_place", IN_PLACE)
def test_operands_read_in_place_across_block_edges(
    dtype: Any, in_place: tuple[bool, bool]
) -> None:
    # The same products with a, b or both read where they lie: several k blocks, and
    # ragged last panels that start early (their first rows or columns computed twice,
    # stored once). a is stored transposed in one batch layout, b row-major.
    rng = np.random.default_rng(4)
    mr, nr, kc = shape_of(dtype)
    i, k, j = 2 * mr + 5, 2 * kc + 3, 3 * nr + 7
    a = rng.integers(-3, 4, (2, i, k)).astype(dtype)
    b = rng.integers(-3, 4, (1, k, j)).astype(dtype)
    for a_stored in (a, transposed_storage(a)):
        out = run_kernel(a_stored, b, 2, (2, 3), in_place)
        np.testing.assert_array_equal(out, np.matmul(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_transposed_b_is_packed_by_square_blocks(dtype: Any) -> None:
    # b stored transposed (w.T: columns contiguous along k) is packed by blocks of
    # lanes x lanes cells transposed in registers, then the k left over one by one:
    # several k blocks (each starting at a multiple of K_ALIGN), whole and ragged panels.
    rng = np.random.default_rng(8)
    mr, nr, kc = shape_of(dtype)
    for k in (2 * kc + 3, nr // 2 + 1, 3):
        a = rng.integers(-3, 4, (1, mr + 1, k)).astype(dtype)
        b = transposed_storage(rng.integers(-3, 4, (1, k, 3 * nr + 7)).astype(dtype))
        assert flat(b)[2][1] == 1  # b's k step: a column of b is contiguous
        for in_place in ((False, False), (True, False)):
            np.testing.assert_array_equal(run_kernel(a, b, 1, (1, 2), in_place), a @ b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_in_place", [False, True])
def test_every_ragged_row_count_is_stored_once(dtype: Any, a_in_place: bool) -> None:
    # A last panel of h < MR rows: h = ROW_STEP or 2 ROW_STEP goes straight into out
    # through a kernel of h rows, any other h through an MR-row tile (a read in place
    # starts early). Each row count from MR to 2 MR, a packed (zeros past h) and read
    # in place, over two k blocks (the second adds to out), whole and ragged columns.
    rng = np.random.default_rng(7)
    mr, nr, kc = shape_of(dtype)
    for rows in range(mr, 2 * mr + 1):
        for cols in (2 * nr, 2 * nr - 3):
            a = rng.integers(-3, 4, (1, rows, kc + 5)).astype(dtype)
            b = rng.integers(-3, 4, (1, kc + 5, cols)).astype(dtype)
            out = run_kernel(a, b, 1, (2, 1), (a_in_place, False))
            np.testing.assert_array_equal(out, a @ b, err_msg=f"{rows} x {cols}")


# (rows, cols, in_place): an operand is read in place only if out has a panel of it
SPLIT_CASES = [
    (rows, cols, place)
    for rows, cols in [(1, 1), (64, 10), (64, 128), (784, 128), (5, 3000)]
    for place in IN_PLACE
    if not (place[0] and rows < panel_rows(4)) and not (place[1] and cols < panel_width(4))
]


@pytest.mark.parametrize(("rows", "cols", "in_place"), SPLIT_CASES)
@pytest.mark.parametrize("row_blocks", [1, 2, 3])
@pytest.mark.parametrize("col_blocks", [1, 2, 5])
def test_every_task_split_covers_out_once(
    rows: int, cols: int, in_place: tuple[bool, bool], row_blocks: int, col_blocks: int
) -> None:
    # The kernel is given the split: any split into at most one block per panel is
    # right, whichever operands are read in place.
    rng = np.random.default_rng(rows)
    a = rng.integers(-3, 4, (1, rows, 9)).astype(np.float32)
    b = rng.integers(-3, 4, (1, 9, cols)).astype(np.float32)
    row_blocks = min(row_blocks, -(-rows // panel_rows(4)))
    col_blocks = min(col_blocks, -(-cols // panel_width(4)))
    np.testing.assert_array_equal(run_kernel(a, b, 1, (row_blocks, col_blocks), in_place), a @ b)


@pytest.mark.parametrize(
    ("rows", "cols", "depth", "b_rows", "itemsize", "expected"),
    [
        (64, 128, 256, True, 4, (True, True)),  # x @ w: both small
        (64, 128, 784, False, 4, (True, False)),  # x @ w.T: b's columns are strided
        (64, 10, 128, True, 4, (True, False)),  # 10 columns: narrower than a panel of b
        (panel_rows(4) - 1, 128, 64, True, 4, (False, True)),  # fewer rows than a panel
        (2048, 2048, 2048, True, 8, (False, False)),  # big: packed
    ],
)
def test_in_place_reads_small_operands_whose_panels_fit(
    rows: int, cols: int, depth: int, b_rows: bool, itemsize: int, expected: tuple[bool, bool]
) -> None:
    if panel_rows(itemsize) > 12 or panel_width(itemsize) > 32:
        pytest.skip("panel sizes of a CPU with wider vectors than AVX-512")
    shapes = (np.array(shape) for shape in ((1, rows, cols), (1, rows, depth), (1, depth, cols)))
    assert fm.in_place(*shapes, b_rows, itemsize) == expected


def test_a_serial_launch_runs_on_the_calling_thread_and_restores_the_thread_count() -> None:
    # `parallel=False` runs the one kernel with Numba's threads set to 1 for its launch.
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (1, 70, 30)).astype(np.float64)
    b = rng.integers(-3, 4, (1, 30, 50)).astype(np.float64)
    before = numba.get_num_threads()
    out = np.empty((1, 70, 50))
    fm.matmul(*flat(out), *flat(a), *flat(b), False)
    np.testing.assert_array_equal(out, a @ b)
    assert numba.get_num_threads() == before


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batches", [(1, 1), (3, 3), (1, 3), (3, 1)])
def test_narrow_serial_products_take_dot_products(dtype: Any, batches: tuple[int, int]) -> None:
    # a row-major and b stored transposed: both contiguous along k, as `_dots` needs;
    # few rows, or few columns, and k from DOT_DEPTH up. Results written into a
    # strided window too; broadcast batches either way.
    rng = np.random.default_rng(6)
    (mr, nr, _), n = shape_of(dtype), max(batches)
    for i, k, j in ((mr - 1, fm.DOT_DEPTH, 40), (50, fm.DOT_DEPTH + 7, nr - 1), (1, 100, 1)):
        a = rng.integers(-5, 6, (batches[0], i, k)).astype(dtype)
        b = transposed_storage(rng.integers(-5, 6, (batches[1], k, j)).astype(dtype))
        assert fm._dots_pay(np.array((n, i, j)), flat(a)[2], flat(b)[2], k, a.itemsize)
        for window in (False, True):
            np.testing.assert_array_equal(run(a, b, n, False, window), np.matmul(a, b))


def test_dot_products_only_for_narrow_deep_products_contiguous_along_k() -> None:
    wide, narrow = np.array((1, 64, 128)), np.array((1, 64, 10))
    along_k_a, along_k_b = np.array((0, 128, 1)), np.array((0, 1, 128))
    assert fm._dots_pay(narrow, along_k_a, along_k_b, 128, 4)
    assert not fm._dots_pay(wide, along_k_a, along_k_b, 128, 4)  # whole panels
    assert not fm._dots_pay(narrow, along_k_a, along_k_b, 16, 4)  # too shallow
    assert not fm._dots_pay(narrow, np.array((0, 1, 64)), along_k_b, 128, 4)  # a.T
    assert not fm._dots_pay(narrow, along_k_a, np.array((0, 10, 1)), 128, 4)  # b row-major


@pytest.mark.parametrize(("shape", "threads"), [((1, 64, 128), 2), ((1, 64, 10), 2),
                                                 ((1, 2048, 2048), 2), ((8, 256, 256), 4),
                                                 ((1, 512, 512), 2), ((3, 100, 40), 2),
                                                 ((1, 700, 900), 3), ((1, 1, 1), 2)])  # fmt: skip
@pytest.mark.parametrize("itemsize", [4, 8])
def test_blocks_give_each_thread_as_many_tasks_and_keep_blocks_within_bounds(
    shape: tuple[int, int, int], threads: int, itemsize: int
) -> None:
    batches, rows, cols = shape
    row_panels, col_panels = -(-rows // panel_rows(itemsize)), -(-cols // panel_width(itemsize))
    row_blocks, col_blocks = fm.blocks(np.array(shape), itemsize, threads)
    assert 1 <= row_blocks <= row_panels and 1 <= col_blocks <= col_panels
    assert -(-row_panels // row_blocks) <= fm.BLOCK_PANELS
    assert -(-col_panels // col_blocks) <= fm.BLOCK_PANELS
    tasks = batches * row_blocks * col_blocks
    all_single_panels = (row_blocks, col_blocks) == (row_panels, col_panels)
    assert tasks >= fm.TASKS_PER_THREAD * threads or all_single_panels
    assert tasks % threads == 0 or all_single_panels  # the pool gives each an equal run


def test_a_product_of_few_rows_is_split_by_columns() -> None:
    # x @ w1 of the MLP: 64 rows, 128 columns; its tasks must not each re-read all of b.
    row_blocks, col_blocks = fm.blocks(np.array([1, 64, 128]), 4, 2)
    assert col_blocks > 1 and row_blocks * col_blocks >= fm.TASKS_PER_THREAD * 2


def test_the_workspace_is_reused_and_big_ones_are_not_kept() -> None:
    small = fm._workspace(np.dtype(np.float32), 100)
    assert fm._workspace(np.dtype(np.float32), 50) is small
    big = fm._workspace(np.dtype(np.float32), fm.KEEP_CELLS + 1)
    assert big.size >= fm.KEEP_CELLS + 1
    assert fm._workspace(np.dtype(np.float32), 50) is small
