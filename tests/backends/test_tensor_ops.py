"""The kernel contract (task 2.3): every backend's kernels against numpy on drawn layouts,
and the launcher's checks, which must fire before any kernel runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minifw.core import operators as ops
from minifw.core.tensor_data import TensorData
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt
from tests.hypothesis_profiles import fixture_ok

task2_3 = pytest.mark.task2_3
# `backend` is function-scoped but returns the same built backend every time.

UNARY = [spec for spec in mt.OPS if spec.code is not None and spec.arity == 1]
BINARY = [spec for spec in mt.OPS if spec.code is not None and spec.arity == 2]
REDUCE = {ops.ADD: np.sum, ops.MUL: np.prod, ops.MAX: np.max, ops.MIN: np.min}
EXTRA_BINARY = {
    ops.MAX: np.maximum,
    ops.MIN: np.minimum,
    ops.POW: np.power,
    ops.SELECT: lambda m, y: np.where(m != 0, y, 0.0),
}


def host(backend: TensorBackend, data: TensorData) -> np.ndarray:
    return backend.to_numpy(data)


@st.composite
def out_view(draw: st.DrawFn, shape: tuple[int, ...]) -> mt.Strided:
    """A writable output: contiguous, permuted or sliced (its other cells hold NaN)."""
    return draw(mt.strided(shape=shape, layouts=("contiguous", "permuted", "sliced")))


@task2_3
@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
@fixture_ok
@given(data=st.data())
def test_map_matches_numpy(backend: TensorBackend, spec: mt.OpSpec, data: st.DataObject) -> None:
    drawn = data.draw(mt.strided(elements=spec.domain[0].elements()))
    out = backend.map(spec.code, mt.on_backend(drawn.data, backend))  # type: ignore[arg-type]
    mt.assert_close(host(backend, out), spec.ref(drawn.values), rtol=1e-12, atol=1e-12)


@task2_3
@fixture_ok
@given(data=st.data())
def test_map_writes_only_the_cells_of_its_output_view(
    backend: TensorBackend, data: st.DataObject
) -> None:
    """Written into a sliced / permuted out, map leaves the buffer's other cells alone."""
    a = data.draw(mt.strided())
    out = data.draw(out_view(a.values.shape))
    target = mt.on_backend(out.data, backend)
    backend.map(ops.NEG, mt.on_backend(a.data, backend), target)
    expected = out.data.base.copy()  # NaN outside the view, as drawn
    mine = TensorData(expected, out.data.shape, out.data.strides, out.data.offset)
    for index in mine.indices():
        mine.set(index, -a.values[index])
    mt.assert_close(backend.ops.to_numpy(target.base), expected, rtol=0, atol=0)


@task2_3
@fixture_ok
@given(data=st.data())
def test_map_broadcasts_into_a_bigger_output(backend: TensorBackend, data: st.DataObject) -> None:
    small, big_extra = data.draw(mt.broadcastable_shapes())
    big = np.broadcast_shapes(small, big_extra)
    a = data.draw(mt.strided(shape=small))
    out = backend.empty(big, np.float64)
    backend.map(ops.ID, mt.on_backend(a.data, backend), out)
    mt.assert_close(host(backend, out), np.broadcast_to(a.values, big), rtol=0, atol=0)


@task2_3
@pytest.mark.parametrize("spec", BINARY, ids=lambda s: s.name)
@fixture_ok
@given(data=st.data())
def test_zip_matches_numpy_with_broadcasting(
    backend: TensorBackend, spec: mt.OpSpec, data: st.DataObject
) -> None:
    shape_a, shape_b = data.draw(mt.broadcastable_shapes())
    a = data.draw(mt.strided(shape=shape_a, elements=spec.domain[0].elements()))
    b = data.draw(mt.strided(shape=shape_b, elements=spec.domain[1].elements()))
    code: Any = spec.code
    out = backend.zip(code, mt.on_backend(a.data, backend), mt.on_backend(b.data, backend))
    mt.assert_close(host(backend, out), spec.ref(a.values, b.values), rtol=1e-12, atol=1e-12)


