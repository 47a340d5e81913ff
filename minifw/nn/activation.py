"""Functional activations: relu, sigmoid, tanh, softmax, log_softmax, dropout, one_hot.

These run on every backend. relu, sigmoid, tanh and dropout are Tensor operations;
softmax and log_softmax are one autograd node each (`Softmax`, `LogSoftmax`), whose
forward and backward launch kernels directly (5 and 6 launches forward, 4 backward).
They subtract the max along `dim` first: exp never sees a positive argument, so
logits of 1000 do not overflow.
"""

from __future__ import annotations

import numpy as np

from minifw.core import dtypes
from minifw.core import operators as ops
from minifw.core.random import generator
from minifw.core.tensor_data import normalize_dim
from minifw.tensor.functions import Function, FunctionCtx
from minifw.tensor.tensor import Tensor, tensor


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
    """e^x / sum(e^x) along `dim`: every slice along `dim` becomes a distribution."""
    x = input._floating()
    return Softmax.apply(x, normalize_dim(dim, x.dim()))


def log_softmax(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """log(softmax(x)) along `dim`, computed as x - max - log(sum(e^(x - max)))."""
    x = input._floating()
    return LogSoftmax.apply(x, normalize_dim(dim, x.dim()))


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:  # noqa: A002
    """Zero each cell with probability p and scale the rest by 1 / (1 - p).

    The identity when `training` is False or p == 0. The mask is drawn from minifw's
    generator, so `mf.manual_seed` makes it reproducible.
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
