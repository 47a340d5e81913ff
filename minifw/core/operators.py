"""Scalar operators shared by both autograd engines and every backend.

Everything here is plain Python written in the subset Numba can compile, so
`fast_ops.py` and `cuda_ops.py` recompile these same functions for their targets.
Kernels receive an integer *op code* instead of a Python function: the codes and
the `unary` / `binary` dispatchers at the bottom of this file map a code to its math.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

# BEGIN TASK 0.1


def mul(x: float, y: float) -> float:
    """Return x * y."""
    return x * y


def id(x: float) -> float:
    """Return x unchanged."""
    return x


def add(x: float, y: float) -> float:
    """Return x + y."""
    return x + y


def sub(x: float, y: float) -> float:
    """Return x - y."""
    return x - y


def div(x: float, y: float) -> float:
    """Return x / y."""
    return x / y


def neg(x: float) -> float:
    """Return -x."""
    return -x


def lt(x: float, y: float) -> float:
    """Return 1.0 if x < y else 0.0."""
    return 1.0 if x < y else 0.0


def gt(x: float, y: float) -> float:
    """Return 1.0 if x > y else 0.0."""
    return 1.0 if x > y else 0.0


def le(x: float, y: float) -> float:
    """Return 1.0 if x <= y else 0.0."""
    return 1.0 if x <= y else 0.0


def ge(x: float, y: float) -> float:
    """Return 1.0 if x >= y else 0.0."""
    return 1.0 if x >= y else 0.0


def eq(x: float, y: float) -> float:
    """Return 1.0 if x == y else 0.0."""
    return 1.0 if x == y else 0.0


def ne(x: float, y: float) -> float:
    """Return 1.0 if x != y else 0.0."""
    return 1.0 if x != y else 0.0


def max(x: float, y: float) -> float:
    """Return the larger of x and y (x when they are equal)."""
    return x if x >= y else y


def min(x: float, y: float) -> float:
    """Return the smaller of x and y (x when they are equal)."""
    return x if x <= y else y


def is_close(x: float, y: float) -> float:
    """Return 1.0 if |x - y| < 1e-2 else 0.0 (the course's loose equality)."""
    return 1.0 if abs(x - y) < 1e-2 else 0.0


def sigmoid(x: float) -> float:
    """Return 1 / (1 + e^-x), computed without overflow for large |x|.

    With z = e^-|x| (never above 1): 1 / (1 + z) for x >= 0, z / (1 + z) below.
    """
    z = exp(-abs(x))
    s = 1.0 / (1.0 + z)
    return s if x >= 0.0 else z * s


def relu(x: float) -> float:
    """Return x if x > 0 else 0 (nan stays nan, as in PyTorch)."""
    return 0.0 if x <= 0.0 else x


def log(x: float) -> float:
    """Return the natural log of x (-inf at 0, nan below 0, as numpy and PyTorch do)."""
    if x > 0.0:
        return math.log(x)
    if x == 0.0:
        return -math.inf
    return math.nan


def exp(x: float) -> float:
    """Return e^x (inf on overflow, as numpy and PyTorch do)."""
    if x > 709.78:
        return math.inf
    return math.exp(x)


def inv(x: float) -> float:
    """Return 1 / x (+-inf at 0, as numpy and PyTorch do)."""
    if x == 0.0:
        return math.copysign(math.inf, x)
    return 1.0 / x


def tanh(x: float) -> float:
    """Return the hyperbolic tangent of x."""
    return math.tanh(x)


def sqrt(x: float) -> float:
    """Return the square root of x (nan below 0)."""
    if x < 0.0:
        return math.nan
    return math.sqrt(x)


def abs(x: float) -> float:
    """Return |x|."""
    return x if x >= 0.0 else -x


def pow(x: float, y: float) -> float:
    """Return x ** y, nan where the real result does not exist (as PyTorch does)."""
    if x < 0.0 and y != math.floor(y):
        return math.nan
    if x == 0.0 and y < 0.0:
        return math.inf
    return float(x**y)


def select(mask: float, y: float) -> float:
    """Return y where mask is nonzero, else 0 (the building block of `where`)."""
    return y if mask != 0.0 else 0.0


def log_back(x: float, d: float) -> float:
    """Return d * d/dx log(x) = d / x (+-inf at 0, as PyTorch gives)."""
    return d * inv(x)


def inv_back(x: float, d: float) -> float:
    """Return d * d/dx (1/x) = -d / x^2 (-inf at 0 for d > 0, as PyTorch gives)."""
    return -d * inv(x * x)


def relu_back(x: float, d: float) -> float:
    """Return d * d/dx relu(x): d where x > 0, else 0."""
    return d if x > 0.0 else 0.0


def sigmoid_back(x: float, d: float) -> float:
    """Return d * d/dx sigmoid(x) = d * s (1 - s) with s = sigmoid(x)."""
    s = sigmoid(x)
    return d * s * (1.0 - s)


def exp_back(x: float, d: float) -> float:
    """Return d * d/dx exp(x) = d * e^x."""
    return d * exp(x)


def tanh_back(x: float, d: float) -> float:
    """Return d * d/dx tanh(x) = d * (1 - tanh(x)^2)."""
    t = math.tanh(x)
    return d * (1.0 - t * t)


def sqrt_back(x: float, d: float) -> float:
    """Return d * d/dx sqrt(x) = d / (2 sqrt(x)) (inf at 0, nan below, as PyTorch gives)."""
    return d * inv(2.0 * sqrt(x))


def abs_back(x: float, d: float) -> float:
    """Return d * d/dx |x| = d * sign(x) (0 at 0, as PyTorch does)."""
    if x > 0.0:
        return d
    if x < 0.0:
        return -d
    return 0.0 * d


# END TASK 0.1

# Op codes. Unary codes select a function of one argument, binary codes one of two.
# Kernels take these integers, never Python functions, so compiled kernels cache on disk.
ID, NEG, EXP, LOG, SIGMOID, RELU, TANH, INV, SQRT, ABS = range(10)
ADD, SUB, MUL, DIV, LT, GT, LE, GE, EQ, NE, MAX, MIN, POW, IS_CLOSE, SELECT = range(100, 115)
LOG_BACK, INV_BACK, RELU_BACK, SIGMOID_BACK, EXP_BACK, TANH_BACK, SQRT_BACK, ABS_BACK = range(
    200, 208
)

UNARY_NAMES = {
    ID: "id",
    NEG: "neg",
    EXP: "exp",
    LOG: "log",
    SIGMOID: "sigmoid",
    RELU: "relu",
    TANH: "tanh",
    INV: "inv",
    SQRT: "sqrt",
    ABS: "abs",
}
BINARY_NAMES = {
    ADD: "add",
    SUB: "sub",
    MUL: "mul",
    DIV: "div",
    LT: "lt",
    GT: "gt",
    LE: "le",
    GE: "ge",
    EQ: "eq",
    NE: "ne",
    MAX: "max",
    MIN: "min",
    POW: "pow",
    IS_CLOSE: "is_close",
    SELECT: "select",
    LOG_BACK: "log_back",
    INV_BACK: "inv_back",
    RELU_BACK: "relu_back",
    SIGMOID_BACK: "sigmoid_back",
    EXP_BACK: "exp_back",
    TANH_BACK: "tanh_back",
    SQRT_BACK: "sqrt_back",
    ABS_BACK: "abs_back",
}


def unary(op: int, x: float) -> float:
    """Apply the one-argument function whose op code is `op` to x."""
    if op == ID:
        return x
    if op == NEG:
        return -x
    if op == EXP:
        return exp(x)
    if op == LOG:
        return log(x)
    if op == SIGMOID:
        return sigmoid(x)
    if op == RELU:
        return relu(x)
    if op == TANH:
        return tanh(x)
    if op == INV:
        return inv(x)
    if op == SQRT:
        return sqrt(x)
    if op == ABS:
        return abs(x)
    return math.nan


def binary(op: int, x: float, y: float) -> float:
    """Apply the two-argument function whose op code is `op` to (x, y)."""
    if op == ADD:
        return x + y
    if op == MUL:
        return x * y
    if op == SUB:
        return x - y
    if op == DIV:
        return x / y
    if op == LT:
        return lt(x, y)
    if op == GT:
        return gt(x, y)
    if op == LE:
        return le(x, y)
    if op == GE:
        return ge(x, y)
    if op == EQ:
        return eq(x, y)
    if op == NE:
        return ne(x, y)
    if op == MAX:
        return max(x, y)
    if op == MIN:
        return min(x, y)
    if op == POW:
        return pow(x, y)
    if op == IS_CLOSE:
        return is_close(x, y)
    if op == SELECT:
        return select(x, y)
    if op == LOG_BACK:
        return log_back(x, y)
    if op == INV_BACK:
        return inv_back(x, y)
    if op == RELU_BACK:
        return relu_back(x, y)
    if op == SIGMOID_BACK:
        return sigmoid_back(x, y)
    if op == EXP_BACK:
        return exp_back(x, y)
    if op == TANH_BACK:
        return tanh_back(x, y)
    if op == SQRT_BACK:
        return sqrt_back(x, y)
    if op == ABS_BACK:
        return abs_back(x, y)
    return math.nan


# The functions above that kernels call; backends recompile exactly these.
KERNEL_FUNCTIONS = [
    *("lt", "gt", "le", "ge", "eq", "ne", "max", "min", "is_close", "select", "pow"),
    *("sigmoid", "relu", "log", "exp", "inv", "tanh", "sqrt", "abs"),
    *("log_back", "inv_back", "relu_back", "sigmoid_back", "exp_back", "tanh_back"),
    *("sqrt_back", "abs_back", "unary", "binary"),
]

# BEGIN TASK 0.3


def map(fn: Callable[[float], float]) -> Callable[[Iterable[float]], list[float]]:
    """Return a function that applies `fn` to each element of a list."""

    def apply(items: Iterable[float]) -> list[float]:
        return [fn(x) for x in items]

    return apply


def zip_with(
    fn: Callable[[float, float], float],
) -> Callable[[Iterable[float], Iterable[float]], list[float]]:
    """Return a function that combines two equal-length lists element by element."""

    def apply(xs: Iterable[float], ys: Iterable[float]) -> list[float]:
        xs, ys = list(xs), list(ys)
        if len(xs) != len(ys):
            raise ValueError(f"zip_with: lists of lengths {len(xs)} and {len(ys)} differ")
        return [fn(x, y) for x, y in zip(xs, ys, strict=True)]

    return apply


def reduce(
    fn: Callable[[float, float], float], start: float
) -> Callable[[Iterable[float]], float]:
    """Return a function that folds a list from the left with `fn`, starting at `start`."""

    def apply(items: Iterable[float]) -> float:
        acc = start
        for x in items:
            acc = fn(acc, x)
        return acc

    return apply


def neg_list(items: Iterable[float]) -> list[float]:
    """Negate every element of a list."""
    return map(neg)(items)


def add_lists(xs: Iterable[float], ys: Iterable[float]) -> list[float]:
    """Add two lists element by element."""
    return zip_with(add)(xs, ys)


def sum(items: Iterable[float]) -> float:
    """Sum a list (0 for an empty list)."""
    return reduce(add, 0.0)(items)


def prod(items: Iterable[float]) -> float:
    """Multiply the elements of a list (1 for an empty list)."""
    return reduce(mul, 1.0)(items)


# END TASK 0.3
