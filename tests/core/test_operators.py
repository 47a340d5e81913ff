"""Task 0.1's scalar functions (scalar_math.py) and Task 0.3's list functions (list_ops.py).

The laws of the 0.1 functions are checked here with hypothesis too, written out in
full; Task 0.2's own tests (test_operator_properties.py) grade the property checks
students write in minifw/core/properties.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minifw.core import list_ops, operators, scalar_math
from minifw.core.list_ops import add_lists, neg_list, prod, reduce, zip_with
from minifw.core.scalar_math import (
    add,
    eq,
    exp,
    ge,
    gt,
    inv,
    is_close,
    le,
    log,
    lt,
    mul,
    ne,
    neg,
    relu,
    sigmoid,
    tanh,
)

small = st.floats(min_value=-100.0, max_value=100.0, allow_nan=False)
positive = st.floats(min_value=0.1, max_value=100.0)
float_lists = st.lists(small, max_size=12)


def close(a: float, b: float, rel: float = 1e-9, abs_: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def outcome(fn: Callable[..., float], *args: float) -> object:
    """What calling fn(*args) gives: its value (nan-aware) or the type of its exception."""
    try:
        value = fn(*args)
    except ArithmeticError as error:
        return type(error)
    return "nan" if math.isnan(value) else value


@pytest.mark.task0_1
@given(small, st.sampled_from([0.0, -0.0]))
def test_max_and_min_return_x_on_ties(x: float, zero: float) -> None:
    # ties return x, as documented: seen on the sign of a zero and on the object itself
    assert math.copysign(1.0, scalar_math.max(zero, -zero)) == math.copysign(1.0, zero)
    assert math.copysign(1.0, scalar_math.min(zero, -zero)) == math.copysign(1.0, zero)
    tied = x * 1.0  # an equal float that is not the same object
    assert tied == x and tied is not x
    assert scalar_math.max(x, tied) is x and scalar_math.min(x, tied) is x
    assert scalar_math.max(tied, x) is tied and scalar_math.min(tied, x) is tied


# ---- 0.1: each function against Python's math at drawn inputs ----

anything = st.floats(min_value=-50.0, max_value=50.0)
away_from_zero = st.one_of(st.floats(0.01, 50.0), st.floats(-50.0, -0.01))
pos = st.floats(min_value=0.01, max_value=50.0)
# name -> (what the function computes, written with Python's own operators and math,
#          the strategy of each argument)
REFERENCE: dict[str, tuple[Callable[..., float], tuple[st.SearchStrategy[float], ...]]] = {
    "mul": (lambda x, y: x * y, (anything, anything)),
    "id": (lambda x: x, (anything,)),
    "add": (lambda x, y: x + y, (anything, anything)),
    "sub": (lambda x, y: x - y, (anything, anything)),
    "div": (lambda x, y: x / y, (anything, away_from_zero)),
    "neg": (lambda x: -x, (anything,)),
    "lt": (lambda x, y: float(x < y), (anything, anything)),
    "gt": (lambda x, y: float(x > y), (anything, anything)),
    "le": (lambda x, y: float(x <= y), (anything, anything)),
    "ge": (lambda x, y: float(x >= y), (anything, anything)),
    "eq": (lambda x, y: float(x == y), (anything, anything)),
    "ne": (lambda x, y: float(x != y), (anything, anything)),
    "max": (lambda x, y: x if x >= y else y, (anything, anything)),
    "min": (lambda x, y: x if x <= y else y, (anything, anything)),
    "is_close": (lambda x, y: float(abs(x - y) < 1e-2), (anything, anything)),
    "sigmoid": (lambda x: 1.0 / (1.0 + math.exp(-x)), (anything,)),
    "relu": (lambda x: x if x > 0 else 0.0, (anything,)),
    "log": (math.log, (pos,)),
    "exp": (math.exp, (anything,)),
    "inv": (lambda x: 1.0 / x, (away_from_zero,)),
    "tanh": (math.tanh, (anything,)),
    "sqrt": (math.sqrt, (pos,)),
    "abs": (lambda x: x if x >= 0 else -x, (anything,)),
    "pow": (lambda x, y: x**y, (st.floats(0.1, 5.0), st.floats(-3.0, 3.0))),
    "select": (lambda m, y: y if m != 0 else 0.0, (st.sampled_from([0.0, 1.0, -2.0]), anything)),
    "log_back": (lambda x, d: d / x, (pos, anything)),
    "inv_back": (lambda x, d: -d / (x * x), (away_from_zero, anything)),
    "relu_back": (lambda x, d: d if x > 0 else 0.0, (anything, anything)),
    "sigmoid_back": (
        lambda x, d: d * math.exp(-x) / (1.0 + math.exp(-x)) ** 2,
        (anything, anything),
    ),
    "exp_back": (lambda x, d: d * math.exp(x), (anything, anything)),
    "tanh_back": (lambda x, d: d * (1.0 - math.tanh(x) ** 2), (anything, anything)),
    "sqrt_back": (lambda x, d: d / (2.0 * math.sqrt(x)), (pos, anything)),
    "abs_back": (lambda x, d: d * ((x > 0) - (x < 0)), (anything, anything)),
}


def check_at_drawn_inputs(name: str, data: st.DataObject) -> None:
    """The function `name` of scalar_math agrees with its reference at drawn inputs."""
    reference, domains = REFERENCE[name]
    args = [data.draw(domain, label=f"{name} argument {i}") for i, domain in enumerate(domains)]
    got, want = getattr(scalar_math, name)(*args), reference(*args)
    assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (name, args, got, want)


# ---- 0.1: the functions on chosen values ----


@pytest.mark.task0_1
@pytest.mark.parametrize(
    ("fn", "args", "expected"),
    [
        (mul, (3.0, -2.0), -6.0),
        (scalar_math.id, (4.5,), 4.5),
        (add, (3.0, -2.5), 0.5),
        (scalar_math.sub, (3.0, 5.0), -2.0),
        (scalar_math.div, (3.0, 4.0), 0.75),
        (neg, (2.0,), -2.0),
        (neg, (-0.5,), 0.5),
        (lt, (1.0, 2.0), 1.0),
        (lt, (2.0, 1.0), 0.0),
        (lt, (2.0, 2.0), 0.0),
        (gt, (2.0, 1.0), 1.0),
        (gt, (2.0, 2.0), 0.0),
        (le, (2.0, 2.0), 1.0),
        (le, (3.0, 2.0), 0.0),
        (ge, (2.0, 2.0), 1.0),
        (ge, (1.0, 2.0), 0.0),
        (eq, (2.0, 2.0), 1.0),
        (eq, (2.0, 2.5), 0.0),
        (ne, (2.0, 2.5), 1.0),
        (ne, (2.0, 2.0), 0.0),
        (scalar_math.max, (1.0, 3.0), 3.0),
        (scalar_math.max, (-1.0, -3.0), -1.0),
        (scalar_math.min, (1.0, 3.0), 1.0),
        (is_close, (1.0, 1.005), 1.0),
        (is_close, (1.0, 1.02), 0.0),
        (sigmoid, (0.0,), 0.5),
        (relu, (2.5,), 2.5),
        (relu, (-2.5,), 0.0),
        (relu, (0.0,), 0.0),
        (log, (math.e,), 1.0),
        (log, (1.0,), 0.0),
        (exp, (0.0,), 1.0),
        (exp, (1.0,), math.e),
        (inv, (4.0,), 0.25),
        (inv, (-0.5,), -2.0),
        (tanh, (0.0,), 0.0),
        (scalar_math.sqrt, (9.0,), 3.0),
        (scalar_math.abs, (-3.0,), 3.0),
        (scalar_math.abs, (3.0,), 3.0),
        (scalar_math.pow, (2.0, 3.0), 8.0),
        (scalar_math.pow, (-2.0, 3.0), -8.0),
        (scalar_math.pow, (4.0, 0.5), 2.0),
        (scalar_math.select, (1.0, 4.0), 4.0),
        (scalar_math.select, (0.0, 4.0), 0.0),
    ],
)
@given(data=st.data())
def test_function_values(fn, args, expected, data) -> None:  # type: ignore[no-untyped-def]
    assert close(fn(*args), expected)
    check_at_drawn_inputs(fn.__name__, data)


@pytest.mark.task0_1
@given(st.sampled_from(sorted(REFERENCE)), st.data())
def test_edge_values_follow_numpy_and_pytorch(name: str, data: st.DataObject) -> None:
    check_at_drawn_inputs(name, data)
    assert sigmoid(1000.0) == 1.0
    assert sigmoid(-1000.0) == 0.0
    assert exp(1000.0) == math.inf
    assert exp(-1000.0) == 0.0
    assert log(0.0) == -math.inf
    assert math.isnan(log(-1.0))
    assert inv(0.0) == math.inf
    assert inv(-0.0) == -math.inf
    assert math.isnan(scalar_math.sqrt(-1.0))
    assert math.isnan(scalar_math.pow(-8.0, 1.0 / 3.0))
    assert scalar_math.pow(0.0, -1.0) == math.inf
    assert math.isnan(relu(math.nan))
    assert tanh(50.0) == 1.0
    # derivatives at the edge of their domain give inf / nan like PyTorch, never raise
    assert scalar_math.log_back(0.0, 1.0) == math.inf
    assert scalar_math.inv_back(0.0, 1.0) == -math.inf
    assert scalar_math.sqrt_back(0.0, 1.0) == math.inf
    assert math.isnan(scalar_math.sqrt_back(-1.0, 1.0))


@pytest.mark.task0_1
@pytest.mark.parametrize(
    ("back", "x", "d", "expected"),
    [
        (scalar_math.log_back, 2.0, 3.0, 1.5),
        (scalar_math.inv_back, 2.0, 3.0, -0.75),
        (scalar_math.relu_back, 2.0, 3.0, 3.0),
        (scalar_math.relu_back, -2.0, 3.0, 0.0),
        (scalar_math.relu_back, 0.0, 3.0, 0.0),
        (scalar_math.sigmoid_back, 0.0, 2.0, 0.5),
        (scalar_math.exp_back, 0.0, 3.0, 3.0),
        (scalar_math.tanh_back, 0.0, 3.0, 3.0),
        (scalar_math.sqrt_back, 4.0, 2.0, 0.5),
        (scalar_math.abs_back, -2.0, 3.0, -3.0),
        (scalar_math.abs_back, 2.0, 3.0, 3.0),
        (scalar_math.abs_back, 0.0, 3.0, 0.0),
    ],
)
@given(data=st.data())
def test_backward_values(back, x, d, expected, data) -> None:  # type: ignore[no-untyped-def]
    assert close(back(x, d), expected)
    check_at_drawn_inputs(back.__name__, data)


# Task 0.1's rows (the ops students write); later rows are given code, tested in
# tests/tensor/test_math_ops.py.
COURSE_UNARY = {c: n for c, n in operators.UNARY_NAMES.items() if c < 10}
COURSE_BINARY = {
    c: n
    for c, n in operators.BINARY_NAMES.items()
    if 100 <= c <= 114 or c in {operators.DERIVATIVES.get(u) for u in COURSE_UNARY}
}
SAMPLES = [-3.5, -1.0, -0.0, 0.0, 0.25, 1.0, 2.0, 710.0, -710.0]


@pytest.mark.task0_1
@pytest.mark.parametrize(("code", "name"), sorted(COURSE_UNARY.items()))
@given(data=st.data())
def test_unary_dispatcher_agrees_with_named_function(
    code: int, name: str, data: st.DataObject
) -> None:
    check_at_drawn_inputs(name, data)
    fn = getattr(scalar_math, name)
    for x in SAMPLES:
        assert outcome(operators.unary, code, x) == outcome(fn, x), (name, x)


@pytest.mark.task0_1
@pytest.mark.parametrize(("code", "name"), sorted(COURSE_BINARY.items()))
@given(data=st.data())
def test_binary_dispatcher_agrees_with_named_function(
    code: int, name: str, data: st.DataObject
) -> None:
    check_at_drawn_inputs(name, data)
    fn = getattr(scalar_math, name)
    pairs = [(x, y) for x in SAMPLES for y in (-2.0, 0.5, 3.0)]
    pairs += [(x, x) for x in SAMPLES]
    for x, y in pairs:
        assert outcome(operators.binary, code, x, y) == outcome(fn, x, y), (name, x, y)


@pytest.mark.extra
def test_python_dispatch_raises_for_unknown_codes_and_codes_are_distinct() -> None:
    with pytest.raises(ValueError, match="op code 999 is not a unary op"):
        operators.unary_function(999)
    with pytest.raises(ValueError, match="op code 999 is not a binary op"):
        operators.binary_function(999)
    # the compiled dispatch cannot raise in a kernel: it gives nan, launchers refuse first
    assert math.isnan(operators.unary(999, 1.0))
    assert math.isnan(operators.binary(999, 1.0, 2.0))
    codes = list(operators.UNARY_NAMES) + list(operators.BINARY_NAMES)
    assert len(codes) == len(set(codes))
    for name in operators.KERNEL_FUNCTIONS:  # where the backends compile them from
        assert any(callable(vars(m).get(name)) for m in operators.KERNEL_MODULES), name


# ---- 0.1: algebraic laws and agreement with Python's math ----


@pytest.mark.task0_1
@given(small, small)
def test_commutative(x: float, y: float) -> None:
    assert add(x, y) == add(y, x)
    assert mul(x, y) == mul(y, x)
    assert scalar_math.max(x, y) == scalar_math.max(y, x)
    assert scalar_math.min(x, y) == scalar_math.min(y, x)
    assert eq(x, y) == eq(y, x)
    assert ne(x, y) == ne(y, x)
    assert is_close(x, y) == is_close(y, x)


@pytest.mark.task0_1
@given(small, small, small)
def test_distributive(x: float, y: float, z: float) -> None:
    assert close(mul(z, add(x, y)), add(mul(z, x), mul(z, y)), abs_=1e-9)


@pytest.mark.task0_1
@given(small, small)
def test_comparisons_are_consistent(x: float, y: float) -> None:
    assert lt(x, y) == gt(y, x)
    assert lt(x, y) + ge(x, y) == 1.0
    assert gt(x, y) + le(x, y) == 1.0
    assert eq(x, y) + ne(x, y) == 1.0
    assert eq(x, y) == le(x, y) * ge(x, y)
    assert scalar_math.max(x, y) >= x and scalar_math.max(x, y) >= y
    assert scalar_math.min(x, y) <= x and scalar_math.min(x, y) <= y
    assert scalar_math.max(x, y) + scalar_math.min(x, y) == x + y


@pytest.mark.task0_1
@given(small)
def test_identities(x: float) -> None:
    assert scalar_math.id(x) == x
    assert neg(neg(x)) == x
    assert add(x, neg(x)) == 0.0
    assert mul(x, 1.0) == x
    assert eq(x, x) == 1.0
    assert is_close(x, x) == 1.0
    assert is_close(x, x + 1.0) == 0.0
    assert scalar_math.abs(x) == abs(x)


@pytest.mark.task0_1
@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_sigmoid_symmetry_and_range(x: float) -> None:
    assert 0.0 <= sigmoid(x) <= 1.0
    assert close(sigmoid(-x), 1.0 - sigmoid(x), abs_=1e-12)
    if -30.0 < x < 30.0:
        assert 0.0 < sigmoid(x) < 1.0
        assert close(sigmoid(x), 1.0 / (1.0 + math.exp(-x)), rel=1e-12, abs_=1e-15)


@pytest.mark.task0_1
@pytest.mark.parametrize("fn", [sigmoid, relu, exp, tanh, scalar_math.id])
@given(small, small)
def test_monotone(fn, x: float, y: float) -> None:  # type: ignore[no-untyped-def]
    lo, hi = (x, y) if x <= y else (y, x)
    assert fn(lo) <= fn(hi)


@pytest.mark.task0_1
@given(positive, positive)
def test_log_is_monotone_and_turns_products_into_sums(x: float, y: float) -> None:
    lo, hi = (x, y) if x <= y else (y, x)
    assert log(lo) <= log(hi)
    assert close(log(mul(x, y)), add(log(x), log(y)), abs_=1e-12)
    assert close(exp(log(x)), x)


@pytest.mark.task0_1
@given(small)
def test_agrees_with_python_math(x: float) -> None:
    assert exp(x) == math.exp(x)
    assert tanh(x) == math.tanh(x)
    assert relu(x) == (x if x > 0 else 0.0)
    if x > 0:
        assert log(x) == math.log(x)
        assert scalar_math.sqrt(x) == math.sqrt(x)
        assert scalar_math.pow(x, 1.5) == math.pow(x, 1.5)
    if x != 0:
        assert close(inv(x), 1.0 / x, rel=1e-15, abs_=0.0)


def numeric_derivative(fn: Callable[[float], float], x: float, h: float = 1e-6) -> float:
    """f'(x) estimated as (f(x + h) - f(x - h)) / 2h, written here so 0.1 needs no 1.1."""
    return (fn(x + h) - fn(x - h)) / (2.0 * h)


