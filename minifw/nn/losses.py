"""Loss Modules, as `torch.nn`'s: MSELoss, NLLLoss, CrossEntropyLoss, BCELoss, ...

Each holds its options (`reduction`, class weights, ...) and calls its function of
loss_functions.py. PyTorch's deprecated `size_average` / `reduce` flags still pick a
reduction, with PyTorch's warning.
"""

from __future__ import annotations

import warnings

from minifw.nn.loss_functions import (
    REDUCTIONS,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from minifw.nn.module import Module
from minifw.tensor.tensor import Tensor


def _legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """`reduction` from PyTorch's deprecated size_average / reduce flags, when either is set."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn(
        "size_average and reduce args will be deprecated, please use reduction instead.",
        UserWarning,
        stacklevel=3,
    )
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


class _Loss(Module):
    """A loss with a `reduction` ("mean", "sum" or "none")."""

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:  # fmt: skip
        super().__init__()
        reduction = _legacy_reduction(size_average, reduce, reduction)
        if reduction not in REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction (mean, sum or none)")
        self.reduction = reduction


class MSELoss(_Loss):
    """Mean squared error: mean((input - target)^2)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error: mean(|input - target|)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return l1_loss(input, target, self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below `beta`, absolute error (shifted) above it."""

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None,
        reduction: str = "mean", beta: float = 1.0,
    ) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(_Loss):
    """Squared error below `delta`, delta times the absolute error (shifted) above it."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return huber_loss(input, target, self.reduction, self.delta)


class KLDivLoss(Module):
    """KL divergence of log-probabilities `input` from `target` (see `kl_div`)."""

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None,
        reduction: str = "mean", log_target: bool = False,
    ) -> None:  # fmt: skip
        super().__init__()
        self.reduction = _legacy_reduction(size_average, reduce, reduction)
        if self.reduction not in (*REDUCTIONS, "batchmean"):
            raise ValueError(f"{self.reduction} is not a valid value for reduction")
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return kl_div(input, target, self.reduction, self.log_target)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities against 0/1 (or soft) targets."""

    def __init__(
        self, weight: Tensor | None = None, size_average: bool | None = None,
        reduce: bool | None = None, reduction: str = "mean",
    ) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.weight = weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy on logits (a sigmoid folded in, stably).

    `pos_weight` weighs the positive term of each class.
    """

    def __init__(
        self, weight: Tensor | None = None, size_average: bool | None = None,
        reduce: bool | None = None, reduction: str = "mean", pos_weight: Tensor | None = None,
    ) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return binary_cross_entropy_with_logits(
            input, target, self.weight, self.reduction, self.pos_weight
        )


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (N, C) at class-index targets (N,)."""

    def __init__(
        self, weight: Tensor | None = None, size_average: bool | None = None,
        ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
    ) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(NLLLoss):
    """log_softmax + NLLLoss on raw scores (logits) (N, C) and class-index targets (N,).

    Targets may also be class probabilities of the input's shape; `label_smoothing`
    mixes the targets with the uniform distribution.
    """

    def __init__(
        self, weight: Tensor | None = None, size_average: bool | None = None,
        ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:  # fmt: skip
        super().__init__(weight, size_average, ignore_index, reduce, reduction)
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return cross_entropy(
            input, target, self.weight, self.ignore_index, self.reduction,
            label_smoothing=self.label_smoothing,
        )  # fmt: skip


__all__ = [
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "KLDivLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "NLLLoss",
    "CrossEntropyLoss",
]
