"""Elementwise math beyond the course's ops, with PyTorch's dtype rules and gradients.

The Tensor methods of the MATH section (`t.sin()`, `t.clamp(...)`, `t % 3`, ...) call
the functions here. Unary ops are rows of the op table (`core/operators.py`), so each
is one map with its autograd Function made from its row; the binary ops with their own
gradient rules (atan2, maximum, clamp, remainder...) are Functions below, forward beside
backward. Integer division and remainders of int64 tensors run on the host with numpy:
kernels compute through float64, which is exact only up to 2**53.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.hooks import anyone_listening
from minifw.tensor.functions import (
    Function,
    FunctionCtx,
    PowTensor,
    Where,
    elementwise,
    is_tensor,
)

if TYPE_CHECKING:
    from minifw.tensor.tensor import Tensor

ROUNDING_MODES = (None, "trunc", "floor")


# ---- Unary ops: which dtype each one computes in ------------------------------------------


def floating_unary(t: Tensor, op: int) -> Tensor:
    """Op `op` cell by cell; integer tensors are promoted to the default float dtype."""
    return elementwise(op, t._floating())


def dtype_keeping_unary(t: Tensor, op: int) -> Tensor:
    """Op `op` cell by cell in t's own dtype (sign, square: int64 stays int64)."""
    return elementwise(op, t)


def rounding_unary(t: Tensor, op: int) -> Tensor:
    """Floor, ceil, round or trunc: a copy for integer tensors, whose values are integral."""
    if not t.dtype.is_floating_point:  # an exact copy (compiled int64 copies pass float64)
        if anyone_listening[0]:
            hooks.host_read(f"an int64 copy of a tensor of shape {tuple(t.shape)}")
        host = np.array(t.backend.to_numpy(t._data), copy=True)
        return t._new(t.backend.from_numpy(host))
    return elementwise(op, t)


def frac(t: Tensor) -> Tensor:
    """The fractional part x - trunc(x) cell by cell; integer tensors are refused."""
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f'"frac" is not implemented for dtype {t.dtype}')
    return elementwise(ops.FRAC, t)


def round_to(t: Tensor, decimals: int = 0) -> Tensor:
    """Round half to even, to `decimals` decimal places (negative: to tens, hundreds...)."""
    if decimals == 0:
        return rounding_unary(t, ops.ROUND)
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"round with decimals is not implemented for {t.dtype}")
    scale = 10.0**decimals
    return rounding_unary(t * scale, ops.ROUND) / scale


# ---- Powers with tensor exponents -------------------------------------------------------


def tensor_power(base: Tensor, exponent: Tensor) -> Tensor:
    """The power base ** exponent for two tensors (broadcasting), differentiable in both.

    Integer operands stay integer (computed exactly on the host, as `Tensor._int_pow`);
    otherwise both are promoted as for `+` and one POW zip computes the result.
    """
    a, b = base._pair(exponent)
    if a.dtype.is_floating_point:
        return PowTensor.apply(a, b)
    if a.dtype.name == "bool":
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    return a._int_pow(b)


def number_power(base: Any, exponent: Tensor) -> Tensor:
    """The power number ** tensor, as PyTorch: any real base (negative and zero included).

    The base is a constant; the exponent gets the gradient base^e * log(base) (0 where
    the base is 0 and e >= 0, nan for a negative base).
    """
    numpy_number = type(base).__module__ == "numpy" and getattr(base, "ndim", None) == 0
    if not isinstance(base, bool | int | float) and not numpy_number:
        raise TypeError(
            f"unsupported operand type(s) for ** or pow(): '{type(base).__name__}' and 'Tensor'"
        )
    return tensor_power(exponent._operand(base), exponent)


# ---- Binary ops with their own gradient rules ---------------------------------------------


