"""Gradients of gradients (`create_graph=True`) against PyTorch, op by op and end to end.

Each case computes first-order gradients with `autograd.grad(..., create_graph=True)` in
both libraries; `check_against_torch` compares those gradients and then backpropagates a
random vector through them, comparing the second-order gradients of every input.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minifw as mf
from minifw.core import operators as ops
from minifw.tensor import functions
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, torch
from tests.strategies import ALL_OPS, Domain, broadcastable_shapes, matmul_shapes, shapes

pytestmark = pytest.mark.extra

LIMIT = at_most(10)
FEW = at_most(2)
DTYPES = ["float64", "float32"]
Case = Callable[..., Any]


def recorded_grads(f: Case) -> Case:
    """A case returning d(sum f^2)/d(inputs), recorded so the check can differentiate it."""

    def case(lib: Any, *xs: Any) -> Any:
        leaves = [x for x in xs if lib.is_tensor(x) and x.requires_grad]
        out = f(lib, *xs)
        grads = lib.autograd.grad((out * out).sum(), leaves, create_graph=True)
        return lib.cat([g.reshape(-1) for g in grads])  # one tensor: one comparison

    return case


def arrays(shape: tuple[int, ...], low: float = -2.0, high: float = 2.0) -> Any:
    """Float64 arrays of `shape` with values in [low, high]."""
    return hnp.arrays(np.float64, shape, elements=Domain(low, high).elements())


def away_from_ties(values: np.ndarray) -> np.ndarray:
    """`values` spread apart so that no two are within 0.1 (max and argmax are stable)."""
    order = np.argsort(values, axis=None, kind="stable")
    spread = np.empty(values.size)
    spread[order] = np.arange(values.size) * 0.37
    return (spread.reshape(values.shape) - values.size * 0.15) + 0.01 * np.tanh(values)


# ---- Every differentiable elementwise op of the op table -----------------------------------

UNARY_ROWS = [s for s in ALL_OPS if s.arity == 1 and s.code in ops.DERIVATIVES]


def test_every_unary_row_with_a_derivative_carries_its_gradient() -> None:
    for code in ops.DERIVATIVES:
        row = ops.OP_TABLE[code]
        assert row.gradient == ops.KERNEL or callable(row.gradient), row.name
        rule = functions.ELEMENTWISE[code].gradient
        if row.gradient != ops.KERNEL:
            assert rule is row.gradient, f"{row.name}: its Function must run the row's rule"


def cube(x: float) -> float:
    """x^3: an op that is not in the table."""
    return x * x * x


@pytest.mark.parametrize(
    ("derivative", "gradient", "error"),
    [
        (ops.sm.mul, None, "'cube' has a derivative rule but no gradient"),
        (None, ops.KERNEL, "'cube' has a gradient but no derivative rule"),
        (ops.sm.mul, "kernels", "gradient of 'cube' must be a function or KERNEL"),
    ],
)
def test_a_row_whose_gradient_does_not_fit_is_refused(
    derivative: Any, gradient: Any, error: str
) -> None:
    row = ops.OpRow(60, cube, 1, derivative, "cube", gradient=gradient)
    with pytest.raises(ValueError, match=error):
        ops._check_gradient(row)


@pytest.mark.parametrize("spec", UNARY_ROWS, ids=lambda spec: spec.name)
def test_second_derivative_is_the_central_difference_of_the_first(spec: Any) -> None:
    """d/dx of f'(x), through the one engine, against (f'(x + h) - f'(x - h)) / 2h."""
    (domain,) = spec.domains(for_grad=True)
    low, high = max(domain.low, -2.0), min(domain.high, 2.0)
    points = np.linspace(low, high, 7)[1:-1]
    points = points[np.abs(points) > 0.1]  # 1/x and friends: away from 0
    if spec.name in ("relu", "abs"):  # off the kink
        points = np.linspace(0.3, 1.8, 5)
    if spec.name in ("round", "floor", "ceil", "trunc", "frac", "sign"):  # off the jumps
        points = np.floor(points) + 0.3

    def first(values: np.ndarray, create_graph: bool = False) -> Any:
        x = mf.tensor(values, requires_grad=True)
        (g,) = mf.autograd.grad(spec.fn(x).sum(), x, create_graph=create_graph)
        return x, g

    x, g = first(points, create_graph=True)
    (second,) = mf.autograd.grad(g.sum(), x, allow_unused=True, materialize_grads=True)
    h = 1e-5
    expected = (first(points + h)[1].numpy() - first(points - h)[1].numpy()) / (2 * h)
    np.testing.assert_allclose(second.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_every_unary_row_with_a_derivative_is_checked_here() -> None:
    checked = {spec.code for spec in UNARY_ROWS}
    assert set(ops.DERIVATIVES) <= checked, "an OpSpec row is missing for a unary op"


@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(shape=shapes(0, 2, 1, 3), data=st.data())
def test_second_derivatives_of_unary_ops(backend: Any, dtype: str, shape: Any, data: Any) -> None:
    for spec in UNARY_ROWS:
        (domain,) = spec.domains(for_grad=True)
        low, high = domain.low, domain.high
        if spec.name in ("relu", "abs"):  # keep clear of the kink
            low, high = 0.2, 2.0
        values = data.draw(
            hnp.arrays(np.float64, shape, elements=Domain(low, high, 0.2).elements())
        )
        values = np.asarray(np.clip(values, max(low, -2.0), min(high, 2.0)))
        if spec.name in ("round", "floor", "ceil", "trunc", "frac", "sign"):
            values = np.asarray(np.floor(values) + 0.3)  # off the jumps
        case = recorded_grads(lambda lib, x, f=spec.fn: f(x))
        check_against_torch(case, [values], backend, dtype, tolerances=_tolerance(dtype))


def _tolerance(dtype: str) -> tuple[float, float]:
    return (1e-6, 1e-8) if dtype == "float64" else (2e-3, 2e-4)


# ---- Arithmetic, matmul, layout and reductions --------------------------------------------

BINARY: dict[str, Case] = {
    "add": lambda lib, a, b: (a + b) * a,
    "sub": lambda lib, a, b: (a - b) * b,
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / (b * b + 1.0),
    "pow number": lambda lib, a, b: (a * a + 1.0) ** 1.5 + b**3,
    "pow tensor": lambda lib, a, b: (a * a + 0.5) ** b,
    "number ** tensor": lambda lib, a, b: 1.7**a * b,
    "where": lambda lib, a, b: lib.where(a > b, a * b, b * b),
    "neg": lambda lib, a, b: -(a * b),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(pair=broadcastable_shapes(2, 3), data=st.data())
def test_second_derivatives_of_arithmetic(
    backend: Any, dtype: str, name: str, pair: Any, data: Any
) -> None:
    a, b = (data.draw(arrays(s)) for s in pair)
    check_against_torch(
        recorded_grads(BINARY[name]), [a, b], backend, dtype, tolerances=_tolerance(dtype)
    )


@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(pair=matmul_shapes(1, 3), data=st.data())
def test_second_derivatives_of_matmul(backend: Any, dtype: str, pair: Any, data: Any) -> None:
    a, b = (data.draw(arrays(s)) for s in pair)
    case = recorded_grads(lambda lib, x, y: (x @ y).tanh())
    check_against_torch(case, [a, b], backend, dtype, tolerances=_tolerance(dtype))


LAYOUT: dict[str, Case] = {
    "view": lambda lib, x: (x.reshape(-1) * x.reshape(-1)).view(2, -1),
    "permute": lambda lib, x: x.permute(2, 0, 1).tanh(),
    "transpose": lambda lib, x: x.transpose(0, 2) * x.transpose(0, 2).sin(),
    "expand": lambda lib, x: x[:, :1].expand(2, 3, 2) * x,
    "index": lambda lib, x: x[1, ::2, None] * x[0, 1:, None].exp(),
    "cat": lambda lib, x: lib.cat([x * x, x.exp()], dim=1),
    "stack": lambda lib, x: lib.stack([x.sin(), x * x], dim=0),
    "cast": lambda lib, x: (x.to(lib.float32) * x.to(lib.float32)).to(lib.float64) * x,
    "clone": lambda lib, x: x.clone() * x.contiguous(),
    "squeeze": lambda lib, x: x[:1].squeeze(0).unsqueeze(0) * x[1:].exp(),
    "sum": lambda lib, x: x.sum(dim=1, keepdim=True) * x,
    "mean": lambda lib, x: x.mean(dim=(0, 2)) ** 2,
    "var": lambda lib, x: x.var(dim=1),
    "std": lambda lib, x: x.std(dim=2) * x.sum(),
    "max all": lambda lib, x: x.max() * x,
    "max dim": lambda lib, x: x.max(dim=1)[0] * x[:, 0],
    "min dim": lambda lib, x: x.min(dim=2, keepdim=True)[0] * x,
    "softmax": lambda lib, x: lib.nn.functional.softmax(x * x, dim=1),
    "log_softmax": lambda lib, x: lib.nn.functional.log_softmax(x.sin(), dim=-1),
}


@pytest.mark.parametrize("name", sorted(LAYOUT))
@FEW
@given(values=arrays((2, 3, 2)))
def test_second_derivatives_of_layout_and_reductions(
    backend: Any, name: str, values: np.ndarray
) -> None:
    dtype = "float64"
    if name.startswith(("max", "min", "std")):  # no ties; std: no zero variance
        values = away_from_ties(values)
    case = recorded_grads(LAYOUT[name])
    check_against_torch(case, [values], backend, dtype, tolerances=_tolerance(dtype))


# ---- nn Functions: linear, embedding, losses, convolution and pooling ---------------------

NN: dict[str, tuple[Case, tuple[tuple[int, ...], ...]]] = {
    "linear": (
        lambda lib, x, w, b: lib.nn.functional.linear(x, w, b).tanh(), ((3, 4), (2, 4), (2,))
    ),
    "conv2d": (
        lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1).tanh(),
        ((1, 1, 3, 3), (2, 1, 2, 2)),
    ),
    "conv1d": (
        lambda lib, x, w: lib.nn.functional.conv1d(x, w, stride=2) ** 2, ((2, 1, 5), (2, 1, 3))
    ),
    "avg_pool2d": (lambda lib, x: lib.nn.functional.avg_pool2d(x * x, 2), ((1, 1, 4, 4),)),
    "mse_loss": (lambda lib, x, y: lib.nn.functional.mse_loss(x.tanh(), y), ((3, 2), (3, 2))),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NN))
