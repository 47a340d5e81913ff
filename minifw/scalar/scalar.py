"""`Scalar`: one float that remembers how it was computed, the course's first engine.

Arithmetic on Scalars runs a `ScalarFunction` (see `scalar_functions.py`) that
records the op and its inputs in a History; `backward()` then walks that graph with
`autodiff.backpropagate` and leaves dL/dx in `.grad` of every leaf x. Nothing in
the graph points back from an input to its outputs, so a graph that is no longer
referenced is freed at once, without waiting for the garbage collector.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from minifw.core.autodiff import History, backpropagate, central_difference
from minifw.scalar.functions import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    Div,
    Exp,
    Log,
    Mul,
    Neg,
    Pow,
    ReLU,
    ScalarFunction,
    Sigmoid,
    Sub,
    Tanh,
)

Number = int | float


class Scalar:
    """A float that takes part in automatic differentiation, like a 0-dim tensor.

    Args:
        data: the value (any real number; stored as a Python float).
        history: how the value was made; `ScalarFunction.apply` sets it. Leave it
            None to create a leaf (or, with `requires_grad=False`, a constant).
        requires_grad: whether a leaf collects a derivative in `.grad`.

    Attributes:
        data: the value.
        grad: dL/d(this value) after `backward()` reached this leaf, else None.
            Successive backward calls add to it.
        history: how the value was made (an empty History for a leaf, None for a
            constant).
        unique_id: an id no other live value shares.
    """

    __slots__ = ("data", "grad", "history", "unique_id")

    def __init__(
        self, data: float, history: History | None = None, *, requires_grad: bool = True
    ) -> None:
        if type(data) is not float:
            data = _to_float(data)
        self.data = data
        self.grad: float | None = None
        if history is None and requires_grad:
            history = History()
        self.history = history
        self.unique_id = id(self)

    # ---- autograd protocol (autodiff.Variable) ----

    def is_leaf(self) -> bool:
        """True for a value no op made: a user's Scalar or a constant (as in PyTorch)."""
        history = self.history
        return history is None or history.last_fn is None

    def is_constant(self) -> bool:
        """True for a value that needs no derivative (requires_grad=False)."""
        return self.history is None

    @property
    def requires_grad(self) -> bool:
        """True when derivatives flow to or through this value."""
        return self.history is not None

    @property
    def parents(self) -> Sequence[Scalar]:
        """The inputs of the op that made this value (empty for leaves and constants)."""
        history = self.history
        return () if history is None else history.inputs

    @property
    def grad_fn(self) -> type[ScalarFunction] | None:
        """The ScalarFunction class that made this value (None for leaves and constants)."""
        history = self.history
        return None if history is None else history.last_fn

    # BEGIN TASK 1.3
    def chain_rule(self, d_output: float) -> Iterable[tuple[Scalar, float]]:
        """Pair each input of the op that made this value with its share of `d_output`.

        The share of input i is d_output * d(this value)/d(input i), which the op's
        `backward` computes from what its forward saved.
        """
        history = self.history
        if history is None or history.last_fn is None:
            raise RuntimeError("chain_rule needs a value made by an op, not a leaf/constant")
        d_inputs = history.last_fn.backward(history.ctx, d_output)
        if type(d_inputs) is not tuple:
            return ((history.inputs[0], d_inputs),)
        return zip(history.inputs, d_inputs, strict=True)

    # END TASK 1.3

    def accumulate_derivative(self, x: float) -> None:
        """Add `x` to this leaf's `.grad` (which starts as None)."""
        history = self.history
        if history is None or history.last_fn is not None:
            raise RuntimeError("only leaf Scalars that require grad accumulate a derivative")
        self.grad = x if self.grad is None else self.grad + x

    def backward(self, d_output: float = 1.0) -> None:
        """Compute d(this value)/dx, times `d_output`, into `.grad` of every leaf x.

        The graph is kept, so backward may run again; gradients then add up.
        """
        if self.history is None:
            raise RuntimeError(
                "this Scalar does not require grad and does not have a grad_fn (it is a "
                "constant: made with requires_grad=False, from a number, or under no_grad)"
            )
        backpropagate(self, float(d_output))

    # ---- arithmetic: every op is a ScalarFunction; numbers become constants ----

    def __add__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Add.apply(self, c)

    def __radd__(self, b: Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Add.apply(c, self)

    def __sub__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Sub.apply(self, c)

    def __rsub__(self, b: Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Sub.apply(c, self)

    def __mul__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Mul.apply(self, c)

    def __rmul__(self, b: Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Mul.apply(c, self)

    def __truediv__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Div.apply(self, c)

    def __rtruediv__(self, b: Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Div.apply(c, self)

    def __pow__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Pow.apply(self, c)

    def __rpow__(self, b: Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else Pow.apply(c, self)

    def __neg__(self) -> Scalar:
        return Neg.apply(self)

    def __lt__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else LT.apply(self, c)

    def __gt__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else GT.apply(self, c)

    def __le__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else LE.apply(self, c)

    def __ge__(self, b: Scalar | Number) -> Scalar:
        c = _lift(b)
        return NotImplemented if c is None else GE.apply(self, c)

    def __eq__(self, b: object) -> Scalar:  # type: ignore[override]
        c = _lift(b)
        return NotImplemented if c is None else EQ.apply(self, c)

    def __ne__(self, b: object) -> Scalar:  # type: ignore[override]
        c = _lift(b)
        return NotImplemented if c is None else NE.apply(self, c)

    # Comparisons return Scalars, yet a Scalar stays usable as a dict key or set member.
    __hash__ = object.__hash__

    def exp(self) -> Scalar:
        """Return e^self."""
        return Exp.apply(self)

    def log(self) -> Scalar:
        """Return the natural log of self."""
        return Log.apply(self)

    def sigmoid(self) -> Scalar:
        """Return 1 / (1 + e^-self)."""
        return Sigmoid.apply(self)

    def relu(self) -> Scalar:
        """Return self where it is positive, else 0."""
        return ReLU.apply(self)

    def tanh(self) -> Scalar:
        """Return the hyperbolic tangent of self."""
        return Tanh.apply(self)

    # ---- conversions ----

    def item(self) -> float:
        """Return the value as a Python float."""
        return self.data

    def detach(self) -> Scalar:
        """Return a constant with the same value and no history."""
        return Scalar(self.data, requires_grad=False)

    def __float__(self) -> float:
        return self.data

    def __bool__(self) -> bool:
        return bool(self.data)

    def __repr__(self) -> str:
        history = self.history
        if history is None:
            return f"Scalar({self.data}, requires_grad=False)"
        if history.last_fn is None:
            return f"Scalar({self.data})"
        return f"Scalar({self.data}, grad_fn=<{history.last_fn.__name__}>)"


def _to_float(data: object) -> float:
    """Convert a real number to float, rejecting anything else with a TypeError."""
    if isinstance(data, Scalar):
        raise TypeError("Scalar(data): data is already a Scalar; use it directly")
    if isinstance(data, str | bytes) or not hasattr(data, "__float__"):
        raise TypeError(f"Scalar(data): expected a real number, got {type(data).__name__}")
    return float(data)  # type: ignore[arg-type]


def _lift(value: object) -> Scalar | None:
    """Return `value` as a Scalar (a number becomes a constant), or None if it is neither."""
    if isinstance(value, Scalar):
        return value
    if isinstance(value, (int, float)):
        return Scalar(value, requires_grad=False)
    return None


def derivative_check(
    f: Callable[..., Scalar], *scalars: Scalar, rtol: float = 1e-4, atol: float = 1e-6
) -> None:
    """Check that backward agrees with central differences for `f` at these values.

    Fresh leaves with the scalars' values are used, so their existing `.grad` does
    not matter. Raises AssertionError naming the argument, both derivatives and the
    input values when one partial derivative differs by more than atol + rtol * |d|.
    """
    values = [s.data for s in scalars]
    leaves = [Scalar(v) for v in values]
    out = f(*leaves)
    out.backward()

    def value_of(*xs: float) -> float:
        return f(*[Scalar(x, requires_grad=False) for x in xs]).data

    for i, leaf in enumerate(leaves):
        numeric = central_difference(value_of, *values, arg=i, epsilon=1e-6)
        analytic = 0.0 if leaf.grad is None else leaf.grad
        if not math.isclose(analytic, numeric, rel_tol=rtol, abs_tol=atol):
            raise AssertionError(
                f"derivative check failed for argument {i} of {getattr(f, '__name__', f)} "
                f"at {values}: backward gives {analytic!r}, central difference gives "
                f"{numeric!r}"
            )


__all__ = ["Scalar", "derivative_check"]
