"""The autograd engine shared by Scalars and Tensors.

A value that took part in a computation remembers how it was made in a `History`:
the `Function` that produced it, the `Context` that function saved for its backward,
and the inputs. `backpropagate` walks that graph once, output to leaves, in
topological order, applying the chain rule at every node.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

_GRAPH_FREED = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the graph "
    "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
    "you need to backward through the graph a second time or if you need to access saved "
    "tensors after calling backward."
)


class Context:
    """What a Function's forward saves for its backward."""

    __slots__ = ("saved_values", "_freed")

    def __init__(self) -> None:
        self.saved_values: tuple[Any, ...] = ()
        self._freed = False

    def save_for_backward(self, *values: Any) -> None:
        """Keep `values` for the backward pass."""
        self.saved_values = values

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """The values given to `save_for_backward` (an error once the graph is freed)."""
        if self._freed:
            raise RuntimeError(_GRAPH_FREED)
        return self.saved_values

    def release(self) -> None:
        """Free the saved values; a later backward through this node raises."""
        self.saved_values = ()
        self._freed = True

    def check_alive(self) -> None:
        """Raise the PyTorch error if this node's saved values were already freed."""
        if self._freed:
            raise RuntimeError(_GRAPH_FREED)


@dataclass(slots=True)
class History:
    """How a value was made: the Function, its saved Context, and the inputs."""

    last_fn: Any = None
    ctx: Context | None = None
    inputs: Sequence[Any] = field(default_factory=tuple)


class Variable(Protocol):
    """What the engine needs of a value to differentiate through it.

    A value whose history has no `last_fn` is a leaf: the user made it, and its
    derivative accumulates there. A constant needs no derivative at all.
    """

    @property
    def unique_id(self) -> int:
        """An id that no other live value shares."""
        ...

    @property
    def history(self) -> History | None:
        """How the value was made (None for constants)."""
        ...

    def is_constant(self) -> bool:
        """True for a value that needs no derivative."""
        ...

    @property
    def parents(self) -> Iterable[Variable]:
        """The inputs of the Function that made this value."""
        ...

    def chain_rule(self, d_output: Any) -> Iterable[tuple[Variable, Any]]:
        """Pair every input with its share of `d_output`."""
        ...

    def accumulate_derivative(self, x: Any) -> None:
        """Add `x` to this leaf's derivative."""
        ...


def is_leaf(variable: Variable) -> bool:
    """True for a value that no Function produced (its derivative accumulates there)."""
    history = variable.history
    return history is None or history.last_fn is None


# BEGIN TASK 1.1


def central_difference(
    f: Callable[..., float], *vals: float, arg: int = 0, epsilon: float = 1e-6
) -> float:
    """Estimate the partial derivative of `f` with respect to argument `arg`.

    Uses the central difference (f(x + e) - f(x - e)) / 2e.
    """
    up = list(vals)
    down = list(vals)
    up[arg] += epsilon
    down[arg] -= epsilon
    return (f(*up) - f(*down)) / (2.0 * epsilon)


# END TASK 1.1

# BEGIN TASK 1.4


