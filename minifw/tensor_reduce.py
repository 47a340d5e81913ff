"""Tensor reductions: sum, mean, var, std, max, min, argmax, argmin, and their Functions.

`Sum`, `MaxAlong` and `MaxAll` are the autograd Functions; mean, var, std and min are
built from them and the arithmetic ops.
"""

# Mixin methods take `self: Tensor`; mypy cannot see that Tensor subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import dtypes
from . import operators as ops
from .autodiff import no_grad
from .tensor_data import normalize_dim, numel_of
from .tensor_functions import Function, FunctionCtx
from .tensor_views import Where

if TYPE_CHECKING:
    from .tensor import Tensor


def reduce_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """`dim` (None, an int or a tuple, negatives allowed) as sorted non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    given = tuple(dim) if isinstance(dim, tuple | list) else (dim,)
    dims = tuple(sorted({normalize_dim(int(d), ndim) for d in given}))
    if len(dims) != len(given):
        raise RuntimeError(f"dim {given} appears multiple times in the list of dims")
    return dims if ndim else ()


def _drop_dims(t: Tensor, dims: tuple[int, ...]) -> Tensor:
    """A view of contiguous `t` without `dims` (each of size 1)."""
    view = t._data.view(tuple(size for i, size in enumerate(t.shape) if i not in dims))
    assert view is not None, "reduction outputs are contiguous"
    return t._new(view)


class Sum(Function):
    """Sum over `dims`; they stay with size 1 if `keepdim`, else they are dropped."""

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
        """Reduce with ADD along each dim in turn."""
        ctx.shape = a.shape
        out = a
        for d in dims:
            out = out._reduce(ops.ADD, d)
        out = out if out is not a else a._copy()
        ctx.kept = out.shape
        return out if keepdim else _drop_dims(out, dims)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Grad broadcast back over the summed dims."""
        return grad.reshape(ctx.kept).expand(*ctx.shape), None, None

    # END TASK 2.4


class MaxAlong(Function):
    """The values of `a` at `indices` along `dim` (the max), with PyTorch's keepdim."""

    node_name = "Max"

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dim: int, indices: Tensor, keepdim: bool) -> Tensor:
        """Reduce with MAX along dim."""
        ctx.save_for_backward(a, indices)
        ctx.dim = dim
        out = a._reduce(ops.MAX, dim)
        return out if keepdim else _drop_dims(out, (dim,))

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None]:
        """Grad routed to the chosen index only."""
        a, indices = ctx.saved_tensors
        grad = grad.reshape(indices.shape)
        return grad * a._one_hot_along(ctx.dim, indices), None, None, None

    # END TASK 2.4


class MaxAll(Function):
    """The largest value of `a` (0-dim); ties share the gradient evenly, as in PyTorch."""

    node_name = "Max"

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        """Reduce with MAX over every cell."""
        out = a.contiguous()._flat()._reduce(ops.MAX, 0).view(())
        ctx.save_for_backward(a, out)
        return out

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        """Grad / (number of maxima) at each maximum."""
        a, out = ctx.saved_tensors
        mask = a._zip(ops.EQ, out)
        return mask * (grad / mask.sum())

    # END TASK 2.4