@FEW
@given(data=st.data())
def test_second_derivatives_of_nn_functions(backend: Any, name: str, data: Any) -> None:
    fn, sizes = NN[name]
    dtype = "float32" if name == "linear" else "float64"
    values = [data.draw(arrays(s, -1.0, 1.0)) for s in sizes]
    check_against_torch(recorded_grads(fn), values, backend, dtype, tolerances=_tolerance(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@settings(FEW, max_examples=1)
@given(data=st.data())
def test_second_derivatives_of_classification_losses(backend: Any, dtype: str, data: Any) -> None:
    logits = data.draw(arrays((3, 4)))
    target = np.array(data.draw(st.lists(st.integers(0, 3), min_size=3, max_size=3)))
    probs = data.draw(arrays((3, 4), 0.1, 0.9))

    def losses(lib: Any, x: Any, t: Any, p: Any) -> Any:
        F = lib.nn.functional
        ce = F.cross_entropy(x * x, t)
        nll = F.nll_loss(F.log_softmax(x, dim=1), t, reduction="sum")
        bce = F.binary_cross_entropy(p * p, (x.sigmoid()))
        return ce + nll + bce

    check_against_torch(
        recorded_grads(losses),
        [logits, target, probs],
        backend,
        dtype,
        tolerances=_tolerance(dtype),
    )


@settings(FEW, max_examples=1)
@given(data=st.data())
def test_second_derivatives_of_embedding_and_max_pool(backend: Any, data: Any) -> None:
    dtype = "float64"
    weight = data.draw(arrays((4, 3)))
    index = np.array(data.draw(st.lists(st.integers(0, 3), min_size=5, max_size=5))).reshape(5)
    image = away_from_ties(data.draw(arrays((1, 1, 2, 4))))

    def case(lib: Any, w: Any, i: Any, x: Any) -> Any:
        F = lib.nn.functional
        rows = F.embedding(i, w, padding_idx=1) * w.sum()
        pooled = F.max_pool2d(x * x, 2)
        return rows.sum() * pooled.sum()

    check_against_torch(
        recorded_grads(case), [weight, index, image], backend, dtype, tolerances=_tolerance(dtype)
    )


# ---- End to end: a Hessian-vector product and a gradient penalty --------------------------


def _mlp(lib: Any, x: Any, w1: Any, b1: Any, w2: Any) -> Any:
    return (x @ w1 + b1).tanh() @ w2


@pytest.mark.parametrize("dtype", DTYPES)
@settings(FEW, max_examples=1)
@given(data=st.data())
def test_hessian_vector_product_matches_torch(backend: Any, dtype: str, data: Any) -> None:
    sizes = ((2, 3), (3, 4), (4,), (4, 2))
    values = [data.draw(arrays(s, -1.0, 1.0)) for s in sizes]
    vector = [data.draw(arrays(s, -1.0, 1.0)) for s in sizes[1:]]

    def hvp(lib: Any, x: Any, w1: Any, b1: Any, w2: Any) -> Any:
        params = [p.requires_grad_() for p in (w1, b1, w2)]
        loss = (_mlp(lib, x, *params) ** 2).mean()
        grads = lib.autograd.grad(loss, params, create_graph=True)
        vs = [lib.tensor(v.astype(dtype)).to(x.device) for v in vector]
        dot = sum((g * v).sum() for g, v in zip(grads, vs, strict=True))
        return lib.autograd.grad(dot, params)

    check_against_torch(hvp, values, backend, dtype, grad=False, tolerances=_tolerance(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@settings(FEW, max_examples=1)
@given(data=st.data())
def test_gradient_penalty_matches_torch(backend: Any, dtype: str, data: Any) -> None:
    sizes = ((2, 3), (3, 4), (4,), (4, 1))
    values = [data.draw(arrays(s, -1.0, 1.0)) for s in sizes]

    def penalty(lib: Any, x: Any, w1: Any, b1: Any, w2: Any) -> Any:
        critic = _mlp(lib, x, w1, b1, w2).sigmoid()
        (slope,) = lib.autograd.grad(critic.sum(), x, create_graph=True)
        norms = (slope * slope).sum(dim=1).sqrt()
        return ((norms - 1.0) ** 2).mean()

    check_against_torch(penalty, values, backend, dtype, tolerances=_tolerance(dtype))


def test_third_derivative(backend: Any) -> None:
    x = mf.tensor([0.3, -0.7, 1.1], backend=backend, requires_grad=True)
    (g,) = mf.autograd.grad((x.sin() * x**3).sum(), x, create_graph=True)
    (h,) = mf.autograd.grad(g.sum(), x, create_graph=True)
    (k,) = mf.autograd.grad(h.sum(), x)
    xt = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64, requires_grad=True)
    (gt,) = torch.autograd.grad((xt.sin() * xt**3).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad(gt.sum(), xt, create_graph=True)
    (kt,) = torch.autograd.grad(ht.sum(), xt)
    np.testing.assert_allclose(k.numpy(), kt.numpy(), rtol=1e-10)


# ---- What cannot be differentiated twice says so -------------------------------------------


def test_function_without_recorded_backward_refuses_create_graph(backend: Any) -> None:
    from minifw.utils.checkpoint import checkpoint

    x = mf.tensor([1.0, 2.0], backend=backend, requires_grad=True)
    y = checkpoint(lambda t: (t * t).sum(), x)
    with pytest.raises(RuntimeError, match="CheckpointFunction.*create_graph"):
        mf.autograd.grad(y, x, create_graph=True)
    (plain,) = mf.autograd.grad(checkpoint(lambda t: (t * t).sum(), x), x)
    np.testing.assert_allclose(plain.numpy(), [2.0, 4.0])


RAW_LAUNCHES = {"_zip", "_map", "_reduce", "_select_where", "_new", "_convert", "copy_into"}
RAW_LAUNCHES |= {"launch_fused"}


def _functions() -> list[type]:
    """Every autograd Function class minifw defines (loaded by `import minifw`)."""
    found, todo = [], [functions.Function]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("minifw.") and cls is not functions.Function:
            found.append(cls)
    return found


def test_every_backward_is_written_in_tensor_operations() -> None:
    """No backward launches kernels itself: under create_graph it would not be recorded."""
    offenders = []
    for cls in _functions():
        source = textwrap.dedent(inspect.getsource(cls.backward))
        names = {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}
        if names & RAW_LAUNCHES:
            offenders.append(f"{cls.__module__}.{cls.__name__}: {sorted(names & RAW_LAUNCHES)}")
    assert len(_functions()) > 40
    assert not offenders, "backwards with raw launches:\n" + "\n".join(offenders)


def test_no_function_has_a_second_backward() -> None:
    twins = [c.__name__ for c in _functions() if hasattr(c, "backward_graph")]
    assert not twins, f"one backward per Function: {twins}"


def test_first_order_gradient_is_the_same_with_create_graph(backend: Any) -> None:
    x = mf.tensor([[0.5, -1.5], [2.0, 0.25]], backend=backend, requires_grad=True)
    f = lambda t: (t.exp() * t.tanh()).sum() + (t @ t).sigmoid().sum()  # noqa: E731
    (fast,) = mf.autograd.grad(f(x), x)
    (recorded,) = mf.autograd.grad(f(x), x, create_graph=True)
    assert recorded.requires_grad and not fast.requires_grad
    np.testing.assert_array_equal(recorded.detach().numpy(), fast.numpy())