def topological_sort(variable: Variable) -> list[Variable]:
    """Return the non-constant values that `variable` depends on, itself first.

    Every value comes before the values it was computed from, so the list is the
    order in which backpropagation can visit nodes. Iterative, so a long chain
    does not hit Python's recursion limit.
    """
    order: list[Variable] = []
    visited: set[int] = set()
    # A node is pushed twice: first to expand it, then (as `done`) to emit it once
    # everything it depends on has been emitted.
    stack: list[tuple[Variable, bool]] = [(variable, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        key = node.unique_id
        if key in visited or node.is_constant():
            continue
        visited.add(key)
        stack.append((node, True))
        if not is_leaf(node):
            for parent in node.parents:
                if parent.unique_id not in visited:
                    stack.append((parent, False))
    order.reverse()
    return order


def backpropagate(variable: Variable, deriv: Any, retain_graph: bool = True) -> None:
    """Run the chain rule from `variable` back to the leaves.

    Each node is visited once, after every value computed from it, and its
    derivative is the sum of what all those values passed back. Leaves
    accumulate their derivative. Without `retain_graph`, each node frees the
    values it saved, so a second backward through it raises.
    """
    derivatives: dict[int, Any] = {variable.unique_id: deriv}
    for node in topological_sort(variable):
        d = derivatives.pop(node.unique_id, None)
        if d is None:
            continue
        if is_leaf(node):
            node.accumulate_derivative(d)
            continue
        for parent, d_parent in node.chain_rule(d):
            if parent.is_constant():
                continue
            key = parent.unique_id
            if key in derivatives:
                derivatives[key] = derivatives[key] + d_parent
            else:
                derivatives[key] = d_parent
        history = node.history
        if not retain_graph and history is not None and history.ctx is not None:
            history.ctx.release()


# END TASK 1.4


class Roots:
    """Several outputs, each with its starting derivative, as one value to backpropagate.

    `backpropagate(Roots(outputs, seeds), seeds)` runs the chain rule from all the
    outputs in one pass: each node is visited once, after every output made from it.
    An output given twice gets the sum of its seeds.
    """

    def __init__(self, outputs: Sequence[Variable], seeds: Sequence[Any]) -> None:
        self.outputs, self.seeds = list(outputs), list(seeds)
        self.history = History(last_fn=Roots)

    @property
    def unique_id(self) -> int:
        """This object's id (no value of the graph shares it)."""
        return id(self)

    def is_constant(self) -> bool:
        """Never: the roots start the pass."""
        return False

    @property
    def parents(self) -> list[Variable]:
        """The outputs."""
        return self.outputs

    def chain_rule(self, d_output: Any) -> list[tuple[Variable, Any]]:
        """Each output with its seed."""
        return list(zip(self.outputs, self.seeds, strict=True))

    def accumulate_derivative(self, x: Any) -> None:
        """Never called: Roots is not a leaf."""
        raise AssertionError("Roots is not a leaf")


class _GradMode(threading.local):
    enabled = True


_grad_mode = _GradMode()


def is_grad_enabled() -> bool:
    """True when operations are being recorded for autograd (per thread)."""
    return _grad_mode.enabled


@contextmanager
def _grad_mode_set(mode: bool) -> Iterator[None]:
    previous = _grad_mode.enabled
    _grad_mode.enabled = mode
    try:
        yield
    finally:
        _grad_mode.enabled = previous


class _GradModeGuard:
    """A context manager and decorator that sets grad mode and restores it after."""

    mode = True

    def __enter__(self) -> None:
        self._previous = _grad_mode.enabled
        _grad_mode.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        _grad_mode.enabled = self._previous

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        mode = self.mode

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _grad_mode_set(mode):
                return fn(*args, **kwargs)

        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = fn.__doc__
        return wrapper


class _BareDecorator(_GradModeGuard):
    """A guard also usable as a bare decorator: `@no_grad` as well as `@no_grad()`."""

    def __new__(cls, fn: Callable[..., Any] | None = None) -> Any:
        """A guard, or, given a function, that function decorated by a fresh guard."""
        guard = super().__new__(cls)
        return guard if fn is None else guard(fn)

    def __init__(self, fn: Callable[..., Any] | None = None) -> None:
        pass


class no_grad(_BareDecorator):  # noqa: N801 - PyTorch's name
    """Record nothing for autograd inside `with no_grad():` (or a decorated function)."""

    mode = False


class enable_grad(_BareDecorator):  # noqa: N801 - PyTorch's name
    """Record operations again inside `with enable_grad():`, even under no_grad."""

    mode = True


class set_grad_enabled(_GradModeGuard):  # noqa: N801 - PyTorch's name
    """Turn recording on or off now; as a context manager or decorator, restore it after.

    `set_grad_enabled(False)` alone switches grad off for this thread until switched
    back; `with set_grad_enabled(False):` and `@set_grad_enabled(False)` limit the
    change to the block or the decorated function, as in PyTorch.
    """

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._previous = _grad_mode.enabled
        _grad_mode.enabled = self.mode

    def __enter__(self) -> None:
        """Grad mode was already set when the object was made."""

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Decorate `fn` (grad mode goes back to what it was before this object)."""
        _grad_mode.enabled = self._previous
        return super().__call__(fn)


class _InferenceMode(threading.local):
    enabled = False


_inference_mode = _InferenceMode()


def is_inference_mode_enabled() -> bool:
    """True inside `inference_mode()` (per thread)."""
    return _inference_mode.enabled


class inference_mode(_GradModeGuard):  # noqa: N801 - PyTorch's name
    """`no_grad` for pure inference (context manager or decorator).

    Unlike PyTorch, tensors made inside are ordinary tensors: minifw does not mark them,
    so using them in autograd later is allowed (PyTorch raises). `inference_mode(False)`
    leaves grad mode as it is.
    """

    def __new__(cls, mode: Any = True) -> Any:
        """A guard, or, used bare as `@inference_mode`, the decorated function."""
        guard = super().__new__(cls)
        if callable(mode):
            guard.inference = True
            return guard(mode)
        return guard

    def __init__(self, mode: Any = True) -> None:
        self.inference = bool(mode)

    def __enter__(self) -> None:
        self._previous = _grad_mode.enabled
        self._previous_inference = _inference_mode.enabled
        _inference_mode.enabled = self.inference
        if self.inference:
            _grad_mode.enabled = False

    def __exit__(self, *exc: object) -> None:
        _grad_mode.enabled = self._previous
        _inference_mode.enabled = self._previous_inference

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Run `fn` inside this inference mode on every call."""
        inference = self.inference

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(inference):
                return fn(*args, **kwargs)

        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = fn.__doc__
        return wrapper
