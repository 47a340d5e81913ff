"""Task 0.2: the property checks students write in minifw/core/properties.py.

Each check is graded twice. First it must pass on the operators of scalar_math.py, for
inputs drawn by hypothesis: a correct law holds for them. Then it must catch mutants,
deliberately broken operators: on a small grid of inputs (every pair of GRID, say),
the check must raise AssertionError at least once. A check that asserts nothing
passes the first kind and fails the second; a stub raises NotImplementedError, which
fails both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minifw.core import properties
from minifw.core import scalar_math as ops

pytestmark = pytest.mark.task0_2

small = st.floats(min_value=-100.0, max_value=100.0, allow_nan=False)
positive = st.floats(min_value=0.1, max_value=100.0)
GRID = (-7.0, -2.0, -0.5, 0.0, 0.5, 1.0, 3.0)
POSITIVE_GRID = (0.1, 0.5, 2.0, 10.0)


# ---- every check passes on the operators of scalar_math.py ----


@given(small, small)
def test_commutative_holds_for_the_operators(x: float, y: float) -> None:
    for fn in (ops.add, ops.mul, ops.max, ops.min, ops.eq, ops.ne):
        properties.check_commutative(fn, x, y)


@given(small, small, small)
def test_distributive_holds_for_mul_and_add(x: float, y: float, z: float) -> None:
    properties.check_distributive(ops.mul, ops.add, x, y, z)


@given(small)
def test_sigmoid_check_holds_for_sigmoid(x: float) -> None:
    properties.check_sigmoid(ops.sigmoid, x)


@given(small, small)
def test_max_min_check_holds_for_max_and_min(x: float, y: float) -> None:
    properties.check_max_min(ops.max, ops.min, x, y)
    properties.check_max_min(ops.max, ops.min, x, x)


@given(small, small)
def test_comparisons_check_holds_for_the_comparisons(x: float, y: float) -> None:
    properties.check_comparisons(ops.lt, ops.gt, ops.le, ops.ge, x, y)
    properties.check_comparisons(ops.lt, ops.gt, ops.le, ops.ge, y, y)


@given(small, small)
def test_monotone_holds_for_the_increasing_functions(x: float, y: float) -> None:
    for fn in (ops.id, ops.sigmoid, ops.relu, ops.exp, ops.tanh):
        properties.check_monotone(fn, x, y)


@given(positive, positive)
def test_log_exp_check_holds_for_log_and_exp(x: float, y: float) -> None:
    properties.check_log_exp(ops.log, ops.exp, x, y)


# ---- every check catches its mutants ----


class Mutant(NamedTuple):
    """A check, the functions it gets (one of them broken), and the inputs tried."""

    name: str
    check: Callable[..., None]
    functions: tuple[Callable[..., float], ...]
    n_values: int
    grid: Sequence[float] = GRID


def _shifted_sigmoid(x: float) -> float:
    return ops.sigmoid(x) + 0.01


def _mirrored_sigmoid(x: float) -> float:
    """1 / (1 + e^x): it forgets the minus, so it falls where sigmoid rises."""
    return 1.0 / (1.0 + math.exp(x))


MUTANTS = [
    Mutant("mul that is not commutative", properties.check_commutative,
           (lambda x, y: x * y + x,), 2),
    Mutant("max that returns its first argument", properties.check_commutative,
           (lambda x, y: x,), 2),
    Mutant("add that is max", properties.check_distributive, (ops.mul, ops.max), 3),
    Mutant("mul that adds one", properties.check_distributive,
           (lambda x, y: x * y + 1.0, ops.add), 3),
    Mutant("sigmoid(-x) = sigmoid(x)", properties.check_sigmoid,
           (lambda x: ops.sigmoid(abs(x)),), 1),
    Mutant("sigmoid shifted up by 0.01", properties.check_sigmoid, (_shifted_sigmoid,), 1),
    Mutant("max that returns min", properties.check_max_min, (ops.min, ops.min), 2),
    Mutant("min that returns its first argument", properties.check_max_min,
           (ops.max, lambda x, y: x), 2),
    Mutant("max that adds", properties.check_max_min, (ops.add, ops.min), 2),
    Mutant("lt that is le", properties.check_comparisons, (ops.le, ops.gt, ops.le, ops.ge), 2),
    Mutant("gt that is lt", properties.check_comparisons, (ops.lt, ops.lt, ops.le, ops.ge), 2),
    Mutant("ge that is gt", properties.check_comparisons, (ops.lt, ops.gt, ops.le, ops.gt), 2),
    Mutant("relu that is abs", properties.check_monotone, (abs,), 2),
    Mutant("sigmoid without its minus", properties.check_monotone, (_mirrored_sigmoid,), 2),
    Mutant("exp of -x", properties.check_monotone, (lambda x: math.exp(-x),), 2),
    Mutant("log in base 10", properties.check_log_exp, (math.log10, ops.exp), 2, POSITIVE_GRID),
    Mutant("exp in base 2", properties.check_log_exp, (ops.log, lambda x: 2.0**x), 2,
           POSITIVE_GRID),
    Mutant("log of x + 1", properties.check_log_exp, (lambda x: math.log(x + 1.0), ops.exp),
           2, POSITIVE_GRID),
]  # fmt: skip


def caught(mutant: Mutant) -> bool:
    """True when the check raises AssertionError for some inputs of the grid.

    Any other exception (a stub's NotImplementedError) is not a catch: it propagates.
    """
    for values in itertools.product(mutant.grid, repeat=mutant.n_values):
        try:
            mutant.check(*mutant.functions, *values)
        except AssertionError:
            return True
    return False


# The real operators each check holds for: a check that catches a mutant must still pass
# for them, at drawn inputs (a check that always fails catches every mutant).
REAL: dict[Callable[..., None], tuple[Callable[..., float], ...]] = {
    properties.check_commutative: (ops.mul,),
    properties.check_distributive: (ops.mul, ops.add),
    properties.check_sigmoid: (ops.sigmoid,),
    properties.check_max_min: (ops.max, ops.min),
    properties.check_comparisons: (ops.lt, ops.gt, ops.le, ops.ge),
    properties.check_monotone: (ops.relu,),
    properties.check_log_exp: (ops.log, ops.exp),
}


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
@given(data=st.data())
def test_the_check_catches_the_mutant(mutant: Mutant, data: st.DataObject) -> None:
    values = st.lists(positive if mutant.grid is POSITIVE_GRID else small,
                      min_size=mutant.n_values, max_size=mutant.n_values)  # fmt: skip
    mutant.check(*REAL[mutant.check], *data.draw(values, label="inputs"))  # holds: no raise
    assert caught(mutant), f"{mutant.check.__name__} passes for a {mutant.name}"
