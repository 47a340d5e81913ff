"""Losses: mse_loss, nll_loss, cross_entropy, binary_cross_entropy, and their Modules.

Class-index targets pick one log-probability per sample with a 0/1 mask built on the
host by comparing the targets with `arange(C)` (a gather that every backend can run
and autograd differentiates). Without class weights, a "mean" or "sum" loss is one
`MaskedSum` node: the mask holds -1 (or -1/count) at each picked cell, so the loss
is one product and one reduction. `reduction` is "mean", "sum" or "none", as in PyTorch.
"""

from __future__ import annotations

import warnings

import numpy as np

from minifw.core import operators as ops
from minifw.nn.activation import log_softmax
from minifw.nn.module import Module
from minifw.tensor.functions import Function, FunctionCtx, Where
from minifw.tensor.tensor import Tensor, tensor

REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    """Apply `reduction` to per-element losses."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (mean, sum or none)")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:  # noqa: A002
    """(input - target)^2, reduced; shapes broadcast (with PyTorch's warning if they differ)."""
    _check_reduction(reduction)
    if input.shape != target.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=2,
        )
    diff = input - target
    return _reduce(diff * diff, reduction)


def _class_indices(
    input: Tensor,  # noqa: A002
    target: Tensor,
    ignore_index: int,
) -> np.ndarray:
    """`target` checked against `input` (N, C, ...) and returned as host class indices."""
    expected = input.shape[:1] + input.shape[2:] if input.dim() > 1 else ()
    if target.shape != expected:
        raise ValueError(
            f"Expected target of shape {expected} for input of shape {input.shape} (classes "
            f"along dim {min(1, input.dim() - 1)}), got target of shape {target.shape}"
        )
    values = target.detach().cpu().numpy()
    if target.dtype.is_floating_point and not np.all(values == np.round(values)):
        raise ValueError(
            f"class-index targets must hold whole numbers (got a {target.dtype} target "
            f"with fractional values, shape {target.shape})"
        )
    classes = input.shape[1] if input.dim() > 1 else input.shape[0]
    if values.size and (values.min() < 0 or values.max() >= classes):
        bad = values[(values != ignore_index) & ((values < 0) | (values >= classes))]
        if bad.size:
            raise IndexError(
                f"Target {int(bad.flat[0])} is out of bounds (expected 0 <= target < {classes} "
                f"for input of shape {input.shape})."
            )
    return values


