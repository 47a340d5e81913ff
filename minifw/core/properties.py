"""Property checks: the laws the scalar operators of `scalar_math.py` must obey.

A property is a statement that holds for *every* input, such as "mul(x, y) equals
mul(y, x)". Each check below takes the functions under test as arguments plus some
input values, and raises AssertionError (a plain `assert`) when the law fails for
those values. It returns None when the law holds.

Taking the functions as arguments keeps a check independent of one implementation:
`tests/core/test_operator_properties.py` runs every check on many inputs drawn by
hypothesis with the operators of `scalar_math.py` (where each must pass), and on
deliberately broken operators, "mutants" such as a `max` that returns the minimum,
where each must fail for some input. A check that never fails is useless, so a
check scores only when it catches its mutants.

Floats round: compare computed results with `close` (below), not `==`, unless a law
is exact (comparisons return exactly 0.0 or 1.0; max and min return an argument).
"""

from __future__ import annotations

import math
from collections.abc import Callable

Unary = Callable[[float], float]
Binary = Callable[[float, float], float]


def close(a: float, b: float) -> bool:
    """True when a and b agree to about 9 significant digits (or both are tiny)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


# BEGIN TASK 0.2


def check_commutative(fn: Binary, x: float, y: float) -> None:
    """Assert fn(x, y) == fn(y, x) exactly (add, mul, max, min, eq, ne obey it)."""
    assert fn(x, y) == fn(y, x), f"fn({x}, {y}) != fn({y}, {x})"


def check_distributive(mul: Binary, add: Binary, x: float, y: float, z: float) -> None:
    """Assert mul(z, add(x, y)) is close to add(mul(z, x), mul(z, y))."""
    left = mul(z, add(x, y))
    right = add(mul(z, x), mul(z, y))
    assert close(left, right), f"z (x + y) = {left} but z x + z y = {right}"


def check_sigmoid(sigmoid: Unary, x: float) -> None:
    """Assert 0 <= sigmoid(x) <= 1 and sigmoid(-x) is close to 1 - sigmoid(x)."""
    s = sigmoid(x)
    assert 0.0 <= s <= 1.0, f"sigmoid({x}) = {s} is outside [0, 1]"
    assert close(sigmoid(-x), 1.0 - s), f"sigmoid(-{x}) != 1 - sigmoid({x})"


def check_max_min(max_: Binary, min_: Binary, x: float, y: float) -> None:
    """Assert max_(x, y) and min_(x, y) are the larger and the smaller of x and y.

    Each returns one of its arguments, max_ is at least both, min_ at most both.
    """
    big, small = max_(x, y), min_(x, y)
    assert big in (x, y) and small in (x, y), "max and min must return an argument"
    assert big >= x and big >= y, f"max({x}, {y}) = {big} is below an argument"
    assert small <= x and small <= y, f"min({x}, {y}) = {small} is above an argument"


def check_comparisons(lt: Binary, gt: Binary, le: Binary, ge: Binary, x: float, y: float) -> None:
    """Assert lt, gt, le and ge agree with each other on x and y.

    lt(x, x) is 0.0, lt(x, y) = gt(y, x), le(x, y) = 1 - gt(x, y), ge(x, y) = 1 - lt(x, y).
    """
    assert lt(x, x) == 0.0, f"lt({x}, {x}) must be 0.0: no value is below itself"
    assert lt(x, y) == gt(y, x), f"lt({x}, {y}) != gt({y}, {x})"
    assert le(x, y) == 1.0 - gt(x, y), f"le({x}, {y}) != 1 - gt({x}, {y})"
    assert ge(x, y) == 1.0 - lt(x, y), f"ge({x}, {y}) != 1 - lt({x}, {y})"


def check_monotone(fn: Unary, x: float, y: float) -> None:
    """Assert fn never decreases: fn(x) <= fn(y) when x <= y (in either argument order)."""
    low, high = (x, y) if x <= y else (y, x)
    assert fn(low) <= fn(high), f"fn({low}) > fn({high}) although {low} <= {high}"


def check_log_exp(log: Unary, exp: Unary, x: float, y: float) -> None:
    """For x, y > 0, assert log(x y) is close to log(x) + log(y) and exp(log(x)) to x."""
    assert close(log(x * y), log(x) + log(y)), f"log({x} * {y}) != log({x}) + log({y})"
    assert close(exp(log(x)), x), f"exp(log({x})) != {x}"


# END TASK 0.2
