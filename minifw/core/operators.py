"""Scalar operators shared by both autograd engines and every backend.

Everything here is plain Python written in the subset Numba can compile, so
`fast_ops.py` and `cuda_ops.py` recompile these same functions for their targets.
Kernels receive an integer *op code* instead of a Python function. The op table
(one row per elementwise op, after Task 0.1's functions) gives each op its code; the
codes, names and the `unary` / `binary` dispatchers that kernels call are derived from it.
"""

from __future__ import annotations

import linecache
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

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
    """Return the larger of x and y (x when they are equal; nan if either is nan, as PyTorch)."""
    return x if x >= y or x != x else y


def min(x: float, y: float) -> float:
    """Return the smaller of x and y (x when they are equal; nan if either is nan, as PyTorch)."""
    return x if x <= y or x != x else y


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
    """Return |x| (0. for -0., nan for nan)."""
    if x > 0.0:
        return x
    if x < 0.0:
        return -x
    return x - x  # +0. for either zero; nan stays nan


def pow(x: float, y: float) -> float:
    """Return x ** y with C's special values, as PyTorch computes them (never an exception).

    x ** 0 and 1 ** y are 1 (even for nan); (-1) ** +-inf is 1; 0 and inf bases give 0 or
    inf, negative for an odd integer y and a negative base ((-0.) ** -1 = -inf); a negative
    base to a non-integer power is nan; overflow is inf. Exponents 0.5 and -0.5 are
    sqrt(x) and 1 / sqrt(x), as in PyTorch.
    """
    if y == 0.0 or x == 1.0:
        return 1.0
    if x != x or y != y:
        return math.nan
    if y == 0.5 or y == -0.5:
        root = sqrt(x)
        return root if y > 0.0 else inv(root)
    if math.isinf(y):
        if x == -1.0:
            return 1.0
        return math.inf if (x > 1.0 or x < -1.0) == (y > 0.0) else 0.0
    integral = y % 1.0 == 0.0  # not math.floor: compiled, it returns an int64 that wraps
    negative = x < 0.0 or (x == 0.0 and math.copysign(1.0, x) < 0.0)
    negative = negative and y % 2.0 == 1.0  # an odd power keeps the sign
    if x < 0.0 and not integral and not math.isinf(x):
        return math.nan
    size = -x if x < 0.0 else x
    if size == 0.0 or math.isinf(size):
        big = (size == 0.0) == (y < 0.0)
        result = math.inf if big else 0.0
    elif y * math.log(size) > 709.7827128:  # beyond the largest float: Python would raise
        result = math.inf
    else:
        result = float(size) ** float(y)
    return -result if negative else result


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

# ---- More elementwise math (PyTorch parity, given code) ----------------------------------
# Guarded like the functions above: SimpleOps and the CUDA simulator run them as Python,
# where math raises on a domain error or an overflow; PyTorch gives nan or inf instead.
# Helpers called from kernels must be rows themselves (backends recompile only rows).
LN2 = 0.6931471805599453
LN10 = 2.302585092994046
TWO_OVER_SQRT_PI = 1.1283791670955126


def sin(x: float) -> float:
    """Return the sine of x (nan at +-inf)."""
    return math.sin(x) if math.isfinite(x) else math.nan


def cos(x: float) -> float:
    """Return the cosine of x (nan at +-inf)."""
    return math.cos(x) if math.isfinite(x) else math.nan


def tan(x: float) -> float:
    """Return the tangent of x (nan at +-inf)."""
    return math.tan(x) if math.isfinite(x) else math.nan


def asin(x: float) -> float:
    """Return the arcsine of x (nan outside [-1, 1])."""
    return math.asin(x) if -1.0 <= x <= 1.0 else math.nan


def acos(x: float) -> float:
    """Return the arccosine of x (nan outside [-1, 1])."""
    return math.acos(x) if -1.0 <= x <= 1.0 else math.nan


def atan(x: float) -> float:
    """Return the arctangent of x."""
    return math.atan(x)


def sinh(x: float) -> float:
    """Return the hyperbolic sine of x (+-inf on overflow)."""
    if x > 710.0 or x < -710.0:
        return math.copysign(math.inf, x)
    return math.sinh(x)


def cosh(x: float) -> float:
    """Return the hyperbolic cosine of x (inf on overflow)."""
    if x > 710.0 or x < -710.0:
        return math.inf
    return math.cosh(x)


def log1p(x: float) -> float:
    """Return log(1 + x), accurate near 0 (-inf at -1, nan below)."""
    if x > -1.0:
        return math.log1p(x)
    if x == -1.0:
        return -math.inf
    return math.nan


