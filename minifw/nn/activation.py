"""Functional activations: relu, sigmoid, tanh, max_along, softmax, log_softmax, dropout.

These run on every backend. relu, sigmoid, tanh and dropout are Tensor operations;
`max_along` is one autograd node (`MaxAlongDim`) plus the indices of the maxima;
softmax and log_softmax are one autograd node each (`Softmax`, `LogSoftmax`), whose
forward and backward launch kernels directly (5 and 6 launches forward, 4 backward).
They subtract the max along `dim` first: exp never sees a positive argument, so
logits of 1000 do not overflow. Task 4.4 fences everything from `MaxAlongDim` to
`dropout`; one_hot is given.
"""

from __future__ import annotations

import numpy as np

from minifw.core import dtypes
from minifw.core import operators as ops
from minifw.core.random import generator
from minifw.core.tensor_data import normalize_dim
from minifw.tensor.functions import Function, FunctionCtx
from minifw.tensor.tensor import MaxResult, Tensor, tensor


def relu(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
    """max(x, 0) cell by cell."""
    return input.relu()


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """1 / (1 + e^-x) cell by cell."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """The hyperbolic tangent, cell by cell."""
    return input.tanh()


# BEGIN TASK 4.4


class MaxAlongDim(Function):
    """The largest value along `dim` (kept as a size-1 dim); its gradient goes to the argmax."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, x: Tensor, dim: int, indices: Tensor
    ) -> Tensor:
        """Return x reduced with MAX along `dim`, keeping that dim with size 1.

        `indices` (keepdim-shaped) holds where each max sits; keep it for backward.
        """
        ctx.save_for_backward(x, indices)
        ctx.dim = dim
        return x._reduce(ops.MAX, dim)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Return grad at the position `indices` names along `dim`, 0 everywhere else.

        One cell per slice gets the gradient, even when several cells tie for the max.
        """
        x, indices = ctx.saved_tensors
        return grad._zip(ops.MUL, x._one_hot_along(ctx.dim, indices)), None, None


def max_along(input: Tensor, dim: int, keepdim: bool = False) -> MaxResult:  # noqa: A002
    """The (values, indices) of the largest entries along `dim`, like `torch.max(x, dim)`.

    Write: the indices are the first position of the max in each slice (int64, no
    gradient; `Tensor.argmax` finds them); the values are `MaxAlongDim` applied to the
    input, so gradients flow to those positions only. Without `keepdim`, `dim` is
    dropped from both results. Raises IndexError for a `dim` out of range.
    """
    d = normalize_dim(dim, input.dim())
    indices = input.argmax(d, keepdim=True)
    values = MaxAlongDim.apply(input, d, indices)
    if keepdim:
        return MaxResult(values, indices)
    return MaxResult(values.squeeze(d), indices.squeeze(d))


def _minus_max(x: Tensor, dim: int) -> Tensor:
    """Return x minus its max along `dim`: softmax is unchanged, and e^x cannot overflow."""
    return x._zip(ops.SUB, x._reduce(ops.MAX, dim)) if x.numel() else x


class LogSoftmax(Function):
    """log(softmax(x)) along `dim` as one node: x - max - log(sum(e^(x - max)))."""

    fresh_grads = True

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, dim: int) -> Tensor:  # type: ignore[override]
        """Shift by the max along dim (the result does not depend on it), then normalise."""
        shifted = _minus_max(x, dim)
        out = shifted._zip(ops.SUB, shifted._map(ops.EXP)._reduce(ops.ADD, dim)._map(ops.LOG))
        ctx.save_for_backward(out.detach())
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Return grad - softmax * sum(grad) along dim, with softmax = e^out."""
        (out,) = ctx.saved_tensors
        total = grad._reduce(ops.ADD, ctx.dim)
        return grad._zip(ops.SUB, out._map(ops.EXP)._zip(ops.MUL, total)), None


class Softmax(Function):
    """e^x / sum(e^x) along `dim` as one node, computed on x - max (no overflow)."""

    fresh_grads = True

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, dim: int) -> Tensor:  # type: ignore[override]
        """Exponentiate x - max along dim and divide by the sum."""
        e = _minus_max(x, dim)._map(ops.EXP)
        out = e._zip(ops.DIV, e._reduce(ops.ADD, dim))
        ctx.save_for_backward(out.detach())
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Return s * (grad - sum(grad * s) along dim), with s the softmax."""
        (s,) = ctx.saved_tensors
        total = grad._zip(ops.MUL, s)._reduce(ops.ADD, ctx.dim)
        return s._zip(ops.MUL, grad._zip(ops.SUB, total)), None


def softmax(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """e^x / sum(e^x) along `dim`: every slice along `dim` becomes a distribution.

    Write: integer inputs become floating point first (`Tensor._floating`); a negative
    `dim` counts from the end. Subtract the max along `dim` before exponentiating so that
    huge logits (1000) give finite results; the gradient must be exact (gradcheck).
    """
    x = input._floating()
    return Softmax.apply(x, normalize_dim(dim, x.dim()))


def log_softmax(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """log(softmax(x)) along `dim`, computed as x - max - log(sum(e^(x - max))).

    Write: as softmax, but never take the log of a softmax that may have rounded to 0:
    use the shifted form above, so log_softmax of logits 1000 apart stays finite.
    """
    x = input._floating()
    return LogSoftmax.apply(x, normalize_dim(dim, x.dim()))


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:  # noqa: A002
    """Zero each cell with probability p and scale the rest by 1 / (1 - p).

    Write: return the input itself (the same object) when `training` is False or p == 0,
    zeros when p == 1, and raise ValueError unless 0 <= p <= 1. Draw the keep-mask from
    minifw's generator (`minifw.core.random.generator()`), so that `mf.manual_seed` makes
    it reproducible; gradients flow through the kept cells with the same 1 / (1 - p) scale.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = generator().random(input.shape) >= p
    mask = tensor(keep / (1.0 - p), dtype=input.dtype, backend=input.backend)
    return input * mask


# END TASK 4.4


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:  # noqa: A002
    """int64 tensor of shape input.shape + (num_classes,): 1 at each index, 0 elsewhere.

    `num_classes=-1` uses the largest index + 1.
    """
    if input.dtype is not dtypes.int64:
        raise RuntimeError(
            f"one_hot is only applicable to index tensor of dtype int64, got {input.dtype}"
        )
    values = input.detach().cpu().numpy()
    if values.size and values.min() < 0:
        raise RuntimeError(f"Class values must be non-negative (got {values.min()}).")
    if num_classes == -1:
        if values.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(values.max()) + 1
    if values.size and values.max() >= num_classes:
        raise RuntimeError(
            f"Class values must be smaller than num_classes ({values.max()} >= {num_classes})."
        )
    classes = tensor(np.arange(num_classes), backend=input.backend)
    return (input.unsqueeze(-1) == classes).long()
