"""User-defined autograd Functions and `gradcheck` (autograd vs central differences)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .autodiff import enable_grad, no_grad
from .tensor import Tensor
from .tensor_functions import Function, FunctionCtx

__all__ = ["Function", "FunctionCtx", "GradcheckError", "gradcheck"]


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
    """Compare autograd's Jacobian of `fn` with central differences, cell by cell.

    Every input tensor that requires grad is perturbed one cell at a time. Returns
    True when all entries agree within `atol + rtol * |numeric|`; otherwise raises
    GradcheckError with a table of the worst mismatches (or returns False).
    """
    args = tuple(inputs) if isinstance(inputs, list | tuple) else (inputs,)
    wrt = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor with requires_grad=True")
    with no_grad():
        base = _outputs(fn, args)
    problems: list[str] = []
    for out_index, out in enumerate(base):
        for cell in range(out.numel()):
            analytic = _analytic_row(fn, args, wrt, out_index, cell)
            numeric = _numeric_row(fn, args, wrt, out_index, cell, eps)
            for i, a_row, n_row in zip(wrt, analytic, numeric, strict=True):
                bad = np.abs(a_row - n_row) > atol + rtol * np.abs(n_row)
                for flat in np.flatnonzero(bad)[:5]:
                    position = np.unravel_index(flat, args[i].shape)
                    problems.append(
                        f"  output {out_index} cell {cell}, input {i} at {tuple(map(int, position))}:"
                        f" numerical {n_row.flat[flat]:.6g}, analytical {a_row.flat[flat]:.6g}"
                    )
    if problems:
        report = "Jacobian mismatch (autograd vs central differences):\n" + "\n".join(problems[:20])
        if raise_exception:
            raise GradcheckError(report)
        return False
    return True


def _outputs(fn: Callable[..., Any], args: Sequence[Any]) -> list[Tensor]:
    result = fn(*args)
    outputs = list(result) if isinstance(result, list | tuple) else [result]
    return [o for o in outputs if isinstance(o, Tensor)]


def _analytic_row(
    fn: Callable[..., Any], args: Sequence[Any], wrt: list[int], out_index: int, cell: int
) -> list[np.ndarray]:
    leaves = list(args)
    for i in wrt:
        leaves[i] = args[i].detach().clone().requires_grad_(True)
    with enable_grad():
        out = _outputs(fn, leaves)[out_index]
        if not out.requires_grad:
            return [np.zeros(args[i].shape) for i in wrt]
        seed = np.zeros(out.numel())
        seed[cell] = 1.0
        out.backward(seed.reshape(out.shape))
    rows = []
    for i in wrt:
        grad = leaves[i].grad
        rows.append(np.zeros(args[i].shape) if grad is None else np.array(grad.tolist(), float))
    return rows


def _numeric_row(
    fn: Callable[..., Any],
    args: Sequence[Any],
    wrt: list[int],
    out_index: int,
    cell: int,
    eps: float,
) -> list[np.ndarray]:
    rows = []
    for i in wrt:
        values = np.array(args[i].detach().tolist(), dtype=np.float64)
        row = np.zeros(values.shape)
        for flat in range(values.size):
            shifted = []
            for sign in (1.0, -1.0):
                moved = values.copy()
                moved.flat[flat] += sign * eps
                trial = list(args)
                trial[i] = Tensor(
                    args[i].backend.from_numpy(moved.astype(args[i].dtype.numpy)), args[i].backend
                )
                with no_grad():
                    out = _outputs(fn, trial)[out_index]
                shifted.append(float(np.array(out.tolist()).reshape(-1)[cell]))
            row.flat[flat] = (shifted[0] - shifted[1]) / (2.0 * eps)
        rows.append(row)
    return rows