def expm1(x: float) -> float:
    """Return e^x - 1, accurate near 0 (inf on overflow)."""
    if x > 709.78:
        return math.inf
    return math.expm1(x)


def log2(x: float) -> float:
    """Return the base-2 log of x (-inf at 0, nan below)."""
    if x > 0.0:
        return math.log2(x)
    return log(x)


def log10(x: float) -> float:
    """Return the base-10 log of x (-inf at 0, nan below)."""
    if x > 0.0:
        return math.log10(x)
    return log(x)


def exp2(x: float) -> float:
    """Return 2^x (inf on overflow, 0 on underflow)."""
    if x > 1024.0:
        return math.inf
    if x < -1080.0:
        return 0.0
    return math.pow(2.0, x)


def rsqrt(x: float) -> float:
    """Return 1 / sqrt(x) (inf at 0, nan below 0)."""
    return inv(sqrt(x))


def square(x: float) -> float:
    """Return x * x."""
    return x * x


def erf(x: float) -> float:
    """Return the error function of x."""
    return math.erf(x)


def sign(x: float) -> float:
    """Return 1 for x > 0, -1 for x < 0, else 0 (0 for nan too, as PyTorch)."""
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0


def trunc(x: float) -> float:
    """Return x rounded toward 0, as a float (-0. stays -0.; nan and inf unchanged).

    Not math.trunc: compiled, it returns an int64 that wraps for big x.
    """
    if not math.isfinite(x) or x == 0.0:
        return x
    rounded = x - fmod(x, 1.0)
    return rounded if rounded != 0.0 else math.copysign(0.0, x)


def floor(x: float) -> float:
    """Return the largest integral float <= x (nan and inf unchanged)."""
    t = trunc(x)
    return t - 1.0 if t > x else t


def ceil(x: float) -> float:
    """Return the smallest integral float >= x (nan and inf unchanged; -0.5 gives -0.)."""
    t = trunc(x)
    return t + 1.0 if t < x else t


def round(x: float) -> float:
    """Return x rounded to the nearest integral float, halves to even (as PyTorch)."""
    below = floor(x)
    rest = x - below
    if rest > 0.5 or (rest == 0.5 and fmod(below, 2.0) != 0.0):
        below = below + 1.0
    return below if below != 0.0 else math.copysign(0.0, x)


def frac(x: float) -> float:
    """Return x - trunc(x), with x's sign (nan at +-inf)."""
    if not math.isfinite(x):
        return math.nan
    return x - trunc(x)


def atan2(y: float, x: float) -> float:
    """Return the angle of the point (x, y) in (-pi, pi], as atan(y / x) by quadrant."""
    return math.atan2(y, x)


def fmod(x: float, y: float) -> float:
    """Return x - trunc(x / y) * y, computed exactly, with x's sign (nan for y = 0 or x inf)."""
    if y == 0.0 or not math.isfinite(x) or y != y:
        return math.nan
    if math.isinf(y):
        return x
    return math.copysign(abs(x) % abs(y), x)  # exact; Numba compiles no C fmod


def remainder(x: float, y: float) -> float:
    """Return x - floor(x / y) * y, with y's sign (Python's and PyTorch's x % y)."""
    rest = fmod(x, y)
    if rest != 0.0 and (y < 0.0) != (rest < 0.0):
        rest = rest + y
    return rest


def floor_divide(x: float, y: float) -> float:
    """Return floor(x / y), computed as Python and PyTorch do for floats (x / y at y = 0)."""
    if y == 0.0:  # x / 0 as IEEE gives it (Python would raise)
        if x == 0.0 or x != x:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    rest = fmod(x, y)
    quotient = (x - rest) / y
    if rest != 0.0 and (y < 0.0) != (rest < 0.0):
        quotient = quotient - 1.0
    if quotient == 0.0:
        return math.copysign(0.0, x) * math.copysign(1.0, y)
    result = floor(quotient)
    return result + 1.0 if quotient - result > 0.5 else result


def sin_back(x: float, d: float) -> float:
    """Return d * d/dx sin(x) = d * cos(x)."""
    return d * cos(x)


def cos_back(x: float, d: float) -> float:
    """Return d * d/dx cos(x) = -d * sin(x)."""
    return -d * sin(x)


def tan_back(x: float, d: float) -> float:
    """Return d * d/dx tan(x) = d * (1 + tan(x)^2)."""
    t = tan(x)
    return d * (1.0 + t * t)


def asin_back(x: float, d: float) -> float:
    """Return d * d/dx asin(x) = d / sqrt(1 - x^2) (inf at +-1, nan outside)."""
    return d * inv(sqrt(1.0 - x * x))


