"""CudaOps: the kernel contract on an NVIDIA GPU, with Numba CUDA kernels.

Storage of a "cuda" tensor is a Numba device array that stays on the GPU between
operations: data crosses to or from the host only in `from_numpy` and `to_numpy`.
The index helpers of `tensor_data.py` and the scalar functions of `scalar_math.py`
are recompiled unchanged as device functions, so every kernel computes exactly
what the reference kernels of `tensor_ops.SimpleOps` compute.

`CudaOps`' methods check what the kernels trust (dims, dtypes, devices, that every
index stays inside its buffer), copy shapes and strides to the device (cached) and
pick the launch sizes. Under `NUMBA_ENABLE_CUDASIM=1` the same kernels run on the
CPU in Numba's simulator, slowly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numba.cuda
import numpy as np

from minifw._jit import compile_functions
from minifw.core import operators, tensor_data
from minifw.core.tensor_data import Index

MAX_DIMS = 8  # the longest shape a kernel accepts (its thread-local index buffers)
THREADS = 256  # threads per block of map and zip
MAX_BLOCKS = 4096  # blocks per map/zip/reduce launch; grid-stride loops cover the rest
MAX_GRID_YZ = 65535  # CUDA's limit on grid dims y and z
REDUCE_THREADS = 256  # most threads per reduce block: the size of its shared buffer
TILE = 32  # matmul tile side: a TILE x TILE block of threads per TILE x TILE block of out
SMALL_TILE = 8  # matmul tile used when the whole output fits in one SMALL_TILE tile
INDEX_CACHE_SIZE = 1024  # distinct shapes / strides kept on the device
# numba.cuda is not typed for mypy (its names depend on NUMBA_ENABLE_CUDASIM): one Any alias.
cuda: Any = numba.cuda
DTYPES = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))


def cuda_kernel(fn: Callable[..., None]) -> Any:
    """Compile `fn` as a CUDA kernel: `numba.cuda.jit` with a type mypy can follow."""
    return cuda.jit(fn)


_dev = compile_functions(
    [*operators.KERNEL_MODULES, tensor_data],
    operators.KERNEL_FUNCTIONS + tensor_data.KERNEL_FUNCTIONS,
    cuda.jit(device=True),
)
unary = _dev.unary
binary = _dev.binary
to_index = _dev.to_index
broadcast_index = _dev.broadcast_index
index_to_position = _dev.index_to_position

# Note on `index_to_position(strides, index)` below: the helper loops over the length
# of its FIRST argument. A thread-local index buffer is MAX_DIMS long while `strides`
# has exactly one entry per dim, so kernels pass `strides` first; the product
# sum(index[i] * strides[i]) is the same either way.

# BEGIN TASK 3.3


@cuda_kernel
def map_kernel(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any, size: int, dense: bool,
) -> None:  # fmt: skip
    """out[i] = unary(op, a[broadcast(i)]) for every cell i of out, one thread per cell.

    for i in range(thread_id, size, total_threads):          # grid-stride loop
        if dense: out[i] = unary(op, a[i])                     # same contiguous layout
        else: out_index = to_index(i); a_index = broadcast_index(out_index)
              out[position(out_index)] = unary(op, a[position(a_index)])

    Invariants: each cell of out is written once, by one thread; index buffers are
    thread-local; nothing is allocated in the loop.
    """
    out_index = cuda.local.array(MAX_DIMS, np.int64)
    a_index = cuda.local.array(MAX_DIMS, np.int64)
    for i in range(cuda.grid(1), size, cuda.gridsize(1)):
        if dense:
            out[i] = unary(op, a[i])
        else:
            to_index(i, out_shape, out_index)
            broadcast_index(out_index, out_shape, a_shape, a_index)
            value = a[index_to_position(a_strides, a_index)]
            out[index_to_position(out_strides, out_index)] = unary(op, value)


@cuda_kernel
def zip_kernel(
    op: int, out: Any, out_shape: Any, out_strides: Any,
    a: Any, a_shape: Any, a_strides: Any,
    b: Any, b_shape: Any, b_strides: Any, size: int, dense: bool,
) -> None:  # fmt: skip
    """out[i] = binary(op, a[broadcast(i)], b[broadcast(i)]), one thread per cell of out.

    for i in range(thread_id, size, total_threads):          # grid-stride loop
        if dense: out[i] = binary(op, a[i], b[i])             # same contiguous layout
        else: out_index = to_index(i); a_index, b_index = broadcast_index(out_index)
              out[position(out_index)] = binary(op, a[position(a_index)], b[...])

    Invariants: each cell of out is written once, by one thread; index buffers are
    thread-local; nothing is allocated in the loop.
    """
    out_index = cuda.local.array(MAX_DIMS, np.int64)
    a_index = cuda.local.array(MAX_DIMS, np.int64)
    b_index = cuda.local.array(MAX_DIMS, np.int64)
    for i in range(cuda.grid(1), size, cuda.gridsize(1)):
        if dense:
            out[i] = binary(op, a[i], b[i])
        else:
            to_index(i, out_shape, out_index)
            broadcast_index(out_index, out_shape, a_shape, a_index)
            broadcast_index(out_index, out_shape, b_shape, b_index)
            x = a[index_to_position(a_strides, a_index)]
            y = b[index_to_position(b_strides, b_index)]
            out[index_to_position(out_strides, out_index)] = binary(op, x, y)


@functools.cache
def make_reduce_kernel(dtype: np.dtype[Any]) -> Any:
    """Compile the reduce kernel whose shared-memory buffer holds `dtype` values.

    The kernel sets out[o] = fold of binary(op) over a[o with dim = 0..n-1], starting
    from out[o], with one block of T threads per cell o of out:

        for o in range(block_id, out_size, blocks):            # block-stride over out
            cache[t] = fold(a[o, k] for k in t, t + T, ...)    # block-stride over dim
            for s in T/2, T/4, ..., 1: cache[t] = op(cache[t], cache[t + s]) if t < s
            thread 0: out[o] = op(out[o], cache[0])

    Invariants: T is a power of two; threads t < min(T, n) hold a value, and the
    slots holding values stay a prefix of cache through the tree; out[o] is written
    once, by thread 0, and no partial result leaves the block.
    """
    shared_type = dtype.type  # numpy scalar type: numba's and numba-cuda's arrays take it

    @cuda_kernel
    def reduce_kernel(
        op: int, out: Any, out_shape: Any, out_strides: Any,
        a: Any, a_shape: Any, a_strides: Any, dim: int, out_size: int,
    ) -> None:  # fmt: skip
        """Fold `a` along `dim` into out: see `make_reduce_kernel`."""
        cache = cuda.shared.array(REDUCE_THREADS, shared_type)
        index = cuda.local.array(MAX_DIMS, np.int64)
        t, threads = cuda.threadIdx.x, cuda.blockDim.x
        n, step = a_shape[dim], a_strides[dim]
        for o in range(cuda.blockIdx.x, out_size, cuda.gridDim.x):
            to_index(o, out_shape, index)  # index[dim] == 0: out has size 1 there
            base = index_to_position(a_strides, index)
            if t < n:
                acc = a[base + t * step]
                for k in range(t + threads, n, threads):
                    acc = binary(op, acc, a[base + k * step])
                cache[t] = acc
            cuda.syncthreads()
            s = threads // 2
            while s > 0:
                if t < s and t + s < n:
                    cache[t] = binary(op, cache[t], cache[t + s])
                cuda.syncthreads()
                s //= 2
            if t == 0:
                position = index_to_position(out_strides, index)
                out[position] = binary(op, out[position], cache[0])
            cuda.syncthreads()  # cache is reused by the next o

    return reduce_kernel


# END TASK 3.3

# BEGIN TASK 3.4


@functools.cache
def make_matmul_kernel(tile: int, dtype: np.dtype[Any]) -> Any:
    """Compile the tiled matmul kernel for `tile` x `tile` blocks of `dtype` values.

    The kernel sets out[n, i, j] = sum_k a[n, i, k] * b[n, k, j], one tile of out per
    block of tile x tile threads; thread (ty, tx) owns out[n, i0 + ty, j]:

        for n, i0 in this block's batches (grid z) and row tiles (grid y):
            acc = 0
            for k0 in range(0, K, tile):
                a_tile[ty, tx] = a[n, i0 + ty, k0 + tx]; b_tile[ty, tx] = b[n, k0 + ty, j]
                sync; acc += sum_k a_tile[ty, k] * b_tile[k, tx]; sync
            out[n, i0 + ty, j] = acc                   # if the cell lies inside out

    Invariants: each cell of a and b is read from global memory once per block that
    needs it; cells past the edges load as 0, so any size works; a batch of size 1
    has batch stride 0 (broadcast); each cell of out is written once.
    """
    shared_type = dtype.type
    zero = dtype.type(0)

    @cuda_kernel
    def matmul_kernel(
        out: Any, out_shape: Any, out_strides: Any,
        a: Any, a_shape: Any, a_strides: Any,
        b: Any, b_shape: Any, b_strides: Any,
    ) -> None:  # fmt: skip
        """Multiply batched 3-D operands: see `make_matmul_kernel`."""
        a_tile = cuda.shared.array((tile, tile), shared_type)
        b_tile = cuda.shared.array((tile, tile), shared_type)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        rows, cols, inner = out_shape[1], out_shape[2], a_shape[2]
        a_batch = a_strides[0] if a_shape[0] > 1 else 0
        b_batch = b_strides[0] if b_shape[0] > 1 else 0
        a_row, a_col, b_row, b_col = a_strides[1], a_strides[2], b_strides[1], b_strides[2]
        j = cuda.blockIdx.x * tile + tx
        for n in range(cuda.blockIdx.z, out_shape[0], cuda.gridDim.z):
            for i0 in range(cuda.blockIdx.y * tile, rows, cuda.gridDim.y * tile):
                i = i0 + ty
                acc = zero
                for k0 in range(0, inner, tile):
                    a_tile[ty, tx] = zero
                    if i < rows and k0 + tx < inner:
                        a_tile[ty, tx] = a[n * a_batch + i * a_row + (k0 + tx) * a_col]
                    b_tile[ty, tx] = zero
                    if k0 + ty < inner and j < cols:
                        b_tile[ty, tx] = b[n * b_batch + (k0 + ty) * b_row + j * b_col]
                    cuda.syncthreads()
                    for k in range(tile):
                        acc += a_tile[ty, k] * b_tile[k, tx]
                    cuda.syncthreads()
                if i < rows and j < cols:
                    out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = acc

    return matmul_kernel


# END TASK 3.4


class CudaOps:
    """The kernel contract on a CUDA GPU: storage is a Numba device array.

    `map`, `zip`, `reduce` and `matmul` have the positional signatures of
    `tensor_ops.KernelSet`: each checks what its kernel trusts, copies shapes and
    strides to the device (cached), picks the launch sizes and launches.
    """

    device = "cuda"

    @staticmethod
    def map(
        op: int, out: Any, out_shape: Index, out_strides: Index,
        a: Any, a_shape: Index, a_strides: Index,
    ) -> None:  # fmt: skip
        """Check, then launch `map_kernel`: out[i] = unary(op, a[i]), `a` broadcast to out."""
        size = _check_layout("map", "out", out, out_shape, out_strides)
        _check_input("map", "a", a, a_shape, a_strides, out_shape)
        if size == 0:
            return
        dense = _dense(out_shape, out_strides, (a_shape, a_strides))
        blocks, threads = _grid_1d(size)
        map_kernel[blocks, threads](
            op, out, _to_device(out_shape), _to_device(out_strides),
            _as_numbers(a), _to_device(a_shape), _to_device(a_strides), size, dense,
        )  # fmt: skip

    @staticmethod
    def zip(
        op: int, out: Any, out_shape: Index, out_strides: Index,
        a: Any, a_shape: Index, a_strides: Index,
        b: Any, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """Check, then launch `zip_kernel`: out[i] = binary(op, a[i], b[i]), broadcasting."""
        size = _check_layout("zip", "out", out, out_shape, out_strides)
        _check_input("zip", "a", a, a_shape, a_strides, out_shape)
        _check_input("zip", "b", b, b_shape, b_strides, out_shape)
        if size == 0:
            return
        dense = _dense(out_shape, out_strides, (a_shape, a_strides), (b_shape, b_strides))
        blocks, threads = _grid_1d(size)
        zip_kernel[blocks, threads](
            op, out, _to_device(out_shape), _to_device(out_strides),
            _as_numbers(a), _to_device(a_shape), _to_device(a_strides),
            _as_numbers(b), _to_device(b_shape), _to_device(b_strides), size, dense,
        )  # fmt: skip

    @staticmethod
    def reduce(
        op: int, out: Any, out_shape: Index, out_strides: Index,
        a: Any, a_shape: Index, a_strides: Index, dim: int, threads: int | None = None,
    ) -> None:  # fmt: skip
        """Check, then launch the reduce kernel: fold `a` along `dim` into out's start values.

        `threads` (per block, a power of two up to REDUCE_THREADS) defaults to the
        smallest power of two covering the reduced length, at most REDUCE_THREADS.
        """
        size = _check_layout("reduce", "out", out, out_shape, out_strides)
        _check_input("reduce", "a", a, a_shape, a_strides, out_shape, dim)
        _check_layout("reduce", "out", out, out_shape, out_strides, a.dtype)
        if size == 0 or a_shape[dim] == 0:
            return
        if threads is None:
            threads = min(REDUCE_THREADS, 1 << (int(a_shape[dim]) - 1).bit_length())
        elif not 1 <= threads <= REDUCE_THREADS or threads & (threads - 1):
            raise ValueError(
                f"reduce: threads={threads} is not a power of two in 1..{REDUCE_THREADS}"
            )
        make_reduce_kernel(np.dtype(out.dtype))[min(size, MAX_BLOCKS), threads](
            op, out, _to_device(out_shape), _to_device(out_strides),
            a, _to_device(a_shape), _to_device(a_strides), dim, size,
        )  # fmt: skip

    @staticmethod
    def matmul(
        out: Any, out_shape: Index, out_strides: Index,
        a: Any, a_shape: Index, a_strides: Index,
        b: Any, b_shape: Index, b_strides: Index, tile: int | None = None,
    ) -> None:  # fmt: skip
        """Check, then launch the tiled matmul kernel on 3-D operands: out[n] = a[n] @ b[n].

        `tile` (1..32) defaults to SMALL_TILE when out's rows and cols both fit in one
        such tile (tiny products waste no threads), else to TILE.
        """
        if (len(out_shape), len(a_shape), len(b_shape)) != (3, 3, 3) or (
            _t(out_shape[1:]) != (a_shape[1], b_shape[2]) or a_shape[2] != b_shape[1]
            or a_shape[0] not in (1, out_shape[0]) or b_shape[0] not in (1, out_shape[0])
        ):  # fmt: skip
            raise ValueError(f"matmul: shapes do not fit out[n] = a[n] @ b[n] on 3-D operands: "
                             f"out {_t(out_shape)}, a {_t(a_shape)}, b {_t(b_shape)}")  # fmt: skip
        _check_layout("matmul", "out", out, out_shape, out_strides)
        _check_layout("matmul", "a", a, a_shape, a_strides, out.dtype)
        _check_layout("matmul", "b", b, b_shape, b_strides, out.dtype)
        batch, rows, cols = _t(out_shape)
        if tile is None:
            tile = SMALL_TILE if max(rows, cols) <= SMALL_TILE else TILE
        elif not 1 <= tile <= 32:
            raise ValueError(
                f"matmul: tile={tile} must lie in 1..32 (at most 1024 threads a block)"
            )
        if batch * rows * cols == 0:
            return
        grid = (-(-cols // tile), min(-(-rows // tile), MAX_GRID_YZ), min(batch, MAX_GRID_YZ))
        make_matmul_kernel(tile, np.dtype(out.dtype))[grid, (tile, tile)](
            out, _to_device(out_shape), _to_device(out_strides),
            a, _to_device(a_shape), _to_device(a_strides),
            b, _to_device(b_shape), _to_device(b_strides),
        )  # fmt: skip

    @staticmethod
    def empty(size: int, dtype: Any) -> Any:
        """Uninitialised device storage of `size` cells."""
        return cuda.device_array(size, dtype=np.dtype(dtype))

    @staticmethod
    def from_numpy(array: np.ndarray) -> Any:
        """A device array holding a flat copy of `array` (host to device transfer)."""
        return cuda.to_device(np.ascontiguousarray(array).reshape(-1))

    @staticmethod
    def to_numpy(storage: Any) -> np.ndarray:
        """A host copy of device `storage` (device to host transfer; waits for the GPU)."""
        host: np.ndarray = storage.copy_to_host()
        return host


# Launch helpers and checks: plain Python, run on the host before every launch.


def _as_numbers(storage: Any) -> Any:
    """Bool storage viewed as uint8 0/1 cells, for kernels to read (see fast_ops.as_numbers)."""
    return storage.view(np.uint8) if storage.dtype == np.bool_ else storage


def _grid_1d(size: int) -> tuple[int, int]:
    """(blocks, threads) for one thread per cell: whole warps, at most MAX_BLOCKS blocks."""
    threads = min(THREADS, -(-size // 32) * 32)
    return min(-(-size // threads), MAX_BLOCKS), threads


_index_cache: dict[bytes, Any] = {}


def _to_device(values: Index) -> Any:
    """The device copy of a shape or strides array, cached by its contents."""
    key = values.tobytes()
    device = _index_cache.get(key)
    if device is None:
        if len(_index_cache) >= INDEX_CACHE_SIZE:
            _index_cache.clear()
        device = cuda.to_device(np.ascontiguousarray(values, dtype=np.int64))
        _index_cache[key] = device
    return device


def _dense(shape: Index, strides: Index, *others: tuple[Index, Index]) -> bool:
    """True when (shape, strides) is the row-major layout and the `others` are the same."""
    key = (shape.tobytes(), strides.tobytes())
    if any((s.tobytes(), st.tobytes()) != key for s, st in others):
        return False
    expected = 1
    for i in range(len(shape) - 1, -1, -1):
        if shape[i] != 1 and strides[i] != expected:
            return False
        expected *= int(shape[i])
    return True


def _check_layout(
    what: str, name: str, storage: Any, shape: Index, strides: Index, dtype: Any = None
) -> int:
    """Check one (storage, shape, strides) triple before a launch; return its cell count."""
    if not hasattr(storage, "copy_to_host"):
        raise TypeError(f"{what}: {name} must be CUDA device storage (a Numba device "
                        f"array), got {type(storage).__name__}; copy it with "
                        f"CudaOps.from_numpy")  # fmt: skip
    if np.dtype(storage.dtype) not in DTYPES or (dtype is not None and dtype != storage.dtype):
        expected = ", ".join(str(d) for d in DTYPES) if dtype is None else dtype
        raise TypeError(f"{what}: {name} has dtype {storage.dtype}, expected {expected}")
    if len(shape) != len(strides) or len(shape) > MAX_DIMS or min([*shape, *strides, 0]) < 0:
        raise ValueError(f"{what}: {name} has shape {_t(shape)}, strides {_t(strides)}; "
                         f"CUDA kernels take at most MAX_DIMS = {MAX_DIMS} dims, one "
                         f"non-negative stride per dim")  # fmt: skip
    size = int(np.prod(shape)) if len(shape) else 1
    last = sum((int(s) - 1) * int(st) for s, st in zip(shape, strides, strict=True))
    if size and last >= len(storage):
        raise ValueError(f"{what}: {name} with shape {_t(shape)} and strides {_t(strides)} "
                         f"reaches cell {last} of a storage of {len(storage)} cells")  # fmt: skip
    return size


def _check_input(
    what: str, name: str, storage: Any, shape: Index, strides: Index,
    out_shape: Index, dim: int | None = None,
) -> None:  # fmt: skip
    """Check an input layout and that it broadcasts to out (reduce: matches but for `dim`)."""
    _check_layout(what, name, storage, shape, strides)
    if dim is None:
        extra = len(out_shape) - len(shape)
        if extra < 0 or any(s not in (1, out_shape[i + extra]) for i, s in enumerate(shape)):
            raise ValueError(f"{what}: {name} of shape {_t(shape)} does not broadcast to out "
                             f"shape {_t(out_shape)}")  # fmt: skip
    elif not 0 <= dim < len(shape) or _t(out_shape) != _t(shape[:dim]) + (1,) + _t(
        shape[dim + 1 :]
    ):
        raise ValueError(f"{what}: cannot fold dim {dim} of shape {_t(shape)} into out "
                         f"shape {_t(out_shape)}")  # fmt: skip


def _t(values: Index) -> tuple[int, ...]:
    """A shape or strides array as a tuple of Python ints, for error messages."""
    return tuple(int(v) for v in values)
