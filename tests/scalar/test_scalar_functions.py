"""Tests of minifw/scalar_functions.py on plain floats: forwards (1.2), backwards (1.3)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minifw.core.autodiff import Context, History, central_difference, no_grad
from minifw.scalar import functions as sf
from minifw.scalar.scalar import Scalar

small = st.floats(min_value=-100.0, max_value=100.0, allow_nan=False)
positive = st.floats(min_value=0.1, max_value=10.0)
nonzero = st.one_of(positive, positive.map(lambda v: -v))
away_from_zero = small.filter(lambda v: abs(v) > 1e-3)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


Domains = list[st.SearchStrategy[float]]

# (Function, reference on floats, a strategy per input)
FUNCTIONS: list[tuple[type[sf.ScalarFunction], Callable[..., float], Domains]] = [
    (sf.Add, lambda a, b: a + b, [small, small]),
    (sf.Sub, lambda a, b: a - b, [small, small]),
    (sf.Mul, lambda a, b: a * b, [small, small]),
    (sf.Div, lambda a, b: a / b, [small, nonzero]),
    (sf.Neg, lambda a: -a, [small]),
    (sf.Pow, math.pow, [positive, st.floats(min_value=-3.0, max_value=3.0)]),
    (sf.Exp, math.exp, [st.floats(min_value=-20.0, max_value=5.0)]),
    (sf.Log, math.log, [positive]),
    (sf.Sigmoid, _sigmoid, [st.floats(min_value=-30.0, max_value=30.0)]),
    (sf.ReLU, lambda a: max(a, 0.0), [away_from_zero]),
    (sf.Tanh, math.tanh, [st.floats(min_value=-5.0, max_value=5.0)]),
    (sf.LT, lambda a, b: float(a < b), [small, small]),
    (sf.GT, lambda a, b: float(a > b), [small, small]),
    (sf.LE, lambda a, b: float(a <= b), [small, small]),
    (sf.GE, lambda a, b: float(a >= b), [small, small]),
    (sf.EQ, lambda a, b: float(a == b), [small, small]),
    (sf.NE, lambda a, b: float(a != b), [small, small]),
]
IDS = [fn.__name__ for fn, _, _ in FUNCTIONS]


def draw_inputs(data: st.DataObject, domains: list[st.SearchStrategy[float]]) -> list[float]:
    return [data.draw(domain, label=f"x{i}") for i, domain in enumerate(domains)]


@pytest.mark.task1_2
@pytest.mark.parametrize(("fn", "reference", "domains"), FUNCTIONS, ids=IDS)
@given(data=st.data())
def test_forward_matches_python(
    fn: type[sf.ScalarFunction],
    reference: Callable[..., float],
    domains: Domains,
    data: st.DataObject,
) -> None:
    xs = draw_inputs(data, domains)
    got = fn.forward(Context(), *xs)
    assert math.isclose(got, reference(*xs), rel_tol=1e-12, abs_tol=1e-300)


@pytest.mark.task1_3
@pytest.mark.parametrize(("fn", "reference", "domains"), FUNCTIONS, ids=IDS)
@given(data=st.data())
def test_backward_matches_central_difference(
    fn: type[sf.ScalarFunction],
    reference: Callable[..., float],
    domains: Domains,
    data: st.DataObject,
) -> None:
    xs = draw_inputs(data, domains)
    if len(xs) == 2 and abs(xs[0] - xs[1]) < 1e-3 and fn.__base__ is sf.Comparison:
        xs[1] = xs[0] + 1.0  # keep comparisons away from their jump
    d = data.draw(st.floats(min_value=-3.0, max_value=3.0), label="d")
    ctx = Context()
    fn.forward(ctx, *xs)
    grads = fn.backward(ctx, d)
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert len(grads) == len(xs)
    for i, grad in enumerate(grads):
        numeric = d * central_difference(lambda *v: fn.forward(Context(), *v), *xs, arg=i)
        assert math.isclose(grad, numeric, rel_tol=1e-4, abs_tol=1e-6), (i, grad, numeric)


@pytest.mark.task1_3
def test_backward_at_domain_edges_gives_inf_or_nan_not_errors() -> None:
    ctx = Context()
    assert sf.Log.forward(ctx, 0.0) == -math.inf
    assert sf.Log.backward(ctx, 1.0) == math.inf
    ctx = Context()
    assert sf.Div.forward(ctx, 1.0, 0.0) == math.inf
    d_a, d_b = sf.Div.backward(ctx, 1.0)
    assert d_a == math.inf and d_b == -math.inf
    ctx = Context()
    assert sf.Pow.forward(ctx, 0.0, 0.0) == 1.0
    assert sf.Pow.backward(ctx, 1.0) == (0.0, 0.0)
    ctx = Context()
    assert math.isnan(sf.Pow.forward(ctx, -8.0, 1.0 / 3.0))


@pytest.mark.task1_2
def test_apply_records_history_only_when_needed() -> None:
    x = Scalar(2.0)
    c = Scalar(3.0, requires_grad=False)
    out = sf.Mul.apply(x, c)
    assert isinstance(out, Scalar) and out.data == 6.0
    assert isinstance(out.history, History)
    assert out.history.last_fn is sf.Mul
    assert tuple(out.history.inputs) == (x, c)
    assert out.history.ctx is not None and out.history.ctx.saved_tensors == (2.0, 3.0)
    assert sf.Mul.apply(c, c).history is None  # constants only: a constant
    with no_grad():
        assert sf.Mul.apply(x, x).history is None  # no graph under no_grad
    assert sf.Neg.apply(x).history is not None