def acos_back(x: float, d: float) -> float:
    """Return d * d/dx acos(x) = -d / sqrt(1 - x^2) (-inf at +-1, nan outside)."""
    return -d * inv(sqrt(1.0 - x * x))


def atan_back(x: float, d: float) -> float:
    """Return d * d/dx atan(x) = d / (1 + x^2)."""
    return d / (1.0 + x * x)


def sinh_back(x: float, d: float) -> float:
    """Return d * d/dx sinh(x) = d * cosh(x)."""
    return d * cosh(x)


def cosh_back(x: float, d: float) -> float:
    """Return d * d/dx cosh(x) = d * sinh(x)."""
    return d * sinh(x)


def log1p_back(x: float, d: float) -> float:
    """Return d * d/dx log(1 + x) = d / (1 + x)."""
    return d * inv(1.0 + x)


def expm1_back(x: float, d: float) -> float:
    """Return d * d/dx (e^x - 1) = d * e^x."""
    return d * exp(x)


def log2_back(x: float, d: float) -> float:
    """Return d * d/dx log2(x) = d / (x ln 2)."""
    return d * inv(x * LN2)


def log10_back(x: float, d: float) -> float:
    """Return d * d/dx log10(x) = d / (x ln 10)."""
    return d * inv(x * LN10)


def exp2_back(x: float, d: float) -> float:
    """Return d * d/dx 2^x = d * 2^x ln 2."""
    return d * exp2(x) * LN2


def rsqrt_back(x: float, d: float) -> float:
    """Return d * d/dx x^-1/2 = -d / (2 x^3/2)."""
    r = rsqrt(x)
    return -0.5 * d * r * r * r


def square_back(x: float, d: float) -> float:
    """Return d * d/dx x^2 = 2 d x."""
    return 2.0 * d * x


def erf_back(x: float, d: float) -> float:
    """Return d * d/dx erf(x) = d * 2 / sqrt(pi) * e^(-x^2)."""
    return d * TWO_OVER_SQRT_PI * exp(-x * x)


def zero_back(x: float, d: float) -> float:
    """Return 0: the gradient of a step function (sign, floor, ceil, round, trunc)."""
    return 0.0


def frac_back(x: float, d: float) -> float:
    """Return d * d/dx (x - trunc(x)) = d."""
    return d


# ---- The op table ---------------------------------------------------------------------
# One row per elementwise op. Everything else is derived from the rows: the op codes
# (integers that kernels receive instead of Python functions, so compiled kernels cache
# on disk), UNARY_NAMES / BINARY_NAMES, the `unary` / `binary` dispatchers that kernels
# call, KERNEL_FUNCTIONS (what backends compile) and the autograd Functions of unary ops
# (tensor/functions.py). A row binds the constant named like its scalar function (EXP for
# `exp`). Codes: unary 0-99, binary 100-199, derivative rules 200-299. `back` names the
# binary op giving d * f'(x) as back(x, d), for the unary ops that autograd differentiates
# cell by cell; `title` is the op's PyTorch name, shown in grad_fn names ("ExpBackward").


@dataclass(frozen=True)
class OpRow:
    """One elementwise op: its code, its scalar function and, for unary ops, its derivative."""

    code: int
    name: str
    arity: int
    back: str | None = None
    title: str = ""


OP_TABLE: dict[int, OpRow] = {}


def unary_op(code: int, name: str, back: str | None = None, title: str | None = None) -> int:
    """Add the row of a one-argument op to OP_TABLE; return its code."""
    return _add_row(OpRow(code, name, 1, back, title or name.capitalize()))


def binary_op(code: int, name: str) -> int:
    """Add the row of a two-argument op to OP_TABLE; return its code."""
    return _add_row(OpRow(code, name, 2, None, name.capitalize()))


def _add_row(row: OpRow) -> int:
    """Add `row` unless its code is taken or outside its arity's range."""
    taken = OP_TABLE.get(row.code)
    if taken is not None or (row.code < 100) != (row.arity == 1) or not 0 <= row.code < 300:
        why = f"taken by {taken.name!r}" if taken else "outside its range"
        raise ValueError(f"op table: code {row.code} of {row.name!r} is {why}")
    OP_TABLE[row.code] = row
    return row.code


