"""Reductions and scans beyond sum and max, as PyTorch computes them.

prod, cumsum, cumprod, logsumexp, norms, var/std with `correction=`, amax/amin and
count_nonzero.

Everything is built from the reduce kernel (ADD, MUL, MAX) and differentiable tensor
operations, so autograd (and a backward of the backward) follows from the parts.
Scans (cumsum, cumprod) are Hillis-Steele: log2(n) rounds of "add (or multiply) the
copy shifted by 2^k", each a slice, one zip and one cat. That is O(n log n) work in
O(log n) launches, exact for int64, and its gradient (through Mul's backward, no
division) stays right where the input holds zeros. A triangular-mask matmul would
be one launch but O(n^2) work and memory along the scanned dim, and float math for
ints.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from minifw.core import dtypes
from minifw.core import operators as ops
from minifw.core.tensor_data import normalize_dim, numel_of
from minifw.tensor.functions import Cat, Function, FunctionCtx, Where, _drop_dims
from minifw.tensor.tensor import Tensor, reduce_dims

Combine = Callable[[Tensor, Tensor], Tensor]


def _along(t: Tensor, dim: int, start: int, stop: int) -> Tensor:
    """The cells start..stop-1 of `t` along `dim` (a differentiable view)."""
    key = (slice(None),) * dim + (slice(start, stop),)
    return t[key]


def _accumulating_dtype(t: Tensor, dtype: Any) -> Tensor:
    """`t` in `dtype` if given, else bool promoted to int64 (PyTorch's sum/prod rule)."""
    if dtype is not None:
        return t.to(dtypes.as_dtype(dtype))
    if t.dtype.name == "bool":
        return t.to(dtypes.int64)
    return t


def scan(t: Tensor, dim: int, combine: Combine, reverse: bool = False) -> Tensor:
    """Inclusive scan of `t` along `dim` with `combine` (Hillis-Steele, log2(n) rounds).

    Forward: out[i] = t[0] op ... op t[i]; `reverse`: out[i] = t[i] op ... op t[n-1].
    """
    n = t.shape[dim]
    out, step = t, 1
    while step < n:
        if reverse:
            moved = combine(_along(out, dim, 0, n - step), _along(out, dim, step, n))
            out = Cat.apply(dim, moved, _along(out, dim, n - step, n))
        else:
            moved = combine(_along(out, dim, step, n), _along(out, dim, 0, n - step))
            out = Cat.apply(dim, _along(out, dim, 0, step), moved)
        step *= 2
    return out if out is not t else t.clone()


def _scan_op(name: str, t: Tensor, dim: int, dtype: Any, combine: Combine) -> Tensor:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    x = _accumulating_dtype(t, dtype)
    if x.dim() == 0:
        normalize_dim(dim, 0)
        return x.clone()
    return scan(x, normalize_dim(dim, x.dim()), combine)


def cumsum(t: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sums along `dim` (bool and int64 give int64)."""
    return _scan_op("cumsum", t, dim, dtype, lambda a, b: a + b)


def cumprod(t: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running products along `dim`; the gradient is right where the input holds zeros."""
    return _scan_op("cumprod", t, dim, dtype, lambda a, b: a * b)


def products_of_others(t: Tensor, dim: int) -> Tensor:
    """Each cell replaced by the product of the other cells along `dim` (no division)."""
    n = t.shape[dim]
    one = t._full(t.shape[:dim] + (1,) + t.shape[dim + 1 :], 1)
    if n == 1:
        return one
    before = Cat.apply(dim, one, _along(scan(t, dim, _times), dim, 0, n - 1))
    after = Cat.apply(dim, _along(scan(t, dim, _times, reverse=True), dim, 1, n), one)
    return before * after


def _times(a: Tensor, b: Tensor) -> Tensor:
    return a * b


class Prod(Function):
    """The product along `dim`, kept with size 1; gradient: the product of the others."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dim: int) -> Tensor:
        """One MUL reduce along `dim`."""
        ctx.save_for_backward(a)
        ctx.dim = dim
        return a._reduce(ops.MUL, dim)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Grad times the product of the other cells (exact with zeros in the input)."""
        (a,) = ctx.saved_tensors
        return grad * products_of_others(a, ctx.dim), None


def prod(t: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The product of all cells, or along one `dim` (bool and int64 give int64)."""
    x = _accumulating_dtype(t, dtype)
    if dim is None:
        return Prod.apply(x.reshape(-1), 0).view(())
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    d = normalize_dim(dim, x.dim())
    if x.dim() == 0:
        return x.clone()
    out = Prod.apply(x, d)
    return out if keepdim else out.squeeze(d)


class AMax(Function):
    """The largest (`op` MAX) or smallest (MIN) value over `dims`.

    Ties share the gradient evenly, as in PyTorch.
    """

    @staticmethod
    def forward(
        ctx: FunctionCtx, a: Tensor, dims: tuple[int, ...], keepdim: bool, op: int
    ) -> Tensor:
        """One reduce per dim, the reduced dims dropped unless `keepdim`."""
        out = a
        for d in dims:
            out = out._reduce(op, d)
        out = out if out is not a else a._copy()
        ctx.save_for_backward(a, out)
        ctx.dims = dims
        return out if keepdim else _drop_dims(out, dims)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None]:
        """Grad / (number of extremes) at each extreme (at each nan if the result is nan)."""
        a, kept = ctx.saved_tensors
        values = a.detach()
        hits = values == kept.detach()
        if a.dtype.is_floating_point:
            hits = hits | (values != values)
        count = hits.sum(ctx.dims, keepdim=True)
        return hits * (grad.reshape(kept.shape) / count), None, None, None


def _extreme_dims(t: Tensor, dim: Any, name: str) -> tuple[int, ...]:
    dims = reduce_dims(dim, t.dim())
    for d in dims:
        if t.shape[d] == 0:
            raise IndexError(
                f"{name}(): Expected reduction dim {d} to have non-zero size. (input shape "
                f"{tuple(t.shape)})"
            )
    return dims


def _extreme(t: Tensor, dim: Any, keepdim: bool, op: int, name: str) -> Tensor:
    dims = _extreme_dims(t, dim, name)
    if t.dtype.name == "bool":  # the reduce kernel's start value (-inf) reads as True
        return AMax.apply(t.to(dtypes.int64), dims, keepdim, op).to(t.dtype)
    return AMax.apply(t, dims, keepdim, op)


def amax(t: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The largest value over `dim` (an int, a tuple, or () for every dim)."""
    return _extreme(t, dim, keepdim, ops.MAX, "amax")


def amin(t: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """The smallest value over `dim` (an int, a tuple, or () for every dim)."""
    return _extreme(t, dim, keepdim, ops.MIN, "amin")


def logsumexp(t: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """log(sum(exp(t))) over `dim`, shifted by the max so that it cannot overflow."""
    x = t._floating()
    dims = reduce_dims(dim, x.dim())
    if x.numel() == 0 or not dims:
        return x.exp().sum(dims, keepdim).log()
    shift = AMax.apply(x.detach(), dims, True, ops.MAX)
    finite = shift.abs()._zip(ops.NE, shift._scalar_like(math.inf))
    shift = shift._select_where(finite, shift._scalar_like(0))
    out = (x - shift).exp().sum(dims, keepdim=True).log() + shift
    return out if keepdim else out.squeeze(dims)


def count_nonzero(t: Tensor, dim: Any = None) -> Tensor:
    """How many cells are not zero, over `dim` (all dims if None), as int64."""
    nonzero = t.detach()._zip(ops.NE, t.detach()._scalar_like(0))
    return nonzero.to(dtypes.int64).sum(reduce_dims(dim, t.dim()))


# ---- Norms -----------------------------------------------------------------------------------


def _root(total: Tensor, p: float) -> Tensor:
    """Return total ** (1 / p), with gradient 0 (not inf * 0) where total is 0."""
    positive = total._zip(ops.GT, total._scalar_like(0)).detach()
    safe = Where.apply(positive, total, total._scalar_like(1.0))
    return Where.apply(positive, safe ** (1.0 / p), total)


def _abs_power(x: Tensor, p: float) -> Tensor:
    """|x| ** p, with gradient 0 where x is 0 (for p > 0)."""
    magnitude = x.abs()
    nonzero = magnitude._zip(ops.NE, magnitude._scalar_like(0)).detach()
    safe = Where.apply(nonzero, magnitude, magnitude._scalar_like(1.0))
    return Where.apply(nonzero, safe**p, magnitude._scalar_like(0.0))


def vector_norm(
    t: Tensor,
    ord: Any = 2,  # noqa: A002 - PyTorch's name
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """The p-norm of the cells over `dim` (all if None): p = 1, 2, inf, -inf, 0 or any float."""
    if not t.dtype.is_floating_point:
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{t.dtype} (shape {tuple(t.shape)})"
        )
    x = t if dtype is None else t.to(dtypes.as_dtype(dtype))
    p = float(ord)
    dims = reduce_dims(dim, x.dim())
    if p == math.inf:
        return amax(x.abs(), dims, keepdim)
    if p == -math.inf:
        return amin(x.abs(), dims, keepdim)
    if p == 0:
        nonzero = x.detach()._zip(ops.NE, x.detach()._scalar_like(0))
        return nonzero.sum(dims, keepdim)
    if p == 1:
        return x.abs().sum(dims, keepdim)
    if p == 2:
        return _root((x * x).sum(dims, keepdim), 2.0)
    if p < 0:
        return (x.abs() ** p).sum(dims, keepdim) ** (1.0 / p)
    return _root(_abs_power(x, p).sum(dims, keepdim), p)


def norm(
    t: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None
) -> Tensor:
    """PyTorch's `norm`: a vector p-norm over `dim`; "fro" is the 2-norm over those dims."""
    if p == "nuc":
        raise NotImplementedError(
            "norm(p='nuc'): the nuclear norm needs a singular value decomposition, which "
            "minifw does not have"
        )
    if isinstance(p, str) and p != "fro":
        raise RuntimeError(f"norm(): unsupported norm type {p!r} (expected a number or 'fro')")
    return vector_norm(t, 2 if p in ("fro", None) else p, dim, keepdim, dtype=dtype)


# ---- Variance and standard deviation ---------------------------------------------------------


def _correction(unbiased: Any, correction: Any) -> float:
    if unbiased is not None and correction is not None:
        raise TypeError("var()/std(): pass either `unbiased` or `correction`, not both")
    if correction is not None:
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


def var(
    t: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
    correction: Any = None,
) -> Tensor:  # fmt: skip
    """Variance over `dim`, dividing by N - correction (1 by default: Bessel's correction).

    `var(True)`/`var(False)` and `unbiased=` are the older spelling of correction 1 / 0.
    With N - correction <= 0 the result is inf (or nan where the sum of squares is 0).
    """
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if not t.dtype.is_floating_point:
        raise RuntimeError(
            f"std and var only support floating point and complex dtypes (got {t.dtype}, "
            f"shape {tuple(t.shape)})"
        )
    dims = reduce_dims(dim, t.dim())
    count = numel_of([t.shape[d] for d in dims])
    centered = t - t.mean(dims, keepdim=True)
    squares = (centered * centered).sum(dims, keepdim)
    divisor = count - _correction(unbiased, correction)
    if divisor <= 0:
        return squares * math.inf
    return squares / float(divisor)


def std(
    t: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
    correction: Any = None,
) -> Tensor:  # fmt: skip
    """Standard deviation over `dim` (the square root of `var`, same arguments).

    Where the variance is 0 the gradient is 0, as in PyTorch (not 0 * inf = nan).
    """
    return _root(var(t, dim, unbiased, keepdim, correction=correction), 2.0)


def var_mean(
    t: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
    correction: Any = None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """(var, mean) over `dim`, as `torch.var_mean`."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    spread = var(t, dim, unbiased, keepdim, correction=correction)
    return spread, t.mean(reduce_dims(dim, t.dim()), keepdim)


def std_mean(
    t: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
    correction: Any = None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """(std, mean) over `dim`, as `torch.std_mean`."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    spread = std(t, dim, unbiased, keepdim, correction=correction)
    return spread, t.mean(reduce_dims(dim, t.dim()), keepdim)


__all__ = [
    "amax", "amin", "count_nonzero", "cumprod", "cumsum", "logsumexp", "norm", "prod",
    "products_of_others", "scan", "std", "std_mean", "var", "var_mean", "vector_norm",
]  # fmt: skip
