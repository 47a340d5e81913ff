"""The differentiable operations of the scalar engine, one class per op.

Each class computes its op on plain floats in `forward` and, right below it, the
op's local derivatives in `backward`: given d = dL/d(output), `backward` returns
dL/d(input) for each input (a tuple for two inputs, one float for one input).
`ScalarFunction.apply` runs a forward on Scalars and records the History that
backpropagation later walks.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, TypeVar

from minifw.core import scalar_math
from minifw.core.autodiff import Context, History, is_grad_enabled


class ScalarLike(Protocol):
    """What `apply` needs of its inputs: a float and a history; Scalar satisfies it."""

    data: float
    history: History | None

    def __init__(
        self, data: float, history: History | None = None, *, requires_grad: bool = True
    ) -> None: ...


S = TypeVar("S", bound=ScalarLike)


class ScalarFunction:
    """Base class of the scalar ops: subclasses define `forward` and `backward`."""

    forward: ClassVar[Any]
    backward: ClassVar[Any]

    @classmethod
    def apply(cls, *inputs: S) -> S:
        """Run `forward` on the inputs' floats and return the result as a new value.

        The result has the inputs' type. It records a History (this function, the
        saved Context and the inputs) only when grad mode is on and some input is not
        a constant; otherwise it is a constant itself.
        """
        ctx = Context()
        n_inputs = len(inputs)
        if n_inputs == 2:
            a, b = inputs
            value = cls.forward(ctx, a.data, b.data)
            tracked = a.history is not None or b.history is not None
        elif n_inputs == 1:
            value = cls.forward(ctx, inputs[0].data)
            tracked = inputs[0].history is not None
        else:
            value = cls.forward(ctx, *[x.data for x in inputs])
            tracked = any(x.history is not None for x in inputs)
        make = type(inputs[0])
        if tracked and is_grad_enabled():
            return make(value, History(cls, ctx, inputs))
        return make(value, None, requires_grad=False)


class Add(ScalarFunction):
    """f(a, b) = a + b."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return a + b."""
        return scalar_math.add(a, b)

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> tuple[float, float]:
        """Both inputs receive d unchanged."""
        return d, d

    # END TASK 1.3


class Sub(ScalarFunction):
    """f(a, b) = a - b."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return a - b."""
        return scalar_math.sub(a, b)

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> tuple[float, float]:
        """The first input receives d, the second -d."""
        return d, -d

    # END TASK 1.3


class Mul(ScalarFunction):
    """f(a, b) = a * b."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return a * b, saving both for backward."""
        ctx.save_for_backward(a, b)
        return scalar_math.mul(a, b)

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> tuple[float, float]:
        """df/da = b, df/db = a."""
        a, b = ctx.saved_tensors
        return d * b, d * a

    # END TASK 1.3


class Div(ScalarFunction):
    """f(a, b) = a / b."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return a / b (+-inf or nan when b is 0, as PyTorch does)."""
        ctx.save_for_backward(a, b)
        if b == 0.0:
            return scalar_math.mul(a, scalar_math.inv(b))
        return scalar_math.div(a, b)

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> tuple[float, float]:
        """df/da = 1 / b, df/db = -a / b^2."""
        a, b = ctx.saved_tensors
        return scalar_math.mul(d, scalar_math.inv(b)), scalar_math.inv_back(b, d * a)

    # END TASK 1.3


class Neg(ScalarFunction):
    """f(a) = -a."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """Return -a."""
        return scalar_math.neg(a)

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> float:
        """df/da = -1."""
        return scalar_math.neg(d)

    # END TASK 1.3


class Pow(ScalarFunction):
    """f(a, b) = a ** b (nan where the real power does not exist)."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return a ** b, saving a, b and the result for backward."""
        out = scalar_math.pow(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> tuple[float, float]:
        """df/da = b * a^(b - 1), df/db = a^b * log(a) (0 for b = 0 and a = 0, as PyTorch)."""
        a, b, out = ctx.saved_tensors
        d_a = 0.0 if b == 0.0 else d * b * scalar_math.pow(a, b - 1.0)
        d_b = 0.0 if a == 0.0 and b >= 0.0 else d * out * scalar_math.log(a)
        return d_a, d_b

    # END TASK 1.3


class Exp(ScalarFunction):
    """f(a) = e^a."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """Return e^a, saving it for backward."""
        out = scalar_math.exp(a)
        ctx.save_for_backward(out)
        return out

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> float:
        """df/da = e^a."""
        (out,) = ctx.saved_tensors
        return scalar_math.mul(d, out)

    # END TASK 1.3


class Log(ScalarFunction):
    """f(a) = ln(a)."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """Return ln(a) (-inf at 0, nan below), saving a for backward."""
        ctx.save_for_backward(a)
        return scalar_math.log(a)

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> float:
        """df/da = 1 / a."""
        (a,) = ctx.saved_tensors
        return scalar_math.log_back(a, d)

    # END TASK 1.3


class Sigmoid(ScalarFunction):
    """f(a) = 1 / (1 + e^-a)."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """Return sigmoid(a), saving it for backward."""
        out = scalar_math.sigmoid(a)
        ctx.save_for_backward(out)
        return out

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> float:
        """df/da = s (1 - s) with s = sigmoid(a)."""
        s: float = ctx.saved_tensors[0]
        return d * s * (1.0 - s)

    # END TASK 1.3


class ReLU(ScalarFunction):
    """f(a) = max(a, 0)."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """Return relu(a), saving a for backward."""
        ctx.save_for_backward(a)
        return scalar_math.relu(a)

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> float:
        """df/da = 1 where a > 0, else 0."""
        (a,) = ctx.saved_tensors
        return scalar_math.relu_back(a, d)

    # END TASK 1.3


class Tanh(ScalarFunction):
    """f(a) = tanh(a)."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float) -> float:
        """Return tanh(a), saving it for backward."""
        out = scalar_math.tanh(a)
        ctx.save_for_backward(out)
        return out

    # END TASK 1.2
    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> float:
        """df/da = 1 - tanh(a)^2."""
        t: float = ctx.saved_tensors[0]
        return d * (1.0 - t * t)

    # END TASK 1.3


class Comparison(ScalarFunction):
    """Base of the comparisons: 0./1. results, whose derivative is 0 everywhere."""

    # BEGIN TASK 1.3
    @staticmethod
    def backward(ctx: Context, d: float) -> tuple[float, float]:
        """A step function is flat on both sides: both inputs receive 0."""
        return 0.0, 0.0

    # END TASK 1.3


class LT(Comparison):
    """f(a, b) = 1. if a < b else 0."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return 1. if a < b else 0."""
        return scalar_math.lt(a, b)

    # END TASK 1.2


class GT(Comparison):
    """f(a, b) = 1. if a > b else 0."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return 1. if a > b else 0."""
        return scalar_math.gt(a, b)

    # END TASK 1.2


class LE(Comparison):
    """f(a, b) = 1. if a <= b else 0."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return 1. if a <= b else 0."""
        return scalar_math.le(a, b)

    # END TASK 1.2


class GE(Comparison):
    """f(a, b) = 1. if a >= b else 0."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return 1. if a >= b else 0."""
        return scalar_math.ge(a, b)

    # END TASK 1.2


class EQ(Comparison):
    """f(a, b) = 1. if a == b else 0."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return 1. if a == b else 0."""
        return scalar_math.eq(a, b)

    # END TASK 1.2


class NE(Comparison):
    """f(a, b) = 1. if a != b else 0."""

    # BEGIN TASK 1.2
    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        """Return 1. if a != b else 0."""
        return scalar_math.ne(a, b)

    # END TASK 1.2
