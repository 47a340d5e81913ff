"""Autograd Functions on tensors: each op's forward and backward, side by side.

Functions act only through their inputs' methods (`_map`, `_zip`, `_reduce`, views,
arithmetic), so this file never imports `tensor.py`. `Function.apply` runs forward
without recording, then attaches a `History` to the output if any input needs a
gradient. Backward returns one gradient per forward argument (None for plain values);
`sum_to_shape` then folds each back to its input's shape, the one place where
gradients of broadcast operands are un-broadcast.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import operators as ops
from .autodiff import Context, History, is_grad_enabled, no_grad
from .tensor_data import TensorData, index_view

if TYPE_CHECKING:
    from .tensor import Tensor


def is_tensor(value: Any) -> bool:
    """True for a minifw Tensor (checked by a class flag, so no import of tensor.py)."""
    return getattr(value, "_is_minifw_tensor", False)


class FunctionCtx(Context):
    """The `ctx` of a Function: saved tensors plus which inputs need a gradient.

    Saved tensors remember their version; if one is modified in place before
    backward, reading it raises PyTorch's error instead of giving a wrong gradient.
    """

    __slots__ = ("needs_input_grad", "_versions", "__dict__")

    def __init__(self) -> None:
        super().__init__()
        self.needs_input_grad: tuple[bool, ...] = ()
        self._versions: tuple[int, ...] = ()

    def save_for_backward(self, *values: Any) -> None:
        """Keep `values` (and their versions) for the backward pass."""
        self.saved_values = values
        self._versions = tuple(getattr(v, "_version", 0) for v in values)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """The saved tensors; raises if the graph was freed or one was modified in place."""
        values = Context.saved_tensors.fget(self)  # type: ignore[attr-defined]
        for i, (value, version) in enumerate(zip(values, self._versions, strict=True)):
            if getattr(value, "_version", 0) != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: saved tensor {i} of shape {value.shape} is at "
                    f"version {value._version}; expected version {version} instead."
                )
        return values


class Function:
    """An operation with a forward and a backward; subclasses define both."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        """Compute the result from the inputs, saving in `ctx` what backward needs."""
        raise NotImplementedError(f"{type(ctx).__name__}: a Function must define forward")

    @staticmethod
    def backward(ctx: FunctionCtx, grad_output: Any) -> Any:
        """Return d(loss)/d(input) for each forward argument, given d(loss)/d(output)."""
        raise NotImplementedError("a Function must define backward to be differentiated")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Run forward; record the op for autograd when an input requires grad."""
        needs = tuple(is_tensor(a) and a.requires_grad for a in args)
        ctx = FunctionCtx()
        ctx.needs_input_grad = needs
        with no_grad():
            out = cls.forward(ctx, *args)
        if any(needs) and is_grad_enabled():
            out._attach(History(cls, ctx, args))
        return out

    @classmethod
    def chain_rule(cls, ctx: FunctionCtx, inputs: Sequence[Any], grad: Tensor) -> list[Any]:
        """Pair each input that requires grad with its gradient, shaped like the input."""
        ctx.check_alive()
        with no_grad():
            grads = cls.backward(ctx, grad)
            if not isinstance(grads, tuple):
                grads = (grads,)
            if len(grads) != len(inputs):
                raise RuntimeError(
                    f"function {cls.__name__}Backward returned an incorrect number of "
                    f"gradients (expected {len(inputs)}, got {len(grads)})"
                )
            pairs = []
            for value, g in zip(inputs, grads, strict=True):
                if g is None or not is_tensor(value) or not value.requires_grad:
                    continue
                if not is_tensor(g):
                    raise TypeError(f"{cls.__name__}.backward must return Tensors or None")
                pairs.append((value, sum_to_shape(g, value.shape).to(value.dtype)))
        return pairs


