"""Autograd Functions that move or reinterpret cells: views, indexing, copies, cat, where.

Views (`View`, `Permute`, `Expand`, `Index`) share their input's storage; their
forward only builds new `TensorData` (the index math of `tensor_data.py`), and
their backward routes the gradient back to the input's layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import operators as ops
from .tensor_data import index_view
from .tensor_functions import Function, FunctionCtx

if TYPE_CHECKING:
    from .tensor import Tensor

VIEW_ERROR = (
    "view size is not compatible with input tensor's size and stride (at least one "
    "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
)


class View(Function):
    """The same cells under a new shape (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A view with `shape`; strides must allow it."""
        ctx.shape = a.shape
        view = a._data.view(shape)
        if view is None:
            raise RuntimeError(
                f"{VIEW_ERROR} (input shape {a.shape}, strides {a.stride()}, "
                f"requested shape {shape})"
            )
        return a._view_of(view)

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Grad reshaped back."""
        return grad.reshape(ctx.shape), None

    # END TASK 2.4


class Permute(Function):
    """Dims reordered (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, order: tuple[int, ...]) -> Tensor:
        """New dim i is old dim order[i]."""
        ctx.order = order
        return a._view_of(a._data.permute(*order))

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Grad permuted by the inverse order."""
        inverse = [0] * len(ctx.order)
        for i, d in enumerate(ctx.order):
            inverse[d % len(inverse)] = i
        return grad.permute(*inverse), None

    # END TASK 2.4


class Expand(Function):
    """Size-1 dims repeated by stride 0 (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A broadcast view."""
        return a._view_of(a._data.expand(shape))

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """grad, summed back to the input's shape by `chain_rule`."""
        return grad, None

    # END TASK 2.4


class Index(Function):
    """a[key] for ints, slices, None and Ellipsis (a view)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, key: Any) -> Tensor:
        """The indexed view."""
        ctx.shape, ctx.key = a.shape, key
        return a._view_of(index_view(a._data, key))

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Grad written into the indexed cells of zeros."""
        out = grad._zeros(ctx.shape)
        out.backend.copy_into(index_view(out._data, ctx.key), grad._data)
        return out, None

    # END TASK 2.4


class Copy(Function):
    """A contiguous copy."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        """Row-major copy of a."""
        return a._copy()

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        """Grad unchanged."""
        return grad

    # END TASK 2.4


class Cast(Function):
    """a converted to another dtype or backend/device."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dtype: Any, backend: Any) -> Tensor:
        """The converted copy."""
        ctx.dtype, ctx.backend = a.dtype, a.backend
        return a._convert(dtype, backend)

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Grad converted back."""
        return grad._convert(ctx.dtype, ctx.backend), None, None

    # END TASK 2.4


class Cat(Function):
    """Tensors joined along `dim`."""

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, dim: int, *tensors: Tensor) -> Tensor:
        """Copy each tensor into its slice of the output."""
        first = tensors[0]
        sizes = [t.shape[dim] for t in tensors]
        ctx.dim, ctx.sizes = dim, sizes
        shape = first.shape[:dim] + (sum(sizes),) + first.shape[dim + 1 :]
        out = first._empty(shape)
        start = 0
        for t, size in zip(tensors, sizes, strict=True):
            part = out._data.narrow(dim, slice(start, start + size))
            out.backend.copy_into(part, t._data)
            start += size
        return out

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Any, ...]:
        """Each input gets its slice of grad."""
        grads: list[Any] = [None]
        start = 0
        for size in ctx.sizes:
            grads.append(grad._new(grad._data.narrow(ctx.dim, slice(start, start + size))))
            start += size
        return tuple(grads)

    # END TASK 2.4


class Where(Function):
    """a where cond != 0 else b (broadcasting)."""

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
        """Pick a's cell where cond is nonzero, else b's (no 0 * inf surprises)."""
        mask = cond._zip(ops.NE, cond._scalar_like(0))
        ctx.save_for_backward(mask)
        return a._select_where(mask, b)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[None, Tensor, Tensor]:
        """Grad to a where cond holds, to b elsewhere."""
        (mask,) = ctx.saved_tensors
        zero = grad._scalar_like(0)
        return None, grad._select_where(mask, zero), zero._select_where(mask, grad)

    # END TASK 2.4
