"""Adam: steps scaled by running averages of the gradient and of its square."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from minifw.core import operators as ops
from minifw.optim._capture import advance, new_step_count
from minifw.optim._fused import adam_kernel, fused_adam_step
from minifw.optim.optimizer import Optimizer, ascent, check_lr, check_range, decayed
from minifw.tensor.kernel_api import bump_version, cells, scalar, zeros, zip_op
from minifw.tensor.tensor import Tensor


class Adam(Optimizer):
    """Adam: per-parameter steps scaled by running averages of the gradient and its square.

    Per step t: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2 (with amsgrad, v is
    replaced by its running maximum); p -= lr / (1 - b1^t) * m / (sqrt(v) /
    sqrt(1 - b2^t) + eps), with g = grad + weight_decay * p (L2 penalty, as
    torch.optim.Adam), or, with `decoupled_weight_decay`, p *= 1 - lr * weight_decay
    first (AdamW). The moments are updated in place and t is a 0-dim tensor on the
    device (`state["step"]`, saved as an int by `state_dict`), so `mf.compile` can
    capture and replay a step (see `_capture.py`).
    """

    _state_tensors = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    _state_counts = ("step",)

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
        maximize: bool = False, decoupled_weight_decay: bool = False,
    ) -> None:  # fmt: skip
        check_lr(lr)
        check_range("epsilon", eps)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        check_range("weight_decay", weight_decay)
        defaults = {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "amsgrad": amsgrad, "maximize": maximize,
            "decoupled_weight_decay": decoupled_weight_decay,
        }  # fmt: skip
        super().__init__(params, defaults)

    def _stateful(self, group: dict[str, Any]) -> bool:
        """Adam updates its state in place: a replay can follow it."""
        return False

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        """Step count 0 and zero moments, as torch.optim.Adam starts."""
        state["step"] = new_step_count(param)
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group.get("amsgrad") else [])
        for name in names:
            state[name] = zeros(param, param.shape)

    def _count(self, count: int, param: Tensor) -> Any:
        """A loaded step count as Adam keeps it: a 0-dim tensor on the parameter's device."""
        step = new_step_count(param)
        step.add_(float(count))
        return step

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One Adam step for one parameter (state updated in place)."""
        beta1, beta2 = group["betas"]
        grad = ascent(grad, group)
        if group.get("decoupled_weight_decay"):
            if group["weight_decay"]:
                param.mul_(1.0 - group["lr"] * group["weight_decay"])
        else:
            grad = decayed(grad, param, group)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        kernel = None if group.get("amsgrad") else adam_kernel(param, grad, m, v)
        if kernel is not None:
            step_size, root = _bias_corrections(state["step"], group, param.dtype)
            hyper = (1.0 - beta1, beta2, 1.0 - beta2, root, group["eps"], step_size)
            fused_adam_step(kernel, param, grad, m, v, hyper)
            return
        m.add_((grad - m) * (1.0 - beta1))
        v.mul_(beta2).add_(grad * grad * (1.0 - beta2))
        if group.get("amsgrad"):
            v = _max_into(state["max_exp_avg_sq"], v)
        step_size, root = _bias_corrections(state["step"], group, param.dtype)
        denom = v.sqrt() / root + group["eps"]
        param.sub_(m / denom * step_size)


def _bias_corrections(step: Tensor, group: dict[str, Any], dtype: Any) -> tuple[Any, Any]:
    """Count one more step t; return lr / (1 - b1^t) and sqrt(1 - b2^t).

    Python numbers when `advance` gives the count, else 0-dim tensors of `dtype`
    computed in float64 from the count on the device (the same values: the kernels'
    pow, sqrt and division round as Python's, and a float32 result is rounded once).
    """
    beta1, beta2 = group["betas"]
    count = advance(step)
    if count is not None:
        return group["lr"] / (1.0 - beta1**count), math.sqrt(1.0 - beta2**count)
    step_size = group["lr"] / (1.0 - beta1**step)
    root = (1.0 - beta2**step).sqrt()
    return _as_dtype(step_size, dtype), _as_dtype(root, dtype)


def _as_dtype(value: Tensor, dtype: Any) -> Tensor:
    """`value` with `dtype`, converted by one kernel on its device (no host round trip)."""
    if value.dtype is dtype:
        return value
    return zip_op(ops.ADD, value, scalar(value, 0.0), dtype.numpy)


def _max_into(target: Tensor, other: Tensor) -> Tensor:
    """Write max(target, other) into target's cells (one launch) and return target."""
    out = cells(target)
    target.backend.zip(ops.MAX, out, cells(other), out=out)
    bump_version(target)
    return target


__all__ = ["Adam"]