class Atan2(Function):
    """atan2(a, b): the angle of the point (b, a), broadcasting."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """One zip of ATAN2; save both inputs for backward."""
        ctx.save_for_backward(a, b)
        return a._zip(ops.ATAN2, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
        """Return grad * b / (a^2 + b^2) and -grad * a / (a^2 + b^2)."""
        a, b = ctx.saved_tensors
        scale = grad / (a * a + b * b)
        return scale * b, -scale * a


class Maximum(Function):
    """maximum(a, b) cell by cell (nan if either is nan); ties share the gradient."""

    op, loses, wins = ops.MAX, ops.LT, ops.GT

    @classmethod
    def forward(cls, ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:  # type: ignore[override]
        """One zip of the op; when a gradient is needed, save each side's share of it."""
        if any(ctx.needs_input_grad):
            ctx.save_for_backward(_share(a, b, cls.loses), _share(a, b, cls.wins))
        return a._zip(cls.op, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
        """Return grad times each side's share: 1 where it is picked, 1/2 on ties, else 0."""
        share_a, share_b = ctx.saved_tensors
        return grad * share_a, grad * share_b


class Minimum(Maximum):
    """minimum(a, b) cell by cell (nan if either is nan); ties share the gradient."""

    op, loses, wins = ops.MIN, ops.GT, ops.LT


def _share(a: Tensor, b: Tensor, loses: int) -> Tensor:
    """1 where a is picked, 0 where it loses (a `loses` b), 1/2 on ties (as PyTorch)."""
    kind = a.dtype.numpy
    lost = a._zip(loses, b, kind)
    tie = a._zip(ops.EQ, b, kind)
    return (1.0 - lost) - tie * 0.5


class Remainder(Function):
    """a - floor(a / b) * b (the sign of b), for floats; PyTorch's a % b."""

    op = ops.REMAINDER

    @classmethod
    def forward(cls, ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:  # type: ignore[override]
        """One zip of the op; save the rounded quotient when b needs a gradient."""
        if ctx.needs_input_grad[1]:
            ctx.save_for_backward(cls.quotient(a, b))
        return a._zip(cls.op, b)

    @staticmethod
    def quotient(a: Tensor, b: Tensor) -> Tensor:
        """floor(a / b): the multiple of b that the op subtracts."""
        return a._zip(ops.FLOOR_DIVIDE, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor | None]:
        """Return grad and -grad * quotient."""
        if not ctx.needs_input_grad[1]:
            return grad, None
        (quotient,) = ctx.saved_tensors
        return grad, -grad * quotient


class Fmod(Remainder):
    """a - trunc(a / b) * b (the sign of a), for floats; C's fmod."""

    op = ops.FMOD

    @staticmethod
    def quotient(a: Tensor, b: Tensor) -> Tensor:
        """trunc(a / b): the multiple of b that fmod subtracts."""
        return a._zip(ops.DIV, b)._map(ops.TRUNC)


class RoundedDiv(Function):
    """a / b rounded down ("floor") or toward zero ("trunc"): a step function of a and b."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor, mode: str) -> Tensor:
        """One zip of FLOOR_DIVIDE, or a division and a map of TRUNC."""
        if mode == "floor":
            return a._zip(ops.FLOOR_DIVIDE, b)
        return a._zip(ops.DIV, b)._map(ops.TRUNC)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor, None]:
        """Return zero gradients: the result is flat almost everywhere (as PyTorch)."""
        zero = grad._zeros(grad.shape)
        return zero, zero, None


class Clamp(Function):
    """x limited to [lo, hi] cell by cell (either bound may be None; hi wins if lo > hi)."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, lo: Tensor | None, hi: Tensor | None) -> Tensor:
        """max(x, lo), then min(., hi); save the gradient masks when one is needed."""
        out = x
        if lo is not None:
            out = out._zip(ops.MAX, lo)
        if hi is not None:
            out = out._zip(ops.MIN, hi)
        if any(ctx.needs_input_grad):
            ctx.save_for_backward(*_clamp_masks(x, lo, hi))
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, ...]:
        """Return grad where x is inside the bounds, and to each bound where it holds."""
        masks = ctx.saved_tensors
        return tuple(None if mask is None else grad * mask for mask in masks)


def _clamp_masks(x: Tensor, lo: Tensor | None, hi: Tensor | None) -> list[Tensor | None]:
    """0/1 masks: where x passes through, where lo is the result, where hi is (as PyTorch)."""
    kind = x.dtype.numpy
    inside = lo_mask = hi_mask = None
    if lo is not None:
        inside = x._zip(ops.GE, lo, kind)
        lo_mask = x._zip(ops.LT, lo, kind)
    if hi is not None:
        below_hi = x._zip(ops.LE, hi, kind)
        inside = below_hi if inside is None else inside * below_hi
        hi_mask = x._zip(ops.GT, hi, kind)
    if lo is not None and hi is not None:
        assert lo_mask is not None and hi_mask is not None
        lo_mask = lo_mask * lo._zip(ops.LT, hi, kind)
        hi_mask = hi_mask._zip(ops.MAX, hi._zip(ops.LT, lo, kind))
    return [inside, lo_mask, hi_mask]


# ---- Entry points of the Tensor methods ---------------------------------------------------


def atan2(t: Tensor, other: Any) -> Tensor:
    """The angle of the point (other, t) cell by cell, in the promoted float dtype."""
    return Atan2.apply(*t._float_pair(other))


def maximum(t: Tensor, other: Any) -> Tensor:
    """The larger of t and other cell by cell, in their promoted dtype."""
    return Maximum.apply(*t._pair(other))


def minimum(t: Tensor, other: Any) -> Tensor:
    """The smaller of t and other cell by cell, in their promoted dtype."""
    return Minimum.apply(*t._pair(other))


def remainder(t: Tensor, other: Any) -> Tensor:
    """The remainder t % other, with the sign of other (Python's and PyTorch's %)."""
    a, b = t._pair(other)
    if not a.dtype.is_floating_point:
        return _host_division(a, b, "remainder")
    return Remainder.apply(a, b)


def fmod(t: Tensor, other: Any) -> Tensor:
    """C's fmod: the remainder of t / other with the sign of t."""
    a, b = t._pair(other)
    if not a.dtype.is_floating_point:
        return _host_division(a, b, "fmod")
    return Fmod.apply(a, b)


def reverse_remainder(t: Tensor, number: Any) -> Tensor:
    """The remainder number % t."""
    b, a = t._pair(number)
    return remainder(a, b)


def divide(t: Tensor, other: Any, rounding_mode: str | None = None) -> Tensor:
    """The quotient t / other, or rounded down ("floor") or toward zero ("trunc")."""
    if rounding_mode not in ROUNDING_MODES:
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"{rounding_mode!r}"
        )
    if rounding_mode is None:
        return t / other  # type: ignore[no-any-return]
    a, b = t._pair(other)
    if not a.dtype.is_floating_point:
        return _host_division(a, b, rounding_mode)
    return RoundedDiv.apply(a, b, rounding_mode)


