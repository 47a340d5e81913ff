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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import operators as ops
from .autodiff import History, backpropagate, no_grad
from .tensor_functions import FunctionCtx, is_tensor

if TYPE_CHECKING:
    from .tensor import Tensor

_NOT_LEAF = (
    "you can only change requires_grad flags of leaf variables. If you want to use a "
    "computed variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach()."
)


# BEGIN grad hook (graph capture, installed from layer 7)
# None, or hook(leaf, added): called after a backward sets a leaf's `.grad` (added is
# False) or adds to it (added True), so a capture knows which leaves it wrote.
_grad_hook: list[Any] = [None]
# END grad hook


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


class AutogradMixin:
    """requires_grad, is_leaf, grad_fn, backward, retain_grad, hooks and detach."""

    __slots__ = ()
    history: History | None
    grad: Tensor | None
    _grad_fn: Node | None
    _replaced: dict[int, Tensor] | None
    _requires_grad: bool
    _retains_grad: bool

    @property
    def requires_grad(self: Tensor) -> bool:
        """True when gradients flow to or through this tensor."""
        return self._requires_grad or self.history is not None

    @requires_grad.setter
    def requires_grad(self: Tensor, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
        """Set whether autograd records operations on this leaf; returns self."""
        if self.history is not None:
            if not requires_grad:
                raise RuntimeError(_NOT_LEAF)
            return self
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients (got {self.dtype})"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self: Tensor) -> bool:
        """True for a tensor no recorded op produced."""
        return self.history is None

    @property
    def grad_fn(self: Tensor) -> Node | None:
        """The node that made this tensor (None for leaves)."""
        if self.history is None:
            return None
        if self._grad_fn is None:
            self._grad_fn = Node(self.history)
        return self._grad_fn  # type: ignore[no-any-return]

    def retain_grad(self: Tensor) -> None:
        """Keep `.grad` for this non-leaf tensor after backward (a no-op on leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.history is not None:
            self._retains_grad = True

    @property
    def retains_grad(self: Tensor) -> bool:
        """True for a non-leaf whose `.grad` is kept (see `retain_grad`)."""
        return self._retains_grad

    def register_hook(self: Tensor, hook: Callable[[Tensor], Tensor | None]) -> Any:
        """Call `hook(grad)` when this tensor's gradient is computed; it may return a new one."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        self._hooks.append(hook)
        return RemovableHook(self._hooks, hook)

    def detach(self: Tensor) -> Tensor:
        """The same storage, with no history and no grad."""
        return self._new(self._data)

    def detach_(self: Tensor) -> Tensor:
        """Cut this tensor from its history, in place."""
        self._retire_history()
        self.history = None
        self._grad_fn = None
        self._requires_grad = False
        return self

    def _retire_history(self: Tensor) -> Tensor:
        """Keep self's current value and history in a new object, for the ops that used it.

        Called before self gets a new history (in-place ops, detach_); returns that object.
        """
        old = self._alias()
        old.history, old._requires_grad = self.history, self._requires_grad
        if self.history is not None:
            replaced = {} if self._replaced is None else self._replaced
            replaced[id(self.history)] = old
            self._replaced = replaced
        return old

    @property
    def data(self: Tensor) -> Tensor:
        """A detached view of the values (writes do not reach autograd)."""
        return self.detach()

    @data.setter
    def data(self: Tensor, value: Tensor) -> None:
        self._data = value._data

    def backward(self: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
        """Accumulate into `.grad` of every leaf the gradient of this tensor.

        Without `gradient` only a one-element tensor may call it. The graph's saved
        values are freed unless `retain_graph`, so a second backward raises.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn"
            )
        if gradient is None:
            if self.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (got a tensor "
                    f"of shape {self.shape}; pass `gradient=` or reduce it first, e.g. .sum())"
                )
            gradient = self._full(self.shape, 1.0)
        gradient = self._operand(gradient).detach().to(self.dtype)
        if gradient.shape != self.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[0] has a shape of {gradient.shape} and "
                f"output[0] has a shape of {self.shape}."
            )
        backpropagate(self, gradient, retain_graph=retain_graph)

    # The Variable protocol of autodiff
    @property
    def unique_id(self: Tensor) -> int:
        """An id no other live tensor has."""
        return id(self)

    def is_constant(self: Tensor) -> bool:
        """True when no gradient is needed."""
        return not self.requires_grad

    @property
    def parents(self: Tensor) -> list[Tensor]:
        """The tensor inputs of the op that made this tensor."""
        assert self.history is not None
        return [x for x in recorded_inputs(self.history) if is_tensor(x)]

    def chain_rule(self: Tensor, d_output: Any) -> list[tuple[Tensor, Gradient]]:
        """Each input paired with its gradient (a `Gradient`)."""
        grad = d_output.tensor if isinstance(d_output, Gradient) else d_output
        grad = self._run_hooks(grad)
        if self._retains_grad:
            self._accumulate(grad)
        h = self.history
        assert h is not None and h.ctx is not None
        inputs = recorded_inputs(h)
        pairs = h.last_fn.chain_rule(h.ctx, inputs, grad)
        return owned_gradients(h, inputs, grad, pairs)

    def accumulate_derivative(self: Tensor, x: Any) -> None:
        """Add `x` (a tensor or a `Gradient`) to `.grad` (leaves only)."""
        owned = isinstance(x, Gradient) and x.owned and not self._hooks
        grad = x.tensor if isinstance(x, Gradient) else x
        added = self.grad is not None
        self._accumulate(self._run_hooks(grad), owned)
        if _grad_hook[0] is not None:
            _grad_hook[0](self, added)

    def _accumulate(self: Tensor, x: Tensor, owned: bool = False) -> None:
        """Add `x` to `.grad`; a first gradient is copied unless `owned` (see `Gradient`)."""
        x = x.detach()
        if self.grad is not None:
            self.grad = self.grad._zip(ops.ADD, x)
        else:
            self.grad = x if owned else x._copy()

    def _run_hooks(self: Tensor, grad: Tensor) -> Tensor:
        for hook in list(self._hooks):
            result = hook(grad)
            if result is not None:
                grad = result
        return grad

    def _attach(self: Tensor, history: History) -> None:
        self.history = history
        self._grad_fn = None


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
