"""SimpleOps: the kernel contract in plain Python, the executable specification.

Every other backend must compute what these loops compute. They use the index
math of `tensor_data.py` and the scalar functions of `scalar_math.py`, and read
and write numpy storage one cell at a time, so they are slow but obvious.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from minifw.core import operators
from minifw.core.tensor_data import Index, broadcast_index, index_to_position, to_index

Storage = Any


def _ieee(kernel: Any) -> Any:
    """Run a numpy-scalar kernel with IEEE results (x/0 = inf, 0/0 = nan) and no warnings."""

    @functools.wraps(kernel)
    def quiet(*args: Any) -> None:
        with np.errstate(all="ignore"):
            kernel(*args)

    return quiet


class HostStorage:
    """Storage helpers of the CPU backends: storage is a flat numpy array."""

    @staticmethod
    def empty(size: int, dtype: Any) -> Storage:
        """Uninitialised host storage."""
        return np.empty(size, dtype=dtype)

    @staticmethod
    def from_numpy(array: np.ndarray) -> Storage:
        """The flat host array itself: CPU storage is a numpy array."""
        return array

    @staticmethod
    def to_numpy(storage: Storage) -> np.ndarray:
        """The host storage itself."""
        return np.asarray(storage)


class SimpleOps(HostStorage):
    """The pure-Python reference kernels: slow, obvious, and the specification.

    Each kernel trusts the launcher: shapes broadcast, `out` is writable (no stride 0
    over more than one cell), dtypes match and `dim` exists.
    """

    device = "cpu"

    # BEGIN TASK 2.3
    @staticmethod
    @_ieee
    def map(
        op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
    ) -> None:  # fmt: skip
        """Apply a unary op to every cell of out.

        f = unary_function(op)  # the op's scalar function; ValueError if op is not unary
        for i in range(size(out_shape)):
            out_index = to_index(i, out_shape)
            a_index = broadcast_index(out_index, out_shape, a_shape)
            out[position(out_index)] = f(a[position(a_index)])

        Invariants: each out cell is written exactly once; a is only read.
        """
        f = operators.unary_function(op)
        out_index = np.zeros(len(out_shape), dtype=np.int64)
        a_index = np.zeros(len(a_shape), dtype=np.int64)
        for ordinal in range(int(np.prod(out_shape))):
            to_index(ordinal, out_shape, out_index)
            broadcast_index(out_index, out_shape, a_shape, a_index)
            value = a[index_to_position(a_index, a_strides)]
            out[index_to_position(out_index, out_strides)] = f(value)

    @staticmethod
    @_ieee
    def zip(
        op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """Apply a binary op cell by cell, a and b broadcast to out.

        f = binary_function(op)  # the op's scalar function; ValueError if op is not binary
        for i in range(size(out_shape)):
            out_index = to_index(i, out_shape)
            x = a[position(broadcast_index(out_index, out_shape, a_shape))]
            y = b[position(broadcast_index(out_index, out_shape, b_shape))]
            out[position(out_index)] = f(x, y)

        Invariants: each out cell is written exactly once; a and b are only read.
        """
        f = operators.binary_function(op)
        out_index = np.zeros(len(out_shape), dtype=np.int64)
        a_index = np.zeros(len(a_shape), dtype=np.int64)
        b_index = np.zeros(len(b_shape), dtype=np.int64)
        for ordinal in range(int(np.prod(out_shape))):
            to_index(ordinal, out_shape, out_index)
            broadcast_index(out_index, out_shape, a_shape, a_index)
            broadcast_index(out_index, out_shape, b_shape, b_index)
            x = a[index_to_position(a_index, a_strides)]
            y = b[index_to_position(b_index, b_strides)]
            out[index_to_position(out_index, out_strides)] = f(x, y)

    @staticmethod
    @_ieee
    def reduce(
        op: int, out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index, dim: int,
    ) -> None:  # fmt: skip
        """Fold a along dim into out, which has size 1 there and holds the start value.

        f = binary_function(op)  # ValueError if op is not binary
        for i in range(size(out_shape)):
            index = to_index(i, out_shape)
            acc = out[position(index)]
            for k in range(a_shape[dim]):
                index[dim] = k
                acc = f(acc, a[position(index)])
            out[position(index with dim = 0)] = acc

        Invariants: each out cell is written once, after its whole fold; out and a have
        the same number of dims and equal sizes except along dim.
        """
        f = operators.binary_function(op)
        out_index = np.zeros(len(out_shape), dtype=np.int64)
        for ordinal in range(int(np.prod(out_shape))):
            to_index(ordinal, out_shape, out_index)
            position = index_to_position(out_index, out_strides)
            acc = out[position]
            for k in range(a_shape[dim]):
                out_index[dim] = k
                acc = f(acc, a[index_to_position(out_index, a_strides)])
            out[position] = acc

    @staticmethod
    @_ieee
    def matmul(
        out: Storage, out_shape: Index, out_strides: Index,
        a: Storage, a_shape: Index, a_strides: Index,
        b: Storage, b_shape: Index, b_strides: Index,
    ) -> None:  # fmt: skip
        """Batched matrix product over 3-D operands.

        for n, i, j in out's cells:
            out[n, i, j] = sum over k of a[n, i, k] * b[n, k, j]

        Invariants: a is (N or 1, I, K), b is (N or 1, K, J), out is (N, I, J); a batch
        of size 1 is read for every n; each out cell is written exactly once.
        """
        a_batch = a_strides[0] if a_shape[0] > 1 else 0
        b_batch = b_strides[0] if b_shape[0] > 1 else 0
        for n in range(out_shape[0]):
            for i in range(out_shape[1]):
                for j in range(out_shape[2]):
                    acc = out.dtype.type(0)
                    for k in range(a_shape[2]):
                        acc += (
                            a[n * a_batch + i * a_strides[1] + k * a_strides[2]]
                            * b[n * b_batch + k * b_strides[1] + j * b_strides[2]]
                        )
                    out[n * out_strides[0] + i * out_strides[1] + j * out_strides[2]] = acc

    # END TASK 2.3
