"""User-defined autograd Functions and `gradcheck` (autograd vs central differences)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minifw.core.autodiff import enable_grad, no_grad
from minifw.tensor.functions import Function, FunctionCtx
from minifw.tensor.tensor import Tensor

__all__ = ["Function", "FunctionCtx", "GradcheckError", "gradcheck"]

_MAX_REPORTED = 12


class GradcheckError(RuntimeError):
    """Raised by gradcheck when autograd and central differences disagree."""


def gradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Compare autograd's Jacobian of `fn` with central differences, entry by entry.

    `inputs` is a tensor or a tuple of arguments; every tensor among them that
    requires grad is checked, in its own layout (non-contiguous inputs stay so).
    Entry (output cell j, input cell k) of the numerical Jacobian is
    (f(x + eps e_k) - f(x - eps e_k))_j / 2 eps. Returns True when every entry
    agrees within `atol + rtol * |numerical|`; otherwise raises GradcheckError
    with a table of the mismatched entries (or returns False).
    """
    args = tuple(inputs) if isinstance(inputs, list | tuple) else (inputs,)
    wrt = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor with requires_grad=True")
    for i in wrt:
        _check_no_overlap(i, args[i])
    analytic = _analytic_jacobians(fn, args, wrt)
    numeric = _numeric_jacobians(fn, args, wrt, eps, analytic[0].shape[0])
    problems: list[str] = []
    for i, a_jac, n_jac in zip(wrt, analytic, numeric, strict=True):
        bad = np.abs(a_jac - n_jac) > atol + rtol * np.abs(n_jac)
        for out_cell, in_cell in zip(*np.nonzero(bad), strict=True):
            position = tuple(int(p) for p in np.unravel_index(in_cell, args[i].shape))
            problems.append(
                f"  d output[{out_cell}] / d input {i}{list(position)}: numerical "
                f"{n_jac[out_cell, in_cell]:.6g}, analytical {a_jac[out_cell, in_cell]:.6g}"
            )
    if not problems:
        return True
    shown = problems[:_MAX_REPORTED]
    if len(problems) > _MAX_REPORTED:
        shown.append(f"  ... and {len(problems) - _MAX_REPORTED} more")
    report = (
        f"Jacobian mismatch (autograd vs central differences, eps={eps}, atol={atol}, "
        f"rtol={rtol}); output cells are counted over all outputs in row-major order:\n"
        + "\n".join(shown)
    )
    if raise_exception:
        raise GradcheckError(report)
    return False


def _check_no_overlap(i: int, t: Tensor) -> None:
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if size > 1 and stride == 0:
            raise ValueError(
                f"gradcheck: input {i} (shape {t.shape}, strides {t.stride()}) has a dimension "
                f"with stride 0, so one storage cell stands for several entries and the "
                f"numerical gradient is undefined. Call .contiguous() on it first."
            )


def _outputs(fn: Callable[..., Any], args: Sequence[Any]) -> list[Tensor]:
    result = fn(*args)
    outputs = list(result) if isinstance(result, list | tuple) else [result]
    return [o for o in outputs if isinstance(o, Tensor)]


def _flat(t: Tensor | None, size: int) -> np.ndarray:
    if t is None:
        return np.zeros(size)
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float64).reshape(-1)


def _analytic_jacobians(
    fn: Callable[..., Any], args: Sequence[Any], wrt: list[int]
) -> list[np.ndarray]:
    """One (output cells, input cells) matrix per checked input, row by row by backward."""
    leaves = list(args)
    for i in wrt:
        leaves[i] = args[i].detach().requires_grad_(True)  # same storage and layout
    with enable_grad():
        outputs = _outputs(fn, leaves)
    total = sum(o.numel() for o in outputs)
    jacobians = [np.zeros((total, args[i].numel())) for i in wrt]
    row = 0
    for out in outputs:
        for cell in range(out.numel()):
            if out.requires_grad:
                for i in wrt:
                    leaves[i].grad = None
                seed = np.zeros(out.numel())
                seed[cell] = 1.0
                out.backward(seed.reshape(out.shape), retain_graph=True)
                for jac, i in zip(jacobians, wrt, strict=True):
                    jac[row] = _flat(leaves[i].grad, args[i].numel())
            row += 1
    return jacobians


def _numeric_jacobians(
    fn: Callable[..., Any], args: Sequence[Any], wrt: list[int], eps: float, total: int
) -> list[np.ndarray]:
    """Central differences, moving one storage cell of one input at a time (then back)."""
    jacobians = []
    with no_grad():
        for i in wrt:
            data = args[i]._data
            columns = []
            for index in data.indices():
                position = data.index(index)
                original = data.base[position]
                shifted = []
                for step in (eps, -eps):
                    data.base[position] = original + step
                    outs = _outputs(fn, args)
                    shifted.append(np.concatenate([_flat(o, o.numel()) for o in outs]))
                data.base[position] = original
                columns.append((shifted[0] - shifted[1]) / (2.0 * eps))
            jacobians.append(np.stack(columns, axis=1) if columns else np.zeros((total, 0)))
    return jacobians