@task2_3
@pytest.mark.parametrize("code", list(EXTRA_BINARY), ids=lambda c: ops.BINARY_NAMES[c])
@fixture_ok
@given(data=st.data())
def test_zip_of_the_other_binary_codes(
    backend: TensorBackend, code: int, data: st.DataObject
) -> None:
    shape = data.draw(mt.shapes())
    firsts = mt.POSITIVE.elements() if code == ops.POW else st.sampled_from([0.0, 1.0, -2.0])
    a = data.draw(mt.strided(shape=shape, elements=firsts))
    b = data.draw(mt.strided(shape=shape))
    out = backend.zip(code, mt.on_backend(a.data, backend), mt.on_backend(b.data, backend))
    expected = EXTRA_BINARY[code](a.values, b.values)
    mt.assert_close(host(backend, out), expected, rtol=1e-12, atol=1e-12)


@task2_3
@fixture_ok
@given(data=st.data())
def test_zip_writes_into_out_and_only_its_cells(
    backend: TensorBackend, data: st.DataObject
) -> None:
    """zip(out=) into a sliced / permuted out: out = a - b there, the rest of its buffer alone."""
    shape_a, shape_b = data.draw(mt.broadcastable_shapes())
    a, b = data.draw(mt.strided(shape=shape_a)), data.draw(mt.strided(shape=shape_b))
    out = data.draw(out_view(np.broadcast_shapes(shape_a, shape_b)))
    target = mt.on_backend(out.data, backend)
    a_data, b_data = mt.on_backend(a.data, backend), mt.on_backend(b.data, backend)
    assert backend.zip(ops.SUB, a_data, b_data, out=target) is target
    expected = out.data.base.copy()  # NaN outside the view, as drawn
    mine = TensorData(expected, out.data.shape, out.data.strides, out.data.offset)
    for index in mine.indices():
        mine.set(index, (a.values - b.values)[index])
    mt.assert_close(backend.ops.to_numpy(target.base), expected, rtol=0, atol=0)


@task2_3
@fixture_ok
@given(data=st.data())
def test_zip_into_its_own_first_operand_updates_in_place(
    backend: TensorBackend, data: st.DataObject
) -> None:
    """out is a itself (any layout, b broadcast or not): a becomes a * b, cell by cell."""
    a = data.draw(mt.strided(layouts=("contiguous", "permuted", "sliced")))
    small = data.draw(st.integers(0, len(a.values.shape)))
    b = data.draw(mt.strided(shape=a.values.shape[small:]))
    expected = a.values * b.values  # before the zip: on the CPU a.values is a's storage
    a_data = mt.on_backend(a.data, backend)
    backend.zip(ops.MUL, a_data, mt.on_backend(b.data, backend), out=a_data)
    mt.assert_close(host(backend, a_data), expected, rtol=0, atol=0)


@pytest.mark.extra  # the launcher's overlap check is given code
def test_zip_into_a_view_of_another_array_over_the_same_memory() -> None:
    """Two host arrays over one buffer: the same cells are allowed, shifted cells are not."""
    from minifw.backends import get_backend

    fast = get_backend("fast")
    buffer = np.arange(6.0)
    out = TensorData(buffer[:], (6,))
    same = TensorData(buffer.view(), (6,))
    fast.zip(ops.ADD, same, TensorData(np.ones(6), (6,)), out=out)
    np.testing.assert_array_equal(buffer, np.arange(6.0) + 1.0)
    shifted = TensorData(buffer[1:], (5,))
    with pytest.raises(RuntimeError, match="overlaps input a"):
        fast.zip(ops.ADD, shifted, TensorData(np.ones(5), (5,)), out=TensorData(buffer[:5], (5,)))
    np.testing.assert_array_equal(buffer, np.arange(6.0) + 1.0)
    whole = TensorData(buffer, (6,))  # disjoint cells of one storage are fine
    fast.zip(ops.MUL, whole.narrow(0, slice(3, 6)), whole.narrow(0, slice(3, 6)),
             out=whole.narrow(0, slice(0, 3)))  # fmt: skip
    np.testing.assert_array_equal(buffer, [16.0, 25.0, 36.0, 4.0, 5.0, 6.0])


