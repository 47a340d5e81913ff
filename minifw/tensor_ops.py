"""The kernel contract and the one launcher every backend shares.

A backend is a class with four static kernels over raw `(storage, shape, strides)`
triples (see `KernelSet`) plus three storage helpers; `SimpleOps` (simple_ops.py,
re-exported here) is the pure-Python reference. `TensorBackend` wraps one and
does everything a kernel must not: it checks shapes, dtypes and dims, broadcasts,
allocates the output, fills a reduction's start value and promotes matmul operands
to 3-D. Kernels trust what they receive (Numba does not bounds-check), so every
check happens here, before any kernel runs.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from minifw.core import hooks, operators
from minifw.core.hooks import Launch, anyone_listening
from minifw.core.tensor_data import (
    INT64_MAX,
    Index,
    TensorData,
    index_array,
    kernel_operands,
    numel_of,
    shape_and_size,
    shape_broadcast,
    strides_from_shape,
)
from minifw.simple_ops import SimpleOps

Storage = Any

REDUCE_OPS = {
    operators.ADD: 0.0,
    operators.MUL: 1.0,
    operators.MAX: -np.inf,
    operators.MIN: np.inf,
}


class KernelSet(Protocol):
    """The kernel contract: what a backend supplies, with these exact signatures."""

    device: str

    @staticmethod
    def map(
        op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = unary(op, a[i]) for every cell i of out; `a` broadcasts to out."""

    @staticmethod
    def zip(
        op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[i] = binary(op, a[i], b[i]); `a` and `b` broadcast to out."""

    @staticmethod
    def reduce(
        op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index, dim: int,
    ) -> None:  # fmt: skip
        """out[i] = fold of binary(op) along `dim` of a, starting from out's current value."""

    @staticmethod
    def matmul(
        out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """out[n, i, j] = sum_k a[n, i, k] * b[n, k, j] over 3-D operands; batch dims broadcast."""

    @staticmethod
    def empty(size: int, dtype: Any) -> Storage:
        """Allocate uninitialised storage on this backend's device."""

    @staticmethod
    def from_numpy(array: np.ndarray) -> Storage:
        """Storage on this backend's device holding a flat copy (or the array itself on CPU)."""

    @staticmethod
    def to_numpy(storage: Storage) -> np.ndarray:
        """The storage as a host numpy array (the array itself on CPU)."""


class TensorBackend:
    """One kernel set behind checked, broadcasting, allocating operations on TensorData."""

    def __init__(self, ops: type[KernelSet], name: str | None = None) -> None:
        self.ops = ops
        self.device: str = ops.device
        self.name = name or ops.__name__

    def __repr__(self) -> str:
        return f"TensorBackend({self.name})"

    # Storage
    def empty(self, shape: tuple[int, ...], dtype: Any) -> TensorData:
        """A contiguous TensorData of `shape` with uninitialised cells."""
        kind = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        shape, size = shape_and_size(shape)
        if size * kind.itemsize > INT64_MAX:
            check_storage_size(shape, kind.itemsize)
        return TensorData(self.ops.empty(size, kind), shape)

    def full(self, shape: tuple[int, ...], value: float, dtype: Any) -> TensorData:
        """A contiguous TensorData of `shape` filled with `value`."""
        check_storage_size(shape, np.dtype(dtype).itemsize)
        host = np.full(numel_of(shape), value, dtype=np.dtype(dtype))
        return TensorData(self.ops.from_numpy(host), shape)

    def from_numpy(self, array: np.ndarray, share: bool = False) -> TensorData:
        """A TensorData holding `array`'s cells; with `share` on CPU, over its very memory."""
        array = np.asarray(array)
        if share and self.device == "cpu":
            flat = _flat_alias(array)
            if flat is not None:
                steps = tuple(s // array.itemsize for s in array.strides)
                return TensorData(flat, array.shape, steps)
        flat = np.array(array, copy=True, order="C").reshape(-1)
        return TensorData(self.ops.from_numpy(flat), array.shape)

    def to_numpy(self, data: TensorData) -> np.ndarray:
        """The cells of `data` as a new or shared host array of its shape."""
        if not data.is_contiguous():
            data = self.contiguous(data)
        if anyone_listening[0]:  # a tool watches (core/hooks.py): report the host read
            hooks.launch(Launch(self, "to_host", operators.ID, (data,), (data,)))
        host = self.ops.to_numpy(data.storage[: data.size])
        return host[: data.size].reshape(data.shape)

    # The four launches
    def map(self, op: int, a: TensorData, out: TensorData | None = None) -> TensorData:
        """Apply unary `op` to every cell; write into `out` (a broadcast target) if given."""
        if op not in operators.UNARY_FUNCTIONS:  # refused before anything runs
            operators.check_op("map", op, 1)
        self._check_device("map", a)
        kind = "map"  # for listeners (core/hooks.py)
        if out is None:
            out = self.empty(a.shape, _dtype(a))
        else:
            kind = "map_into"
            self._check_out("map", out, a.shape, _dtype(a))
        if out.size:
            if anyone_listening[0]:
                hooks.launch(Launch(self, kind, op, (out,), (a,)))
            else:
                self.ops.map(op, *kernel_operands(out, (a,))[0])
        return out

    def zip(
        self,
        op: int,
        a: TensorData,
        b: TensorData,
        out_dtype: Any = None,
        out: TensorData | None = None,
    ) -> TensorData:
        """Apply binary `op` cell by cell to `a` and `b` broadcast together.

        With `out`, the result is written into its cells instead of a new buffer: `out`
        must be on this device, writable, of the result dtype, and of the shape that a,
        b and out broadcast to. It may share cells with an input only by being that very
        input (same cells, same layout: `a = a op b` in place); any other overlap raises,
        since a kernel would read cells it has already overwritten.
        """
        if op not in operators.BINARY_FUNCTIONS:  # refused before anything runs
            operators.check_op("zip", op, 2)
        self._check_device("zip", a, b)
        dtype = a._storage.dtype
        if dtype != b._storage.dtype:
            _check_same_dtype("zip", _dtype(a), _dtype(b))
        shape = a.shape if a.shape == b.shape else shape_broadcast(a.shape, b.shape)
        kind = "zip"  # for listeners (core/hooks.py)
        if out is None:
            out = self.empty(shape, out_dtype or dtype)
        else:
            kind = "zip_into"
            inputs = f" (inputs {tuple(a.shape)} and {tuple(b.shape)})"
            self._check_out("zip", out, shape, np.dtype(out_dtype or dtype), inputs)
            _check_no_overlap("zip", out, (a, b))
        if out.size:
            if anyone_listening[0]:
                hooks.launch(Launch(self, kind, op, (out,), (a, b)))
            else:
                self.ops.zip(op, *kernel_operands(out, (a, b))[0])
        return out

    def reduce(self, op: int, a: TensorData, dim: int) -> TensorData:
        """Fold `a` along `dim` with binary `op`; the result keeps `dim` with size 1."""
        self._check_device("reduce", a)
        if op not in REDUCE_OPS:
            raise ValueError(f"op {operators.BINARY_NAMES.get(op, op)} is not a reduction")
        if not 0 <= dim < max(a.dims, 1):
            raise IndexError(
                f"Dimension out of range (reduce over dim {dim} of a tensor of shape "
                f"{tuple(a.shape)})"
            )
        if a.dims == 0:
            return self.map(operators.ID, a)
        start = REDUCE_OPS[op]
        dtype = _dtype(a)
        if dtype.kind in "iu" and np.isinf(start):  # an integer dtype
            info = np.iinfo(dtype)
            start = info.min if start < 0 else info.max
        shape = a.shape[:dim] + (1,) + a.shape[dim + 1 :]
        if a.shape[dim] == 0 and op in (operators.MAX, operators.MIN):
            raise RuntimeError(
                f"max/min(): Expected reduction dim {dim} to have non-zero size "
                f"(input shape {tuple(a.shape)})"
            )
        out = self.full(shape, start, dtype)
        if out.size and a.size:
            if anyone_listening[0]:
                hooks.launch(Launch(self, "reduce", op, (out,), (a,), dim))
            else:
                args, merged_dim = kernel_operands(out, (a,), dim)
                kernels: Any = self.ops  # mypy cannot count the unpacked arguments
                kernels.reduce(op, *args, merged_dim)
        return out

    def matmul(self, a: TensorData, b: TensorData) -> TensorData:
        """Matrix product with PyTorch's 1-D, 2-D and broadcast-batched rules."""
        if len(a.shape) == 2 == len(b.shape) and not anyone_listening[0]:
            product = self._matmul_2d(a, b)
            if product is not None:
                return product
        self._check_device("matmul", a, b)
        if a._storage.dtype != b._storage.dtype:
            _check_same_dtype("matmul", _dtype(a), _dtype(b))
        a_dims, b_dims = len(a.shape), len(b.shape)
        if a_dims == 0 or b_dims == 0:
            raise RuntimeError(
                f"both arguments to matmul need to be at least 1D, but they are "
                f"{a_dims}D and {b_dims}D"
            )
        a3 = a.insert_dim(0) if a_dims == 1 else a
        b3 = b.insert_dim(1) if b_dims == 1 else b
        if a3.shape[-1] != b3.shape[-2]:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied "
                f"({_rows_cols(a3)} and {_rows_cols(b3)}): operand shapes {tuple(a.shape)} @ "
                f"{tuple(b.shape)}"
            )
        try:
            batch = a3.shape[:-2]
            if batch != b3.shape[:-2]:
                batch = shape_broadcast(batch, b3.shape[:-2])
        except RuntimeError:
            raise RuntimeError(
                f"matmul: batch dims of {tuple(a.shape)} and {tuple(b.shape)} cannot be broadcast"
            ) from None
        n, m = a3.shape[-2], b3.shape[-1]
        item = _dtype(a).itemsize
        for operand in (a3, b3):  # kernels may pack a copy of each operand, batch and all
            check_storage_size(batch + operand.shape[-2:], item)
        out = self.empty((numel_of(batch), n, m), _dtype(a))
        if out.size:
            if a3.shape[-1] == 0:
                out = self.full(out.shape, 0, _dtype(a))
            else:
                lhs, rhs = self._as_3d(a3, batch), self._as_3d(b3, batch)
                if anyone_listening[0]:
                    hooks.launch(Launch(self, "matmul", operators.MUL, (out,), (lhs, rhs)))
                else:
                    self.ops.matmul(*out.tuple(), *lhs.tuple(), *rhs.tuple())
        shape = batch + (n, m)
        if a_dims == 1:
            shape = shape[:-2] + shape[-1:]
        if b_dims == 1:
            shape = shape[:-1]
        # out is a fresh row-major buffer, so any shape of its size views it.
        return TensorData(out.base, shape, None, 0, out.version)

    def _matmul_2d(self, a: TensorData, b: TensorData) -> TensorData | None:
        """The product of matrices of one dtype on this device, k >= 1; else None.

        The common case, with no 3-D views built: the kernel gets the operands' strides
        with a batch dim of 1 in front. `matmul` checks and reports any other case.
        """
        (n, k), (depth, m) = a.shape, b.shape
        dtype = a._storage.dtype
        if k != depth or not k or dtype != b._storage.dtype or not self._holds(a, b):
            return None
        out = self.empty((n, m), dtype)
        if out.size:
            self.ops.matmul(
                out.storage, index_array((1, n, m)), index_array((n * m, m, 1)),
                a.storage, index_array((1, n, k)), index_array((0, *a.strides)),
                b.storage, index_array((1, k, m)), index_array((0, *b.strides)),
            )  # fmt: skip
        return out

    def _holds(self, *datas: TensorData) -> bool:
        """True when every storage lives on this backend's device."""
        cpu = self.device == "cpu"
        return all((type(data._storage) is np.ndarray) == cpu for data in datas)

    def _as_3d(self, x: TensorData, batch: tuple[int, ...]) -> TensorData:
        """View `x` as (B, rows, cols), B = 1 (broadcast by the kernel) or numel(batch)."""
        rows, cols = x.shape[-2:]
        if len(x.shape) == 2 or numel_of(x.shape[:-2]) == 1:
            return TensorData(x.base, (1, rows, cols), (0,) + x.strides[-2:], x.offset)
        full = x.expand(batch + (rows, cols))
        merged = full.view((numel_of(batch), rows, cols))
        if merged is None:
            merged = self.contiguous(full).view((numel_of(batch), rows, cols))
        assert merged is not None
        return merged

    # Helpers built on the launches
    def contiguous(self, a: TensorData) -> TensorData:
        """A row-major copy of `a`."""
        return self.map(operators.ID, a)

    def copy_into(self, out: TensorData, a: TensorData) -> None:
        """Write `a` (broadcast to out's shape) into the cells of `out`.

        When `a` reads the storage that `out` writes (`t[1:] = t[:-1]`), `a` is copied
        first, so every cell reads the old values.
        """
        if a.base is out.base and a.size and out.size:
            a = self.contiguous(a)
        self.map(operators.ID, a, out)

    def _check_out(
        self, what: str, out: TensorData, shape: tuple[int, ...], dtype: Any, inputs: str = ""
    ) -> None:
        """Raise unless `out` can take a result of `shape` and `dtype` (it may broadcast)."""
        self._check_device(what, out)
        _check_writable(out)
        _check_same_dtype(what, _dtype(out), dtype)
        if shape != out.shape and shape_broadcast(shape, out.shape) != out.shape:
            raise RuntimeError(
                f"output with shape {tuple(out.shape)} doesn't match the broadcast shape "
                f"{shape_broadcast(shape, out.shape)}{inputs}"
            )

    def _check_device(self, what: str, *datas: TensorData) -> None:
        """Raise unless every storage lives on this backend's device."""
        cpu = self.device == "cpu"
        for data in datas:
            on_host = type(data._storage) is np.ndarray or isinstance(data._storage, np.ndarray)
            if on_host != cpu:
                found = "cpu" if on_host else "cuda"
                raise RuntimeError(
                    f"{what}: Expected all tensors to be on the same device, but found at "
                    f"least two devices, {self.device} and {found}! (the {self.name} backend "
                    f"got {type(data.base).__name__} storage of shape {tuple(data.shape)})"
                )


def _flat_alias(array: np.ndarray) -> np.ndarray | None:
    """A 1-D view of the memory `array` spans, or None if its strides do not allow one."""
    size = array.itemsize
    if any(st < 0 or st % size for st in array.strides):
        return None
    span = 1 + sum(
        (n - 1) * (st // size) for n, st in zip(array.shape, array.strides, strict=True)
    )
    if array.size == 0:
        span = 0
    return np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(size,))


def _dtype(data: TensorData) -> np.dtype[Any]:
    dtype: np.dtype[Any] = np.dtype(data.base.dtype)
    return dtype


def _rows_cols(x: TensorData) -> str:
    return f"{x.shape[-2]}x{x.shape[-1]}"


def _check_same_dtype(what: str, first: Any, second: Any) -> None:
    if first != second:
        raise RuntimeError(f"{what}: expected both operands to have the same dtype, "
                           f"but got {first} and {second}")  # fmt: skip


def _extent(data: TensorData) -> tuple[tuple[Any, ...], int, int]:
    """(layout, first unit, last unit) of the memory that `data` spans.

    Units are absolute bytes for host arrays (so two arrays over one buffer compare)
    and cells of the storage otherwise; size-1 dims do not count in the layout.
    """
    base = data.base
    unit, start = 1, 0
    if isinstance(base, np.ndarray):
        unit, start = base.itemsize, int(base.__array_interface__["data"][0])
    first = low = high = start + data.offset * unit
    for size, stride in zip(data.shape, data.strides, strict=True):
        step = (size - 1) * stride * unit
        high, low = (high + step, low) if step > 0 else (high, low + step)
    steps = tuple(
        st * unit if n != 1 else 0 for n, st in zip(data.shape, data.strides, strict=True)
    )
    layout = (first, unit, data.shape, steps)
    return layout, low, high + unit - 1


def _check_no_overlap(what: str, out: TensorData, inputs: tuple[TensorData, ...]) -> None:
    """Raise if `out` may share memory with an input without being exactly that input."""
    for name, x in zip("ab", inputs, strict=False):
        if unsafe_overlap(out, x):
            raise RuntimeError(
                f"{what}: the output (shape {tuple(out.shape)}, strides {out.strides}, offset "
                f"{out.offset}) overlaps input {name} (shape {tuple(x.shape)}, strides "
                f"{x.strides}, "
                f"offset {x.offset}) without being the same cells in the same layout; write "
                "into a separate tensor, or into that input itself"
            )


def unsafe_overlap(out: TensorData, x: TensorData) -> bool:
    """True if `x` may share memory with `out` without being exactly out's cells and layout.

    A kernel writing `out` while reading such an `x` could read cells already written.
    """
    if x.base is out.base:
        if (x.offset, x.shape, x.strides) == (out.offset, out.shape, out.strides):
            return False
    elif not (
        isinstance(x.base, np.ndarray)
        and isinstance(out.base, np.ndarray)
        and np.may_share_memory(x.base, out.base)
    ):
        return False
    (x_layout, x_low, x_high), (o_layout, o_low, o_high) = _extent(x), _extent(out)
    if not x.size or not out.size or x_layout == o_layout:
        return False
    return not (x_high < o_low or o_high < x_low)


def check_storage_size(shape: tuple[int, ...], itemsize: int) -> None:
    """Raise PyTorch's RuntimeError if `shape`'s cells need more bytes than int64 counts.

    Checked before any kernel allocates: a wrapped size would allocate a short buffer.
    """
    if numel_of(shape) * itemsize > INT64_MAX:
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={list(shape)} ({itemsize}-byte "
            f"cells: more than 2**63 - 1 bytes)"
        )


def _check_writable(out: TensorData) -> None:
    base = out.base
    if isinstance(base, np.ndarray) and not base.flags.writeable:
        raise RuntimeError(
            f"unsupported operation: the written-to tensor (shape {tuple(out.shape)}) lives in "
            "read-only memory (a non-writable numpy array). Please clone() it first."
        )
    for size, stride in zip(out.shape, out.strides, strict=True):
        if size > 1 and stride == 0:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor "
                f"refers to a single memory location (shape {tuple(out.shape)}, strides "
                f"{out.strides}). Please clone() the tensor before performing the operation."
            )


__all__ = ["KernelSet", "SimpleOps", "TensorBackend", "REDUCE_OPS", "strides_from_shape"]