def reverse_floor_divide(t: Tensor, number: Any) -> Tensor:
    """The floor quotient number // t."""
    b, a = t._pair(number)
    return divide(a, b, "floor")


def _host_division(a: Tensor, b: Tensor, kind: str) -> Tensor:
    """Integer floor/trunc division, remainder or fmod of two int64 tensors, exactly.

    Kernels compute through float64, exact only up to 2**53, so numpy does it. A zero
    divisor raises PyTorch's RuntimeError before anything is computed.
    """
    x, y = a.backend.to_numpy(a._data), b.backend.to_numpy(b._data)
    if np.any(y == 0):
        raise RuntimeError("ZeroDivisionError")
    if anyone_listening[0]:  # values computed on the host: tell the tools (mf.compile)
        hooks.host_read(f"int64 {kind} of tensors of shapes {tuple(a.shape)} and {tuple(b.shape)}")
    with np.errstate(over="ignore"):
        if kind == "remainder":
            result = np.remainder(x, y)
        elif kind == "fmod":
            result = np.fmod(x, y)
        else:
            result = np.floor_divide(x, y)
            if kind == "trunc":
                result = result + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))
    host = np.ascontiguousarray(np.asarray(result, dtype=a.dtype.numpy))
    return a._new(a.backend.from_numpy(host))


def clamp(t: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Limit t to [min, max] cell by cell; bounds are numbers or tensors (broadcast)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    x = t
    for bound in (min, max):
        if bound is not None:
            x, _ = x._pair(bound)  # the dtype that every operand promotes to
    lo = None if min is None else x._operand(min).to(x.dtype)
    hi = None if max is None else x._operand(max).to(x.dtype)
    return Clamp.apply(x, lo, hi)


def lerp(start: Tensor, end: Any, weight: Any) -> Tensor:
    """Interpolate start + weight * (end - start), as PyTorch does (exact at 0 and 1)."""
    if not is_tensor(end) or end.dtype is not start.dtype:
        found = end.dtype if is_tensor(end) else type(end).__name__
        raise RuntimeError(f"expected dtype {start.dtype} for `end` but got dtype {found}")
    if is_tensor(weight) and weight.dtype is not start.dtype:
        raise RuntimeError(
            f"expected dtype {start.dtype} for `weight` but got dtype {weight.dtype}"
        )
    diff = end - start
    if not is_tensor(weight):
        if abs(weight) < 0.5:
            return start + weight * diff  # type: ignore[no-any-return]
        return end - diff * (1.0 - weight)  # type: ignore[no-any-return]
    low = start + weight * diff
    high = end - diff * (1.0 - weight)
    small = weight.detach().abs()._zip(ops.LT, weight._scalar_like(0.5))
    return Where.apply(small, low, high)


def add(t: Tensor, other: Any, alpha: Any = 1, subtract: bool = False) -> Tensor:
    """The sum t + alpha * other (t - alpha * other with `subtract`)."""
    if alpha != 1:
        if isinstance(alpha, float) and not t.dtype.is_floating_point:
            raise RuntimeError(
                "For integral input tensors, argument alpha must not be a floating point number."
            )
        other = t._operand(other) * alpha
    return t - other if subtract else t + other  # type: ignore[no-any-return]


__all__ = [
    "add",
    "atan2",
    "clamp",
    "divide",
    "dtype_keeping_unary",
    "floating_unary",
    "fmod",
    "frac",
    "lerp",
    "maximum",
    "minimum",
    "power",
    "remainder",
    "reverse_floor_divide",
    "reverse_remainder",
    "round_to",
    "rounding_unary",
]


def power(base: Any, exponent: Any) -> Tensor:
    """The power base ** exponent, where base is a tensor or (with a tensor exponent) a number."""
    if is_tensor(base):
        return base.pow(exponent)  # type: ignore[no-any-return]
    if not is_tensor(exponent):
        raise TypeError(
            f"pow(): expected a Tensor base or exponent, got {type(base).__name__} and "
            f"{type(exponent).__name__}"
        )
    return base**exponent  # type: ignore[no-any-return]