# Each *_back(x, d) must equal d * f'(x); f' is estimated numerically.
BACKS = [
    ("log_back", log, positive),
    ("inv_back", inv, st.one_of(positive, positive.map(lambda v: -v))),
    ("relu_back", relu, small.filter(lambda v: abs(v) > 1e-3)),
    ("sigmoid_back", sigmoid, st.floats(min_value=-30.0, max_value=30.0)),
    ("exp_back", exp, st.floats(min_value=-20.0, max_value=5.0)),
    ("tanh_back", tanh, st.floats(min_value=-10.0, max_value=10.0)),
    ("sqrt_back", scalar_math.sqrt, positive),
    ("abs_back", scalar_math.abs, small.filter(lambda v: abs(v) > 1e-3)),
]


@pytest.mark.task0_1
@pytest.mark.parametrize(("name", "fn", "domain"), BACKS, ids=[b[0] for b in BACKS])
@given(data=st.data())
def test_backward_matches_numeric_derivative(
    name: str, fn: Callable[[float], float], domain: st.SearchStrategy[float], data: st.DataObject
) -> None:
    x = data.draw(domain, label="x")
    d = data.draw(st.floats(min_value=-5.0, max_value=5.0), label="d")
    expected = d * numeric_derivative(fn, x)
    assert close(getattr(scalar_math, name)(x, d), expected, rel=1e-4, abs_=1e-6)


