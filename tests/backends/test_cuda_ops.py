"""CudaOps kernels against SimpleOps and numpy, on a GPU or under Numba's CUDA simulator.

Inputs come from `tests/strategies.py` (contiguous, permuted, sliced over NaN-filled
buffers, and broadcast layouts). The simulator is slow, so shapes are tiny (<= 3
dims, sides <= 3) and each property runs a handful of examples. Without a GPU and
without NUMBA_ENABLE_CUDASIM=1 every test here shows as skipped, with the reason.
Task tests go through the entry points `CudaOps.map`, `zip`, `reduce` and `matmul` (or
the "cuda" backend); the checks `CudaOps` makes before a launch are given code (`extra`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minifw.backends import cuda_available, get_backend
from minifw.core import operators as ops
from minifw.core.tensor_data import TensorData
from tests.strategies import (
    ANY,
    OPS,
    POSITIVE,
    Domain,
    assert_close,
    broadcastable_shapes,
    matmul_shapes,
    on_backend,
    shapes,
    strided,
)

CUDA = cuda_available()
pytestmark = pytest.mark.skipif(
    not CUDA, reason="cuda backend: no CUDA GPU here and NUMBA_ENABLE_CUDASIM=1 is not set"
)
cuda_ops: Any = importlib.import_module("minifw.cuda_ops") if CUDA else None

FEW = settings(max_examples=15, deadline=None)
FLOATS = (np.float64, np.float32)
TINY = shapes(1, 3, 1, 3)


class Kernel(NamedTuple):
    """One op code with its numpy reference and the domain of each argument."""

    name: str
    code: int
    ref: Callable[..., Any]
    domains: tuple[Domain, ...]


def _sigmoid_back(x: Any, d: Any) -> Any:
    return d * np.exp(-x) / (1 + np.exp(-x)) ** 2


# The shared op table's kernel ops, plus the codes only kernels see (no Tensor method).
KERNELS = [Kernel(s.name, s.code, s.ref, s.domain) for s in OPS if s.code is not None] + [
    Kernel("id", ops.ID, lambda x: x, (ANY,)),
    Kernel("max", ops.MAX, lambda x, y: np.where(x >= y, x, y), (ANY, ANY)),
    Kernel("min", ops.MIN, lambda x, y: np.where(x <= y, x, y), (ANY, ANY)),
    Kernel("pow", ops.POW, np.power, (POSITIVE, ANY)),
    Kernel("log_back", ops.DERIVATIVES[ops.LOG], lambda x, d: d / x, (POSITIVE, ANY)),
    Kernel(
        "relu_back", ops.DERIVATIVES[ops.RELU], lambda x, d: np.where(x > 0, d, 0 * d), (ANY, ANY)
    ),
    Kernel("sigmoid_back", ops.DERIVATIVES[ops.SIGMOID], _sigmoid_back, (ANY, ANY)),
    Kernel(
        "tanh_back", ops.DERIVATIVES[ops.TANH], lambda x, d: d * (1 - np.tanh(x) ** 2), (ANY, ANY)
    ),
]
UNARY = [k for k in KERNELS if len(k.domains) == 1]
BINARY = [k for k in KERNELS if len(k.domains) == 2]
REDUCE = {ops.ADD: np.sum, ops.MUL: np.prod, ops.MAX: np.max, ops.MIN: np.min}


def elements(domain: Domain, dtype: Any) -> st.SearchStrategy[Any]:
    values = domain.elements()
    return values.map(np.float32) if dtype == np.float32 else values


def check(cuda_out: TensorData, simple_out: TensorData, expected: Any, dtype: Any) -> None:
    got = get_backend("cuda").to_numpy(cuda_out)
    spec = get_backend("simple").to_numpy(simple_out)
    tol = 1e-5 if dtype == np.float32 else 1e-10
    assert got.dtype == spec.dtype == np.dtype(dtype)
    assert_close(got, spec, rtol=tol, atol=tol)
    assert_close(got, np.asarray(expected), rtol=tol, atol=tol)


@pytest.mark.task3_3
@FEW
@given(st.data(), TINY, st.sampled_from(UNARY), st.sampled_from(FLOATS))
def test_map_matches_simple_and_numpy(data: Any, shape: Any, kernel: Kernel, dtype: Any) -> None:
    x = data.draw(strided(shape, dtype, elements(kernel.domains[0], dtype)))
    cuda, simple = get_backend("cuda"), get_backend("simple")
    got = cuda.map(kernel.code, on_backend(x.data, cuda))
    check(got, simple.map(kernel.code, x.data), kernel.ref(x.values), dtype)


@pytest.mark.task3_3
@FEW
@given(st.data(), broadcastable_shapes(3, 3), st.sampled_from(BINARY), st.sampled_from(FLOATS))
def test_zip_broadcasts_like_numpy(data: Any, pair: Any, kernel: Kernel, dtype: Any) -> None:
    a, b = (
        data.draw(strided(shape, dtype, elements(domain, dtype)))
        for shape, domain in zip(pair, kernel.domains, strict=True)
    )
    cuda, simple = get_backend("cuda"), get_backend("simple")
    got = cuda.zip(kernel.code, on_backend(a.data, cuda), on_backend(b.data, cuda))
    check(got, simple.zip(kernel.code, a.data, b.data), kernel.ref(a.values, b.values), dtype)


@pytest.mark.task3_3
@FEW
@given(st.data(), TINY, st.sampled_from(sorted(REDUCE)), st.sampled_from(FLOATS))
def test_reduce_matches_simple_and_numpy(data: Any, shape: Any, op: int, dtype: Any) -> None:
    x = data.draw(strided(shape, dtype, elements(Domain(-2.0, 2.0), dtype)))
    dim = data.draw(st.integers(0, len(shape) - 1))
    cuda, simple = get_backend("cuda"), get_backend("simple")
    got = cuda.reduce(op, on_backend(x.data, cuda), dim)
    check(
        got, simple.reduce(op, x.data, dim), REDUCE[op](x.values, axis=dim, keepdims=True), dtype
    )


@pytest.mark.task3_3
@settings(max_examples=5, deadline=None)
@given(st.data(), TINY)
def test_map_writes_into_strided_out(data: Any, shape: Any) -> None:
    x = data.draw(strided(shape))
    perm = tuple(reversed(range(len(shape))))
    cuda = get_backend("cuda")
    out = cuda.empty(tuple(shape[p] for p in perm), np.float64).permute(*perm)
    cuda.copy_into(out, on_backend(x.data, cuda))
    np.testing.assert_array_equal(cuda.to_numpy(out), x.values)


@pytest.mark.task3_3
@settings(max_examples=5, deadline=None)
@given(st.data(), TINY, st.sampled_from([ops.ADD, ops.MUL, ops.MAX, ops.SUB]))
def test_int64_zip_and_reduce_stay_exact(data: Any, shape: Any, op: int) -> None:
    a, b = (data.draw(strided(shape, np.int64)) for _ in range(2))
    cuda = get_backend("cuda")
    zipped = cuda.zip(op, on_backend(a.data, cuda), on_backend(b.data, cuda))
    expected = {ops.ADD: np.add, ops.MUL: np.multiply, ops.MAX: np.maximum, ops.SUB: np.subtract}[
        op
    ](a.values, b.values)
    assert cuda.to_numpy(zipped).dtype == np.int64
    np.testing.assert_array_equal(cuda.to_numpy(zipped), expected)
    if op in REDUCE:
        summed = cuda.to_numpy(cuda.reduce(op, zipped, 0))
        np.testing.assert_array_equal(summed, REDUCE[op](expected, axis=0, keepdims=True))


# A chosen-input test also checks a couple of drawn cases, so kernels fitted to the
# chosen inputs do not pass (two examples: the simulator runs every thread in Python).
TWO = settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def check_drawn_cuda_kernels(data: Any) -> None:
    """map, zip and reduce of a drawn float64 array on the CUDA backend, against SimpleOps."""
    shape = data.draw(TINY, label="shape")
    x = data.draw(strided(shape, np.float64, elements(Domain(-2.0, 2.0), np.float64)))
    cuda, simple = get_backend("cuda"), get_backend("simple")
    on = on_backend(x.data, cuda)
    check(cuda.map(ops.NEG, on), simple.map(ops.NEG, x.data), -x.values, np.float64)
    check(cuda.zip(ops.ADD, on, on), simple.zip(ops.ADD, x.data, x.data), 2 * x.values,
          np.float64)  # fmt: skip
    dim = data.draw(st.integers(0, len(shape) - 1), label="dim")
    check(cuda.reduce(ops.ADD, on, dim), simple.reduce(ops.ADD, x.data, dim),
          x.values.sum(axis=dim, keepdims=True), np.float64)  # fmt: skip


def check_drawn_cuda_matmul(data: Any) -> None:
    """The tiled matmul of drawn float64 operands with a drawn tile, against numpy."""
    rows, inner, cols = (data.draw(st.integers(1, 5), label="side") for _ in range(3))
    a = data.draw(strided((1, rows, inner), np.float64, elements(Domain(-2.0, 2.0), np.float64)))
    b = data.draw(strided((1, inner, cols), np.float64, elements(Domain(-2.0, 2.0), np.float64)))
    cuda = get_backend("cuda")
    out = cuda.empty((1, rows, cols), np.float64)
    tile = data.draw(st.sampled_from([2, 4]), label="tile")
    cuda_ops.CudaOps.matmul(*out.tuple(), *on_backend(a.data, cuda).tuple(),
                            *on_backend(b.data, cuda).tuple(), tile=tile)  # fmt: skip
    assert_close(cuda.to_numpy(out), np.matmul(a.values, b.values), rtol=1e-12, atol=1e-12)


@pytest.mark.task3_3
@TWO
@given(data=st.data())
def test_reduce_folds_into_the_start_value_already_in_out(data: Any) -> None:
    check_drawn_cuda_kernels(data)
    cuda = get_backend("cuda")
    a = cuda.from_numpy(np.arange(1.0, 13.0).reshape(3, 4))
    out = cuda.from_numpy(np.array([[10.0], [20.0], [30.0]]))
    cuda.ops.reduce(ops.ADD, *out.tuple(), *a.tuple(), 1)
    np.testing.assert_array_equal(cuda.to_numpy(out).ravel(), [20.0, 46.0, 72.0])


@pytest.mark.task3_3
@pytest.mark.parametrize("n, threads", [(11, 4), (37, None), (300, None), (5, 8)])
@TWO
@given(data=st.data())
def test_reduce_covers_any_length_in_one_launch(n: int, threads: Any, data: Any) -> None:
    check_drawn_cuda_kernels(data)
    cuda = get_backend("cuda")
    values = np.random.default_rng(n).uniform(-1, 1, size=(2, n))
    a = cuda.from_numpy(values)
    for op in (ops.ADD, ops.MAX):
        out = cuda.full((2, 1), 0.0 if op == ops.ADD else -np.inf, np.float64)
        cuda_ops.CudaOps.reduce(op, *out.tuple(), *a.tuple(), 1, threads=threads)
        expected = REDUCE[op](values, axis=1, keepdims=True)
        np.testing.assert_allclose(cuda.to_numpy(out), expected, rtol=1e-12)


@pytest.mark.task3_3
@pytest.mark.parametrize("op, expected", [(ops.MAX, [3.0, -1.0]), (ops.MUL, [243.0, -1.0])])
@TWO
@given(data=st.data())
def test_reduce_tree_skips_shared_slots_no_thread_filled(
    op: int, expected: list[float], data: Any
) -> None:
    check_drawn_cuda_kernels(data)
    # 5 cells per row and 8 threads: slots 5..7 of the shared buffer hold no value
    # (garbage, or the previous row's partials); folding them in would change the result.
    cuda = get_backend("cuda")
    a = cuda.from_numpy(np.array([[3.0] * 5, [-1.0] * 5]))
    out = cuda.full((2, 1), -np.inf if op == ops.MAX else 1.0, np.float64)
    cuda_ops.CudaOps.reduce(op, *out.tuple(), *a.tuple(), 1, threads=8)
    np.testing.assert_array_equal(cuda.to_numpy(out).ravel(), expected)


@pytest.mark.task3_3
@TWO
@given(data=st.data())
def test_grid_stride_loops_cover_more_cells_than_threads(
    monkeypatch: pytest.MonkeyPatch, data: Any
) -> None:
    check_drawn_cuda_kernels(data)
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
@TWO
@given(data=st.data())
def test_storage_stays_on_the_device(data: Any) -> None:
    check_drawn_cuda_kernels(data)
    cuda = get_backend("cuda")
    a = cuda.from_numpy(np.ones((2, 3)))
    b = cuda.zip(ops.ADD, cuda.map(ops.EXP, a), a)
    for data in (a, b, cuda.reduce(ops.ADD, b, 0)):
        assert hasattr(data.base, "copy_to_host") and not isinstance(data.base, np.ndarray)
    host = cuda_ops.CudaOps.to_numpy(b.storage)
    assert isinstance(host, np.ndarray)
    np.testing.assert_allclose(host, np.e + 1.0)


@pytest.mark.extra  # the launcher's checks are given code, no course task
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


@pytest.mark.task3_4
@FEW
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]))
def test_small_tile_matmul_any_size_batched_broadcast(data: Any, dtype: Any) -> None:
    batch, rows, inner, cols = (data.draw(st.integers(1, 5)) for _ in range(4))
    a_batch, b_batch = data.draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    values = st.integers(-4, 4) if dtype == np.int64 else elements(Domain(-2.0, 2.0), dtype)
    a = data.draw(strided((a_batch, rows, inner), dtype, values))
    b = data.draw(strided((b_batch, inner, cols), dtype, values))
    cuda = get_backend("cuda")
    out = cuda.empty((max(a_batch, b_batch), rows, cols), dtype)
    lhs, rhs = on_backend(a.data, cuda), on_backend(b.data, cuda)
    cuda_ops.CudaOps.matmul(*out.tuple(), *lhs.tuple(), *rhs.tuple(), tile=2)
    expected = np.matmul(a.values.astype(np.float64), b.values.astype(np.float64))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert_close(cuda.to_numpy(out), expected, rtol=tol, atol=tol)


@pytest.mark.task3_4
@settings(max_examples=8, deadline=None)
@given(st.data(), matmul_shapes(max_batch_dims=2, max_side=3))
def test_backend_matmul_promotes_and_broadcasts(data: Any, pair: Any) -> None:
    a, b = (data.draw(strided(shape)) for shape in pair)
    cuda, simple = get_backend("cuda"), get_backend("simple")
    got = cuda.matmul(on_backend(a.data, cuda), on_backend(b.data, cuda))
    check(got, simple.matmul(a.data, b.data), np.matmul(a.values, b.values), np.float64)


@pytest.mark.task3_4
@TWO
@given(data=st.data())
def test_default_tile_handles_sizes_that_are_not_multiples_of_it(data: Any) -> None:
    check_drawn_cuda_matmul(data)
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, size=(9, 10)), rng.uniform(-1, 1, size=(10, 11))
    cuda = get_backend("cuda")
    out = cuda.matmul(cuda.from_numpy(a), cuda.from_numpy(b))
    np.testing.assert_allclose(cuda.to_numpy(out), a @ b, rtol=1e-12)


@pytest.mark.extra  # the launcher's checks are given code, no course task
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
@TWO
@given(data=st.data())
def test_matmul_with_empty_inner_dim_writes_zeros(data: Any) -> None:
    check_drawn_cuda_matmul(data)
    cuda = get_backend("cuda")
    a, b = cuda.from_numpy(np.zeros((1, 2, 0))), cuda.from_numpy(np.zeros((1, 0, 3)))
    out = cuda.full((1, 2, 3), np.nan, np.float64)
    cuda.ops.matmul(*out.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_array_equal(cuda.to_numpy(out), np.zeros((1, 2, 3)))


@pytest.mark.task3_4
@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.filterwarnings("ignore:.*invalid value encountered:RuntimeWarning")
@TWO
@given(data=st.data())
def test_cells_past_the_edge_load_as_zero_not_stale(side: str, data: Any) -> None:
    check_drawn_cuda_matmul(data)
    # inner = 3 with tile 2: the second k-tile has one cell past the edge. Stale shared
    # memory there (the inf of the first tile) would turn inf * 0 into NaN. (Threads
    # owning no cell of out do compute inf * 0, hence the simulator's warning.)
    cuda = get_backend("cuda")
    a = np.array([[[1.0, np.inf if side == "a" else 2.0, 1.0]]])
    b = np.array([[[1.0], [np.inf if side == "b" else 2.0], [1.0]]])
    out = cuda.empty((1, 1, 1), np.float64)
    lhs, rhs = cuda.from_numpy(a), cuda.from_numpy(b)
    cuda_ops.CudaOps.matmul(*out.tuple(), *lhs.tuple(), *rhs.tuple(), tile=2)
    assert cuda.to_numpy(out).item() == np.inf
