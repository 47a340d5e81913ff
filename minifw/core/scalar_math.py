"""The scalar math of elementwise ops: one plain function per op and per derivative rule.

Task 0.1's functions come first, then the rest of PyTorch's elementwise math (given
code). Each takes and returns Python floats, never raises (nan and inf come out as in
PyTorch), and is written in the subset of Python that Numba compiles: the backends
recompile these very functions for the CPU and the GPU. The op table
(`operators.py`) gives each one an op code; a function `f_back(x, d)` is the
derivative rule of `f`, d * f'(x).
"""

from __future__ import annotations

import math

# e^x is above the largest float64 beyond this x (log of 1.797e308): inf, as numpy gives.
EXP_OVERFLOW = 709.782712893384

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
    if x > EXP_OVERFLOW:
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
    elif y * math.log(size) > EXP_OVERFLOW * (1.0 - 1e-12):  # past the largest float
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
# A function that kernels call must have a row in the op table (backends compile only
# the functions of rows).
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
    if x > EXP_OVERFLOW:
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
