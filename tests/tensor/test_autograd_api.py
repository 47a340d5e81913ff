"""The autograd API as PyTorch users write it: grad, backward, grad modes, tensor powers.

Everything is compared with the installed PyTorch: `mf.autograd.grad` and
`mf.autograd.backward` (retain_graph, create_graph, inputs, allow_unused), grad-mode
context managers and decorators, `tensor ** tensor` and `number ** tensor` with their
gradients, and `mf.autograd.functional`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minifw as mf
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch, torch
from tests.strategies import Domain, broadcastable_shapes

pytestmark = pytest.mark.extra

FEW = at_most(5)
DTYPES = ["float64", "float32"]


def arrays(shape: tuple[int, ...], low: float = -2.0, high: float = 2.0) -> Any:
    """Float64 arrays of `shape` with values in [low, high]."""
    return hnp.arrays(np.float64, shape, elements=Domain(low, high).elements())


def both(values: list[float], backend: Any = None) -> tuple[Any, Any]:
    """The same float64 leaf (requiring grad) in minifw and in PyTorch."""
    mine = mf.tensor(values, backend=backend, requires_grad=True)
    return mine, torch.tensor(values, dtype=torch.float64, requires_grad=True)


# ---- autograd.grad ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(pair=broadcastable_shapes(2, 3), data=st.data())
def test_grad_of_several_outputs_with_grad_outputs(
    backend: Any, dtype: str, pair: Any, data: Any
) -> None:
    a, b = (data.draw(arrays(s)) for s in pair)

    def case(lib: Any, x: Any, y: Any) -> Any:
        x, y = x.requires_grad_(), y.requires_grad_()
        first, second = x * y, (x + y).tanh()
        weights = [lib.ones_like(first) * 0.5, None if second.numel() == 1 else second * 0]
        if weights[1] is not None:
            weights[1] = weights[1].detach() + 2.0
        return lib.autograd.grad([first, second], [x, y], grad_outputs=weights)

    check_against_torch(case, [a, b], backend, dtype, grad=False)


def test_grad_leaves_dot_grad_alone_and_runs_hooks(backend: Any) -> None:
    x, xt = both([1.0, 2.0], backend)
    for t in (x, xt):
        t.register_hook(lambda g: g * 10)
    (g,) = mf.autograd.grad((x * x).sum(), x)
    (gt,) = torch.autograd.grad((xt * xt).sum(), xt)
    np.testing.assert_allclose(g.numpy(), gt.numpy())
    assert x.grad is None and not g.requires_grad


def test_grad_of_a_non_leaf_and_retained_grads(backend: Any) -> None:
    x, xt = both([1.0, -2.0], backend)
    results = []
    for lib, t in ((mf, x), (torch, xt)):
        h = t * 3.0
        h.retain_grad()
        (gh, gt) = lib.autograd.grad((h * h * t).sum(), [h, t])
        results.append((gh, gt, h.grad))
    for mine, theirs in zip(results[0], results[1], strict=True):
        np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy())


def test_unused_inputs(backend: Any) -> None:
    x = mf.tensor([1.0, 2.0], backend=backend, requires_grad=True)
    w = mf.tensor(3.0, backend=backend, requires_grad=True)
    with pytest.raises(RuntimeError, match="index 1 appears to not have been used"):
        mf.autograd.grad((x * x).sum(), [x, w])
    gx, gw = mf.autograd.grad((x * x).sum(), [x, w], allow_unused=True)
    assert gw is None and gx is not None
    _, zero = mf.autograd.grad((x * x).sum(), [x, w], materialize_grads=True)
    assert zero is not None and zero.item() == 0.0 and zero.shape == ()


def _twice(lib: Any, x: Any) -> Any:
    y = x.exp().sum()
    return [lib.autograd.grad(y, x) for _ in range(2)]


ERRORS = {
    "input without grad": (
        lambda lib, x: lib.autograd.grad((x * x).sum(), lib.ones(2)),
        "does not require grad",
    ),
    "output without grad": (lambda lib, x: lib.autograd.grad(lib.ones(2).sum(), x), "element 0"),
    "non-scalar output": (lambda lib, x: lib.autograd.grad(x * x, x), "scalar outputs"),
    "wrong grad_output shape": (
        lambda lib, x: lib.autograd.grad(x * x, x, lib.ones(3, device=x.device)),
        "Mismatch in shape",
    ),
    "no inputs": (lambda lib, x: lib.autograd.grad((x * x).sum(), []), "cannot be empty"),
    "backward with no inputs": (
        lambda lib, x: (x * x).sum().backward(inputs=[]),
        "cannot be empty",
    ),
    "freed graph": (_twice, "second time"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_like_torch(backend: Any, name: str) -> None:
    fn, match = ERRORS[name]

    def with_leaf(lib: Any, x: Any) -> Any:
        return fn(lib, x.requires_grad_(True))

    check_raises_like_torch(with_leaf, [np.array([1.0, 2.0])], backend, match=match)


def test_retain_graph_allows_a_second_pass(backend: Any) -> None:
    x = mf.tensor([0.5, 1.5], backend=backend, requires_grad=True)
    y = x.exp().sum()
    (first,) = mf.autograd.grad(y, x, retain_graph=True)
    (second,) = mf.autograd.grad(y, x)
    np.testing.assert_array_equal(first.numpy(), second.numpy())


# ---- backward: inputs=, create_graph=, autograd.backward -----------------------------------


def test_backward_with_inputs_fills_only_those(backend: Any) -> None:
    a, at = both([2.0], backend)
    b, bt = both([3.0], backend)
    for x, y in ((a, b), (at, bt)):
        c = x * y
        (c * c).sum().backward(inputs=[x, c])
        assert y.grad is None
        lib_c_grad = c.grad
        assert lib_c_grad is not None
    np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy())


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_create_graph_records_dot_grad(backend: Any) -> None:
    x, xt = both([0.5, -1.0], backend)
    (x**3).sum().backward(create_graph=True)
    (xt**3).sum().backward(create_graph=True)
    assert x.grad is not None and x.grad.requires_grad and x.grad.grad_fn is not None
    np.testing.assert_allclose(x.grad.detach().numpy(), xt.grad.detach().numpy())
    (second,) = mf.autograd.grad(x.grad.sum(), x)
    (second_t,) = torch.autograd.grad(xt.grad.sum(), xt)
    np.testing.assert_allclose(second.numpy(), second_t.numpy())


def test_autograd_backward_of_several_tensors(backend: Any) -> None:
    x, xt = both([0.5, -1.0, 2.0], backend)
    for lib, t in ((mf, x), (torch, xt)):
        outs = [t * t, t.sin().sum()]
        lib.autograd.backward(outs, [lib.ones_like(outs[0]) * 2.0, None])
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


# ---- Grad modes ---------------------------------------------------------------------------


def test_set_grad_enabled_as_function_context_manager_and_decorator() -> None:
    assert mf.is_grad_enabled()
    with mf.set_grad_enabled(False):
        assert not mf.is_grad_enabled()
    assert mf.is_grad_enabled()
    mf.set_grad_enabled(False)
    try:
        assert not mf.is_grad_enabled()
        with mf.set_grad_enabled(True):
            assert mf.is_grad_enabled()
        assert not mf.is_grad_enabled()
    finally:
        mf.set_grad_enabled(True)

    @mf.set_grad_enabled(False)
    def inside() -> bool:
        return mf.is_grad_enabled()

    assert mf.is_grad_enabled() and not inside() and mf.is_grad_enabled()


def test_no_grad_and_enable_grad_as_decorators() -> None:
    @mf.no_grad
    def bare() -> bool:
        return mf.is_grad_enabled()

    @mf.no_grad()
    def called() -> bool:
        return mf.is_grad_enabled()

    @mf.enable_grad
    def enabled() -> bool:
        return mf.is_grad_enabled()

    assert not bare() and not called()
    with mf.no_grad():
        assert enabled()
    assert mf.is_grad_enabled()


def test_inference_mode() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    assert not mf.is_inference_mode_enabled()
    with mf.inference_mode():
        assert mf.is_inference_mode_enabled() and not mf.is_grad_enabled()
        y = x * 2
        with mf.inference_mode(False):
            assert not mf.is_inference_mode_enabled()
    assert not y.requires_grad and mf.is_grad_enabled()

    @mf.inference_mode()
    def predict(t: Any) -> Any:
        return t * 2

    assert not predict(x).requires_grad and mf.is_grad_enabled()


def test_requires_grad_chains_and_hooks(backend: Any) -> None:
    x = mf.ones(3, backend=backend).requires_grad_()
    y = mf.zeros(3, backend=backend).requires_grad_(True).requires_grad_(False)
    assert x.requires_grad and not y.requires_grad
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.sum().item()))
    (x * 2).sum().backward()
    handle.remove()
    assert seen == [6.0]


# ---- tensor ** tensor and number ** tensor -------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(pair=broadcastable_shapes(3, 3), data=st.data())
def test_tensor_power_of_tensor(backend: Any, dtype: str, pair: Any, data: Any) -> None:
    a = data.draw(arrays(pair[0], 0.1, 2.0))
    b = data.draw(arrays(pair[1], -2.0, 2.0))
    check_against_torch(lambda lib, x, y: x**y, [a, b], backend, dtype)
    check_against_torch(lambda lib, x, y: lib.pow(x, y) * x.pow(y), [a, b], backend, dtype)


def test_power_edge_values_like_torch(backend: Any) -> None:
    base = np.array([0.0, 0.0, 0.0, -2.0, -2.0, 1.5])
    exponent = np.array([2.0, 0.0, -1.0, 3.0, 0.5, 0.0])
    check_against_torch(lambda lib, x, y: x**y, [base, exponent], backend)


@pytest.mark.parametrize("number", [2.5, 2, 0.0, 0, -2.0, -1, 1.0])
def test_number_power_of_tensor(backend: Any, number: float) -> None:
    exponent = np.array([2.0, 0.5, -1.0, 0.0, 3.0])
    check_against_torch(lambda lib, t: number**t, [exponent], backend)
    check_against_torch(lambda lib, t: lib.pow(number, t), [exponent], backend)


def test_integer_powers(backend: Any) -> None:
    base = np.array([0, -1, -1, 2, 1, 3])
    exponent = np.array([2, -1, -2, -3, -5, 3])
    check_against_torch(lambda lib, b, e: b**e, [base, exponent], backend)
    check_against_torch(lambda lib, e: 2**e, [np.array([0, 3, 5])], backend)
    # minifw's default float dtype is float64 (PyTorch's float32): compare in float64
    check_against_torch(lambda lib, e: (2.0**e).double(), [np.array([0, 3, 5])], backend)
    check_against_torch(
        lambda lib, b: (b ** lib.tensor(2.0).to(b.device)).double(), [np.array([1, 2])], backend
    )


def test_exponent_gradient_is_not_dropped(backend: Any) -> None:
    p = mf.tensor(2.0, backend=backend, requires_grad=True)
    x = mf.tensor([1.0, 3.0], backend=backend, requires_grad=True)
    (x**p).sum().backward()
    assert p.grad is not None
    np.testing.assert_allclose(p.grad.item(), 9.0 * np.log(3.0))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])


# ---- autograd.functional ------------------------------------------------------------------


def _f(lib: Any, x: Any, y: Any) -> Any:
    return (x.sin() * y).sum() + (x * x * y).sum()


def _vec(lib: Any, x: Any) -> Any:
    return x.tanh() * x.sum()


FUNCTIONAL = {
    "jacobian": lambda lib, x, y: lib.autograd.functional.jacobian(lambda a: _vec(lib, a), x),
    "jacobian of two": lambda lib, x, y: lib.autograd.functional.jacobian(
        lambda a, b: (a * b, b.exp()), (x, y)
    ),
    "hessian": lambda lib, x, y: lib.autograd.functional.hessian(lambda a: _f(lib, a, y), x),
    "hessian of two": lambda lib, x, y: lib.autograd.functional.hessian(
        lambda a, b: _f(lib, a, b), (x, y)
    ),
    "vjp": lambda lib, x, y: lib.autograd.functional.vjp(lambda a: _vec(lib, a), x, y),
    "jvp": lambda lib, x, y: lib.autograd.functional.jvp(lambda a: _vec(lib, a), x, y),
    "hvp": lambda lib, x, y: lib.autograd.functional.hvp(lambda a: _f(lib, a, a), x, y),
    "vhp": lambda lib, x, y: lib.autograd.functional.vhp(lambda a: _f(lib, a, a), x, y),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_autograd_functional_like_torch(backend: Any, name: str) -> None:
    x = np.array([0.3, -1.2, 0.8])
    y = np.array([1.5, 0.5, -0.7])
    check_against_torch(FUNCTIONAL[name], [x, y], backend, grad=False)


def test_functional_module_imports() -> None:
    from minifw.autograd.functional import hessian

    assert hessian is mf.autograd.functional.hessian
