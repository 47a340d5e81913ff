"""Tensor arithmetic, comparisons and elementwise functions, with PyTorch's promotion.

Python numbers mix in on either side (`2 * t`, `1 - t`); an int64 tensor meeting a
float becomes float; division of ints gives floats. Comparisons return 0./1.
tensors in the operands' float dtype (PyTorch returns bool) and record no graph.
"""

# Mixin methods take `self: Tensor`; mypy cannot see that Tensor subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from . import operators as ops
from .tensor_functions import (
    Abs,
    Add,
    Div,
    Exp,
    Log,
    MatMul,
    Mul,
    Neg,
    Pow,
    Reciprocal,
    ReLU,
    Sigmoid,
    Sqrt,
    Sub,
    Tanh,
    is_tensor,
)

if TYPE_CHECKING:
    from .tensor import Tensor


class MathMixin:
    """+ - * / ** @, comparisons, and exp log sigmoid relu tanh sqrt abs reciprocal."""

    __slots__ = ()

    def __add__(self: Tensor, other: Any) -> Tensor:
        return Add.apply(*self._pair(other))

    def __radd__(self: Tensor, other: Any) -> Tensor:
        # `2 + x` is x + 2 (the same sum), as in PyTorch; kernels read x's cells in SIMD
        # lanes and hold the number, the broadcast operand, in a register.
        return Add.apply(*self._pair(other))

    def __sub__(self: Tensor, other: Any) -> Tensor:
        return Sub.apply(*self._pair(other))

    def __rsub__(self: Tensor, other: Any) -> Tensor:
        return Sub.apply(*reversed(self._pair(other)))

    def __mul__(self: Tensor, other: Any) -> Tensor:
        return Mul.apply(*self._pair(other))

    def __rmul__(self: Tensor, other: Any) -> Tensor:
        return Mul.apply(*self._pair(other))  # `2 * x` is x * 2, as `2 + x` above

    def __truediv__(self: Tensor, other: Any) -> Tensor:
        return Div.apply(*self._float_pair(other))

    def __rtruediv__(self: Tensor, other: Any) -> Tensor:
        return Div.apply(*reversed(self._float_pair(other)))

    def __neg__(self: Tensor) -> Tensor:
        return Neg.apply(self)

    def __pos__(self: Tensor) -> Tensor:
        return self

    def __abs__(self: Tensor) -> Tensor:
        return self.abs()

    def __pow__(self: Tensor, exponent: Any) -> Tensor:
        return self.pow(exponent)

    def pow(self: Tensor, exponent: Any) -> Tensor:
        """Self ** exponent, for a number (or one-element tensor) exponent."""
        if is_tensor(exponent):
            if exponent.numel() != 1:
                raise TypeError(
                    f"pow: the exponent must be a number or a one-element tensor (got shape "
                    f"{exponent.shape}); tensor ** tensor is not supported"
                )
            exponent = exponent.item()
        if not isinstance(exponent, int | float | np.number):
            raise TypeError(f"pow: unsupported exponent type {type(exponent).__name__}")
        base = self
        if isinstance(exponent, float | np.floating) and not self.dtype.is_floating_point:
            base = self.to(dtypes.get_default_dtype())
        elif not self.dtype.is_floating_point and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return Pow.apply(base, exponent)

    def __rpow__(self: Tensor, base: Any) -> Tensor:
        if not isinstance(base, int | float) or base <= 0:
            raise TypeError(
                f"number ** tensor needs a positive number base (got {base!r}); minifw "
                f"computes it as exp(tensor * log(base))"
            )
        return (self._floating() * math.log(base)).exp()

    def __matmul__(self: Tensor, other: Any) -> Tensor:
        return MatMul.apply(*self._pair(other))

    def __rmatmul__(self: Tensor, other: Any) -> Tensor:
        return MatMul.apply(*reversed(self._pair(other)))

    def matmul(self: Tensor, other: Tensor) -> Tensor:
        """Self @ other."""
        return self @ other

    def _compare(self: Tensor, op: int, other: Any) -> Tensor:
        a, b = self._pair(other)
        out = a.dtype if a.dtype.is_floating_point else dtypes.get_default_dtype()
        return a.detach()._zip(op, b.detach(), out.numpy)

    def __lt__(self: Tensor, other: Any) -> Tensor:
        return self._compare(ops.LT, other)

    def __gt__(self: Tensor, other: Any) -> Tensor:
        return self._compare(ops.GT, other)

    def __le__(self: Tensor, other: Any) -> Tensor:
        return self._compare(ops.LE, other)

    def __ge__(self: Tensor, other: Any) -> Tensor:
        return self._compare(ops.GE, other)

    def __eq__(self: Tensor, other: Any) -> Tensor:  # type: ignore[override]
        if other is None:
            return NotImplemented
        return self._compare(ops.EQ, other)

    def __ne__(self: Tensor, other: Any) -> Tensor:  # type: ignore[override]
        if other is None:
            return NotImplemented
        return self._compare(ops.NE, other)

    # Elementwise functions
    def exp(self: Tensor) -> Tensor:
        """e^x cell by cell."""
        return Exp.apply(self._floating())

    def log(self: Tensor) -> Tensor:
        """Natural log cell by cell (-inf at 0, nan below)."""
        return Log.apply(self._floating())

    def sigmoid(self: Tensor) -> Tensor:
        """1 / (1 + e^-x) cell by cell."""
        return Sigmoid.apply(self._floating())

    def relu(self: Tensor) -> Tensor:
        """max(x, 0) cell by cell."""
        return ReLU.apply(self)

    def tanh(self: Tensor) -> Tensor:
        """Tanh x cell by cell."""
        return Tanh.apply(self._floating())

    def sqrt(self: Tensor) -> Tensor:
        """Square root cell by cell (nan below 0)."""
        return Sqrt.apply(self._floating())

    def abs(self: Tensor) -> Tensor:
        """|x| cell by cell."""
        return Abs.apply(self)

    def reciprocal(self: Tensor) -> Tensor:
        """1 / x cell by cell."""
        return Reciprocal.apply(self._floating())
