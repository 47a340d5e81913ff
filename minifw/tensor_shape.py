"""Tensor methods that change shape or layout: views first, copies only when needed."""

# Mixin methods take `self: Tensor`; mypy cannot see that Tensor subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .tensor_data import normalize_dim, normalize_key, numel_of
from .tensor_views import Copy, Expand, Index, Permute, View

if TYPE_CHECKING:
    from .tensor import Tensor


def infer_shape(shape: tuple[int, ...], numel: int, current: tuple[int, ...]) -> tuple[int, ...]:
    """Resolve one -1 in `shape` so that it holds `numel` cells, or raise PyTorch's error."""
    if list(shape).count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)} in shape {list(shape)}")
    if -1 in shape:
        known = numel_of([s for s in shape if s != -1])
        if known == 0 or numel % known:
            raise RuntimeError(
                f"shape '{list(shape)}' is invalid for input of size {numel} "
                f"(input shape {current})"
            )
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if numel_of(shape) != numel:
        raise RuntimeError(
            f"shape '{list(shape)}' is invalid for input of size {numel} (input shape {current})"
        )
    return shape


class ShapeMixin:
    """view, reshape, permute, transpose, squeeze, unsqueeze, flatten, expand, indexing."""

    __slots__ = ()

    def view(self: Tensor, *shape: Any) -> Tensor:
        """The same cells under a new shape (one dim may be -1); never copies.

        Raises PyTorch's error, suggesting `reshape`, when the strides do not allow it.
        """
        target = infer_shape(shape_arg(shape), self.numel(), self.shape)
        return View.apply(self, target)

    def view_as(self: Tensor, other: Tensor) -> Tensor:
        """View with other's shape."""
        return self.view(other.shape)

    def reshape(self: Tensor, *shape: Any) -> Tensor:
        """Like view, but copies when the strides do not allow a view."""
        target = infer_shape(shape_arg(shape), self.numel(), self.shape)
        if self._data.view(target) is not None:
            return self.view(target)
        out = Copy.apply(self).view(target)
        out._base = None  # a fresh copy: in-place ops on it touch nobody else's cells
        return out

    def reshape_as(self: Tensor, other: Tensor) -> Tensor:
        """Reshape to other's shape."""
        return self.reshape(other.shape)

    def contiguous(self: Tensor) -> Tensor:
        """Self if row-major already, else a row-major copy."""
        return self if self.is_contiguous() else Copy.apply(self)

    def clone(self: Tensor) -> Tensor:
        """A copy with its own storage (gradients flow back to self)."""
        return Copy.apply(self)

    def permute(self: Tensor, *dims: Any) -> Tensor:
        """A view with dims reordered: new dim i is old dim dims[i]."""
        order = shape_arg(dims)
        self._data.permute(*order)  # validates, with PyTorch's messages
        return Permute.apply(self, tuple(normalize_dim(d, self.dim()) for d in order))

    def transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
        """A view with two dims swapped."""
        order = list(range(self.dim()))
        d0, d1 = normalize_dim(dim0, self.dim()), normalize_dim(dim1, self.dim())
        order[d0], order[d1] = order[d1], order[d0]
        return self.permute(*order)

    def t(self: Tensor) -> Tensor:
        """The transpose of a matrix (a 0-D or 1-D tensor is returned as is)."""
        if self.dim() > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D"
            )
        return self.transpose(0, 1) if self.dim() == 2 else self.view(self.shape)

    @property
    def T(self: Tensor) -> Tensor:
        """All dims reversed (the transpose of a matrix)."""
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self: Tensor) -> Tensor:
        """The last two dims swapped (batched matrix transpose)."""
        return self.transpose(-2, -1)

    def unsqueeze(self: Tensor, dim: int) -> Tensor:
        """A view with a new dim of size 1 at `dim` (negative dims count from the end)."""
        d = normalize_dim(dim, self.dim() + 1)
        return self.view(*self.shape[:d], 1, *self.shape[d:])

    def squeeze(self: Tensor, dim: Any = None) -> Tensor:
        """A view without the size-1 dims (or without `dim`, if it has size 1)."""
        if dim is None:
            dims = {i for i, s in enumerate(self.shape) if s == 1}
        else:
            given = dim if isinstance(dim, tuple | list) else (dim,)
            dims = {normalize_dim(d, self.dim()) for d in given}
            dims = {d for d in dims if self.dim() and self.shape[d] == 1}
        return self.view(*(s for i, s in enumerate(self.shape) if i not in dims))

    def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """The dims from start_dim to end_dim merged into one (a view when possible)."""
        if self.dim() == 0:
            return self.reshape(1)
        start, end = normalize_dim(start_dim, self.dim()), normalize_dim(end_dim, self.dim())
        if start > end:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        merged = numel_of(self.shape[start : end + 1])
        return self.reshape(*self.shape[:start], merged, *self.shape[end + 1 :])

    def expand(self: Tensor, *shape: Any) -> Tensor:
        """A broadcast view with size-1 dims repeated to `shape` (-1 keeps a size)."""
        return Expand.apply(self, shape_arg(shape))

    def expand_as(self: Tensor, other: Tensor) -> Tensor:
        """Expand to other's shape."""
        return self.expand(*other.shape)

    def __getitem__(self: Tensor, key: Any) -> Tensor:
        return Index.apply(self, tuple(normalize_key(key)))


def shape_arg(args: tuple[Any, ...]) -> tuple[int, ...]:
    """A shape given as ints or as one tuple/list, f(2, 3) or f((2, 3)), as a tuple."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    for a in args:
        if isinstance(a, bool) or not hasattr(a, "__index__"):
            raise TypeError(f"a shape must hold ints, got {type(a).__name__} in {tuple(args)}")
    return tuple(a.__index__() for a in args)
