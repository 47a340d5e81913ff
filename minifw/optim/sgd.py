"""SGD: stochastic gradient descent with optional momentum, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minifw.optim._fused import sub_scaled
from minifw.optim.optimizer import Optimizer, ascent, check_lr, check_range, decayed
from minifw.tensor.tensor import Tensor


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov and weight decay.

    Per step: g = grad + weight_decay * p; buf = momentum * buf + (1 - dampening) * g
    (buf = g on the first step); g = g + momentum * buf if nesterov else buf;
    p -= lr * g. Plain SGD keeps no state, so `mf.compile` can capture and replay a step.
    """

    _state_tensors = _state_optional = ("momentum_buffer",)

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
        dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, *,
        maximize: bool = False,
    ) -> None:  # fmt: skip
        check_lr(lr)
        check_range("momentum", momentum)
        check_range("weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr, "momentum": momentum, "dampening": dampening,
            "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
        }  # fmt: skip
        super().__init__(params, defaults)

    def _stateful(self, group: dict[str, Any]) -> bool:
        """Only momentum keeps state."""
        return bool(group["momentum"])

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One SGD step for one parameter."""
        grad = decayed(ascent(grad, group), param, group)
        momentum, dampening = group["momentum"], group["dampening"]
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.clone()
            else:
                buf = buf * momentum + (grad * (1.0 - dampening) if dampening else grad)
            state["momentum_buffer"] = buf
            grad = grad + buf * momentum if group["nesterov"] else buf
        sub_scaled(param, grad, group["lr"])


__all__ = ["SGD"]