@task2_3
@pytest.mark.parametrize("code", list(REDUCE), ids=lambda c: ops.BINARY_NAMES[c])
@fixture_ok
@given(data=st.data())
def test_reduce_matches_numpy_along_every_dim(
    backend: TensorBackend, code: int, data: st.DataObject
) -> None:
    a = data.draw(mt.strided(shape=data.draw(mt.shapes(min_dims=1))))
    for dim in range(a.values.ndim):
        out = backend.reduce(code, mt.on_backend(a.data, backend), dim)
        expected = REDUCE[code](a.values, axis=dim, keepdims=True)
        mt.assert_close(host(backend, out), expected, rtol=1e-12, atol=1e-12)


@task2_3
@fixture_ok
@given(data=st.data())
def test_reduce_int64_sums_exactly(backend: TensorBackend, data: st.DataObject) -> None:
    a = data.draw(mt.strided(shape=data.draw(mt.shapes(min_dims=1)), dtype=np.int64))
    out = backend.reduce(ops.ADD, mt.on_backend(a.data, backend), 0)
    got = host(backend, out)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, a.values.sum(axis=0, keepdims=True))


@task2_3
@fixture_ok
@given(data=st.data(), dtype=st.sampled_from([np.float64, np.float32]))
def test_matmul_kernel_on_3d_layouts(
    backend: TensorBackend, data: st.DataObject, dtype: Any
) -> None:
    n, k, m = (data.draw(st.integers(1, 4)) for _ in range(3))
    batch_a, batch_b = data.draw(st.sampled_from([(1, 3), (3, 1), (2, 2), (1, 1)]))
    a = data.draw(mt.strided(shape=(batch_a, n, k), dtype=dtype))
    b = data.draw(mt.strided(shape=(batch_b, k, m), dtype=dtype))
    out = backend.matmul(mt.on_backend(a.data, backend), mt.on_backend(b.data, backend))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    mt.assert_close(host(backend, out), np.matmul(a.values, b.values), rtol=tol, atol=tol)


