"""Strided storage: index math, strides, permute, views (task 2.1) and broadcasting (2.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from minifw.core.tensor_data import (
    TensorData,
    broadcast_index,
    index_to_position,
    index_view,
    kernel_operands,
    merge_dims,
    normalize_dim,
    shape_broadcast,
    strides_from_shape,
    to_index,
)
from tests import strategies as mt

task2_1 = pytest.mark.task2_1
task2_2 = pytest.mark.task2_2


def read_all(data: TensorData) -> np.ndarray:
    """The cells of `data` read one by one through `TensorData.get` (index math only)."""
    out = np.empty(data.shape, dtype=data.base.dtype)
    for index in data.indices():
        out[index] = data.get(index)
    return out


def check_drawn_layout(drawn: mt.Strided, data: st.DataObject) -> None:
    """Task 2.1 on a drawn layout: row-major strides, a drawn permutation, every cell read.

    Each test of a chosen example checks one of these too, so index math fitted to the
    examples does not pass.
    """
    shape = drawn.values.shape
    if all(shape):
        assert strides_from_shape(shape) == np.empty(shape, dtype=np.int8).strides
    order = data.draw(st.permutations(range(drawn.data.dims)), label="permutation")
    permuted = drawn.data.permute(*order)
    np.testing.assert_array_equal(read_all(permuted), drawn.values.transpose(order))


def check_drawn_broadcast(pair: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """Task 2.2 on drawn broadcastable shapes: shape_broadcast agrees with numpy."""
    a, b = pair
    assert shape_broadcast(a, b) == np.broadcast_shapes(a, b)


# ---- 2.1: index math ---------------------------------------------------------------------


@task2_1
@given(mt.shapes())
def test_to_index_walks_cells_in_row_major_order(shape: tuple[int, ...]) -> None:
    shape_arr = np.array(shape, dtype=np.int64)
    out = np.zeros(len(shape), dtype=np.int64)
    for ordinal, expected in enumerate(np.ndindex(*shape)):
        to_index(ordinal, shape_arr, out)
        assert tuple(out) == expected


@task2_1
@given(mt.shapes())
def test_position_of_contiguous_index_is_its_ordinal(shape: tuple[int, ...]) -> None:
    strides = np.array(strides_from_shape(shape), dtype=np.int64)
    shape_arr = np.array(shape, dtype=np.int64)
    index = np.zeros(len(shape), dtype=np.int64)
    for ordinal in range(int(np.prod(shape))):
        to_index(ordinal, shape_arr, index)
        assert index_to_position(index, strides) == ordinal


@task2_1
@given(mt.shapes(min_side=0))
def test_strides_from_shape_match_numpy(shape: tuple[int, ...]) -> None:
    expected = np.empty(shape, dtype=np.int8).strides if all(shape) else None
    strides = strides_from_shape(shape)
    assert len(strides) == len(shape)
    if expected is not None:
        assert strides == expected
    assert TensorData(np.zeros(max(int(np.prod(shape)), 1)), shape).is_contiguous()


@task2_1
@given(mt.strided(), st.data())
def test_strides_from_shape_examples(drawn: mt.Strided, data: st.DataObject) -> None:
    check_drawn_layout(drawn, data)
    assert strides_from_shape((2, 3, 4)) == (12, 4, 1)
    assert strides_from_shape((5,)) == (1,)
    assert strides_from_shape(()) == ()


@task2_1
@given(mt.strided())
def test_drawn_layouts_read_back_their_values(drawn: mt.Strided) -> None:
    np.testing.assert_array_equal(read_all(drawn.data), drawn.values)


# ---- 2.1: permute, contiguity and views ---------------------------------------------------


@task2_1
@given(st.data(), mt.strided(layouts=("contiguous", "permuted", "sliced")))
def test_permute_matches_numpy_transpose(data: st.DataObject, drawn: mt.Strided) -> None:
    order = data.draw(st.permutations(range(drawn.data.dims)))
    permuted = drawn.data.permute(*order)
    assert permuted.base is drawn.data.base  # a view: no copy
    assert permuted.shape == tuple(drawn.values.shape[d] for d in order)
    np.testing.assert_array_equal(read_all(permuted), drawn.values.transpose(order))


@task2_1
@given(mt.strided(), st.data())
def test_permute_examples_and_contiguity(drawn: mt.Strided, data: st.DataObject) -> None:
    check_drawn_layout(drawn, data)
    data = TensorData(np.arange(24.0), (2, 3, 4))
    assert data.is_contiguous()
    moved = data.permute(2, 0, 1)
    assert (moved.shape, moved.strides) == ((4, 2, 3), (1, 12, 4))
    assert not moved.is_contiguous()
    assert moved.permute(1, 2, 0).is_contiguous()
    assert data.permute(-1, 0, 1).shape == (4, 2, 3)


@task2_1
@pytest.mark.parametrize(
    ("order", "error", "message"),
    [
        ((0, 1), RuntimeError, "input.dim() = 3 is not equal to len(dims) = 2"),
        ((0, 1, 1), RuntimeError, "duplicate dims are not allowed"),
        ((0, 1, 3), IndexError, "Dimension out of range (expected to be in range of [-3, 2]"),
    ],
)
@given(mt.strided(), st.data())
def test_bad_permutation_messages(
    order: tuple[int, ...], error: type, message: str, drawn: mt.Strided, data: st.DataObject
) -> None:
    check_drawn_layout(drawn, data)
    with pytest.raises(error) as info:
        TensorData(np.arange(24.0), (2, 3, 4)).permute(*order)
    assert message in str(info.value)


@pytest.mark.extra  # normalize_dim is given code
def test_normalize_dim_message() -> None:
    assert normalize_dim(-1, 3) == 2
    assert normalize_dim(0, 0) == 0
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2\)"):
        normalize_dim(2, 2)


def _numpy_view_possible(values: np.ndarray, shape: tuple[int, ...]) -> bool:
    """numpy's no-copy reshape rule, the same one PyTorch's view follows."""
    probe = values.view()
    try:
        probe.shape = shape
    except AttributeError:
        return False
    return True


def _as_numpy_layout(data: TensorData) -> np.ndarray:
    """A numpy array with exactly the strides (in bytes) of `data`."""
    item = data.base.itemsize
    return np.lib.stride_tricks.as_strided(
        data.storage, data.shape, [s * item for s in data.strides]
    )


@st.composite
def reshape_targets(draw: st.DrawFn, numel: int) -> tuple[int, ...]:
    """A shape with `numel` cells: numel split into drawn factors, with 1s sprinkled in."""
    factors, rest = [], numel
    while rest > 1 and len(factors) < 4:
        divisors = [d for d in range(2, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divisors))
        factors.append(d)
        rest //= d
    if rest > 1:
        factors.append(rest)
    for _ in range(draw(st.integers(0, 2))):
        factors.insert(draw(st.integers(0, len(factors))), 1)
    return tuple(factors)


@task2_1
@given(st.data(), mt.strided(layouts=("contiguous", "permuted", "sliced")))
def test_view_succeeds_exactly_when_numpy_can_reshape_without_copy(
    data: st.DataObject, drawn: mt.Strided
) -> None:
    target = data.draw(reshape_targets(drawn.data.size))
    numpy_layout = _as_numpy_layout(drawn.data)
    viewed = drawn.data.view(target)
    assert (viewed is not None) == _numpy_view_possible(numpy_layout, target)
    if viewed is not None:
        assert viewed.base is drawn.data.base
        np.testing.assert_array_equal(read_all(viewed), drawn.values.reshape(target))


@task2_1
@given(mt.strided(), st.data())
def test_view_strides_match_pytorch_for_size_one_dims(
    drawn: mt.Strided, data: st.DataObject
) -> None:
    check_drawn_layout(drawn, data)
    data = TensorData(np.arange(6.0), (2, 3))
    assert data.view((2, 3, 1)).strides == (3, 1, 1)
    assert data.view((2, 1, 3)).strides == (3, 3, 1)
    assert data.permute(1, 0).view((3, 1, 2)).strides == (1, 6, 3)


# ---- 2.1: indexing views -------------------------------------------------------------------

KEYS = [
    0,
    -1,
    (1, 2),
    slice(None),
    slice(1, None),
    slice(None, None, 2),
    (slice(None), 0),
    (Ellipsis, 1),
    (None, 0),
    (0, None, Ellipsis),
    (slice(0, 2), None, slice(None, None, 2)),
    (Ellipsis,),
    (1, Ellipsis, slice(0, 1)),
]


@task2_1
@pytest.mark.parametrize("key", KEYS, ids=repr)
@given(drawn=mt.strided(shape=(2, 3, 4)))
def test_index_view_matches_numpy(key: object, drawn: mt.Strided) -> None:
    view = index_view(drawn.data, key)
    assert view.base is drawn.data.base
    np.testing.assert_array_equal(read_all(view), drawn.values[key])


@task2_1
@given(mt.strided(), st.data())
def test_index_errors_name_the_problem(drawn: mt.Strided, data: st.DataObject) -> None:
    check_drawn_layout(drawn, data)
    data = TensorData(np.arange(6.0), (2, 3))
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        index_view(data, 2)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        index_view(data, (0, 0, 0))
    with pytest.raises(IndexError, match="single ellipsis"):
        index_view(data, (Ellipsis, Ellipsis))
    with pytest.raises(ValueError, match="step must be greater than zero"):
        index_view(data, slice(None, None, -1))
    with pytest.raises(TypeError, match="only integers, slices"):
        index_view(data, [0, 1])


# ---- 2.2: broadcasting ---------------------------------------------------------------------


@task2_2
@given(mt.broadcastable_shapes())
def test_shape_broadcast_matches_numpy(pair: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = pair
    assert shape_broadcast(a, b) == np.broadcast_shapes(a, b)
    assert shape_broadcast(b, a) == np.broadcast_shapes(a, b)


@task2_2
@pytest.mark.parametrize(
    ("a", "b", "out"),
    [
        ((2, 3), (3,), (2, 3)),
        ((4, 1), (1, 5), (4, 5)),
        ((), (2,), (2,)),
        ((1,), (3, 1, 1), (3, 1, 1)),
    ],
)
@given(pair=mt.broadcastable_shapes())
def test_shape_broadcast_examples(
    a: tuple[int, ...], b: tuple[int, ...], out: tuple, pair: tuple[tuple[int, ...], ...]
) -> None:
    check_drawn_broadcast(pair)  # type: ignore[arg-type]
    assert shape_broadcast(a, b) == out


@task2_2
@given(mt.shapes(min_dims=1), st.data())
def test_impossible_broadcast_names_both_shapes(
    shape: tuple[int, ...], data: st.DataObject
) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    other = list(shape)
    assume(shape[dim] != 1)
    other[dim] = shape[dim] + data.draw(st.integers(1, 3))
    with pytest.raises(RuntimeError) as info:
        shape_broadcast(shape, tuple(other))
    text = str(info.value)
    assert f"shapes {shape} and {tuple(other)} cannot be broadcast" in text
    assert f"non-singleton dimension {dim}" in text


@task2_2
@given(mt.broadcastable_shapes())
def test_impossible_broadcast_message_example(
    pair: tuple[tuple[int, ...], tuple[int, ...]],
) -> None:
    check_drawn_broadcast(pair)
    with pytest.raises(RuntimeError, match=r"shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        shape_broadcast((2, 3), (4,))


@task2_2
@given(mt.broadcastable_shapes(), st.data())
def test_broadcast_index_reads_what_numpy_broadcast_reads(
    pair: tuple[tuple[int, ...], tuple[int, ...]], data: st.DataObject
) -> None:
    small, other = pair
    big = np.broadcast_shapes(small, other)
    drawn = data.draw(mt.strided(shape=small))
    expected = np.broadcast_to(drawn.values, big)
    big_arr, small_arr = np.array(big, dtype=np.int64), np.array(small, dtype=np.int64)
    out = np.zeros(len(small), dtype=np.int64)
    for big_index in np.ndindex(*big):
        broadcast_index(np.array(big_index, dtype=np.int64), big_arr, small_arr, out)
        assert drawn.data.get(tuple(out)) == expected[big_index]


@pytest.mark.extra  # expand is given code
def test_expand_is_a_stride_zero_view() -> None:
    data = TensorData(np.arange(3.0), (3,))
    wide = data.expand((2, 3))
    assert (wide.shape, wide.strides) == ((2, 3), (0, 1))
    np.testing.assert_array_equal(read_all(wide), np.broadcast_to(np.arange(3.0), (2, 3)))
    column = TensorData(np.arange(2.0), (2, 1)).expand((2, -1))
    assert column.shape == (2, 1)
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match"):
        data.expand((2, 4))
    with pytest.raises(RuntimeError, match="isn't allowed in a leading, non-existing dimension"):
        data.expand((-1, 3))


@pytest.mark.extra  # hardening of the given TensorData constructor
def test_a_layout_reaching_outside_its_storage_is_refused() -> None:
    with pytest.raises(IndexError, match=r"reaches cells 0..5 of a storage of 5 cells"):
        TensorData(np.zeros(5), (2, 3))
    with pytest.raises(IndexError, match="of a storage of 6 cells"):
        TensorData(np.zeros(6), (2, 3), (3, 1), offset=1)
    with pytest.raises(IndexError, match=r"reaches cells 0..6 of a storage of 6 cells"):
        TensorData(np.zeros(6), (3,), (3,), offset=0)
    assert TensorData(np.zeros(0), (0, 3)).size == 0


# ---- Kernel operands: merged dims visit the same cells in the same order ----------------


def _positions(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """The storage position of every index of `shape`, in row-major order."""
    return [
        sum(i * st for i, st in zip(index, strides, strict=True)) for index in np.ndindex(*shape)
    ]


@pytest.mark.extra  # launcher plumbing, not a task
@given(st.data(), mt.shapes(min_dims=1, max_dims=5, max_side=3))
def test_merged_dims_visit_the_same_positions_in_the_same_order(
    data: st.DataObject, shape: tuple[int, ...]
) -> None:
    operands = [data.draw(mt.tensor_data(shape)) for _ in range(2)]
    steps = [tuple(0 if n == 1 else s for n, s in zip(x.shape, x.strides, strict=True))
             for x in operands]  # fmt: skip
    merged, merged_steps, keep = merge_dims(shape, steps)
    assert keep == -1 and len(merged) <= max(len(shape), 1)
    assert int(np.prod(merged)) == int(np.prod(shape))
    for before, after in zip(steps, merged_steps, strict=True):
        assert _positions(merged, after) == _positions(shape, before)


@pytest.mark.extra  # launcher plumbing, not a task
@given(st.data(), mt.shapes(min_dims=1, max_dims=5, max_side=3))
def test_a_reduced_dim_stays_a_dim_of_its_own(data: st.DataObject, shape: tuple[int, ...]) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    steps = [strides_from_shape(shape)]
    merged, merged_steps, keep = merge_dims(shape, steps, dim)
    assert merged[keep] == shape[dim] and merged_steps[0][keep] == steps[0][dim]
    before = int(np.prod(shape[:dim])), int(np.prod(shape[dim + 1 :]))
    after = int(np.prod(merged[:keep])), int(np.prod(merged[keep + 1 :]))
    assert before == after  # no dim crossed the reduced one
    assert _positions(merged, merged_steps[0]) == _positions(shape, steps[0])


@pytest.mark.extra  # launcher plumbing, not a task
def test_kernel_operands_merge_a_pooling_comparison_into_long_lines() -> None:
    windows = TensorData(np.zeros(64 * 8 * 64), (64, 8, 4, 4, 4))
    maxima = TensorData(np.zeros(64 * 8 * 16), (64, 8, 1, 4, 4))
    out = TensorData(np.zeros(64 * 8 * 64), (64, 8, 4, 4, 4))
    args, dim = kernel_operands(out, (windows, maxima))
    shapes = [tuple(int(n) for n in args[i]) for i in (1, 4, 7)]
    strides = [tuple(int(n) for n in args[i]) for i in (2, 5, 8)]
    assert shapes == [(512, 4, 16), (512, 4, 16), (512, 1, 16)] and dim == -1
    assert strides == [(64, 16, 1), (64, 16, 1), (16, 0, 1)]
    column = TensorData(np.zeros(64), (64, 1))
    args, dim = kernel_operands(TensorData(np.zeros(1), (1, 1)), (column,), 0)
    assert [tuple(int(n) for n in args[i]) for i in (1, 4)] == [(1,), (64,)] and dim == 0
