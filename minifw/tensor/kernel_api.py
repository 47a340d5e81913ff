"""The kernel-level API: what nn, optim and the compiler use below Tensor's public methods.

A Tensor method (`a - b`, `a.sum(dim)`) promotes dtypes, checks shapes and devices, and
records autograd history. An autograd Function's forward and backward, an optimizer's
update and a capture of `mf.compile` work one level lower: on the cells themselves,
one kernel launch per call, operands already of the right dtype and device, nothing
recorded. These functions are that level, and the only way the layers above reach it
(they never touch a Tensor's private members):

- `cells(t)` is the `TensorData` a tensor reads (storage, shape, strides), what a
  backend's kernels take; `wrap(data, like)` makes a tensor over a backend's result;
  `flat(t)` views a contiguous tensor's cells as 1-D.
- `map_op`, `zip_op` and `reduce_op` launch one map, zip or reduce of an op code of
  `minifw.core.operators` (`ops.EXP`, `ops.ADD`, ...) and wrap its result.
- `scalar`, `full` and `zeros` make constants of a tensor's dtype on its device;
  `floating` gives a float tensor for an integer one; `one_hot_along` marks positions.
- `bump_version` counts an in-place write done straight into `cells(t)`, so autograd
  still sees that saved tensors changed.
- `has_hooks` and `store_grad` serve `mf.compile`'s replay.
"""

from __future__ import annotations

from typing import Any

from minifw.core.tensor_data import TensorData
from minifw.tensor.tensor import Tensor

Number = int | float


def cells(t: Tensor) -> TensorData:
    """The TensorData `t` reads: its storage, shape, strides and offset (no copy)."""
    return t._data


def wrap(data: TensorData, like: Tensor) -> Tensor:
    """A new tensor over `data` (a result of `like.backend`), with no history."""
    return like._new(data)


def flat(t: Tensor) -> Tensor:
    """A 1-D view of the cells of `t`, which must be contiguous (no copy, no history)."""
    return t._flat()


def map_op(op: int, a: Tensor) -> Tensor:
    """One map launch: op applied to each cell of `a` (a new tensor of a's dtype)."""
    return a._map(op)


def zip_op(op: int, a: Tensor, b: Tensor, out_dtype: Any = None) -> Tensor:
    """One zip launch: op of a's and b's cells, broadcast together.

    `a` and `b` must have one dtype and device; the result has that dtype, or the numpy
    dtype `out_dtype` (comparisons writing 0/1 cells into a float tensor, casts).
    """
    return a._zip(op, b, out_dtype)


def reduce_op(op: int, a: Tensor, dim: int) -> Tensor:
    """One reduce launch: op folded along `dim` of `a` (kept with size 1)."""
    return a._reduce(op, dim)


def scalar(like: Tensor, value: Number) -> Tensor:
    """A 0-dim tensor holding `value`, of like's dtype on like's device."""
    return like._scalar_like(value)


def full(like: Tensor, shape: tuple[int, ...], value: Number) -> Tensor:
    """A tensor of `shape` filled with `value`, of like's dtype on like's device."""
    return like._full(shape, value)


def zeros(like: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A tensor of `shape` filled with zeros, of like's dtype on like's device."""
    return like._zeros(shape)


def floating(t: Tensor) -> Tensor:
    """`t` itself when it is floating point, else `t` cast to the default float dtype."""
    return t._floating()


def one_hot_along(like: Tensor, dim: int, indices: Tensor) -> Tensor:
    """1 where the position along `dim` equals `indices` (keepdim-shaped), else 0.

    The result has like's dtype and broadcasts to like's shape.
    """
    return like._one_hot_along(dim, indices)


def bump_version(t: Tensor) -> None:
    """Count an in-place write made straight into `cells(t)` (autograd checks the count)."""
    t._bump_version()


def has_hooks(t: Tensor) -> bool:
    """True when hooks are registered on `t` (`register_hook`)."""
    return bool(t._hooks)


def store_grad(leaf: Tensor, grad: Tensor | None) -> None:
    """Set `leaf.grad` without the setter's checks (the caller has checked the layout)."""
    leaf._grad = grad


__all__ = [
    "bump_version",
    "cells",
    "flat",
    "floating",
    "full",
    "has_hooks",
    "map_op",
    "one_hot_along",
    "reduce_op",
    "scalar",
    "store_grad",
    "wrap",
    "zeros",
    "zip_op",
]
