"""Bool tensors: comparisons, logic, all/any, closeness tests and legacy constructors.

Also the dtype conversions by name and PyTorch's legacy constructors
(`mf.Tensor([1., 2.])`, `mf.FloatTensor(2, 3)`).

Kernels never compute on bool cells: they read them as 0/1 numbers and write bool
results through their output dtype, with ops that give 0 or 1. So a comparison is one
zip with a bool output, `a & b` on bools is a zip of MUL into bool cells, `a | b` of
MAX, `a ^ b` of NE and `~a` of EQ with False. Bitwise operators on
int64 tensors run on the host with numpy: kernels compute through float64, exact only
up to 2**53, and these must be exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from minifw.core import dtypes, hooks
from minifw.core import operators as ops
from minifw.core.hooks import anyone_listening
from minifw.core.tensor_data import normalize_dim

if TYPE_CHECKING:
    from minifw.tensor.tensor import Tensor

BOOL = np.dtype(np.bool_)
# PyTorch's names of the dtypes in messages ("Float did not match Double") and in `.type()`.
TORCH_NAMES = {
    dtypes.float32: "Float",
    dtypes.float64: "Double",
    dtypes.int64: "Long",
    dtypes.bool: "Bool",
}
TYPE_NAMES = {f"torch.{name}Tensor": dtype for dtype, name in TORCH_NAMES.items()}


# ---- Comparisons and conversions to bool ----------------------------------------------------


def compare(t: Tensor, op: int, other: Any) -> Tensor:
    """`t op other` cell by cell (op: LT, GT, LE, GE, EQ, NE) as a bool tensor, no grad."""
    a, b = t.detach()._pair(other)
    return a._zip(op, b.detach(), BOOL)


def to_bool(t: Tensor) -> Tensor:
    """`t != 0` as a bool tensor (t itself if already bool); nan counts as True."""
    if t.dtype is dtypes.bool:
        return t
    x = t.detach()
    return x._zip(ops.NE, x._scalar_like(0), BOOL)


def from_bool(t: Tensor, dtype: dtypes.DType) -> Tensor:
    """A bool tensor as 0/1 cells of `dtype`, computed on t's device by one kernel."""
    return t._zip(ops.NE, t._scalar_like(False), dtype.numpy)


def falses(t: Tensor) -> Tensor:
    """A bool tensor of t's shape, all False."""
    return t._new(t.backend.full(t.shape, False, BOOL))


# ---- Logical and bitwise operators ------------------------------------------------------------

# Each gives 0 or 1 on 0/1 cells, as bool outputs need (fast_ops.as_numbers).
LOGICAL_OPS = {"and": ops.MUL, "or": ops.MAX, "xor": ops.NE}
BITWISE = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def logical(t: Tensor, how: str, other: Any) -> Tensor:
    """logical_and / _or / _xor: both sides taken as `x != 0`, broadcast, a bool result."""
    a, b = to_bool(t), to_bool(t._operand(other))
    return a._zip(LOGICAL_OPS[how], b.detach(), BOOL)


def logical_not(t: Tensor) -> Tensor:
    """`t == 0` cell by cell, as a bool tensor."""
    x = t.detach()
    return x._zip(ops.EQ, x._scalar_like(0), BOOL)


def bitwise(t: Tensor, how: str, other: Any) -> Tensor:
    """`t & other`, `t | other`, `t ^ other` for bool and int64 tensors (and numbers)."""
    a, b = t.detach()._pair(other)
    b = b.detach()
    if a.dtype is dtypes.bool:
        return a._zip(LOGICAL_OPS[how], b, BOOL)
    if a.dtype is not dtypes.int64:
        raise NotImplementedError(
            f"\"bitwise_{how}\" not implemented for '{TORCH_NAMES[a.dtype]}' (operands of "
            f"shapes {tuple(t.shape)} and {tuple(b.shape)}): use bool or int64 tensors"
        )
    shapes = f"{tuple(a.shape)} and {tuple(b.shape)}"
    return _on_host(a, b, BITWISE[how], f"int64 {how} of shapes {shapes}")


def invert(t: Tensor) -> Tensor:
    """`~t`: logical not of a bool tensor, bitwise not of an int64 tensor."""
    if t.dtype is dtypes.bool:
        return logical_not(t)
    if t.dtype is not dtypes.int64:
        raise TypeError(
            f"~ (operator.invert) is only implemented on integer and Boolean-type tensors "
            f"(got a {t.dtype} tensor of shape {tuple(t.shape)})"
        )
    x = t.detach()
    return _on_host(x, x, lambda v, _: np.invert(v), f"int64 ~ of shape {tuple(x.shape)}")


