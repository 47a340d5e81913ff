"""Task 0.3: functions on Python lists, built from three higher-order functions.

`map`, `zip_with` and `reduce` take a scalar function and return a function on lists;
the list helpers below are each one of them applied to a function of `scalar_math.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minifw.core.scalar_math import add, mul, neg

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
