"""Tests of minifw/scalar/scalar.py: arithmetic (1.2), one op's derivatives (1.3), graphs (1.4).

Task 1.3 tests stop at one op: `chain_rule` of the op's output, compared with central
differences of its forward. Whole expressions need backpropagation (1.4): they are
checked with `derivative_check` under task1_4.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from minifw.core.autodiff import Context, central_difference, no_grad
from minifw.scalar import functions as sf
from minifw.scalar.scalar import Scalar, derivative_check

small = st.floats(min_value=-100.0, max_value=100.0, allow_nan=False)
positive = st.floats(min_value=0.1, max_value=10.0)
nonzero = st.one_of(positive, positive.map(lambda v: -v))


# ---- 1.2 forwards through the operators ----

# (name, expression on Scalars or floats, inputs strategy) -- the same expression runs on
# Python floats as the reference, so every operator and reflected operator is covered.
EXPRESSIONS: list[tuple[str, Callable[..., object], list[st.SearchStrategy[float]]]] = [
    ("add", lambda x, y: x + y, [small, small]),
    ("radd", lambda x, y: 2.5 + x, [small, small]),
    ("sub", lambda x, y: x - y, [small, small]),
    ("rsub", lambda x, y: 1 - x, [small, small]),
    ("mul", lambda x, y: x * y, [small, small]),
    ("rmul", lambda x, y: 2 * x, [small, small]),
    ("div", lambda x, y: x / y, [small, nonzero]),
    ("rdiv", lambda x, y: 10.0 / y, [small, nonzero]),
    ("neg", lambda x, y: -x, [small, small]),
    ("pow", lambda x, y: x**2, [small, small]),
    ("pow_scalar", lambda x, y: x**y, [positive, st.floats(-3.0, 3.0)]),
    ("rpow", lambda x, y: 2**y, [small, st.floats(-10.0, 10.0)]),
    ("mixed", lambda x, y: (x * y + 3) / (1 + y * y) - x, [small, small]),
]


@pytest.mark.task1_2
@pytest.mark.parametrize(("name", "fn", "domains"), EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
@given(data=st.data())
def test_arithmetic_matches_python_floats(
    name: str, fn: Callable[..., Any], domains: list[st.SearchStrategy[float]], data: st.DataObject
) -> None:
    x, y = (data.draw(d) for d in domains)
    out = fn(Scalar(x), Scalar(y))
    assert isinstance(out, Scalar)
    assert math.isclose(out.data, fn(x, y), rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.task1_2
@given(small, small)
def test_comparisons_return_zero_or_one_scalars(x: float, y: float) -> None:
    a, b = Scalar(x), Scalar(y)
    for got, want in [
        (a < b, x < y),
        (a > b, x > y),
        (a <= b, x <= y),
        (a >= b, x >= y),
        (a == b, x == y),
        (a != b, x != y),
        (a < 0.5, x < 0.5),
        (3.0 > a, 3.0 > x),  # noqa: SIM300 - the reflected comparison a.__lt__(3.0)
    ]:
        assert isinstance(got, Scalar) and got.data == float(want)
        assert bool(got) is want


@pytest.mark.task1_2
@given(st.floats(min_value=-20.0, max_value=20.0))
def test_elementwise_methods(x: float) -> None:
    s = Scalar(x)
    assert s.exp().data == math.exp(x)
    assert math.isclose(s.sigmoid().data, 1.0 / (1.0 + math.exp(-x)), rel_tol=1e-12)
    assert s.relu().data == max(x, 0.0)
    assert s.tanh().data == math.tanh(x)
    if x > 0:
        assert s.log().data == math.log(x)


@pytest.mark.task1_2
def test_scalar_basics() -> None:
    x = Scalar(3)
    assert type(x.data) is float and x.data == 3.0
    assert x.grad is None and x.is_leaf() and not x.is_constant() and x.requires_grad
    assert float(x) == 3.0 and x.item() == 3.0
    assert repr(x) == "Scalar(3.0)"
    assert repr(x * 2) == "Scalar(6.0, grad_fn=<Mul>)"
    c = Scalar(2.0, requires_grad=False)
    assert c.is_constant() and c.is_leaf() and repr(c) == "Scalar(2.0, requires_grad=False)"
    with pytest.raises(RuntimeError, match="only leaf"):
        c.accumulate_derivative(1.0)
    y = x * 2
    assert not y.is_leaf() and y.grad_fn is sf.Mul and list(y.parents)[0] is x
    assert x.detach().is_constant() and x.detach().data == 3.0


@pytest.mark.extra
def test_scalars_hash_by_identity_despite_eq_returning_scalars() -> None:
    a, b = Scalar(1.0), Scalar(1.0)
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"
    assert len({a, b, a}) == 2


@pytest.mark.extra
def test_bad_operands_raise_type_errors() -> None:
    with pytest.raises(TypeError, match="expected a real number, got str"):
        Scalar("3")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="already a Scalar"):
        Scalar(Scalar(1.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unsupported operand"):
        Scalar(1.0) + "a"  # type: ignore[operator]
    with pytest.raises(TypeError, match="'Scalar'"):
        [1.0] * Scalar(2.0)  # type: ignore[operator]
    assert (Scalar(1.0) == "a") is False  # type: ignore[comparison-overlap]  # identity fallback


@pytest.mark.task1_2
def test_no_grad_builds_no_graph() -> None:
    x = Scalar(2.0)
    with no_grad():
        y = x * x + 1
    assert y.is_constant() and y.data == 5.0
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


# ---- 1.3 chain rule and every op's derivative ----


@pytest.mark.task1_3
def test_chain_rule_pairs_inputs_with_their_share() -> None:
    x, y = Scalar(2.0), Scalar(-3.0)
    z = x * y
    pairs = list(z.chain_rule(4.0))
    assert len(pairs) == 2 and pairs[0][0] is x and pairs[1][0] is y
    assert [d for _, d in pairs] == [-12.0, 8.0]
    (pair,) = list(x.exp().chain_rule(1.0))
    assert pair[0] is x and math.isclose(pair[1], math.exp(2.0))


# Expressions of one op on Scalars (numbers become constants): (name, fn, domains).
ONE_OP_CASES: list[tuple[str, Callable[..., Scalar], list[st.SearchStrategy[float]]]] = [
    ("add", lambda x, y: x + y, [small, small]),
    ("sub", lambda x, y: x - y, [small, small]),
    ("mul", lambda x, y: x * y, [small, small]),
    ("div", lambda x, y: x / y, [small, nonzero]),
    ("rdiv", lambda x: 10.0 / x, [nonzero]),
    ("rsub", lambda x: 1 - x, [small]),
    ("neg", lambda x: -x, [small]),
    ("square", lambda x: x**2, [small]),
    ("cube", lambda x: x**3, [st.floats(-10.0, 10.0)]),
    ("sqrt", lambda x: x**0.5, [positive]),
    ("pow", lambda x, y: x**y, [positive, st.floats(-3.0, 3.0)]),
    ("rpow", lambda x: 2**x, [st.floats(-10.0, 10.0)]),
    ("exp", lambda x: x.exp(), [st.floats(-20.0, 5.0)]),
    ("log", lambda x: x.log(), [positive]),
    ("sigmoid", lambda x: x.sigmoid(), [st.floats(-30.0, 30.0)]),
    ("relu", lambda x: x.relu(), [small.filter(lambda v: abs(v) > 1e-3)]),
    ("tanh", lambda x: x.tanh(), [st.floats(-5.0, 5.0)]),
    ("lt", lambda x, y: x < y, [small, small]),
    ("eq", lambda x, y: x == y, [small, small]),
]


def value_of(fn: Callable[..., Scalar]) -> Callable[..., float]:
    """fn on plain floats, through constant Scalars (no graph)."""
    return lambda *xs: fn(*[Scalar(x, requires_grad=False) for x in xs]).data


@pytest.mark.task1_3
@pytest.mark.parametrize(("name", "fn", "domains"), ONE_OP_CASES, ids=[c[0] for c in ONE_OP_CASES])
@given(data=st.data())
def test_chain_rule_of_one_op_matches_central_difference(
    name: str,
    fn: Callable[..., Scalar],
    domains: list[st.SearchStrategy[float]],
    data: st.DataObject,
) -> None:
    xs = [data.draw(d) for d in domains]
    if name in ("lt", "eq") and abs(xs[0] - xs[1]) < 1e-3:
        xs[1] = xs[0] + 1.0  # away from the jump
    leaves = [Scalar(x) for x in xs]
    d = data.draw(st.floats(min_value=-3.0, max_value=3.0), label="d")
    shares = {id(parent): share for parent, share in fn(*leaves).chain_rule(d)}
    for i, leaf in enumerate(leaves):
        numeric = d * central_difference(value_of(fn), *xs, arg=i)
        assert id(leaf) in shares, f"chain_rule gave no share to input {i}"
        assert math.isclose(shares[id(leaf)], numeric, rel_tol=1e-4, abs_tol=1e-6)


GRAPH_CASES: list[tuple[str, Callable[..., Scalar], list[st.SearchStrategy[float]]]] = [
    ("square_by_mul", lambda x: x * x, [small]),
    ("eq_plus_x", lambda x, y: (x == y) + x, [small, small]),
    (
        "composite",
        lambda x, y: ((x * y).sigmoid() + (x - y).relu() * 0.5) / (1 + y**2),
        [st.floats(-5.0, 5.0), st.floats(-5.0, 5.0)],
    ),  # fmt: skip
    ("reuse", lambda x: x * x.exp() + x.tanh() * x - x, [st.floats(-3.0, 3.0)]),
]


@pytest.mark.task1_4
@pytest.mark.parametrize(("name", "fn", "domains"), GRAPH_CASES, ids=[c[0] for c in GRAPH_CASES])
@given(data=st.data())
def test_backward_of_expressions_matches_central_difference(
    name: str,
    fn: Callable[..., Scalar],
    domains: list[st.SearchStrategy[float]],
    data: st.DataObject,
) -> None:
    xs = [data.draw(d) for d in domains]
    if len(xs) == 2 and abs(xs[0] - xs[1]) < 1e-3:
        xs[1] = xs[0] + 1.0  # away from the kink / jump
    derivative_check(fn, *[Scalar(x) for x in xs])


class WrongMul(sf.ScalarFunction):
    """Mul with a wrong backward, to show derivative_check catches it."""

    @staticmethod
    def forward(ctx: Context, a: float, b: float) -> float:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Context, d: float) -> tuple[float, float]:
        a, b = ctx.saved_tensors
        return d * a, d * b  # swapped


@pytest.mark.extra
def test_derivative_check_reports_a_wrong_backward() -> None:
    with pytest.raises(AssertionError, match="argument 0"):
        derivative_check(lambda x, y: WrongMul.apply(x, y), Scalar(2.0), Scalar(5.0))


# ---- 1.4 whole graphs ----


def micrograd_expression(a: Any, b: Any) -> Any:
    """The expression of micrograd's README, on any numbers with autograd."""
    c = a + b
    d = a * b + b**3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g += 10.0 / f
    return g


