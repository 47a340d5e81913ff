"""The dtypes a tensor can have, and the default float dtype."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np


class DType:
    """A tensor element type: a name and the numpy dtype its storage uses."""

    __slots__ = ("name", "numpy", "is_floating_point")

    def __init__(self, name: str) -> None:
        self.name = name
        self.numpy = np.dtype(name)
        self.is_floating_point = self.numpy.kind == "f"

    def __repr__(self) -> str:
        return f"minifw.{self.name}"

    def __reduce__(self) -> str:
        return self.name


float64 = DType("float64")
float32 = DType("float32")
int64 = DType("int64")
bool = DType("bool")  # noqa: A001 - PyTorch's name torch.bool
double, float, long = float64, float32, int64  # noqa: A001 - PyTorch's aliases
# The DType of each storage dtype (a lookup, no call: Tensor() reads it for every result).
BY_NUMPY = {d.numpy: d for d in (float64, float32, int64, bool)}
# PyTorch's type-promotion categories: bool < integers < floating point.
_CATEGORY = {bool: 0, int64: 1, float32: 2, float64: 2}
_default = [float64]


def as_dtype(value: Any) -> DType:
    """The DType named by `value`: a DType, a numpy dtype, a string or a Python type."""
    if isinstance(value, DType):
        return value
    if value is builtins.float:
        return _default[0]
    if value is builtins.int:
        return int64
    try:
        key = np.dtype(value)
    except TypeError:
        key = None
    if key is None or key not in BY_NUMPY:
        raise TypeError(f"unsupported dtype {value!r}: expected float64, float32, int64 or bool")
    return BY_NUMPY[key]


def from_numpy_dtype(dtype: np.dtype[Any]) -> DType:
    """The DType whose storage matches `dtype` (other ints become int64, floats float64)."""
    if dtype in BY_NUMPY:
        return BY_NUMPY[dtype]
    if dtype.kind in "iu":
        return int64
    if dtype.kind == "f":
        return float64
    raise TypeError(f"can't convert numpy array of dtype {dtype}: only numbers are supported")


def get_default_dtype() -> DType:
    """The float dtype new tensors get from Python floats."""
    return _default[0]


def set_default_dtype(dtype: Any) -> None:
    """Make `dtype` (float64 or float32) the dtype of new float tensors."""
    value = as_dtype(dtype)
    if not value.is_floating_point:
        raise TypeError(
            f"only floating-point types are supported as the default type, got {value}"
        )
    _default[0] = value


def promote(first: DType, second: DType) -> DType:
    """The dtype of an operation on tensors of `first` and `second`, as in PyTorch.

    bool yields to int64 and both yield to floats; float32 with float64 gives float64.
    """
    if first is second:
        return first
    rank_first, rank_second = _CATEGORY[first], _CATEGORY[second]
    if rank_first != rank_second:
        return first if rank_first > rank_second else second
    return float64 if rank_first == 2 else int64


def result_type(
    first: DType, first_0d: builtins.bool, second: DType, second_0d: builtins.bool
) -> DType:
    """The dtype of an operation on two tensors, as in PyTorch.

    A 0-dim tensor (`first_0d`, `second_0d`) decides only when its category (bool <
    integer < float) is above the other's: float32 tensor + float64 0-dim is float32.
    """
    if first_0d == second_0d:
        return promote(first, second)
    dims, zero = (second, first) if first_0d else (first, second)
    return zero if _CATEGORY[zero] > _CATEGORY[dims] else dims


def scalar_dtype(tensor_dtype: DType, value: object) -> DType:
    """The dtype of an operation on a tensor of `tensor_dtype` and the Python number `value`.

    As in PyTorch, a scalar changes the result only when it is of a higher category:
    a float turns a bool or int tensor into the default float, an int turns a bool
    tensor into int64; a bool never changes anything.
    """
    rank = _CATEGORY[tensor_dtype]
    if isinstance(value, builtins.bool | np.bool_):
        return tensor_dtype
    if isinstance(value, builtins.float | np.floating):
        return tensor_dtype if rank == 2 else _default[0]
    return tensor_dtype if rank >= 1 else int64