ID = unary_op(0, "id")
NEG = unary_op(1, "neg")
EXP = unary_op(2, "exp", back="exp_back")
LOG = unary_op(3, "log", back="log_back")
SIGMOID = unary_op(4, "sigmoid", back="sigmoid_back")
RELU = unary_op(5, "relu", back="relu_back")
TANH = unary_op(6, "tanh", back="tanh_back")
INV = unary_op(7, "inv", back="inv_back", title="Reciprocal")
SQRT = unary_op(8, "sqrt", back="sqrt_back")
ABS = unary_op(9, "abs", back="abs_back")
# [elementwise math]: unary 10-59, binary 115-159, derivative rules 208-259
SIN = unary_op(10, "sin", back="sin_back")
COS = unary_op(11, "cos", back="cos_back")
TAN = unary_op(12, "tan", back="tan_back")
ASIN = unary_op(13, "asin", back="asin_back")
ACOS = unary_op(14, "acos", back="acos_back")
ATAN = unary_op(15, "atan", back="atan_back")
SINH = unary_op(16, "sinh", back="sinh_back")
COSH = unary_op(17, "cosh", back="cosh_back")
LOG1P = unary_op(18, "log1p", back="log1p_back")
EXPM1 = unary_op(19, "expm1", back="expm1_back")
LOG2 = unary_op(20, "log2", back="log2_back")
LOG10 = unary_op(21, "log10", back="log10_back")
EXP2 = unary_op(22, "exp2", back="exp2_back")
RSQRT = unary_op(23, "rsqrt", back="rsqrt_back")
SQUARE = unary_op(24, "square", back="square_back")
ERF = unary_op(25, "erf", back="erf_back")
SIGN = unary_op(26, "sign", back="zero_back")
FLOOR = unary_op(27, "floor", back="zero_back")
CEIL = unary_op(28, "ceil", back="zero_back")
ROUND = unary_op(29, "round", back="zero_back")
TRUNC = unary_op(30, "trunc", back="zero_back")
FRAC = unary_op(31, "frac", back="frac_back")
# [end elementwise math]

ADD = binary_op(100, "add")
SUB = binary_op(101, "sub")
MUL = binary_op(102, "mul")
DIV = binary_op(103, "div")
LT = binary_op(104, "lt")
GT = binary_op(105, "gt")
LE = binary_op(106, "le")
GE = binary_op(107, "ge")
EQ = binary_op(108, "eq")
NE = binary_op(109, "ne")
MAX = binary_op(110, "max")
MIN = binary_op(111, "min")
POW = binary_op(112, "pow")
IS_CLOSE = binary_op(113, "is_close")
SELECT = binary_op(114, "select")
# [elementwise math]
ATAN2 = binary_op(115, "atan2")
FMOD = binary_op(116, "fmod")
REMAINDER = binary_op(117, "remainder")
FLOOR_DIVIDE = binary_op(118, "floor_divide")
# [end elementwise math]

LOG_BACK = binary_op(200, "log_back")
INV_BACK = binary_op(201, "inv_back")
RELU_BACK = binary_op(202, "relu_back")
SIGMOID_BACK = binary_op(203, "sigmoid_back")
EXP_BACK = binary_op(204, "exp_back")
TANH_BACK = binary_op(205, "tanh_back")
SQRT_BACK = binary_op(206, "sqrt_back")
ABS_BACK = binary_op(207, "abs_back")
# [elementwise math]
SIN_BACK = binary_op(208, "sin_back")
COS_BACK = binary_op(209, "cos_back")
TAN_BACK = binary_op(210, "tan_back")
ASIN_BACK = binary_op(211, "asin_back")
ACOS_BACK = binary_op(212, "acos_back")
ATAN_BACK = binary_op(213, "atan_back")
SINH_BACK = binary_op(214, "sinh_back")
COSH_BACK = binary_op(215, "cosh_back")
LOG1P_BACK = binary_op(216, "log1p_back")
EXPM1_BACK = binary_op(217, "expm1_back")
LOG2_BACK = binary_op(218, "log2_back")
LOG10_BACK = binary_op(219, "log10_back")
EXP2_BACK = binary_op(220, "exp2_back")
RSQRT_BACK = binary_op(221, "rsqrt_back")
SQUARE_BACK = binary_op(222, "square_back")
ERF_BACK = binary_op(223, "erf_back")
ZERO_BACK = binary_op(224, "zero_back")
FRAC_BACK = binary_op(225, "frac_back")
# [end elementwise math]

# ---- Derived from the table --------------------------------------------------------------

UNARY_NAMES: dict[int, str] = {r.code: r.name for r in OP_TABLE.values() if r.arity == 1}
BINARY_NAMES: dict[int, str] = {r.code: r.name for r in OP_TABLE.values() if r.arity == 2}
CODES: dict[str, int] = {r.name: r.code for r in OP_TABLE.values()}


