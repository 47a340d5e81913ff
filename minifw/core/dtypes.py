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
double, float, long = float64, float32, int64  # noqa: A001 - PyTorch's aliases
# The DType of each storage dtype (a lookup, no call: Tensor() reads it for every result).
BY_NUMPY = {d.numpy: d for d in (float64, float32, int64)}
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
        raise TypeError(f"unsupported dtype {value!r}: expected float64, float32 or int64")
    return BY_NUMPY[key]


def from_numpy_dtype(dtype: np.dtype[Any]) -> DType:
    """The DType whose storage matches `dtype` (bools become float, other ints int64)."""
    if dtype in BY_NUMPY:
        return BY_NUMPY[dtype]
    if dtype.kind in "iu":
        return int64
    if dtype.kind in "fb":
        return _default[0] if dtype.kind == "b" else float64
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
    """The dtype of an operation mixing `first` and `second` (ints yield to floats)."""
    if first is second:
        return first
    if first.is_floating_point and second.is_floating_point:
        return float64
    return first if first.is_floating_point else second
