"""e^x written so that a compiler can run it in SIMD lanes (FastOps uses it for `exp`).

`math.exp` compiles to a call into the C library, one cell at a time: a loop that calls
it cannot be vectorised (this LLVM has no vector math library). Here e^x is built from
multiply-adds, comparisons and integer bit operations only, so LLVM turns a loop of them
into AVX instructions. The method is the textbook one:

    x = n ln2 + r,  n = round(x / ln2),  |r| <= ln2 / 2     (ln2 split in two parts,
                                                             so r keeps its low bits)
    e^r  = 1 + r + r^2 g(r), g a polynomial of degree 9      (error < 2e-17)
    e^x  = e^r * 2^n                                         (2^n written as bits)

2^n is applied as two halves 2^(n//2) * 2^(n - n//2), so results that are subnormal
(x near -745) or near overflow (x near 709.78) round once, correctly. The result is
within 1 ulp of `math.exp` (tests/fast_paths/test_simd_math.py checks it).
"""

from __future__ import annotations

import math

import numpy as np

from minifw._jit import njit
from minifw.core.scalar_math import EXP_OVERFLOW

LOG2_E = 1.4426950408889634
LN2_HI = 0.6931471803691238  # ln 2 rounded to 32 significant bits: n * LN2_HI is exact
LN2_LO = 1.9082149292705877e-10  # ln 2 - LN2_HI
# Adding ROUNDER (1.5 * 2^52) to a float of magnitude < 2^51 rounds it to an integer n held
# in the low bits of the sum's mantissa: the sum's bit pattern is ROUNDER_BITS + n. This
# needs no float-to-int conversion, which older SIMD units lack for 64-bit lanes.
ROUNDER = 6755399441055744.0
ROUNDER_BITS = 0x4338000000000000
EXPONENT_BIAS = 1023
MANTISSA_BITS = 52
UNDERFLOW_BELOW = -745.1332191019412  # e^x < half the smallest subnormal
# g(r) ~ (e^r - 1 - r) / r^2 for |r| <= ln2/2: the degree-9 polynomial through g's values
# at the 10 Chebyshev nodes of that interval, solved for in 50-digit arithmetic (mpmath)
# and rounded to doubles. 1 + r + r^2 g(r) is then within 1.6e-17 of e^r, relatively
# (the Taylor series needs degree 13 for that). Close to 1/2!, 1/3!, ..., 1/11!.
G_COEFFICIENTS = (
    0.5000000000000001, 0.16666666666666669, 0.041666666666624164, 0.008333333333330065,
    0.0013888888917196719, 0.00019841269863040545, 2.4801521322368692e-05,
    2.7557268480310024e-06, 2.7620075879983367e-07, 2.5100375832561234e-08,
)  # fmt: skip


@njit(inline="always")
def _power_of_two(n: int | np.int64) -> float:
    """2^n for -1022 <= n <= 1023, built from its exponent bits."""
    return float(np.int64((n + EXPONENT_BIAS) << MANTISSA_BITS).view(np.float64))


@njit(inline="always")
def exp(x: float) -> float:
    """Return e^x (inf above 709.78, 0 below -745.13, nan for nan), without a libm call."""
    x = float(x)
    shifted = x * LOG2_E + ROUNDER
    n = np.float64(shifted).view(np.int64) - ROUNDER_BITS  # junk out of range: see below
    whole = shifted - ROUNDER
    r = (x - whole * LN2_HI) - whole * LN2_LO
    # e^r = 1 + (r + r^2 g(r)): g, a degree-9 polynomial, in Estrin's form (short
    # dependency chains); the large low-order terms last, so that they round once.
    r2 = r * r
    r4 = r2 * r2
    c = G_COEFFICIENTS
    g = ((c[0] + c[1] * r) + r2 * (c[2] + c[3] * r)) + r4 * (
        ((c[4] + c[5] * r) + r2 * (c[6] + c[7] * r)) + r4 * (c[8] + c[9] * r)
    )
    p = 1.0 + (r + r2 * g)
    half = n >> 1  # floor(n / 2)
    y = p * _power_of_two(half) * _power_of_two(n - half)  # nan stays nan throughout
    if x > EXP_OVERFLOW:
        y = math.inf
    if x < UNDERFLOW_BELOW:
        y = 0.0
    return y