@pytest.mark.task1_4
@given(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0))
def test_micrograd_readme_expression(x: float, y: float) -> None:
    a, b = Scalar(-4.0), Scalar(2.0)
    g = micrograd_expression(a, b)
    g.backward()
    assert f"{g.data:.4f}" == "24.7041"
    assert f"{a.grad:.4f}" == "138.8338"
    assert f"{b.grad:.4f}" == "645.5773"
    assume(abs(x + y) > 0.1 and abs(x - y) > 0.1)  # away from the relu kinks

    def value(u: float, v: float) -> float:
        return float(micrograd_expression(Scalar(u), Scalar(v)).data)

    assume(abs(value(x, y)) < 1e6)
    a, b = Scalar(x), Scalar(y)
    micrograd_expression(a, b).backward()
    for grad, arg in ((a.grad, 0), (b.grad, 1)):
        estimate = central_difference(value, x, y, arg=arg, epsilon=1e-6)
        assert grad == pytest.approx(estimate, rel=1e-4, abs=1e-4)


@pytest.mark.extra  # needs PyTorch, which grading never installs
def test_micrograd_expression_agrees_with_pytorch() -> None:
    torch = pytest.importorskip("torch")
    a, b = Scalar(-4.0), Scalar(2.0)
    g = micrograd_expression(a, b)
    g.backward()
    ta = torch.tensor(-4.0, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    tg = micrograd_expression(ta, tb)
    tg.backward()
    assert math.isclose(g.data, tg.item(), rel_tol=1e-12)
    assert a.grad == pytest.approx(ta.grad.item(), rel=1e-12)
    assert b.grad == pytest.approx(tb.grad.item(), rel=1e-12)


@pytest.mark.task1_4
@given(st.floats(-5.0, 5.0))
def test_diamond_graph_accumulates(value: float) -> None:
    x = Scalar(value)
    left, right = x * 2.0, x.exp()
    out = left * right  # d/dx 2x e^x = 2 e^x (1 + x)
    out.backward()
    assert x.grad == pytest.approx(2 * math.exp(value) * (1 + value), rel=1e-12, abs=1e-12)
    assert left.grad is None and right.grad is None  # only leaves keep .grad


@pytest.mark.task1_4
@given(st.integers(-20, 20), st.integers(-8, 8), st.integers(-9, 9))
def test_gradients_accumulate_across_backward_calls_and_scale(
    value: int, eighths: int, factor: int
) -> None:
    x = Scalar(float(value))
    y = x * x
    y.backward()
    y.backward(eighths / 8)  # small integers and eighths: every sum below is exact
    assert x.grad == 2.0 * value + 2.0 * value * eighths / 8
    x.grad = None
    (x * float(factor)).backward()
    assert x.grad == float(factor)


@pytest.mark.task1_4
@given(st.integers(1_500, 4_000), st.floats(0.999, 1.001))
def test_a_long_chain_backpropagates(length: int, factor: float) -> None:
    # far deeper than Python's recursion limit (1000): backward must not recurse
    x = Scalar(1.0)
    y = x
    for _ in range(length):
        y = y * factor + 0.0
    y.backward()
    assert x.grad == pytest.approx(factor**length, rel=1e-9)


@pytest.mark.task1_4
@given(st.floats(0.5, 3.0))
def test_graph_has_no_reference_cycles(value: float) -> None:
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # keep what the collector finds, to look at it
    try:
        x = Scalar(value)
        out = ((x * x).exp() + x.relu() - 1 / x).sigmoid()
        out.backward()
        del out
        gc.collect()
        # every Scalar no longer referenced was freed by reference counting, so none is
        # left for the collector (other code running in this process may leave its own)
        assert [obj for obj in gc.garbage if isinstance(obj, Scalar)] == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
