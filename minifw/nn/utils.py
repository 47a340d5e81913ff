"""`minifw.nn.utils`: gradient clipping and flattening parameters into one vector.

As `torch.nn.utils`: `clip_grad_norm_` rescales every gradient in place so that their
joint norm is at most `max_norm` and returns that norm (before clipping);
`clip_grad_value_` clamps each gradient cell; `parameters_to_vector` and
`vector_to_parameters` convert between a model's parameters and one 1-D tensor.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from minifw.core import operators as ops
from minifw.core import unsupported
from minifw.core.autodiff import no_grad
from minifw.tensor.creation import cat
from minifw.tensor.kernel_api import scalar, zip_op
from minifw.tensor.tensor import Tensor, tensor

TensorOrTensors = Tensor | Iterable[Tensor]


def _tensors(parameters: Any) -> list[Tensor]:
    """The tensors of a tensor, a Parameter or an iterable of them."""
    items = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [getattr(p, "value", p) for p in items]


def _grads(parameters: Any) -> list[Tensor]:
    """The gradients that exist among the parameters."""
    return [p.grad for p in _tensors(parameters) if p.grad is not None]


def _norm(g: Tensor, norm_type: float) -> Tensor:
    """The `norm_type`-norm of all cells of `g` as a 0-dim tensor (inf: the largest |g|)."""
    if math.isinf(norm_type):
        size = g.abs()
        return size.max() if norm_type > 0 else size.min()  # type: ignore[no-any-return]
    if norm_type == 2.0:
        return (g * g).sum().sqrt()
    if norm_type == 1.0:
        return g.abs().sum()
    return (g.abs() ** norm_type).sum() ** (1.0 / norm_type)


def get_total_norm(
    tensors: TensorOrTensors, norm_type: float = 2.0, error_if_nonfinite: bool = False
) -> Tensor:
    """The norm of the norms of `tensors` (their joint norm, as if concatenated)."""
    items = _tensors(tensors)
    if not items:
        return tensor(0.0)
    with no_grad():
        norms = [_norm(t.detach(), norm_type).to(items[0].dtype) for t in items]
        total = _norm_of_norms(norms, norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {float(norm_type)} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def _norm_of_norms(norms: list[Tensor], norm_type: float) -> Tensor:
    """The `norm_type`-norm of the 0-dim norms (their joint norm), computed on the device."""
    total = norms[0]
    if math.isinf(norm_type):
        op = ops.MAX if norm_type > 0 else ops.MIN
        for n in norms[1:]:
            total = zip_op(op, total, n)
        return total
    if len(norms) == 1:
        return total
    if norm_type == 2.0:
        return sum((n * n for n in norms[1:]), total * total).sqrt()  # type: ignore[no-any-return]
    powered = sum((n**norm_type for n in norms[1:]), total**norm_type)
    return powered ** (1.0 / norm_type)  # type: ignore[no-any-return]


def clip_grads_with_norm_(
    parameters: TensorOrTensors, max_norm: float, total_norm: Tensor
) -> None:
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)), in place."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = float(max_norm) / (total_norm.detach() + 1e-6)
        clamped = zip_op(ops.MIN, coef, scalar(coef, 1.0))
        for g in grads:
            g.mul_(clamped.to(g.dtype))


def clip_grad_norm_(
    parameters: TensorOrTensors, max_norm: float, norm_type: float = 2.0,
    error_if_nonfinite: bool = False, foreach: bool | None = None,
) -> Tensor:  # fmt: skip
    """Rescale the gradients so their joint `norm_type`-norm is at most `max_norm`.

    Returns the joint norm before clipping (a 0-dim tensor); with `error_if_nonfinite`, a
    nan or infinite norm raises RuntimeError and leaves the gradients untouched.
    """
    grads = _grads(parameters)
    total = get_total_norm(grads, float(norm_type), error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(
    parameters: TensorOrTensors, clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient cell into [-clip_value, clip_value], in place."""
    with no_grad():
        for g in _grads(parameters):
            high, low = scalar(g, clip_value), scalar(g, -clip_value)
            g.copy_(zip_op(ops.MAX, zip_op(ops.MIN, g, high), low))


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Every parameter flattened and concatenated into one 1-D tensor (differentiable)."""
    items = _tensors(parameters)
    if not items:
        raise RuntimeError("parameters_to_vector: expected at least one parameter")
    flat = [p.reshape(-1) for p in items]
    return flat[0] if len(flat) == 1 else _concatenate(flat)


def _concatenate(flat: list[Tensor]) -> Tensor:
    """The 1-D tensors `flat` joined end to end."""
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D `vec` into the parameters, in place."""
    if not isinstance(vec, Tensor) or vec.dim() != 1:
        raise TypeError(f"expected a 1-D Tensor, but got {type(vec).__name__}")
    items = _tensors(parameters)
    total = sum(p.numel() for p in items)
    if vec.numel() != total:
        raise RuntimeError(
            f"vector_to_parameters: the vector has {vec.numel()} cells, the parameters {total}"
        )
    offset = 0
    with no_grad():
        for p in items:
            count = p.numel()
            p.copy_(vec[offset : offset + count].reshape(*p.shape))
            offset += count


__all__ = [
    "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
    "parameters_to_vector", "vector_to_parameters",
]  # fmt: skip

__getattr__ = unsupported.module_getattr("torch.nn.utils", "minifw.nn.utils")
