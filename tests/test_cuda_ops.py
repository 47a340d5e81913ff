"""CudaOps kernels against SimpleOps and numpy, on a GPU or under Numba's CUDA simulator.

The simulator is slow, so shapes are tiny (<= 3 dims, sides <= 3) and each property
runs a handful of examples. Without a GPU and without NUMBA_ENABLE_CUDASIM=1 every
test here shows as skipped, with the reason.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minifw import operators as ops
from minifw.backends import cuda_available, get_backend
from minifw.tensor_data import TensorData

CUDA = cuda_available()
pytestmark = pytest.mark.skipif(
    not CUDA, reason="cuda backend: no CUDA GPU here and NUMBA_ENABLE_CUDASIM=1 is not set"
)
cuda_ops: Any = importlib.import_module("minifw.cuda_ops") if CUDA else None

FEW = settings(max_examples=10, deadline=None)
FLOATS = (np.float64, np.float32)

UNARY = {
    ops.ID: (lambda x: x, False),
    ops.NEG: (lambda x: -x, False),
    ops.EXP: (np.exp, False),
    ops.LOG: (np.log, True),
    ops.SIGMOID: (lambda x: 1.0 / (1.0 + np.exp(-x)), False),
    ops.RELU: (lambda x: np.where(x > 0, x, 0.0), False),
    ops.TANH: (np.tanh, False),
    ops.INV: (lambda x: 1.0 / x, True),
    ops.SQRT: (np.sqrt, True),
    ops.ABS: (np.abs, False),
}  # op -> (numpy reference, needs positive input)
BINARY = {
    ops.ADD: (np.add, False),
    ops.SUB: (np.subtract, False),
    ops.MUL: (np.multiply, False),
    ops.DIV: (lambda x, y: x / y, True),
    ops.LT: (lambda x, y: (x < y) * 1.0, False),
    ops.GT: (lambda x, y: (x > y) * 1.0, False),
    ops.LE: (lambda x, y: (x <= y) * 1.0, False),
    ops.GE: (lambda x, y: (x >= y) * 1.0, False),
    ops.EQ: (lambda x, y: (x == y) * 1.0, False),
    ops.NE: (lambda x, y: (x != y) * 1.0, False),
    ops.MAX: (lambda x, y: np.where(x >= y, x, y), False),
    ops.MIN: (lambda x, y: np.where(x <= y, x, y), False),
    ops.POW: (np.power, True),
    ops.LOG_BACK: (lambda x, d: d / x, True),
    ops.RELU_BACK: (lambda x, d: np.where(x > 0, d, 0.0), False),
    ops.SIGMOID_BACK: (lambda x, d: d * np.exp(-x) / (1 + np.exp(-x)) ** 2, False),
    ops.TANH_BACK: (lambda x, d: d * (1 - np.tanh(x) ** 2), False),
}
REDUCE = {ops.ADD: np.sum, ops.MUL: np.prod, ops.MAX: np.max, ops.MIN: np.min}

shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


class Layout(NamedTuple):
    """How to build the same strided view on any backend, and its values in numpy."""

    build: Callable[[Any], TensorData]
    expected: np.ndarray
    kind: str


@st.composite
def layouts(draw: st.DrawFn, shape: tuple[int, ...], dtype: Any, positive: bool) -> Layout:
    """A contiguous, permuted, sliced (with offset) or broadcast view of `shape`."""
    low, high = (0.5, 2.0) if positive else (-2.0, 2.0)
    elements = st.floats(low, high, width=32 if dtype == np.float32 else 64)
    if dtype == np.int64:
        elements = st.integers(1 if positive else -5, 5)

    def values(base_shape: tuple[int, ...]) -> np.ndarray:
        return draw(hnp.arrays(dtype, base_shape, elements=elements))

    n = len(shape)
    kind = draw(st.sampled_from(["contiguous", "permuted", "sliced", "broadcast"]))
    if kind == "permuted" and n > 1:
        perm = draw(st.permutations(range(n)))
        base_shape = [0] * n
        for i, p in enumerate(perm):
            base_shape[p] = shape[i]
        base = values(tuple(base_shape))
        return Layout(lambda be: be.from_numpy(base).permute(*perm), base.transpose(perm), kind)
    if kind == "sliced":
        base = values(tuple(2 * s + 1 for s in shape))
        every_other = tuple(slice(1, None, 2) for _ in shape)

        def sliced(be: Any) -> TensorData:
            data = be.from_numpy(base)
            for d in range(n):
                data = data.narrow(d, every_other[d])
            return data

        return Layout(sliced, base[every_other], kind)
    if kind == "broadcast":
        ones = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        base = values(tuple(1 if one else s for one, s in zip(ones, shape, strict=True)))
        return Layout(
            lambda be: be.from_numpy(base).expand(shape), np.broadcast_to(base, shape), kind
        )
    base = values(shape)
    return Layout(lambda be: be.from_numpy(base), base, "contiguous")


def check(cuda_out: TensorData, simple_out: TensorData, expected: Any, dtype: Any) -> None:
    got = get_backend("cuda").to_numpy(cuda_out)
    spec = get_backend("simple").to_numpy(simple_out)
    rtol = 1e-5 if dtype == np.float32 else 1e-10
    assert got.dtype == spec.dtype
    np.testing.assert_allclose(got, spec, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(got, np.asarray(expected).astype(got.dtype), rtol=rtol, atol=rtol)


@pytest.mark.task3_3
@FEW
@given(st.data(), shapes, st.sampled_from(sorted(UNARY)), st.sampled_from(FLOATS))
def test_map_matches_simple_and_numpy(data: Any, shape: Any, op: int, dtype: Any) -> None:
    reference, positive = UNARY[op]
    layout = data.draw(layouts(shape, dtype, positive))
    results = [
        get_backend(name).map(op, layout.build(get_backend(name))) for name in ("cuda", "simple")
    ]
    check(*results, reference(layout.expected.astype(np.float64)), dtype)


@pytest.mark.task3_3
@FEW
@given(st.data(), shapes, st.sampled_from(sorted(BINARY)), st.sampled_from(FLOATS))
def test_zip_broadcasts_like_numpy(data: Any, shape: Any, op: int, dtype: Any) -> None:
    reference, positive = BINARY[op]
    other = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
    other_shape = tuple(1 if one else s for one, s in zip(other, shape, strict=True))
    other_shape = other_shape[data.draw(st.integers(0, len(shape) - 1)) :]
    first, second = data.draw(st.permutations([shape, other_shape]))
    a = data.draw(layouts(first, dtype, positive))
    b = data.draw(layouts(second, dtype, positive))
    results = [
        get_backend(name).zip(op, a.build(get_backend(name)), b.build(get_backend(name)))
        for name in ("cuda", "simple")
    ]
    check(*results, reference(a.expected.astype(np.float64), b.expected.astype(np.float64)), dtype)


@pytest.mark.task3_3
@FEW
@given(st.data(), shapes, st.sampled_from(sorted(REDUCE)), st.sampled_from(FLOATS))
def test_reduce_matches_simple_and_numpy(data: Any, shape: Any, op: int, dtype: Any) -> None:
    layout = data.draw(layouts(shape, dtype, positive=False))
    dim = data.draw(st.integers(0, len(shape) - 1))
    results = [
        get_backend(name).reduce(op, layout.build(get_backend(name)), dim)
        for name in ("cuda", "simple")
    ]
    check(*results, REDUCE[op](layout.expected, axis=dim, keepdims=True), dtype)


@pytest.mark.task3_3
@settings(max_examples=5, deadline=None)
@given(st.data(), shapes)
def test_map_writes_into_strided_out(data: Any, shape: Any) -> None:
    layout = data.draw(layouts(shape, np.float64, positive=False))
    perm = tuple(reversed(range(len(shape))))
    for name in ("cuda", "simple"):
        backend = get_backend(name)
        out = backend.empty(tuple(shape[p] for p in perm), np.float64).permute(*perm)
        backend.copy_into(out, layout.build(backend))
        np.testing.assert_array_equal(backend.to_numpy(out), layout.expected)


@pytest.mark.task3_3
@settings(max_examples=5, deadline=None)
@given(st.data(), shapes, st.sampled_from([ops.ADD, ops.MUL, ops.MAX, ops.SUB]))
def test_int64_zip_and_reduce_stay_exact(data: Any, shape: Any, op: int) -> None:
    a = data.draw(layouts(shape, np.int64, positive=False))
    b = data.draw(layouts(shape, np.int64, positive=False))
    cuda = get_backend("cuda")
    zipped = cuda.zip(op, a.build(cuda), b.build(cuda))
    expected = BINARY[op][0](a.expected, b.expected).astype(np.int64)
    assert cuda.to_numpy(zipped).dtype == np.int64
    np.testing.assert_array_equal(cuda.to_numpy(zipped), expected)
    if op in REDUCE:
        summed = cuda.to_numpy(cuda.reduce(op, zipped, 0))
        np.testing.assert_array_equal(summed, REDUCE[op](expected, axis=0, keepdims=True))


@pytest.mark.task3_3
def test_reduce_folds_into_the_start_value_already_in_out() -> None:
    cuda = get_backend("cuda")
    a = cuda.from_numpy(np.arange(1.0, 13.0).reshape(3, 4))
    out = cuda.from_numpy(np.array([[10.0], [20.0], [30.0]]))
    cuda.ops.reduce(ops.ADD, *out.tuple(), *a.tuple(), 1)
    np.testing.assert_array_equal(cuda.to_numpy(out).ravel(), [20.0, 46.0, 72.0])


@pytest.mark.task3_3
@pytest.mark.parametrize("n, threads", [(11, 4), (37, None), (300, None), (5, 8)])
def test_reduce_covers_any_length_in_one_launch(n: int, threads: Any) -> None:
    cuda = get_backend("cuda")
    values = np.random.default_rng(n).uniform(-1, 1, size=(2, n))
    a = cuda.from_numpy(values)
    for op in (ops.ADD, ops.MAX):
        out = cuda.full((2, 1), 0.0 if op == ops.ADD else -np.inf, np.float64)
        cuda_ops.CudaOps.reduce(op, *out.tuple(), *a.tuple(), 1, threads=threads)
        expected = REDUCE[op](values, axis=1, keepdims=True)
        np.testing.assert_allclose(cuda.to_numpy(out), expected, rtol=1e-12)


@pytest.mark.task3_3
def test_grid_stride_loops_cover_more_cells_than_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda_ops, "MAX_BLOCKS", 1)
    cuda = get_backend("cuda")
    values = np.linspace(-1, 1, 300).reshape(3, 100)
    a = cuda.from_numpy(values)
    np.testing.assert_allclose(cuda.to_numpy(cuda.map(ops.NEG, a)), -values)
    np.testing.assert_allclose(cuda.to_numpy(cuda.zip(ops.ADD, a, a)), 2 * values)
    np.testing.assert_allclose(
        cuda.to_numpy(cuda.reduce(ops.ADD, a.permute(1, 0), 1)), values.sum(0)[:, None]
    )


@pytest.mark.task3_3
def test_storage_stays_on_the_device() -> None:
    cuda = get_backend("cuda")
    a = cuda.from_numpy(np.ones((2, 3)))
    b = cuda.zip(ops.ADD, cuda.map(ops.EXP, a), a)
    for data in (a, b, cuda.reduce(ops.ADD, b, 0)):
        assert hasattr(data.base, "copy_to_host") and not isinstance(data.base, np.ndarray)
    host = cuda_ops.CudaOps.to_numpy(b.storage)
    assert isinstance(host, np.ndarray)
    np.testing.assert_allclose(host, np.e + 1.0)


@pytest.mark.task3_3
def test_bad_input_raises_before_any_launch() -> None:
    cuda = get_backend("cuda")
    nine = cuda.from_numpy(np.zeros((1,) * 9))
    with pytest.raises(ValueError, match=r"shape \(1, 1, 1, 1, 1, 1, 1, 1, 1\).*MAX_DIMS = 8"):
        cuda.map(ops.NEG, nine)
    a = cuda.from_numpy(np.zeros((2, 3)))
    out, host = cuda.empty((2, 3), np.float64), np.zeros(6)
    with pytest.raises(TypeError, match="device storage.*ndarray"):
        cuda.ops.map(ops.NEG, *out.tuple(), host, *a.tuple()[1:])
    with pytest.raises(ValueError, match=r"\(2, 3\) does not broadcast to out shape \(3, 2\)"):
        cuda.ops.map(ops.NEG, out.storage, np.array([3, 2]), np.array([2, 1]), *a.tuple())
    with pytest.raises(ValueError, match="reaches cell 6 of a storage of 6 cells"):
        cuda.ops.map(ops.NEG, *out.tuple(), a.storage, np.array([2, 3]), np.array([4, 1]))
    with pytest.raises(ValueError, match="cannot fold dim 2"):
        cuda.ops.reduce(ops.ADD, *out.tuple(), *a.tuple(), 2)
    with pytest.raises(TypeError, match="dtype float32, expected float64"):
        cuda.ops.reduce(ops.ADD, *cuda.empty((2, 1), np.float32).tuple(), *a.tuple(), 1)


def matmul_operands(draw: st.DrawFn, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    batch = draw(st.integers(1, 2))
    rows, inner, cols = (draw(st.integers(1, 5)) for _ in range(3))
    a_batch, b_batch = draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    elements = st.integers(-4, 4) if dtype == np.int64 else st.floats(-2, 2, width=32)
    a = draw(hnp.arrays(dtype, (a_batch, rows, inner), elements=elements))
    b = draw(hnp.arrays(dtype, (b_batch, inner, cols), elements=elements))
    return a, b


@pytest.mark.task3_4
@FEW
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]), st.booleans())
def test_small_tile_matmul_any_size_batched_broadcast(
    data: Any, dtype: Any, transposed: bool
) -> None:
    a, b = matmul_operands(data.draw, dtype)
    cuda = get_backend("cuda")
    left = cuda.from_numpy(a)
    if transposed:  # b given as a permuted view of its transpose's storage
        right = cuda.from_numpy(np.ascontiguousarray(b.transpose(0, 2, 1))).permute(0, 2, 1)
    else:
        right = cuda.from_numpy(b)
    out = cuda.empty((max(a.shape[0], b.shape[0]), a.shape[1], b.shape[2]), dtype)
    cuda_ops.CudaOps.matmul(*out.tuple(), *left.tuple(), *right.tuple(), tile=2)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(cuda.to_numpy(out), expected, rtol=rtol, atol=rtol)


matmul_shapes = st.sampled_from(
    [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)),
     ((2, 1, 2, 3), (3, 3, 2)), ((3, 2, 3), (3, 1)), ((1, 3, 2), (2, 2, 3))]
)  # fmt: skip


@pytest.mark.task3_4
@settings(max_examples=7, deadline=None)
@given(matmul_shapes, st.integers(0, 1000))
def test_backend_matmul_promotes_and_broadcasts(shapes: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(-1, 1, size=shape) for shape in shapes)
    results = []
    for name in ("cuda", "simple"):
        backend = get_backend(name)
        results.append(backend.matmul(backend.from_numpy(a), backend.from_numpy(b)))
    check(*results, np.matmul(a, b), np.float64)


@pytest.mark.task3_4
def test_default_tile_handles_sizes_that_are_not_multiples_of_it() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, size=(9, 10)), rng.uniform(-1, 1, size=(10, 11))
    cuda = get_backend("cuda")
    out = cuda.matmul(cuda.from_numpy(a), cuda.from_numpy(b))
    np.testing.assert_allclose(cuda.to_numpy(out), a @ b, rtol=1e-12)


@pytest.mark.task3_4
def test_matmul_rejects_bad_operands_before_launch() -> None:
    cuda = get_backend("cuda")
    a = cuda.from_numpy(np.ones((1, 2, 3)))
    out = cuda.empty((1, 2, 2), np.float64)
    with pytest.raises(ValueError, match=r"out \(1, 2, 2\), a \(1, 2, 3\), b \(1, 2, 3\)"):
        cuda.ops.matmul(*out.tuple(), *a.tuple(), *a.tuple())
    with pytest.raises(ValueError, match="tile=33"):
        cuda_ops.CudaOps.matmul(*out.tuple(), *a.tuple(), *a.permute(0, 2, 1).tuple(), tile=33)
    b32 = cuda.from_numpy(np.ones((1, 3, 2), np.float32))
    with pytest.raises(TypeError, match="b has dtype float32, expected float64"):
        cuda.ops.matmul(*out.tuple(), *a.tuple(), *b32.tuple())


@pytest.mark.task3_4
def test_matmul_with_empty_inner_dim_writes_zeros() -> None:
    cuda = get_backend("cuda")
    a, b = cuda.from_numpy(np.zeros((1, 2, 0))), cuda.from_numpy(np.zeros((1, 0, 3)))
    out = cuda.full((1, 2, 3), np.nan, np.float64)
    cuda.ops.matmul(*out.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_array_equal(cuda.to_numpy(out), np.zeros((1, 2, 3)))
