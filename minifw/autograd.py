"""The `mf.autograd` namespace: grad, backward, user-defined Functions, gradcheck.

`grad` and `backward` are PyTorch's (`minifw.tensor.autograd` runs them on the one
engine of `core/autodiff.py`, with `create_graph` for gradients of gradients);
`functional` holds jacobian, hessian, vjp, jvp, hvp and vhp built on `grad`;
`gradcheck` compares autograd with central differences.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from minifw.core import unsupported
from minifw.core.autodiff import (
    central_difference,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from minifw.tensor.autograd import backward, grad
from minifw.tensor.functions import Function, FunctionCtx
from minifw.tensor.tensor import Tensor

__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "backward", "enable_grad", "functional",
    "grad", "gradcheck", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
    "no_grad", "set_grad_enabled",
]  # fmt: skip

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
                f"gradcheck: input {i} (shape {tuple(t.shape)}, strides {t.stride()}) has a "
                f"dimension with stride 0, so one storage cell stands for several entries and the "
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
    """Central differences (Task 1.1's), moving one storage cell of one input at a time."""
    jacobians = []
    with no_grad():
        for i in wrt:
            data = args[i]._data
            columns = []
            for index in data.indices():
                columns.append(_numeric_column(fn, args, data.base, data.index(index), eps))
            jacobians.append(np.stack(columns, axis=1) if columns else np.zeros((total, 0)))
    return jacobians


def _numeric_column(
    fn: Callable[..., Any], args: Sequence[Any], base: np.ndarray, position: int, eps: float
) -> np.ndarray:
    """d(every output cell) / d(base[position]) by Task 1.1's central difference."""
    original = base[position]

    def outputs_at(value: float) -> np.ndarray:
        base[position] = value
        return np.concatenate([_flat(o, o.numel()) for o in _outputs(fn, args)])

    try:
        return np.asarray(central_difference(cast(Any, outputs_at), original, epsilon=eps))
    finally:
        base[position] = original


# ---- autograd.functional: Jacobians and Hessians on top of `grad` ---------------------------


def _tuple_of(values: Any) -> tuple[tuple[Any, ...], bool]:
    """(values as a tuple, whether they came as one)."""
    if isinstance(values, list | tuple):
        return tuple(values), False
    return (values,), True


def _leaves(inputs: tuple[Any, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """The inputs as tensors requiring grad (kept in the graph only under create_graph)."""
    made = []
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor):
            raise TypeError(f"The input at index {i} is a {type(x).__name__}, not a Tensor")
        x = x if create_graph and x.requires_grad else x.detach()
        made.append(x.requires_grad_(True) if not x.requires_grad else x)
    return tuple(made)


def _grads_or_zeros(
    outputs: Sequence[Tensor], inputs: Sequence[Tensor], seeds: Any, create_graph: bool
) -> tuple[Tensor, ...]:
    """The gradient of (outputs . seeds) for each input; zeros where an input is unused."""
    needed = [(o, s) for o, s in zip(outputs, seeds, strict=True) if o.requires_grad]
    if not needed:
        return tuple(x._zeros(x.shape) for x in inputs)
    found = grad(
        [o for o, _ in needed], list(inputs), [s for _, s in needed],
        retain_graph=True, create_graph=create_graph, allow_unused=True,
    )  # fmt: skip
    return tuple(x._zeros(x.shape) if g is None else g for x, g in zip(inputs, found, strict=True))


def _finish(values: tuple[Any, ...], single: bool, create_graph: bool) -> Any:
    kept = tuple(v if create_graph or not isinstance(v, Tensor) else v.detach() for v in values)
    return kept[0] if single else kept


def _run(
    func: Callable[..., Any], inputs: Any, create_graph: bool
) -> tuple[tuple[Any, ...], bool, tuple[Any, ...], bool]:
    """Fresh leaves for `inputs`, func's outputs on them, and whether each was one tensor."""
    xs, single_in = _tuple_of(inputs)
    leaves = _leaves(xs, create_graph)
    outs, single_out = _tuple_of(func(*leaves))
    return leaves, single_in, outs, single_out


def _vector_or_ones(v: Any, tensors: tuple[Any, ...], whose: str) -> tuple[Any, ...]:
    """`v` as a tuple, or ones like `tensors` when v is None (each must have one element)."""
    if v is not None:
        return _tuple_of(v)[0]
    if any(t.numel() != 1 for t in tensors):
        raise RuntimeError(
            f"The vector v can only be None if {whose} a single Tensor with a single element."
        )
    return tuple(t._full(t.shape, 1.0) for t in tensors)


def vjp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:  # fmt: skip
    """(func(inputs), v^T J): the vector-Jacobian product, as torch.autograd.functional.vjp."""
    with enable_grad():
        leaves, single_in, outs, single_out = _run(func, inputs, create_graph)
        seeds = _vector_or_ones(v, outs, "the user-provided function returns")
        grads = _grads_or_zeros(outs, leaves, seeds, create_graph)
    return _finish(outs, single_out, create_graph), _finish(grads, single_in, create_graph)


def jvp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:  # fmt: skip
    """(func(inputs), J v): the Jacobian-vector product, by differentiating a vjp once more."""
    with enable_grad():
        leaves, single_in, outs, single_out = _run(func, inputs, create_graph)
        tangents = _vector_or_ones(v, leaves, "the input to the user-provided function is")
        dummies = tuple(o._zeros(o.shape).requires_grad_(True) for o in outs)
        back = _grads_or_zeros(outs, leaves, dummies, create_graph=True)
        forward = _grads_or_zeros(back, dummies, tangents, create_graph)
    return _finish(outs, single_out, create_graph), _finish(forward, single_out, create_graph)


def jacobian(
    func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
    vectorize: bool = False, strategy: str = "reverse-mode",
) -> Any:  # fmt: skip
    """The Jacobian d func(inputs) / d inputs, shaped out.shape + in.shape.

    One backward per output cell.
    Several inputs (or outputs) give a tuple (of tuples), as PyTorch's.
    """
    xs, single_in = _tuple_of(inputs)
    with enable_grad():
        leaves = _leaves(xs, create_graph)
        outs, single_out = _tuple_of(func(*leaves))
        rows = []
        for out in outs:
            per_input: list[list[Tensor]] = [[] for _ in leaves]
            flat = out.reshape(-1)
            for cell in range(flat.numel()):
                seed = flat._zeros(flat.shape)
                seed[cell] = 1.0
                grads = _grads_or_zeros([flat], leaves, [seed], create_graph)
                for column, g in zip(per_input, grads, strict=True):
                    column.append(g)
            blocks = tuple(
                _stacked(column, out.shape, x) for column, x in zip(per_input, leaves, strict=True)
            )
            rows.append(_finish(blocks, single_in, create_graph))
    return rows[0] if single_out else tuple(rows)


def _stacked(column: list[Tensor], out_shape: tuple[int, ...], x: Tensor) -> Tensor:
    if not column:
        return x._zeros(tuple(out_shape) + tuple(x.shape))
    from minifw.tensor.creation import stack

    return stack(column).reshape(*out_shape, *x.shape)


def hessian(
    func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
    vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode",
) -> Any:  # fmt: skip
    """The second derivatives of a scalar `func`: the jacobian of its gradient."""
    xs, single_in = _tuple_of(inputs)

    def gradient(*leaves: Tensor) -> Any:
        out = func(*leaves)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(
                "The function given to hessian should return a single Tensor with one element"
            )
        grads = _grads_or_zeros([out], leaves, [out._full(out.shape, 1.0)], create_graph=True)
        return grads[0] if single_in else grads

    return jacobian(gradient, xs[0] if single_in else xs, create_graph=create_graph)


def hvp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:  # fmt: skip
    """(func(inputs), H v) for a scalar `func`: a Hessian-vector product by double backward."""
    xs, single_in = _tuple_of(inputs)
    with enable_grad():
        leaves = _leaves(xs, create_graph)
        out = func(*leaves)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(
                "The function given to hvp should return a single Tensor with one element"
            )
        vs = tuple(x._full(x.shape, 1.0) for x in leaves) if v is None else _tuple_of(v)[0]
        grads = _grads_or_zeros([out], leaves, [out._full(out.shape, 1.0)], create_graph=True)
        products = _grads_or_zeros(grads, leaves, vs, create_graph)
    return _finish((out,), True, create_graph), _finish(products, single_in, create_graph)


vhp = hvp  # the Hessian is symmetric: v^T H = (H v)^T

functional = types.ModuleType(
    "minifw.autograd.functional", "Jacobians, Hessians and their products, built on grad."
)
_FUNCTIONAL: dict[str, Any] = {"vjp": vjp, "jvp": jvp, "jacobian": jacobian}
_FUNCTIONAL.update(hessian=hessian, hvp=hvp, vhp=vhp)
for _name, _value in _FUNCTIONAL.items():
    setattr(functional, _name, _value)
functional.__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]  # type: ignore[attr-defined]
sys.modules[functional.__name__] = functional  # `from minifw.autograd.functional import ...`

__getattr__ = unsupported.module_getattr("torch.autograd", "minifw.autograd")
