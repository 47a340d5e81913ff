"""In-place tensor operations, allowed only where no autograd record is broken."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import tensor_functions as F
from .autodiff import is_grad_enabled
from .tensor_data import index_view

if TYPE_CHECKING:
    from .tensor import Tensor

_LEAF_ERROR = (
    "a leaf Variable that requires grad is being used in an in-place operation."
)


class InPlaceMixin:
    """add_, sub_, mul_, div_, zero_, fill_, copy_, the `+=` family and `t[idx] = value`."""

    __slots__ = ()

    def _write(self: Tensor, result: Tensor) -> Tensor:
        """Store `result` into self: in its storage, or by taking over its history."""
        if is_grad_enabled() and self.requires_grad and self.is_leaf:
            raise RuntimeError(_LEAF_ERROR)
        if is_grad_enabled() and result.requires_grad:
            # Autograd needs a node for the new value: self becomes that value, with the
            # old value kept alive (under its own object) for the recorded graph.
            self._data, self.history = result._data, result.history
            self._grad_fn = None
        else:
            self.backend.copy_into(self._data, result.detach().to(self.dtype)._data)
        self._version += 1
        return self

    def add_(self: Tensor, other: Any, alpha: float = 1.0) -> Tensor:
        """self += alpha * other, in place."""
        return self._write(self._old() + (other if alpha == 1.0 else other * alpha))

    def sub_(self: Tensor, other: Any, alpha: float = 1.0) -> Tensor:
        """self -= alpha * other, in place."""
        return self._write(self._old() - (other if alpha == 1.0 else other * alpha))

    def mul_(self: Tensor, other: Any) -> Tensor:
        """self *= other, in place."""
        return self._write(self._old() * other)

    def div_(self: Tensor, other: Any) -> Tensor:
        """self /= other, in place."""
        return self._write(self._old() / other)

    def zero_(self: Tensor) -> Tensor:
        """Set every cell to 0."""
        return self.fill_(0)

    def fill_(self: Tensor, value: Any) -> Tensor:
        """Set every cell to `value`."""
        return self._write(self._operand(value).to(self.dtype).expand(*self.shape))

    def copy_(self: Tensor, source: Any) -> Tensor:
        """Copy `source` (broadcast to self's shape) into self."""
        return self._write(self._operand(source).to(self.dtype).expand(*self.shape))

    def __iadd__(self: Tensor, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self: Tensor, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self: Tensor, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self: Tensor, other: Any) -> Tensor:
        return self.div_(other)

    def _old(self: Tensor) -> Tensor:
        """Self's current value as its own object, so a recorded graph can keep it."""
        if not (is_grad_enabled() and self.requires_grad):
            return self.detach()
        old = self._new(self._data)
        old.history, old._requires_grad = self.history, self._requires_grad
        return old

    def __setitem__(self: Tensor, key: Any, value: Any) -> None:
        if is_grad_enabled() and self.requires_grad:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation." if self.is_leaf else
                "in-place assignment into a tensor that is part of a recorded graph is not "
                "supported; use torch-style out-of-place ops or wrap it in no_grad()"
            )
        target = index_view(self._data, key)
        source = self._operand(value).detach().to(self.dtype)
        self.backend.copy_into(target, source._data)
        self._version += 1


__all__ = ["InPlaceMixin"]