@task2_3
@pytest.mark.parametrize(
    ("shape_a", "shape_b"),
    [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)), ((2, 1, 2, 3), (4, 3, 2)),
     ((4, 3, 2), (2,)), ((3,), (2, 3, 1))],
)  # fmt: skip
@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(seed=st.integers(0, 2**16))
def test_matmul_forms_match_numpy(
    backend: TensorBackend, shape_a: tuple[int, ...], shape_b: tuple[int, ...], seed: int
) -> None:
    # the chosen forms (1-D operands, broadcast batches) with drawn values
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    out = backend.matmul(backend.from_numpy(a), backend.from_numpy(b))
    mt.assert_close(host(backend, out), np.matmul(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.extra  # storage helpers are given code
def test_storage_helpers_round_trip(backend: TensorBackend) -> None:
    values = np.arange(12.0).reshape(3, 4)
    data = backend.from_numpy(values)
    np.testing.assert_array_equal(host(backend, data), values)
    np.testing.assert_array_equal(host(backend, backend.full((2, 2), 7.0, np.float64)), 7.0)
    assert backend.empty((2, 3), np.float32).shape == (2, 3)
    np.testing.assert_array_equal(host(backend, data.permute(1, 0)), values.T)


# ---- the launcher checks, before any kernel runs -------------------------------------------


class ExplodingOps:
    """A kernel set whose kernels must never run: the launcher should refuse first."""

    device = "cpu"

    @staticmethod
    def _boom(*args: Any) -> None:
        raise AssertionError("a kernel ran on inputs the launcher should have refused")

    map = zip = reduce = matmul = _boom
    empty = staticmethod(lambda size, dtype: np.empty(size, dtype=dtype))
    from_numpy = staticmethod(lambda array: array)
    to_numpy = staticmethod(np.asarray)


EXPLODING = TensorBackend(ExplodingOps, "exploding")  # type: ignore[arg-type]


def _data(*shape: int, dtype: Any = np.float64) -> TensorData:
    return TensorData(np.zeros(int(np.prod(shape)), dtype=dtype), shape)


@pytest.mark.extra  # the launcher's checks are given code
@pytest.mark.parametrize(
    ("launch", "error", "message"),
    [
        (lambda b: b.zip(ops.ADD, _data(2, 3), _data(4)), RuntimeError,
         r"shapes \(2, 3\) and \(4,\) cannot be broadcast"),
        (lambda b: b.zip(ops.ADD, _data(2), _data(2, dtype=np.float32)), RuntimeError,
         "same dtype, but got float64 and float32"),
        (lambda b: b.map(ops.NEG, _data(2, 3), _data(3)), RuntimeError,
         r"output with shape \(3,\) doesn't match the broadcast shape \(2, 3\)"),
        (lambda b: b.map(ops.NEG, _data(3), _data(3).expand((2, 3))), RuntimeError,
         "more than one element of the written-to tensor refers to a single memory location"),
        (lambda b: b.reduce(ops.ADD, _data(2, 3), 2), IndexError, "Dimension out of range"),
        (lambda b: b.reduce(ops.SUB, _data(2, 3), 0), ValueError, "sub is not a reduction"),
        (lambda b: b.reduce(ops.MAX, _data(2, 0), 1), RuntimeError, "non-zero size"),
        (lambda b: b.matmul(_data(2, 3), _data(4, 5)), RuntimeError,
         r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
        (lambda b: b.matmul(_data(3), _data(4)), RuntimeError, "cannot be multiplied"),
        (lambda b: b.matmul(_data(2, 2, 3), _data(3, 3, 4)), RuntimeError,
         r"batch dims of \(2, 2, 3\) and \(3, 3, 4\) cannot be broadcast"),
        (lambda b: b.matmul(_data(), _data(3)), RuntimeError, "at least 1D"),
        (lambda b: b.zip(ops.ADD, _data(2), TensorData(FakeDeviceArray(2), (2,))),
         RuntimeError, "Expected all tensors to be on the same device"),
        (lambda b: b.zip(ops.ADD, _data(2, 3), _data(3), out=_data(3)), RuntimeError,
         r"output with shape \(3,\) doesn't match the broadcast shape \(2, 3\)"),
        (lambda b: b.zip(ops.ADD, _data(3), _data(3), out=_data(3, dtype=np.float32)),
         RuntimeError, "same dtype, but got float32 and float64"),
        (lambda b: b.zip(ops.ADD, _data(3), _data(3), out=_data(3).expand((2, 3))),
         RuntimeError, "more than one element of the written-to tensor"),
        (lambda b: b.zip(ops.ADD, _data(2), _data(2), out=TensorData(FakeDeviceArray(2), (2,))),
         RuntimeError, "Expected all tensors to be on the same device"),
        (lambda b: _overlapping_zip(b, lambda d: (d.narrow(0, slice(1, 4)), _data(3))),
         RuntimeError, r"overlaps input a \(shape \(3,\), strides \(1,\), offset 1\)"),
        (lambda b: _overlapping_zip(b, lambda d: (_data(3), d.narrow(0, slice(2, 5)))),
         RuntimeError, "overlaps input b"),
        (lambda b: _overlapping_zip(b, lambda d: (d.narrow(0, slice(0, 1)), _data(3))),
         RuntimeError, "overlaps input a"),
    ],
)  # fmt: skip
def test_launcher_refuses_bad_inputs_before_any_kernel(
    launch: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        launch(EXPLODING)


def _overlapping_zip(backend: TensorBackend, inputs: Any) -> TensorData:
    """zip(out=) into cells 0..2 of a buffer with inputs made from the same buffer."""
    buffer = _data(5)
    a, b = inputs(buffer)
    return backend.zip(ops.ADD, a, b, out=buffer.narrow(0, slice(0, 3)))


class FakeDeviceArray:
    """Looks like device storage (it has copy_to_host), so a CPU launcher must refuse it."""

    def __init__(self, size: int) -> None:
        self.dtype = np.dtype(np.float64)
        self.size = size

    def copy_to_host(self) -> np.ndarray:
        return np.zeros(self.size)


@pytest.mark.extra  # the overlap copy is given code
def test_copy_into_reads_old_values_when_source_overlaps(backend: TensorBackend) -> None:
    data = backend.from_numpy(np.arange(5.0))
    backend.copy_into(data.narrow(0, slice(1, None)), data.narrow(0, slice(0, 4)))
    np.testing.assert_array_equal(host(backend, data), [0.0, 0.0, 1.0, 2.0, 3.0])