class MaskedSum(Function):
    """sum(x * mask) over every cell, for a constant mask: nll_loss's "mean" and "sum"."""

    node_name = "NllLoss"
    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, x: Tensor, mask: Tensor, empty: bool
    ) -> Tensor:
        """Picked cells times the mask, summed over its cells viewed 1-D; nan if `empty`.

        Cells the mask does not pick are read as 0 (SELECT), not multiplied by 0: a
        masked -inf logit would give -inf * 0 = nan.
        """
        ctx.mask = mask
        if empty:  # a mean over no targets, as PyTorch: nan (and zero gradients)
            return x._scalar_like(float("nan"))
        picked = mask._zip(ops.SELECT, x)
        total = picked._zip(ops.MUL, mask)._flat()._reduce(ops.ADD, 0)
        scalar = total._data.view(())
        assert scalar is not None
        return total._new(scalar)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Grad * mask (the 0-dim grad broadcast over the mask)."""
        return grad._zip(ops.MUL, ctx.mask), None, None


def nll_loss(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """-input[n, target[n]] (times weight[target[n]]), averaged over the weights for "mean".

    `input` holds log-probabilities (N, C), (C,) or (N, C, d1, ...); `target` holds class
    indices (int64, or floats holding whole numbers); targets equal to `ignore_index`
    contribute nothing.
    """
    _check_reduction(reduction)
    if input.dim() == 0:
        raise ValueError(f"nll_loss: expected an input with a class dim, got shape {input.shape}")
    values = _class_indices(input, target, ignore_index)
    cls = 1 if input.dim() > 1 else 0
    shape = [1] * input.dim()
    shape[cls] = input.shape[cls]
    # The 0/1 mask is built from the host copy of the targets: one upload, no launches.
    # Ignored targets become -1, which matches no class.
    picked = np.where(values == ignore_index, -1, values)[(slice(None),) * cls + (None,)]
    onehot = picked == np.arange(input.shape[cls]).reshape(shape)
    if weight is not None and weight.shape != (input.shape[cls],):
        raise ValueError(
            f"weight should have one entry per class ({input.shape[cls]}), got {weight.shape}"
        )
    count = np.count_nonzero(onehot)
    fold = reduction != "none" and input.dtype.is_floating_point
    if fold and (weight is None or (reduction == "mean" and not count)):
        # One node, three launches: the -1 (and 1 / count for "mean") folded into the mask.
        # A mean over no targets is nan with zero gradients, as in PyTorch.
        scale = -1.0 / count if reduction == "mean" and count else -1.0
        host = np.multiply(onehot, scale, dtype=input.dtype.numpy)
        mask = input._new(input.backend.from_numpy(host))
        return MaskedSum.apply(input, mask, reduction == "mean" and not count)
    # Unpicked cells read as 0, never multiplied by 0 (a -inf logit: -inf * 0 = nan).
    hits = tensor(onehot, dtype=input.dtype, backend=input.backend)
    chosen = Where.apply(hits, input, input._scalar_like(0))
    if weight is not None:
        mask = hits * weight.to(input.dtype).view(*shape)
        losses = -(chosen * mask).sum(cls)
        if reduction == "mean":
            return losses.sum() / mask.sum()
        return _reduce(losses, reduction)
    # -(x * m) summed equals (x * -m) summed exactly (negation never rounds).
    negated = tensor(-onehot.astype(input.dtype.numpy), backend=input.backend)
    losses = (chosen * negated).sum(cls)
    if reduction == "mean":
        return losses.sum() / float(count)
    return _reduce(losses, reduction)


def cross_entropy(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """log_softmax over the class dim followed by nll_loss (numerically stable).

    `target` holds class indices, or (a float tensor of input's shape) class probabilities.
    """
    _check_reduction(reduction)
    cls = 1 if input.dim() > 1 else 0
    logp = log_softmax(input, cls)
    if target.dtype.is_floating_point and target.shape == input.shape:
        shape = [1] * input.dim()
        shape[cls] = input.shape[cls]
        terms = logp * target.to(logp.dtype)
        if weight is not None:
            terms = terms * weight.to(logp.dtype).view(*shape)
        return _reduce(-terms.sum(cls), reduction)
    return nll_loss(logp, target, weight, ignore_index, reduction)


class BinaryCrossEntropy(Function):
    """-(t log x + (1 - t) log(1 - x)) with each log clamped at -100, as PyTorch does."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, t: Tensor) -> Tensor:  # type: ignore[override]
        """The per-cell loss."""
        ctx.save_for_backward(x, t)
        floor = x._scalar_like(-100.0)
        log_x = x.log()._zip(ops.MAX, floor)
        log_1mx = (1.0 - x).log()._zip(ops.MAX, floor)
        return -(t * log_x + (1.0 - t) * log_1mx)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """d/dx = (x - t) / max(x (1 - x), 1e-12); d/dt = log(1 - x) - log(x) (clamped)."""
        x, t = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        grad_x = grad_t = None
        if need_x:
            denom = (x * (1.0 - x))._zip(ops.MAX, x._scalar_like(1e-12))
            grad_x = grad * (x - t) / denom
        if need_t:
            floor = x._scalar_like(-100.0)
            grad_t = grad * ((1.0 - x).log()._zip(ops.MAX, floor) - x.log()._zip(ops.MAX, floor))
        return grad_x, grad_t


def _check_probabilities(name: str, t: Tensor) -> None:
    """PyTorch's RuntimeError unless every cell of `t` lies in [0, 1] (nan does not)."""
    x = t.detach()
    outside = t.numel() - ((x >= 0.0) * (x <= 1.0)).sum().item()
    if outside:
        raise RuntimeError(
            f"all elements of {name} should be between 0 and 1 ({int(outside)} of the "
            f"{t.numel()} cells of the {name} of shape {t.shape} are not, nan included)"
        )


def binary_cross_entropy(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy of probabilities `input` in [0, 1] against `target` (same shape)."""
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"binary_cross_entropy: expected a float input, got {input.dtype}")
    for name, values in (("input", input), ("target", target)):
        _check_probabilities(name, values)
    loss = BinaryCrossEntropy.apply(input, target.to(input.dtype))
    if weight is not None:
        loss = loss * weight.to(input.dtype)
    return _reduce(loss, reduction)


__all__ = ["binary_cross_entropy", "cross_entropy", "mse_loss", "nll_loss"]


# ---- The same losses as Modules ------------------------------------------------------------


class _Loss(Module):
    """A loss with a `reduction` ("mean", "sum" or "none")."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction (mean, sum or none)")
        self.reduction = reduction


class MSELoss(_Loss):
    """Mean squared error: mean((input - target)^2)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return mse_loss(input, target, self.reduction)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities against 0/1 (or soft) targets."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return binary_cross_entropy(input, target, self.weight, self.reduction)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (N, C) at class-index targets (N,)."""

    def __init__(
        self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean"
    ) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(NLLLoss):
    """log_softmax + NLLLoss on raw scores (logits) (N, C) and class-index targets (N,)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return cross_entropy(input, target, self.weight, self.ignore_index, self.reduction)
