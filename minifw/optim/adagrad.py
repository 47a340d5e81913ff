"""Adagrad: steps divided by the root of the sum of all squared gradients so far."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minifw.optim.optimizer import Optimizer, ascent, check_lr, check_range, decayed
from minifw.tensor.tensor import Tensor


class Adagrad(Optimizer):
    """Divide each step by the root of the sum of all squared gradients so far.

    Per step t: g = grad + weight_decay * p; s += g^2; p -= lr / (1 + (t - 1) lr_decay) *
    g / (sqrt(s) + eps), with s starting at `initial_accumulator_value`.
    """

    _state_tensors = ("sum",)
    _state_counts = ("step",)

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
        weight_decay: float = 0.0, initial_accumulator_value: float = 0.0, eps: float = 1e-10,
        *, maximize: bool = False,
    ) -> None:  # fmt: skip
        check_lr(lr)
        for name, value in (("lr_decay", lr_decay), ("epsilon", eps)):
            check_range(name, value)
        check_range("weight_decay", weight_decay)
        check_range("initial_accumulator_value", initial_accumulator_value)
        defaults = {
            "lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value, "maximize": maximize,
        }  # fmt: skip
        super().__init__(params, defaults)

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One Adagrad step for one parameter."""
        grad = decayed(ascent(grad, group), param, group)
        if not state:
            state["step"] = 0
            state["sum"] = param.detach() * 0.0 + group["initial_accumulator_value"]
        state["step"] += 1
        rate = group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"])
        total = state["sum"] = state["sum"] + grad * grad
        param.sub_(grad / (total.sqrt() + group["eps"]) * rate)


__all__ = ["Adagrad"]
