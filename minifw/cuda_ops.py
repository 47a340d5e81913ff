"""CudaOps: the kernel contract on an NVIDIA GPU, with Numba CUDA kernels.

Storage of a "cuda" tensor is a Numba device array that stays on the GPU between
operations: data crosses to or from the host only in `from_numpy` and `to_numpy`.
The index helpers of `tensor_data.py` and the scalar functions of `operators.py`
are recompiled unchanged as device functions, so every kernel computes exactly
what the reference kernels of `tensor_ops.SimpleOps` compute.

The launchers (`cuda_map`, ...) check what the kernels trust (dims, dtypes,
devices, that every index stays inside its buffer), copy shapes and strides to
the device (cached) and pick the launch sizes. Under `NUMBA_ENABLE_CUDASIM=1` the
same kernels run on the CPU in Numba's simulator, slowly.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda, from_dtype, int64

from . import operators, tensor_data
from ._jit import compile_functions
from .tensor_data import Index

MAX_DIMS = 8  # the longest shape a kernel accepts (its thread-local index buffers)
THREADS = 256  # threads per block of map and zip
MAX_BLOCKS = 4096  # blocks per map/zip/reduce launch; grid-stride loops cover the rest
MAX_GRID_YZ = 65535  # CUDA's limit on grid dims y and z
REDUCE_THREADS = 256  # most threads per reduce block: the size of its shared buffer
TILE = 32  # matmul tile side: a TILE x TILE block of threads per TILE x TILE block of out
SMALL_TILE = 8  # matmul tile used when the whole output fits in one SMALL_TILE tile
INDEX_CACHE_SIZE = 1024  # distinct shapes / strides kept on the device
DTYPES = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64))

_dev = compile_functions(
    [operators, tensor_data],
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


@cuda.jit
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
    out_index = cuda.local.array(MAX_DIMS, int64)
    a_index = cuda.local.array(MAX_DIMS, int64)
    for i in range(cuda.grid(1), size, cuda.gridsize(1)):
        if dense:
            out[i] = unary(op, a[i])
        else:
            to_index(i, out_shape, out_index)
            broadcast_index(out_index, out_shape, a_shape, a_index)
            value = a[index_to_position(a_strides, a_index)]
            out[index_to_position(out_strides, out_index)] = unary(op, value)


@cuda.jit
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
    out_index = cuda.local.array(MAX_DIMS, int64)
    a_index = cuda.local.array(MAX_DIMS, int64)
    b_index = cuda.local.array(MAX_DIMS, int64)
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
    """Compile the reduce kernel whose shared-memory buffer holds `dtype` values."""
    shared_type = from_dtype(dtype)

    @cuda.jit
    def reduce_kernel(
        op: int, out: Any, out_shape: Any, out_strides: Any,
        a: Any, a_shape: Any, a_strides: Any, dim: int, out_size: int,
    ) -> None:  # fmt: skip
        """out[o] = fold of binary(op) over a[o with dim = 0..n-1], starting from out[o].

        for o in range(block_id, out_size, blocks):            # one block per out cell
            cache[t] = fold(a[o, k] for k in t, t + T, ...)    # block-stride loop, T threads
            for s in T/2, T/4, ..., 1: cache[t] = op(cache[t], cache[t + s]) if t < s
            thread 0: out[o] = op(out[o], cache[0])

        Invariants: T is a power of two; threads t < min(T, n) hold a value, and the
        slots holding values stay a prefix of cache through the tree; out[o] is
        written once, by thread 0, and no partial result leaves the block.
        """
        cache = cuda.shared.array(REDUCE_THREADS, shared_type)
        index = cuda.local.array(MAX_DIMS, int64)
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
    """Compile the tiled matmul kernel for `tile` x `tile` blocks of `dtype` values."""
    shared_type = from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def matmul_kernel(
        out: Any, out_shape: Any, out_strides: Any,
        a: Any, a_shape: Any, a_strides: Any,
        b: Any, b_shape: Any, b_strides: Any,
    ) -> None:  # fmt: skip
        """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j], one tile of out per block.

        for n, i0 in this block's batches (grid z) and row tiles (grid y):
            acc = 0                                    # thread (ty, tx) owns out[n, i, j]
            for k0 in range(0, K, tile):
                a_tile[ty, tx] = a[n, i0 + ty, k0 + tx]; b_tile[ty, tx] = b[n, k0 + ty, j]
                sync; acc += sum_k a_tile[ty, k] * b_tile[k, tx]; sync
            out[n, i, j] = acc                         # if (i, j) lies inside out

        Invariants: each cell of a and b is read from global memory once per block
        that needs it; cells past the edges load as 0, so any size works; a batch of
        size 1 has batch stride 0 (broadcast); each cell of out is written once.
        """
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


def cuda_map(
    op: int, out: Any, out_shape: Index, out_strides: Index,
    a: Any, a_shape: Index, a_strides: Index,
) -> None:  # fmt: skip
    """Launch `map_kernel`: out[i] = unary(op, a[i]), `a` broadcast to out."""
    size = _check_out("map", out, out_shape, out_strides)
    _check_input("map", "a", a, a_shape, a_strides, out_shape)
    if size == 0:
        return
    dense = _dense(out_shape, out_strides) and _same(out_shape, out_strides, a_shape, a_strides)
    blocks, threads = _grid_1d(size)
    map_kernel[blocks, threads](
        op, out, _to_device(out_shape), _to_device(out_strides),
        a, _to_device(a_shape), _to_device(a_strides), size, dense,
    )  # fmt: skip


def cuda_zip(
    op: int, out: Any, out_shape: Index, out_strides: Index,
    a: Any, a_shape: Index, a_strides: Index,
    b: Any, b_shape: Index, b_strides: Index,
) -> None:  # fmt: skip
    """Launch `zip_kernel`: out[i] = binary(op, a[i], b[i]), both broadcast to out."""
    size = _check_out("zip", out, out_shape, out_strides)
    _check_input("zip", "a", a, a_shape, a_strides, out_shape)
    _check_input("zip", "b", b, b_shape, b_strides, out_shape)
    if size == 0:
        return
    dense = (
        _dense(out_shape, out_strides)
        and _same(out_shape, out_strides, a_shape, a_strides)
        and _same(out_shape, out_strides, b_shape, b_strides)
    )
    blocks, threads = _grid_1d(size)
    zip_kernel[blocks, threads](
        op, out, _to_device(out_shape), _to_device(out_strides),
        a, _to_device(a_shape), _to_device(a_strides),
        b, _to_device(b_shape), _to_device(b_strides), size, dense,
    )  # fmt: skip


def cuda_reduce(
    op: int, out: Any, out_shape: Index, out_strides: Index,
    a: Any, a_shape: Index, a_strides: Index, dim: int, threads: int | None = None,
) -> None:  # fmt: skip
    """Launch the reduce kernel: fold `a` along `dim` into out, starting from out's values.

    Args:
        op: the binary op code to fold with (ADD, MUL, MAX, MIN).
        out: device storage of the result; size 1 along `dim`, pre-filled with the start.
        out_shape: shape of out.
        out_strides: strides of out.
        a: device storage of the input.
        a_shape: shape of a.
        a_strides: strides of a.
        dim: the dim of `a` to fold.
        threads: threads per block, a power of two up to REDUCE_THREADS; by default the
            smallest power of two covering the reduced length (at most REDUCE_THREADS).
    """
    size = _check_out("reduce", out, out_shape, out_strides)
    _check_input("reduce", "a", a, a_shape, a_strides, out_shape, dim)
    _check_dtype("reduce", "out", out, np.dtype(a.dtype))
    if size == 0 or a_shape[dim] == 0:
        return
    if threads is None:
        threads = min(REDUCE_THREADS, 1 << (int(a_shape[dim]) - 1).bit_length())
    elif not 1 <= threads <= REDUCE_THREADS or threads & (threads - 1):
        raise ValueError(f"reduce: threads={threads} is not a power of two in 1..{REDUCE_THREADS}")
    kernel = make_reduce_kernel(np.dtype(out.dtype))
    kernel[min(size, MAX_BLOCKS), threads](
        op, out, _to_device(out_shape), _to_device(out_strides),
        a, _to_device(a_shape), _to_device(a_strides), dim, size,
    )  # fmt: skip


def cuda_matmul(
    out: Any, out_shape: Index, out_strides: Index,
    a: Any, a_shape: Index, a_strides: Index,
    b: Any, b_shape: Index, b_strides: Index, tile: int | None = None,
) -> None:  # fmt: skip
    """Launch the tiled matmul kernel on 3-D operands: out[n] = a[n] @ b[n].

    Args:
        out: device storage of the (batch, rows, cols) result.
        out_shape: shape of out.
        out_strides: strides of out.
        a: device storage of the (batch or 1, rows, inner) left operand.
        a_shape: shape of a.
        a_strides: strides of a.
        b: device storage of the (batch or 1, inner, cols) right operand.
        b_shape: shape of b.
        b_strides: strides of b.
        tile: the tile side (1..32); by default SMALL_TILE when out's rows and cols
            both fit in one such tile, else TILE.
    """
    _check_matmul_shapes(out_shape, a_shape, b_shape)
    _check_out("matmul", out, out_shape, out_strides)
    _check_input("matmul", "a", a, a_shape, a_strides, a_shape)
    _check_input("matmul", "b", b, b_shape, b_strides, b_shape)
    dtype = np.dtype(out.dtype)
    _check_dtype("matmul", "a", a, dtype)
    _check_dtype("matmul", "b", b, dtype)
    batch, rows, cols = (int(s) for s in out_shape)
    if tile is None:
        tile = SMALL_TILE if max(rows, cols) <= SMALL_TILE else TILE
    elif not 1 <= tile <= 32:
        raise ValueError(f"matmul: tile={tile} must lie in 1..32 (at most 1024 threads a block)")
    if batch * rows * cols == 0 or a_shape[2] == 0:
        return
    grid = (-(-cols // tile), min(-(-rows // tile), MAX_GRID_YZ), min(batch, MAX_GRID_YZ))
    make_matmul_kernel(tile, dtype)[grid, (tile, tile)](
        out, _to_device(out_shape), _to_device(out_strides),
        a, _to_device(a_shape), _to_device(a_strides),
        b, _to_device(b_shape), _to_device(b_strides),
    )  # fmt: skip


class CudaOps:
    """The kernel contract on a CUDA GPU: storage is a Numba device array."""

    device = "cuda"

    @staticmethod
    def map(
        op: int, out: Any, out_shape: Index, out_strides: Index,
        a: Any, a_shape: Index, a_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = unary(op, a[i]) for every cell i of out; `a` broadcasts to out."""
        cuda_map(op, out, out_shape, out_strides, a, a_shape, a_strides)

    @staticmethod
    def zip(
        op: int, out: Any, out_shape: Index, out_strides: Index,
        a: Any, a_shape: Index, a_strides: Index,
        b: Any, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = binary(op, a[i], b[i]); `a` and `b` broadcast to out."""
        cuda_zip(op, out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)

    @staticmethod
    def reduce(
        op: int, out: Any, out_shape: Index, out_strides: Index,
        a: Any, a_shape: Index, a_strides: Index, dim: int,
    ) -> None:  # fmt: skip
        """out[i] = fold of binary(op) along `dim` of a, starting from out's current value."""
        cuda_reduce(op, out, out_shape, out_strides, a, a_shape, a_strides, dim)

    @staticmethod
    def matmul(
        out: Any, out_shape: Index, out_strides: Index,
        a: Any, a_shape: Index, a_strides: Index,
        b: Any, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; batch dims broadcast."""
        cuda_matmul(out, out_shape, out_strides, a, a_shape, a_strides, b, b_shape, b_strides)

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
        _check_device("to_numpy", "storage", storage)
        host: np.ndarray = storage.copy_to_host()
        return host


# Launch helpers and checks: plain Python, run on the host before every launch.


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


def _dense(shape: Index, strides: Index) -> bool:
    """True when (shape, strides) is the row-major contiguous layout."""
    expected = 1
    for i in range(len(shape) - 1, -1, -1):
        if shape[i] != 1 and strides[i] != expected:
            return False
        expected *= int(shape[i])
    return True


def _same(shape: Index, strides: Index, other_shape: Index, other_strides: Index) -> bool:
    """True when two layouts have the same shape and strides."""
    return bool(
        shape.tobytes() == other_shape.tobytes() and strides.tobytes() == other_strides.tobytes()
    )


def _check_device(what: str, name: str, storage: Any) -> None:
    if not hasattr(storage, "copy_to_host"):
        raise TypeError(
            f"{what}: {name} must be CUDA device storage (a Numba device array), got "
            f"{type(storage).__name__}; move host data with CudaOps.from_numpy first"
        )


def _check_dtype(what: str, name: str, storage: Any, expected: np.dtype[Any]) -> None:
    if np.dtype(storage.dtype) != expected:
        raise TypeError(f"{what}: {name} has dtype {storage.dtype}, expected {expected}")


def _check_layout(what: str, name: str, storage: Any, shape: Index, strides: Index) -> int:
    """Check one (storage, shape, strides) triple; return its number of cells."""
    _check_device(what, name, storage)
    if np.dtype(storage.dtype) not in DTYPES:
        raise TypeError(f"{what}: {name} has dtype {storage.dtype}; CUDA kernels take "
                        f"{', '.join(str(d) for d in DTYPES)}")  # fmt: skip
    if len(shape) != len(strides):
        raise ValueError(f"{what}: {name} has shape {tuple(shape)} but strides {tuple(strides)}")
    if len(shape) > MAX_DIMS:
        raise ValueError(f"{what}: {name} has {len(shape)} dims (shape {tuple(shape)}); "
                         f"CUDA kernels take at most MAX_DIMS = {MAX_DIMS}")  # fmt: skip
    if any(s < 0 for s in shape) or any(st < 0 for st in strides):
        raise ValueError(f"{what}: {name} has a negative size or stride: shape "
                         f"{tuple(shape)}, strides {tuple(strides)}")  # fmt: skip
    size = int(np.prod(shape)) if len(shape) else 1
    last = sum((int(s) - 1) * int(st) for s, st in zip(shape, strides, strict=True))
    if size and last >= len(storage):
        raise ValueError(f"{what}: {name} with shape {tuple(shape)} and strides "
                         f"{tuple(strides)} reaches cell {last} of a storage of "
                         f"{len(storage)} cells")  # fmt: skip
    return size


def _check_out(what: str, out: Any, shape: Index, strides: Index) -> int:
    return _check_layout(what, "out", out, shape, strides)


def _check_input(
    what: str, name: str, storage: Any, shape: Index, strides: Index,
    out_shape: Index, dim: int | None = None,
) -> None:  # fmt: skip
    """Check an input layout and that it broadcasts to out (reduce: matches but for `dim`)."""
    _check_layout(what, name, storage, shape, strides)
    if dim is not None:
        if len(shape) != len(out_shape) or not 0 <= dim < len(shape):
            raise ValueError(f"{what}: cannot fold dim {dim} of shape {tuple(shape)} into "
                             f"shape {tuple(out_shape)}")  # fmt: skip
        if out_shape[dim] != 1 or any(
            s != o for i, (s, o) in enumerate(zip(shape, out_shape, strict=True)) if i != dim
        ):
            raise ValueError(f"{what}: out shape {tuple(out_shape)} must equal the input shape "
                             f"{tuple(shape)} with size 1 at dim {dim}")  # fmt: skip
        return
    extra = len(out_shape) - len(shape)
    if extra < 0 or any(s not in (1, out_shape[i + extra]) for i, s in enumerate(shape)):
        raise ValueError(f"{what}: {name} of shape {tuple(shape)} does not broadcast to out "
                         f"shape {tuple(out_shape)}")  # fmt: skip


def _check_matmul_shapes(out_shape: Index, a_shape: Index, b_shape: Index) -> None:
    shapes = f"out {tuple(out_shape)}, a {tuple(a_shape)}, b {tuple(b_shape)}"
    if len(out_shape) != 3 or len(a_shape) != 3 or len(b_shape) != 3:
        raise ValueError(f"matmul: kernels take 3-D operands, got {shapes}")
    batch = out_shape[0]
    if (
        a_shape[2] != b_shape[1]
        or (out_shape[1], out_shape[2]) != (a_shape[1], b_shape[2])
        or a_shape[0] not in (1, batch)
        or b_shape[0] not in (1, batch)
    ):
        raise ValueError(f"matmul: shapes do not fit out[n] = a[n] @ b[n]: {shapes}")