# ---- 0.3: list functions ----


@pytest.mark.task0_3
@given(float_lists)
def test_map_applies_to_each_element(xs: list[float]) -> None:
    assert list_ops.map(neg)(xs) == [-x for x in xs]
    assert list_ops.map(relu)(iter(xs)) == [relu(x) for x in xs]
    assert neg_list(xs) == [-x for x in xs]


@pytest.mark.task0_3
@given(st.lists(st.tuples(small, small), max_size=12))
def test_zip_with_and_add_lists(pairs: list[tuple[float, float]]) -> None:
    xs = [x for x, _ in pairs]
    ys = [y for _, y in pairs]
    assert zip_with(mul)(xs, ys) == [x * y for x, y in pairs]
    assert add_lists(xs, ys) == [x + y for x, y in pairs]
    assert close(list_ops.sum(add_lists(xs, ys)), list_ops.sum(xs) + list_ops.sum(ys), abs_=1e-9)


@pytest.mark.task0_3
@given(float_lists, float_lists)
def test_zip_with_rejects_unequal_lengths(xs: list[float], ys: list[float]) -> None:
    if len(xs) == len(ys):
        ys = [*ys, 1.0]
    with pytest.raises(ValueError, match=f"lengths {len(xs)} and {len(ys)}"):
        add_lists(xs, ys)


@pytest.mark.task0_3
@given(float_lists)
def test_sum_and_prod_agree_with_python(xs: list[float]) -> None:
    assert close(list_ops.sum(xs), math.fsum(xs), abs_=1e-9)
    assert close(prod(xs), math.prod(xs), rel=1e-12, abs_=0.0)


@pytest.mark.task0_3
@given(st.lists(st.integers(0, 9), max_size=8), st.integers(-5, 5))
def test_reduce_folds_from_the_left_with_its_start(digits: list[int], start: int) -> None:
    # digits read left to right from a start: only a left fold from `start` gives this
    expected = start
    for digit in digits:
        expected = expected * 10 + digit
    folded = reduce(lambda acc, x: acc * 10.0 + x, float(start))([float(d) for d in digits])
    assert folded == float(expected)
    assert list_ops.sum([]) == 0.0
    assert prod([]) == 1.0
    assert list_ops.sum([1.0, 2.0, 3.5]) == 6.5
    assert prod([2.0, -3.0, 0.5]) == -3.0
    assert reduce(lambda acc, x: acc * 10.0 + x, 0.0)([1.0, 2.0, 3.0]) == 123.0
    assert reduce(scalar_math.max, -math.inf)([3.0, 7.0, -1.0]) == 7.0
