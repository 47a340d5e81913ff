"""Tensor methods that change shape or layout: views first, copies only when needed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import tensor_functions as F
from .tensor_data import as_shape, normalize_dim, numel_of

if TYPE_CHECKING:
    from .tensor import Tensor


def infer_shape(shape: tuple[int, ...], numel: int, current: tuple[int, ...]) -> tuple[int, ...]:
    """Resolve one -1 in `shape` so that it holds `numel` cells, or raise PyTorch's error."""
    if list(shape).count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if -1 in shape:
        known = numel_of([s for s in shape if s != -1])
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if any(s < 0 for s in shape) or numel_of(shape) != numel:
        raise RuntimeError(
            f"shape '{list(shape)}' is invalid for input of size {numel} "
            f"(input shape {current})"
        )
    return shape


class ShapeMixin:
    """view, reshape, permute, transpose, squeeze, unsqueeze, flatten, expand, indexing."""

    __slots__ = ()

    def view(self: Tensor, *shape: Any) -> Tensor:
        """The same cells under a new shape (one dim may be -1); never copies."""
        target = infer_shape(_shape_arg(shape), self.numel(), self.shape)
        return F.View.apply(self, target)  # type: ignore[no-any-return]

    def reshape(self: Tensor, *shape: Any) -> Tensor:
        """Like view, but copies when the strides do not allow a view."""
        target = infer_shape(_shape_arg(shape), self.numel(), self.shape)
        if self._data.view(target) is None:
            return self.contiguous().view(target)
        return self.view(target)

    def contiguous(self: Tensor) -> Tensor:
        """Self if row-major already, else a row-major copy."""
        return self if self.is_contiguous() else F.Copy.apply(self)

    def clone(self: Tensor) -> Tensor:
        """A copy with its own storage (gradients flow back to self)."""
        return F.Copy.apply(self)  # type: ignore[no-any-return]

    def permute(self: Tensor, *dims: Any) -> Tensor:
        """A view with dims reordered: new dim i is old dim dims[i]."""
        order = _shape_arg(dims, allow_negative=True)
        return F.Permute.apply(self, tuple(normalize_dim(d, self.dim()) for d in order))  # type: ignore[no-any-return]

    def transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
        """A view with two dims swapped."""
        order = list(range(self.dim()))
        d0, d1 = normalize_dim(dim0, self.dim()), normalize_dim(dim1, self.dim())
        order[d0], order[d1] = order[d1], order[d0]
        return self.permute(*order)

    @property
    def T(self: Tensor) -> Tensor:
        """All dims reversed (the transpose of a matrix)."""
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self: Tensor) -> Tensor:
        """The last two dims swapped (batched matrix transpose)."""
        return self.transpose(-2, -1)

    def unsqueeze(self: Tensor, dim: int) -> Tensor:
        """A view with a new dim of size 1 at `dim`."""
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
        return F.Expand.apply(self, _shape_arg(shape, allow_negative=True))  # type: ignore[no-any-return]

    def expand_as(self: Tensor, other: Tensor) -> Tensor:
        """expand to other's shape."""
        return self.expand(*other.shape)

    def __getitem__(self: Tensor, key: Any) -> Tensor:
        return F.Index.apply(self, key)  # type: ignore[no-any-return]


def _shape_arg(args: tuple[Any, ...], allow_negative: bool = True) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    if not allow_negative:
        return as_shape(args)
    return tuple(int(a) for a in args)