class ReduceMixin:
    """Reductions over all dims or chosen dims, with PyTorch's keepdim."""

    __slots__ = ()

    def sum(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Sum over `dim` (all dims if None)."""
        dims = reduce_dims(dim, self.dim())
        return Sum.apply(self, dims, keepdim)

    def mean(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Average over `dim` (all dims if None)."""
        if not self.dtype.is_floating_point:
            raise RuntimeError(
                f"mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {self.dtype}"
            )
        dims = reduce_dims(dim, self.dim())
        count = numel_of([self.shape[d] for d in dims])
        return self.sum(dims, keepdim) / float(count)

    def var(self: Tensor, dim: Any = None, keepdim: bool = False, unbiased: bool = True) -> Tensor:
        """Variance over `dim`, dividing by n - 1 when `unbiased` (Bessel's correction).

        With a single element and `unbiased` the result is nan, as in PyTorch.
        """
        dims = reduce_dims(dim, self.dim())
        count = numel_of([self.shape[d] for d in dims])
        centered = self - self.mean(dims, keepdim=True)
        squares = (centered * centered).sum(dims, keepdim)
        divisor = count - 1 if unbiased else count
        if divisor <= 0:
            return squares * float("nan")
        return squares / float(divisor)

    def std(self: Tensor, dim: Any = None, keepdim: bool = False, unbiased: bool = True) -> Tensor:
        """Standard deviation over `dim` (the square root of `var`).

        Where the variance is 0 the gradient is 0, as in PyTorch (not 0 * inf = nan).
        """
        var = self.var(dim, keepdim, unbiased)
        positive = var > 0
        root = where(positive, var, 1.0).sqrt()
        return where(positive, root, var)

    def max(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
        """The largest value; with `dim`, a (values, indices) pair like PyTorch's."""
        if dim is None:
            _check_nonempty(self, "max")
            return MaxAll.apply(self)
        d = normalize_dim(_int_dim(dim, "max"), self.dim())
        indices = self.argmax(d, keepdim=True)
        if self.dim() == 0:
            return MaxResult(self.clone(), indices)
        values = MaxAlong.apply(self, d, indices, keepdim)
        return MaxResult(values, indices if keepdim else indices.squeeze(d))

    def min(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
        """The smallest value; with `dim`, a (values, indices) pair like PyTorch's."""
        if dim is None:
            _check_nonempty(self, "min")
            return -((-self).max())
        values, indices = (-self).max(_int_dim(dim, "min"), keepdim)
        return MaxResult(-values, indices)

    def argmax(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the (first) largest value along `dim` (of the flattened tensor if None)."""
        if dim is None:
            flat = self.detach().reshape(-1)
            out = flat.argmax(0)
            return out.view(*([1] * self.dim())) if keepdim else out
        d = normalize_dim(_int_dim(dim, "argmax"), self.dim())
        _check_nonempty(self, "argmax")
        if self.dim() == 0:
            return self._full((), 0).long()
        with no_grad():
            x = self.detach()
            best = x._reduce(ops.MAX, d)
            hits = x._zip(ops.EQ, best)
            shape = [1] * x.dim()
            shape[d] = x.shape[d]
            positions = x._arange(x.shape[d]).view(*shape)
            big = x._scalar_like(x.shape[d])
            first = positions._select_where(hits, big)._reduce(ops.MIN, d)
            indices = first.to(dtypes.int64)
        return indices if keepdim else indices.squeeze(d)

    def argmin(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the (first) smallest value along `dim`."""
        return (-self.detach()).argmax(dim, keepdim)


def where(mask: Tensor, a: Tensor, b: float | Tensor) -> Tensor:
    """Pick a where mask is nonzero, else b (a number or a tensor of a's dtype)."""
    other = a._operand(b).to(a.dtype)
    return Where.apply(mask, a, other)


def _int_dim(dim: Any, name: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(
            f"{name}(): dim must be an int, got {type(dim).__name__} (an elementwise max of "
            f"two tensors is mf.where(a > b, a, b))"
        )
    return dim


def _check_nonempty(t: Tensor, name: str) -> None:
    if t.numel() == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
            f"Specify the reduction dim with the 'dim' argument. (input shape {t.shape})"
        )


class MaxResult(tuple):  # type: ignore[type-arg]
    """(values, indices), also readable as `.values` and `.indices`."""

    def __new__(cls, values: Tensor, indices: Tensor) -> MaxResult:
        """Pair `values` with `indices`."""
        return super().__new__(cls, (values, indices))

    @property
    def values(self) -> Tensor:
        """The max (or min) values."""
        return self[0]  # type: ignore[no-any-return]

    @property
    def indices(self) -> Tensor:
        """Where they were found."""
        return self[1]  # type: ignore[no-any-return]
