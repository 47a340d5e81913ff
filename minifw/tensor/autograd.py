"""The autograd side of a Tensor: requires_grad, backward, grad_fn, hooks, detach.

A tensor made by a recorded op has a `History` (the Function, its saved context
and its inputs); a leaf has none. `backward` hands the graph to the engine of
`autodiff.py`, which calls `chain_rule` on every node and
`accumulate_derivative` on every leaf.
"""

# Mixin methods take `self: Tensor`; mypy cannot see that Tensor subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from minifw.core import operators as ops
from minifw.core.autodiff import History, no_grad
from minifw.tensor.functions import FunctionCtx, is_tensor

if TYPE_CHECKING:
    from minifw.tensor.tensor import Tensor

_NOT_LEAF = (
    "you can only change requires_grad flags of leaf variables. If you want to use a "
    "computed variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach()."
)


class Gradient:
    """A gradient on its way through backpropagation, and whether only the engine holds it.

    `owned` is True for a tensor that a kernel made during this backward pass and that
    nothing else refers to: a leaf may keep it as its `.grad` without a copy. The sum
    of two gradients (a value used twice) is a new, owned one.
    """

    __slots__ = ("tensor", "owned")

    def __init__(self, tensor: Tensor, owned: bool = False) -> None:
        self.tensor = tensor
        self.owned = owned

    def __add__(self, other: Any) -> Gradient:
        mine = self.tensor
        theirs = other.tensor if isinstance(other, Gradient) else other
        if mine.shape == theirs.shape and mine.dtype is theirs.dtype:
            return Gradient(mine._zip(ops.ADD, theirs), owned=True)
        with no_grad():
            return Gradient(mine + theirs, owned=True)


def owned_gradients(
    history: History, inputs: Sequence[Any], grad: Tensor, pairs: list[tuple[Any, Tensor]]
) -> list[tuple[Any, Gradient]]:
    """Wrap the gradients a node's backward returned, marking those a leaf may keep as is.

    Owned: the Function promises `fresh_grads`, the input is a leaf, and the tensor is
    the whole of its storage, which is not the storage of the incoming gradient, of an
    input, of a saved tensor, or of another returned gradient.
    """
    if not history.last_fn.fresh_grads or all(v.history is not None for v, _ in pairs):
        return [(value, Gradient(g)) for value, g in pairs]
    ctx = history.ctx
    saved = ctx.saved_values if isinstance(ctx, FunctionCtx) else ()
    held = {id(grad._data.base)}
    held.update(id(v._data.base) for v in (*inputs, *saved) if is_tensor(v))
    bases = [id(g._data.base) for _, g in pairs]
    wrapped = []
    for (value, g), base in zip(pairs, bases, strict=True):
        alone = base not in held and bases.count(base) == 1
        owned = alone and value.history is None and _spans_its_storage(g)
        wrapped.append((value, Gradient(g, owned)))
    return wrapped


def _spans_its_storage(t: Tensor) -> bool:
    """True when `t` is the row-major view of all of its storage, from cell 0."""
    data = t._data
    cells = getattr(data.base, "size", None)
    if cells is None:
        cells = len(data.base)
    return data.offset == 0 and data.size == cells and data.is_contiguous()


def recorded_inputs(history: History) -> list[Any]:
    """The inputs of a recorded op as they were when it ran.

    An input later modified in place got a new history; the op still needs the
    value it read, which the in-place op kept in the input's `_replaced` table.
    """
    recorded = getattr(history.ctx, "input_histories", ())
    if len(recorded) != len(history.inputs):
        return list(history.inputs)
    out = []
    for value, seen in zip(history.inputs, recorded, strict=True):
        if is_tensor(value) and value.history is not seen:
            # None: a constant then (a leaf requiring grad cannot be changed in place).
            value = value.detach() if seen is None else _replacement(value, seen)
        out.append(value)
    return out


def _replacement(value: Tensor, seen: History) -> Tensor:
    found = (value._replaced or {}).get(id(seen))
    return value if found is None else found  # type: ignore[no-any-return]


class Node:
    """A step of the backward graph (what `grad_fn` returns)."""

    __slots__ = ("_history",)

    def __init__(self, history: History) -> None:
        self._history = history

    def name(self) -> str:
        """The op's name, like "MulBackward"."""
        fn = self._history.last_fn
        return f"{getattr(fn, 'node_name', fn.__name__)}Backward"

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """The nodes of this op's inputs: grad_fns, AccumulateGrad for leaves, else None."""
        nodes: list[tuple[Any, int]] = []
        for value in recorded_inputs(self._history):
            if not is_tensor(value):
                continue
            if value.history is not None:
                nodes.append((value.grad_fn, 0))
            elif value.requires_grad:
                nodes.append((value._accumulator(), 0))
            else:
                nodes.append((None, 0))
        return tuple(nodes)

    def __repr__(self) -> str:
        return f"<{self.name()}>"


class AccumulateGrad:
    """The node that writes a leaf's `.grad`."""

    __slots__ = ("variable",)
    next_functions: tuple[Any, ...] = ()

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    def name(self) -> str:
        """Always "AccumulateGrad"."""
        return "AccumulateGrad"

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


class RemovableHook:
    """A handle whose `remove()` unregisters a hook."""

    def __init__(self, hooks: list[Any], hook: Any) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        """Unregister the hook (again is fine)."""
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def check_hook_result(hook: Any, grad: Tensor, result: Any) -> None:
    """Raise PyTorch's error if a gradient hook returned other than a tensor like `grad`."""
    if not is_tensor(result):
        raise TypeError(
            f"expected Variable, but hook returned '{type(result).__name__}' (a gradient "
            f"hook returns None or a tensor of the gradient's shape {grad.shape})"
        )
    name = getattr(hook, "__name__", type(hook).__name__)
    if result.shape != grad.shape:
        raise RuntimeError(
            f"hook '{name}' has changed the size of value (was {grad.shape}, got {result.shape})"
        )
    if result.dtype is not grad.dtype or result.device != grad.device:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {grad.device} {grad.dtype}, "
            f"got {result.device} {result.dtype})"
        )


def check_assigned_grad(t: Tensor, grad: Any) -> None:
    """Raise PyTorch's error if `grad` (not None) cannot be `t.grad`."""
    if not is_tensor(grad):
        raise TypeError(
            f"assigned grad expected to be a Tensor or None but got grad of type "
            f"{type(grad).__name__}"
        )
    if grad is t:
        raise RuntimeError("can't assign Variable as its own grad")
    if grad.dtype is not t.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{grad.dtype.name}' to a tensor with "
            f"grad_dtype '{t.dtype.name}'. The gradient must match the tensor's dtype"
        )
    if grad.device != t.device:
        raise RuntimeError(
            f"attempting to assign a gradient with device type '{grad.device}' to a tensor "
            f"with device type '{t.device}'. Please ensure that the gradient and the tensor "
            f"are on the same device"
        )
    if grad.shape != t.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(grad.shape)}' to a tensor of "
            f"size '{list(t.shape)}'. Please ensure that the gradient and the tensor are the "
            f"same size"
        )
