"""RMSprop: steps divided by a running root mean square of the gradient."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minifw.optim.optimizer import Optimizer, ascent, check_lr, check_range, decayed
from minifw.tensor.tensor import Tensor


class RMSprop(Optimizer):
    """Divide each step by a running root mean square of the gradient.

    Per step: g = grad + weight_decay * p; s = alpha s + (1 - alpha) g^2; with `centered`,
    a = alpha a + (1 - alpha) g and the divisor is sqrt(s - a^2) + eps, else sqrt(s) + eps;
    with momentum, b = momentum b + g / divisor and p -= lr b, else p -= lr g / divisor.
    """

    _state_tensors = ("square_avg", "momentum_buffer", "grad_avg")
    _state_counts = ("step",)

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
        weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
        maximize: bool = False,
    ) -> None:  # fmt: skip
        check_lr(lr)
        for name, value in (("epsilon", eps), ("momentum", momentum)):
            check_range(name, value)
        check_range("weight_decay", weight_decay)
        check_range("alpha", alpha)
        defaults = {
            "lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
            "momentum": momentum, "centered": centered, "maximize": maximize,
        }  # fmt: skip
        super().__init__(params, defaults)

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One RMSprop step for one parameter."""
        alpha, momentum = group["alpha"], group["momentum"]
        grad = decayed(ascent(grad, group), param, group)
        if not state:
            state["step"] = 0
            state["square_avg"] = grad * 0.0
            if momentum > 0:
                state["momentum_buffer"] = grad * 0.0
            if group["centered"]:
                state["grad_avg"] = grad * 0.0
        state["step"] += 1
        square = state["square_avg"] = state["square_avg"] * alpha + grad * grad * (1.0 - alpha)
        if group["centered"]:
            avg = state["grad_avg"] = state["grad_avg"] + (grad - state["grad_avg"]) * (1 - alpha)
            square = square - avg * avg
        divisor = square.sqrt() + group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"] = state["momentum_buffer"] * momentum + grad / divisor
            param.sub_(buf * group["lr"])
        else:
            param.sub_(grad / divisor * group["lr"])


__all__ = ["RMSprop"]