def _on_host(a: Tensor, b: Tensor, fn: Any, what: str) -> Tensor:
    """fn(a, b) computed exactly by numpy on host copies; the result on a's device."""
    if anyone_listening[0]:  # values computed on the host: tell the tools (mf.compile)
        hooks.host_read(what)
    host = fn(a.backend.to_numpy(a._data), b.backend.to_numpy(b._data))
    return a._new(a.backend.from_numpy(np.asarray(host)))


# ---- all / any ----------------------------------------------------------------------------------


def any_(t: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """True where some cell along `dim` (all dims if None) is nonzero."""
    counts = _counts(t, ops.NE, dim, keepdim)
    return counts._zip(ops.GT, counts._scalar_like(0), BOOL)


def all_(t: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """True where every cell along `dim` (all dims if None) is nonzero."""
    counts = _counts(t, ops.EQ, dim, keepdim)
    return counts._zip(ops.EQ, counts._scalar_like(0), BOOL)


def _counts(t: Tensor, op: int, dim: Any, keepdim: bool) -> Tensor:
    """How many cells along `dim` satisfy `cell op 0`, as int64."""
    if isinstance(dim, bool) or not (dim is None or isinstance(dim, int | tuple | list)):
        raise TypeError(
            f"all()/any(): dim must be an int or a tuple of ints, got {type(dim).__name__}"
        )
    if dim is not None:
        for d in dim if isinstance(dim, tuple | list) else (dim,):
            normalize_dim(d, t.dim())  # PyTorch's IndexError for a dim out of range
    x = t.detach()
    hits = x._zip(op, x._scalar_like(0), np.dtype(np.int64))
    return hits.sum(dim, keepdim)


def bool_extreme(result: Any) -> Any:
    """The max/min of a bool tensor from that of its int64 copy: values back to bool."""
    if isinstance(result, tuple):  # a MaxResult (values, indices)
        maker: Any = type(result)
        return maker(to_bool(result[0]), result[1])
    return to_bool(result)


# ---- Closeness and special values ---------------------------------------------------------------


def isnan(t: Tensor) -> Tensor:
    """True where t is nan (never for int64 or bool tensors)."""
    x = t.detach()
    return x._zip(ops.NE, x, BOOL) if x.dtype.is_floating_point else falses(x)


def isinf(t: Tensor) -> Tensor:
    """True where t is +inf or -inf."""
    x = t.detach()
    if not x.dtype.is_floating_point:
        return falses(x)
    return x._map(ops.ABS)._zip(ops.EQ, x._scalar_like(np.inf), BOOL)


def isfinite(t: Tensor) -> Tensor:
    """True where t is neither inf nor nan (everywhere for int64 and bool tensors)."""
    x = t.detach()
    if not x.dtype.is_floating_point:
        return logical_not(falses(x))
    return x._zip(ops.SUB, x)._zip(ops.EQ, x._scalar_like(0), BOOL)


def isclose(
    t: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """|t - other| <= atol + rtol * |other| cell by cell (equal infinities are close)."""
    a, b = t.detach(), t._operand(other).detach()
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{TORCH_NAMES[a.dtype]} did not match {TORCH_NAMES[b.dtype]} (isclose of shapes "
            f"{tuple(a.shape)} and {tuple(b.shape)})"
        )
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol ({rtol}) and atol ({atol}) must be non-negative")
    close = compare(a, ops.EQ, b)
    if a.dtype is dtypes.bool:
        return close
    if not a.dtype.is_floating_point:
        a, b = a.to(dtypes.float64), b.to(dtypes.float64)
    error = a._zip(ops.SUB, b)._map(ops.ABS)
    allowed = (
        b._map(ops.ABS)._zip(ops.MUL, b._scalar_like(rtol))._zip(ops.ADD, b._scalar_like(atol))
    )
    within = logical(isfinite(error), "and", compare(error, ops.LE, allowed))
    close = logical(close, "or", within)
    if equal_nan:
        close = logical(close, "or", logical(isnan(a), "and", isnan(b)))
    return close


def allclose(
    t: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """True when every cell of t is close to other's (see `isclose`)."""
    return bool(all_(isclose(t, other, rtol, atol, equal_nan)).item())


def equal(t: Tensor, other: Tensor) -> bool:
    """True when t and other have the same shape and the same values."""
    if t.shape != other.shape:
        return False
    return bool(all_(compare(t, ops.EQ, other)).item())


# ---- Conversions by name ------------------------------------------------------------------------


def type_of(t: Tensor, dtype: Any = None) -> Any:
    """Without `dtype`, PyTorch's type string ('torch.FloatTensor'); else t as that dtype."""
    if dtype is None:
        device = "cuda." if t.backend.device == "cuda" else ""
        return f"torch.{device}{TORCH_NAMES[t.dtype]}Tensor"
    if isinstance(dtype, str):
        name = dtype.replace("torch.cuda.", "torch.")
        if name not in TYPE_NAMES:
            raise ValueError(f"invalid type: {dtype!r} (expected one of {sorted(TYPE_NAMES)})")
        return t.to(TYPE_NAMES[name], "cuda" if "cuda" in dtype else t.backend.device)
    return t.to(getattr(dtype, "dtype", dtype))


def bitwise_inplace(t: Tensor, how: str, other: Any) -> Tensor:
    """`t &= other` (and `|=`, `^=`): the result written into t's cells."""
    result = bitwise(t, how, other)
    if result.dtype is not t.dtype:
        raise RuntimeError(
            f"result type {TORCH_NAMES[result.dtype]} can't be cast to the desired output "
            f"type {TORCH_NAMES[t.dtype]} (in-place {how} of shapes {tuple(t.shape)} and "
            f"{tuple(result.shape)})"
        )
    return t.copy_(result)


def check_sub_operands(a: Tensor, b: Any) -> None:
    """PyTorch's RuntimeError for `-` with a bool tensor on either side."""
    b_bool = getattr(b, "dtype", None) is dtypes.bool or isinstance(b, bool | np.bool_)
    if a.dtype is dtypes.bool and b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            f"`^` or `logical_xor()` operator instead. (shapes {tuple(a.shape)} and "
            f"{getattr(b, 'shape', ())})"
        )
    if a.dtype is dtypes.bool or getattr(b, "dtype", None) is dtypes.bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead. "
            f"(shapes {tuple(a.shape)} and {getattr(b, 'shape', ())})"
        )


def check_negatable(t: Tensor) -> None:
    """PyTorch's RuntimeError for `-t` on a bool tensor."""
    if t.dtype is dtypes.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            f"to invert a mask, use the `~` or `logical_not()` operator instead. (shape "
            f"{tuple(t.shape)})"
        )


def check_bool_value(t: Tensor) -> None:
    """PyTorch's RuntimeError for `bool(t)` unless t has exactly one value."""
    if t.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if t.numel() > 1:
        raise RuntimeError(
            "Boolean value of Tensor with more than one value is ambiguous (shape "
            f"{tuple(t.shape)})"
        )


# ---- Legacy constructors: mf.Tensor(...), mf.FloatTensor(...) ---------------------------------


def legacy_data(args: tuple[Any, ...], dtype: dtypes.DType | None = None) -> tuple[Any, Any]:
    """(storage, backend) of what `torch.Tensor(*args)` makes, for `dtype` (None: default).

    `Tensor()` is empty; `Tensor([1, 2])` copies the values as `dtype` (the default float
    dtype if None); `Tensor(2, 3)` or `Tensor(mf.Size([2, 3]))` is an uninitialised 2x3
    tensor; `Tensor(t)` of a tensor shares t's storage (converted if `dtype` differs).
    """
    from minifw.backends import default_backend
    from minifw.tensor.tensor import tensor

    backend = default_backend("cpu")
    if len(args) == 1 and getattr(args[0], "_is_minifw_tensor", False):
        source = args[0].detach() if dtype is None else args[0].detach().to(dtype)
        return source._data, source.backend
    kind = dtype or dtypes.get_default_dtype()
    if len(args) == 1 and not isinstance(args[0], int | tuple):
        if isinstance(args[0], float | bool | np.number):
            raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
        return tensor(args[0], dtype=kind, backend=backend)._data, backend
    sizes = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes):
        raise TypeError(
            f"new(): expected a sequence of values or non-negative int sizes, got {args!r}"
        )
    return backend.empty(tuple(sizes) if sizes else (0,), kind.numpy), backend


