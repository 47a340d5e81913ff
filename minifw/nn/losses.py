"""Loss functions as Modules: MSELoss, CrossEntropyLoss, NLLLoss, BCELoss."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F  # noqa: N812 - PyTorch's idiom
from .loss import REDUCTIONS
from .module import Module


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
        return F.mse_loss(input, target, self.reduction)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities against 0/1 (or soft) targets."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (N, C) at class-index targets (N,)."""

    def __init__(
        self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean"
    ) -> None:
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(NLLLoss):
    """log_softmax + NLLLoss on raw scores (logits) (N, C) and class-index targets (N,)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss."""
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction)
