"""Tensor reductions: sum, mean, var, std, max, min, argmax, argmin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import dtypes
from . import operators as ops
from . import tensor_functions as F
from .autodiff import no_grad
from .tensor_data import normalize_dim, numel_of

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


class ReduceMixin:
    """Reductions over all dims or chosen dims, with PyTorch's keepdim."""

    __slots__ = ()

    def sum(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Sum over `dim` (all dims if None)."""
        dims = reduce_dims(dim, self.dim())
        return F.Sum.apply(self, dims, keepdim)  # type: ignore[no-any-return]

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

    def var(
        self: Tensor, dim: Any = None, keepdim: bool = False, unbiased: bool = True
    ) -> Tensor:
        """Variance over `dim`, dividing by n - 1 when `unbiased` (Bessel's correction)."""
        dims = reduce_dims(dim, self.dim())
        count = numel_of([self.shape[d] for d in dims])
        centered = self - self.mean(dims, keepdim=True)
        divisor = max(count - 1, 0) if unbiased else count
        return (centered * centered).sum(dims, keepdim) / float(divisor)

    def std(
        self: Tensor, dim: Any = None, keepdim: bool = False, unbiased: bool = True
    ) -> Tensor:
        """Standard deviation over `dim`."""
        return self.var(dim, keepdim, unbiased).sqrt()

    def max(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
        """The largest value; with `dim`, a (values, indices) pair like PyTorch's."""
        if dim is None:
            _check_nonempty(self, "max")
            return F.MaxAll.apply(self)
        d = normalize_dim(dim, self.dim())
        indices = self.argmax(d, keepdim=True)
        if self.dim() == 0:
            return MaxResult(self.clone(), indices)
        values = F.MaxAlong.apply(self, d, indices, keepdim)
        return MaxResult(values, indices if keepdim else indices.squeeze(d))

    def min(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
        """The smallest value; with `dim`, a (values, indices) pair like PyTorch's."""
        if dim is None:
            return -((-self).max())
        values, indices = (-self).max(dim, keepdim)
        return MaxResult(-values, indices)

    def argmax(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the (first) largest value along `dim` (of the flattened tensor if None)."""
        if dim is None:
            flat = self.detach().reshape(-1)
            out = flat.argmax(0)
            return out.view(*([1] * self.dim())) if keepdim else out
        d = normalize_dim(dim, self.dim())
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


def _check_nonempty(t: Tensor, name: str) -> None:
    if t.numel() == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
            f"Specify the reduction dim with the 'dim' argument. (input shape {t.shape})"
        )


class MaxResult(tuple):  # type: ignore[type-arg]
    """(values, indices), also readable as `.values` and `.indices`."""

    def __new__(cls, values: Tensor, indices: Tensor) -> MaxResult:
        return super().__new__(cls, (values, indices))

    @property
    def values(self) -> Tensor:
        """The max (or min) values."""
        return self[0]  # type: ignore[no-any-return]

    @property
    def indices(self) -> Tensor:
        """Where they were found."""
        return self[1]  # type: ignore[no-any-return]