class LegacyType(type):
    """The metaclass of `mf.FloatTensor` and its kin, as in PyTorch.

    Calling one builds a tensor of its dtype; `isinstance(t, mf.FloatTensor)` checks t's dtype.
    """

    dtype: dtypes.DType

    def __call__(cls, *args: Any) -> Any:
        """A tensor of this type's dtype from values or sizes (see `legacy_data`)."""
        from minifw.tensor.tensor import Tensor

        return Tensor(*legacy_data(args, cls.dtype))

    def __instancecheck__(cls, instance: Any) -> bool:
        return bool(getattr(instance, "_is_minifw_tensor", False)) and instance.dtype is cls.dtype


class FloatTensor(metaclass=LegacyType):
    """`mf.FloatTensor([...])` or `mf.FloatTensor(2, 3)`: a float32 tensor."""

    dtype = dtypes.float32


class DoubleTensor(metaclass=LegacyType):
    """`mf.DoubleTensor([...])` or `mf.DoubleTensor(2, 3)`: a float64 tensor."""

    dtype = dtypes.float64


class LongTensor(metaclass=LegacyType):
    """`mf.LongTensor([...])` or `mf.LongTensor(2, 3)`: an int64 tensor."""

    dtype = dtypes.int64


class BoolTensor(metaclass=LegacyType):
    """`mf.BoolTensor([...])` or `mf.BoolTensor(2, 3)`: a bool tensor."""

    dtype = dtypes.bool