def _drop(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(size for i, size in enumerate(shape) if i not in dims)


def sum_to_shape(grad: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum `grad` over the dims that broadcasting added or stretched to reach its shape."""
    if grad.shape == shape:
        return grad
    extra = grad.dim() - len(shape)
    dims = list(range(extra))
    dims += [extra + i for i, s in enumerate(shape) if s == 1 and grad.shape[extra + i] != 1]
    if dims:
        grad = grad.sum(dim=tuple(dims), keepdim=True)
    return grad.reshape(shape)


# BEGIN TASK 2.4


class Elementwise(Function):
    """f(a) cell by cell; its derivative rule is the binary op `back(a, grad)`."""

    op: int = ops.ID
    back: int = ops.ID

    @classmethod
    def forward(cls, ctx: FunctionCtx, a: Tensor) -> Tensor:  # type: ignore[override]
        """f(a) for every cell."""
        ctx.save_for_backward(a)
        return a._map(cls.op)

    @classmethod
    def backward(cls, ctx: FunctionCtx, grad: Tensor) -> Tensor:  # type: ignore[override]
        """grad * f'(a), computed by one zip."""
        (a,) = ctx.saved_tensors
        return a._zip(cls.back, grad)


class Exp(Elementwise):
    """e^a."""

    op, back = ops.EXP, ops.EXP_BACK


class Log(Elementwise):
    """ln a."""

    op, back = ops.LOG, ops.LOG_BACK


class Sigmoid(Elementwise):
    """1 / (1 + e^-a)."""

    op, back = ops.SIGMOID, ops.SIGMOID_BACK


class ReLU(Elementwise):
    """max(a, 0)."""

    op, back = ops.RELU, ops.RELU_BACK


class Tanh(Elementwise):
    """tanh a."""

    op, back = ops.TANH, ops.TANH_BACK


class Sqrt(Elementwise):
    """sqrt a."""

    op, back = ops.SQRT, ops.SQRT_BACK


class Abs(Elementwise):
    """|a|."""

    op, back = ops.ABS, ops.ABS_BACK


class Reciprocal(Elementwise):
    """1 / a."""

    op, back = ops.INV, ops.INV_BACK


class Neg(Function):
    """-a."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        """-a."""
        return a._map(ops.NEG)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        """-grad."""
        return grad._map(ops.NEG)


class Add(Function):
    """a + b (broadcasting)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """a + b."""
        return a._zip(ops.ADD, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
        """grad flows unchanged to both."""
        return grad, grad


class Sub(Function):
    """a - b (broadcasting)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """a - b."""
        return a._zip(ops.SUB, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
        """grad, -grad."""
        return grad, grad._map(ops.NEG)


class Mul(Function):
    """a * b (broadcasting)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """a * b."""
        ctx.save_for_backward(a, b)
        return a._zip(ops.MUL, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """grad * b, grad * a."""
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (grad._zip(ops.MUL, b) if need_a else None, grad._zip(ops.MUL, a) if need_b else None)


class Div(Function):
    """a / b (broadcasting)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """a / b."""
        ctx.save_for_backward(a, b)
        return a._zip(ops.DIV, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """grad / b, -grad * a / b^2."""
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad._zip(ops.DIV, b) if need_a else None
        grad_b = -(grad * a) / (b * b) if need_b else None
        return grad_a, grad_b


class Pow(Function):
    """a ** p for a number p."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, p: float) -> Tensor:
        """a ** p."""
        ctx.save_for_backward(a)
        ctx.p = p
        return a._zip(ops.POW, a._scalar_like(p))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """grad * p * a^(p - 1)."""
        (a,) = ctx.saved_tensors
        p = ctx.p
        if p == 0:
            return grad * 0.0, None
        return grad * (a ** (p - 1) * p), None


class MatMul(Function):
    """a @ b with PyTorch's 1-D, 2-D and batched rules."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """a @ b."""
        ctx.save_for_backward(a, b)
        return a._new(a.backend.matmul(a._data, b._data))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """grad @ b^T and a^T @ grad, on the operands promoted to at least 2-D."""
        a, b = ctx.saved_tensors
        a2 = a.unsqueeze(0) if a.dim() == 1 else a
        b2 = b.unsqueeze(-1) if b.dim() == 1 else b
        g = grad
        if a.dim() == 1:
            g = g.unsqueeze(-2)
        if b.dim() == 1:
            g = g.unsqueeze(-1)
        need_a, need_b = ctx.needs_input_grad
        grad_a = sum_to_shape(g @ b2.transpose(-1, -2), a2.shape) if need_a else None
        grad_b = sum_to_shape(a2.transpose(-1, -2) @ g, b2.shape) if need_b else None
        return grad_a, grad_b


class Sum(Function):
    """Sum over `dims`; they stay with size 1 if `keepdim`, else they are dropped."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
        """Reduce with ADD along each dim in turn."""
        ctx.shape = a.shape
        out = a
        for d in dims:
            out = out._reduce(ops.ADD, d)
        out = out if out is not a else a._copy()
        ctx.kept = out.shape
        return out if keepdim else out._new(out._data.view(_drop(out.shape, dims)))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """grad broadcast back over the summed dims."""
        return grad.reshape(ctx.kept).expand(*ctx.shape), None, None


class MaxAlong(Function):
    """The values of `a` at `indices` along `dim` (the max), with PyTorch's keepdim."""

    node_name = "Max"

    @staticmethod
    def forward(
        ctx: FunctionCtx, a: Tensor, dim: int, indices: Tensor, keepdim: bool
    ) -> Tensor:
        """Reduce with MAX along dim."""
        ctx.save_for_backward(a, indices)
        ctx.dim = dim
        out = a._reduce(ops.MAX, dim)
        return out if keepdim else out._new(out._data.view(_drop(out.shape, (dim,))))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None]:
        """grad routed to the chosen index only."""
        a, indices = ctx.saved_tensors
        grad = grad.reshape(indices.shape)
        return grad * a._one_hot_along(ctx.dim, indices), None, None, None


class MaxAll(Function):
    """The largest value of `a` (0-dim); ties share the gradient evenly, as in PyTorch."""

    node_name = "Max"

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        """Reduce with MAX over every cell."""
        out = a.contiguous()._flat()._reduce(ops.MAX, 0).view(())
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        """grad / (number of maxima) at each maximum."""
        a, out = ctx.saved_tensors
        mask = a._zip(ops.EQ, out)
        return mask * (grad / mask.sum())


# END TASK 2.4


class View(Function):
    """The same cells under a new shape (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A view with `shape`; strides must allow it."""
        ctx.shape = a.shape
        view = a._data.view(shape)
        if view is None:
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least "
                f"one dimension spans across two contiguous subspaces). Use .reshape(...) "
                f"instead. (input shape {a.shape}, strides {a.stride()}, requested {shape})"
            )
        return a._new(view)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """grad reshaped back."""
        return grad.reshape(ctx.shape), None


class Permute(Function):
    """Dims reordered (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, order: tuple[int, ...]) -> Tensor:
        """new dim i = old dim order[i]."""
        ctx.order = order
        return a._new(a._data.permute(*order))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """grad permuted by the inverse order."""
        inverse = [0] * len(ctx.order)
        for i, d in enumerate(ctx.order):
            inverse[d % len(inverse)] = i
        return grad.permute(*inverse), None


class Expand(Function):
    """Size-1 dims repeated by stride 0 (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A broadcast view."""
        return a._new(a._data.expand(shape))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """grad, summed back to the input's shape by `chain_rule`."""
        return grad, None


class Index(Function):
    """a[key] for ints, slices, None and Ellipsis (a view)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, key: Any) -> Tensor:
        """The indexed view."""
        ctx.shape, ctx.key = a.shape, key
        return a._new(index_view(a._data, key))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """grad written into the indexed cells of zeros."""
        out = grad._zeros(ctx.shape)
        out.backend.copy_into(index_view(out._data, ctx.key), grad._data)
        return out, None


class Copy(Function):
    """A contiguous copy."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        """Row-major copy of a."""
        return a._copy()

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        """grad unchanged."""
        return grad


class Cast(Function):
    """a converted to another dtype or backend/device."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dtype: Any, backend: Any) -> Tensor:
        """The converted copy."""
        ctx.dtype, ctx.backend = a.dtype, a.backend
        return a._convert(dtype, backend)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """grad converted back."""
        return grad._convert(ctx.dtype, ctx.backend), None, None


class Cat(Function):
    """Tensors joined along `dim`."""

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

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Any, ...]:
        """Each input gets its slice of grad."""
        grads: list[Any] = [None]
        start = 0
        for size in ctx.sizes:
            grads.append(grad._new(grad._data.narrow(ctx.dim, slice(start, start + size))))
            start += size
        return tuple(grads)


class Where(Function):
    """a where cond != 0 else b (broadcasting)."""

    @staticmethod
    def forward(ctx: FunctionCtx, cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
        """cond * a + (1 - cond) * b, without 0 * inf problems."""
        mask = cond._zip(ops.NE, cond._scalar_like(0))
        ctx.save_for_backward(mask)
        return a._select_where(mask, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[None, Tensor, Tensor]:
        """grad to a where cond holds, to b elsewhere."""
        (mask,) = ctx.saved_tensors
        zero = grad._scalar_like(0)
        return None, grad._select_where(mask, zero), zero._select_where(mask, grad)