def _check_table() -> None:
    """Raise unless every row has its scalar function, its constant and a known `back`."""
    for row in OP_TABLE.values():
        constant = row.name.upper()
        if not callable(globals().get(row.name)) or globals().get(constant) != row.code:
            raise ValueError(f"op table: row {row.name!r} needs `def {row.name}` and "
                             f"`{constant} = ...` in operators.py")  # fmt: skip
        if row.back is not None and BINARY_NAMES.get(CODES.get(row.back, -1)) is None:
            raise ValueError(f"op table: {row.name!r} has no binary op {row.back!r}")


_check_table()

# Python's dispatch (SimpleOps, tests): a code's scalar function, looked up in a dict.
UNARY_FUNCTIONS: dict[int, Callable[[float], float]] = {
    code: globals()[name] for code, name in UNARY_NAMES.items()
}
BINARY_FUNCTIONS: dict[int, Callable[[float, float], float]] = {
    code: globals()[name] for code, name in BINARY_NAMES.items()
}
# Unary op -> the binary op of its derivative rule, for the ops that have one.
DERIVATIVES: dict[int, int] = {r.code: CODES[r.back] for r in OP_TABLE.values() if r.back}


def check_op(what: str, op: int, arity: int) -> None:
    """Raise a ValueError naming `op` unless it is the code of an op of `arity` arguments."""
    row = OP_TABLE.get(op)
    if row is None or row.arity != arity:
        kinds = {1: "unary", 2: "binary"}
        found = f"it is the {kinds[row.arity]} op {row.name!r}" if row else "not in OP_TABLE"
        raise ValueError(f"{what}: op code {op!r} is not a {kinds[arity]} op ({found})")


def unary_function(op: int) -> Callable[[float], float]:
    """The scalar function of unary op `op`; a ValueError naming the code if none."""
    check_op("unary_function", op, 1)
    return UNARY_FUNCTIONS[op]


def binary_function(op: int) -> Callable[[float, float], float]:
    """The scalar function of binary op `op`; a ValueError naming the code if none."""
    check_op("binary_function", op, 2)
    return BINARY_FUNCTIONS[op]


# Compiled kernels dispatch with `unary(op, x)` / `binary(op, x, y)`. Numba needs them as
# plain if-chains on integer constants (it folds a chain away when `op` is a constant and
# costs a few compares otherwise; a dict of functions does not compile). Kept by hand, such
# a chain drifted from the table (a forgotten branch returned NaN), so it is generated
# from the rows: print(operators.dispatch_source()) shows it.
_DISPATCH_FILE = "<minifw.core.operators: unary and binary, generated from OP_TABLE>"


def dispatch_source(codes: Iterable[int] | None = None) -> str:
    """The Python source of `unary` and `binary`: one `if op == CODE` branch per row.

    With `codes`, only the rows of those codes get a branch (every other code gives nan):
    the helpers of a kernel compiled for one op (`_jit.PerOp`).
    """
    wanted = None if codes is None else set(codes)
    rows = [row for row in OP_TABLE.values() if wanted is None or row.code in wanted]
    return (
        _dispatcher("unary", "x", 1, rows)
        + "\n\n\n"
        + _dispatcher("binary", "x, y", 2, rows)
        + "\n"
    )


def _dispatcher(name: str, args: str, arity: int, rows: list[OpRow]) -> str:
    typed = ", ".join(f"{arg}: float" for arg in args.split(", "))
    lines = [
        f"def {name}(op: int, {typed}) -> float:",
        f'    """Apply the {name} op whose code is `op` to {args} (generated from OP_TABLE)."""',
    ]
    for row in rows:
        if row.arity == arity:
            lines += [f"    if op == {row.name.upper()}:", f"        return {row.name}({args})"]
    lines.append("    return math.nan  # not a code of the table: launchers refuse it first")
    return "\n".join(lines)


def _compile_dispatchers(codes: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Run the generated source with this module's globals; return its two functions."""
    source = dispatch_source(codes)
    where = _DISPATCH_FILE if codes is None else f"<minifw.core.operators: ops {codes}>"
    linecache.cache[where] = (len(source), None, source.splitlines(True), where)
    generated: dict[str, Any] = {}
    exec(compile(source, where, "exec"), globals(), generated)
    return generated


def dispatchers_for(op: int) -> dict[str, Any]:
    """`unary` and `binary` that know op code `op` only (nan for any other code)."""
    return _compile_dispatchers((op,))


_generated = _compile_dispatchers()
unary: Callable[[int, float], float] = _generated["unary"]
binary: Callable[[int, float, float], float] = _generated["binary"]

# The functions that kernels call; backends recompile exactly these, linked to each other.
KERNEL_FUNCTIONS: list[str] = [*CODES, "unary", "binary"]

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
