"""In-place tensor operations, allowed only where no autograd record is broken.

An in-place op writes its result into the tensor's own storage (so every view of
it sees the change) and bumps the storage's version. When autograd is recording,
the tensor also takes the new op's history; ops recorded earlier keep reading its
old value through `_retire_history`, and a saved value that was overwritten makes
their backward raise PyTorch's "modified by an inplace operation" error.
"""

# Mixin methods take `self: Tensor`; mypy cannot see that Tensor subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import operators as ops
from .autodiff import is_grad_enabled, no_grad
from .tensor_data import index_view
from .tensor_ops import unsafe_overlap

if TYPE_CHECKING:
    from .tensor import Tensor

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_ERROR = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
VIEW_ERROR = (
    "in-place operations on a view of a tensor that requires grad (or that would make the "
    "view require grad) are not supported by minifw: its base tensor's graph would miss "
    "the change. Use an out-of-place operation instead (for example y = y + x)."
)


class InPlaceMixin:
    """add_, sub_, mul_, div_, zero_, fill_, copy_, the `+=` family and `t[idx] = value`."""

    __slots__ = ()

    def _inplace(self: Tensor, compute: Callable[[Tensor], Tensor]) -> Tensor:
        """Write compute(current value) into self's cells; autograd records the new value."""
        recording = is_grad_enabled()
        if recording:
            _check_inplace(self, self.requires_grad)
        old = self._retire_history() if recording and self.requires_grad else self.detach()
        if recording:
            result = compute(old)
        else:
            with no_grad():
                result = compute(old)
        if result.dtype.is_floating_point and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"result type Float can't be cast to the desired output type Long (in-place "
                f"op on a {self.dtype} tensor of shape {self.shape} with a {result.dtype} result)"
            )
        recording = recording and result.requires_grad
        if recording:
            _check_inplace(self, True)
        result = result.to(self.dtype)
        self.backend.copy_into(self._data, result.detach()._data)
        if recording:
            self._attach(result.history)  # type: ignore[arg-type]
        self._bump_version()
        return self

    def _zip_inplace(
        self: Tensor, op: int, other: Any, compute: Callable[[Tensor], Tensor]
    ) -> Tensor:
        """Self = self op other: one launch into self's cells when autograd records nothing.

        That is when neither takes part in a recorded graph and other is a float of
        self's dtype whose cells self's writes cannot reach first; otherwise `_inplace`.
        """
        operand = self._operand(other)
        recording = is_grad_enabled()
        if (
            (recording and (self.requires_grad or operand.requires_grad))
            or not self.dtype.is_floating_point
            or operand.dtype is not self.dtype
            or unsafe_overlap(self._data, operand._data)
        ):
            return self._inplace(compute)
        if recording:
            _check_inplace(self, False)
        self.backend.zip(op, self._data, operand._data, out=self._data)
        self._bump_version()
        return self

    def add_(self: Tensor, other: Any, alpha: float = 1.0) -> Tensor:
        """Self += alpha * other, in place."""
        if alpha != 1.0:
            return self._inplace(lambda old: old + other * alpha)
        return self._zip_inplace(ops.ADD, other, lambda old: old + other)

    def sub_(self: Tensor, other: Any, alpha: float = 1.0) -> Tensor:
        """Self -= alpha * other, in place."""
        if alpha != 1.0:
            return self._inplace(lambda old: old - other * alpha)
        return self._zip_inplace(ops.SUB, other, lambda old: old - other)

    def mul_(self: Tensor, other: Any) -> Tensor:
        """Self *= other, in place."""
        return self._zip_inplace(ops.MUL, other, lambda old: old * other)

    def div_(self: Tensor, other: Any) -> Tensor:
        """Self /= other, in place (an error on int64 tensors, as in PyTorch)."""
        return self._zip_inplace(ops.DIV, other, lambda old: old / other)

    def zero_(self: Tensor) -> Tensor:
        """Set every cell to 0."""
        return self.fill_(0)

    def fill_(self: Tensor, value: Any) -> Tensor:
        """Set every cell to `value` (a number or a 0-dim tensor)."""
        if getattr(value, "_is_minifw_tensor", False) and value.dim() != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.dim()} dimensions."
            )
        return self.copy_(value)

    def copy_(self: Tensor, src: Any) -> Tensor:
        """Copy `src` (broadcast to self's shape, converted to self's dtype) into self."""

        def compute(old: Tensor) -> Tensor:
            source = old._operand(src)
            if source.dtype.is_floating_point and not old.dtype.is_floating_point:
                source = source.detach()  # floats are truncated into an int64 tensor
            return source.to(old.dtype).expand(*old.shape)

        return self._inplace(compute)

    def __iadd__(self: Tensor, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self: Tensor, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self: Tensor, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self: Tensor, other: Any) -> Tensor:
        return self.div_(other)

    def __setitem__(self: Tensor, key: Any, value: Any) -> None:
        """`t[key] = value` for tensors that do not take part in autograd."""
        value_grad = getattr(value, "_is_minifw_tensor", False) and value.requires_grad
        if is_grad_enabled() and (self.requires_grad or value_grad):
            if self.requires_grad and self.is_leaf:
                raise RuntimeError(VIEW_OF_LEAF_ERROR)
            raise RuntimeError(
                "index assignment `t[idx] = value` is supported only when neither t nor "
                "value requires grad (or under mf.no_grad()); build the tensor with "
                "mf.cat, mf.stack or mf.where instead"
            )
        target = index_view(self._data, key)
        source = self._operand(value).detach()
        if source.dtype.is_floating_point and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"Index put requires the source and destination dtypes match, got "
                f"{self.dtype} for the destination and {source.dtype} for the source."
            )
        self.backend.copy_into(target, source.to(self.dtype)._data)
        self._bump_version()


def _check_inplace(t: Tensor, needs_grad: bool) -> None:
    """Raise PyTorch's error when writing into `t` would break a recorded graph."""
    if t.requires_grad and t.is_leaf:
        raise RuntimeError(LEAF_ERROR)
    base = t._base
    if base is not None and base.requires_grad and base.is_leaf:
        raise RuntimeError(VIEW_OF_LEAF_ERROR)
    if base is not None and (base.requires_grad or needs_grad):
        raise RuntimeError(VIEW_ERROR)


__all__ = ["InPlaceMixin"]
