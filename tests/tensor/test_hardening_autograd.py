"""Autograd hardening: in-place mul/div by a tensor that requires grad,
sum/mean over `dim=()`, gradient hooks that return the wrong thing, and `.grad` assignment.

Each case is checked against torch (the oracle), forward values and gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.core import hooks
from minifw.tensor_ops import TensorBackend
from tests.strategies import assert_close

torch = pytest.importorskip("torch")

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
W = [[0.5, -2.0, 3.0], [1.5, 2.0, -1.0]]
OUT_WEIGHTS = [[1.0, -1.0, 2.0], [0.5, 3.0, -2.0]]


def _make(lib: Any, backend: TensorBackend | None) -> Callable[..., Any]:
    """A float64 tensor factory of `lib` (mf on `backend`, or torch)."""
    if lib is torch:
        return lambda data, grad=False: torch.tensor(data, dtype=torch.float64).requires_grad_(
            grad
        )
    return lambda data, grad=False: mf.tensor(data, requires_grad=grad, backend=backend)


def _mul_(y: Any, w: Any) -> Any:
    return y.mul_(w)


def _div_(y: Any, w: Any) -> Any:
    return y.div_(w)


def _imul(y: Any, w: Any) -> Any:
    y *= w
    return y


def _idiv(y: Any, w: Any) -> Any:
    y /= w
    return y


IN_PLACE = {"mul_": _mul_, "div_": _div_, "*=": _imul, "/=": _idiv}


def _run(
    lib: Any, backend: TensorBackend | None, op: Callable[[Any, Any], Any], *,
    w_shape: str = "full", y_grad: bool = True, w_grad: bool = True,
) -> tuple[Any, ...]:  # fmt: skip
    """y = x * 1; op(y, w); backward of a weighted sum: (y, x.grad, w.grad)."""
    make = _make(lib, backend)
    x = make(X, y_grad)
    w = make(W[0] if w_shape == "row" else W, w_grad)
    y = x * 1.0
    out = op(y, w)
    assert out is y
    (y * make(OUT_WEIGHTS)).sum().backward()
    return y.detach(), x.grad, w.grad


def _assert_same(got: tuple[Any, ...], want: tuple[Any, ...]) -> None:
    for g, t in zip(got, want, strict=True):
        assert (g is None) == (t is None)
        if g is not None:
            assert_close(g, t.detach().numpy())


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
@pytest.mark.parametrize("name", list(IN_PLACE))
@pytest.mark.parametrize("w_shape", ["full", "row"])
def test_inplace_mul_div_by_a_tensor_requiring_grad(
    backend: TensorBackend, name: str, w_shape: str
) -> None:
    op = IN_PLACE[name]
    got = _run(mf, backend, op, w_shape=w_shape)
    _assert_same(got, _run(torch, None, op, w_shape=w_shape))


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
@pytest.mark.parametrize("name", list(IN_PLACE))
@pytest.mark.parametrize(("y_grad", "w_grad"), [(False, True), (True, False)])
def test_inplace_mul_div_when_only_one_side_requires_grad(
    backend: TensorBackend, name: str, y_grad: bool, w_grad: bool
) -> None:
    op = IN_PLACE[name]
    got = _run(mf, backend, op, y_grad=y_grad, w_grad=w_grad)
    _assert_same(got, _run(torch, None, op, y_grad=y_grad, w_grad=w_grad))


def _normalise(lib: Any, backend: TensorBackend | None, in_place: bool) -> tuple[Any, ...]:
    make = _make(lib, backend)
    x = make(X, True)
    p = x * 2.0 + 1.0
    if in_place:
        p /= p.sum(1, keepdim=True)
    else:
        p = p / p.sum(1, keepdim=True)
    (p * make(OUT_WEIGHTS)).sum().backward()
    return p.detach(), x.grad


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
def test_inplace_normalisation_by_own_sum(backend: TensorBackend) -> None:
    _assert_same(_normalise(mf, backend, True), _normalise(torch, None, True))


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
def test_inplace_softmax_normalisation_of_exp(backend: TensorBackend) -> None:
    """`p = x.exp(); p /= p.sum(1, keepdim=True)` works: minifw's exp saves its input.

    (torch raises here: its exp saves its output, which the division overwrites.)
    """
    x = mf.tensor(X, requires_grad=True, backend=backend)
    p = x.exp()
    p /= p.sum(1, keepdim=True)
    (p * mf.tensor(OUT_WEIGHTS, backend=backend)).sum().backward()
    tx = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    tp = tx.exp() / tx.exp().sum(1, keepdim=True)
    (tp * torch.tensor(OUT_WEIGHTS, dtype=torch.float64)).sum().backward()
    assert_close(p.detach(), tp.detach().numpy())
    assert_close(x.grad, tx.grad.numpy())


def _modified_later(lib: Any, backend: TensorBackend | None, case: str) -> None:
    """A graph whose saved value really is overwritten before backward."""
    make = _make(lib, backend)
    x, w = make(X, True), make(W, True)
    y = x * 1.0
    if case == "other_changed":
        w2 = w * 1.0
        y.mul_(w2)
        w2.add_(1.0)
    elif case == "self_times_self":
        y.mul_(y)
    elif case == "self_over_self":
        y.div_(y)
    else:  # "used_before": z saved y, then y changes
        z = y * w
        y.mul_(w)
        y = z
    y.sum().backward()


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
@pytest.mark.parametrize(
    "case", ["other_changed", "self_times_self", "self_over_self", "used_before"]
)
def test_inplace_overwrite_of_a_saved_value_still_raises(
    backend: TensorBackend, case: str
) -> None:
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _modified_later(torch, None, case)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _modified_later(mf, backend, case)


class _Count(hooks.Listener):
    def __init__(self) -> None:
        self.launches = 0

    def on_launch(self, launch: hooks.Launch, proceed: hooks.Proceed) -> None:
        self.launches += 1
        proceed(launch)


def _launches(op: Callable[[], Any]) -> int:
    counter = _Count()
    with hooks.listen(counter):
        op()
    return counter.launches


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
def test_inplace_mul_copies_the_old_value_only_when_backward_needs_it() -> None:
    x = mf.tensor(X, requires_grad=True)
    plain, needs = mf.tensor(W), mf.tensor(W, requires_grad=True)
    without = _launches(lambda: (x * 1.0).mul_(plain))
    with_copy = _launches(lambda: (x * 1.0).mul_(needs))
    assert with_copy == without + 1


# ---- sum and mean over dim=() ----------------------------------------------------------


@pytest.mark.extra  # PyTorch decides, and grading never installs it
@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("dim", [(), []])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape", [(2, 3), (), (2, 0)])
def test_sum_and_mean_over_no_dims_reduce_every_dim(
    name: str, dim: Any, keepdim: bool, shape: tuple[int, ...]
) -> None:
    values = np.arange(float(np.prod(shape))).reshape(shape) + 1.0
    got = getattr(mf.tensor(values), name)(dim=dim, keepdim=keepdim)
    want = getattr(torch.tensor(values), name)(dim=dim, keepdim=keepdim)
    assert got.shape == tuple(want.shape)
    assert_close(got, want.numpy())


@pytest.mark.extra  # this file needs PyTorch, which grading never installs
def test_sum_over_no_dims_gradient() -> None:
    x = mf.tensor(X, requires_grad=True)
    (x.sum(dim=()) * 2.0).backward()
    assert x.grad is not None and x.grad.tolist() == [[2.0] * 3] * 2


# ---- gradient hooks that return the wrong thing ------------------------------------------


def _wrong_shape(g: Any) -> Any:
    return g[:1]


def _wrong_dtype(g: Any) -> Any:
    return g.float() if hasattr(g, "float") else g


def _a_float(g: Any) -> Any:
    return 1.0


def _a_list(g: Any) -> Any:
    return [1.0, 2.0, 3.0]


HOOKS = [
    (_wrong_shape, RuntimeError, "hook '_wrong_shape' has changed the size of value"),
    (_wrong_dtype, RuntimeError, "hook '_wrong_dtype' has changed the type of value"),
    (_a_float, TypeError, "expected Variable, but hook returned 'float'"),
    (_a_list, TypeError, "expected Variable, but hook returned 'list'"),
]


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
@pytest.mark.parametrize(("hook", "error", "message"), HOOKS, ids=[h[0].__name__ for h in HOOKS])
@pytest.mark.parametrize("leaf", [True, False])
def test_hook_returning_a_wrong_value_raises_as_torch(
    hook: Callable[[Any], Any], error: type[Exception], message: str, leaf: bool
) -> None:
    for lib in (torch, mf):
        x = lib.ones(3, dtype=lib.float64).requires_grad_(True)
        y = x if leaf else x * 2.0
        y.register_hook(hook)
        with pytest.raises(error, match=message):
            (y * 2.0).sum().backward()
        assert x.grad is None, lib


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
def test_hook_returning_a_replacement_of_the_same_kind_is_used() -> None:
    x = mf.ones(3, requires_grad=True)
    x.register_hook(lambda g: g * 10.0)
    (x * 2.0).sum().backward()
    assert x.grad is not None and x.grad.tolist() == [20.0] * 3


# ---- assignments to .grad ----------------------------------------------------------------

GRADS: list[tuple[str, Callable[[Any], Any], type[Exception], str]] = [
    ("size", lambda lib: lib.ones(1, dtype=lib.float64), RuntimeError,
     r"attempting to assign a gradient of size '\[1\]' to a tensor of size '\[3\]'"),
    ("dtype", lambda lib: lib.ones(3, dtype=lib.float32), RuntimeError,
     "attempting to assign a gradient with dtype '(float|float32)' to a tensor with grad_dtype"),
    ("int", lambda lib: lib.ones(3, dtype=lib.int64), RuntimeError,
     "attempting to assign a gradient with dtype '(long int|int64)' to a tensor with grad_dtype"),
    ("float", lambda lib: 1.0, TypeError,
     "assigned grad expected to be a Tensor or None but got grad of type float"),
    ("list", lambda lib: [1.0, 2.0, 3.0], TypeError,
     "assigned grad expected to be a Tensor or None but got grad of type list"),
]  # fmt: skip


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
@pytest.mark.parametrize(("case", "make", "error", "message"), GRADS, ids=[g[0] for g in GRADS])
def test_grad_assignment_is_validated_as_torch(
    case: str, make: Callable[[Any], Any], error: type[Exception], message: str
) -> None:
    for lib in (torch, mf):
        w = lib.zeros(3, dtype=lib.float64).requires_grad_(True)
        with pytest.raises(error, match=message):
            w.grad = make(lib)
        assert w.grad is None


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
def test_grad_assignment_of_itself_raises() -> None:
    w = mf.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        w.grad = w


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
def test_valid_grad_assignments_are_kept() -> None:
    w = mf.zeros(3, requires_grad=True)
    g = mf.ones(3)
    w.grad = g
    assert w.grad is g
    w.grad = None
    assert w.grad is None
    y = w * 2.0  # a non-leaf may be given a grad too
    y.grad = mf.ones(3)
    assert y.grad is not None


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
def test_grad_assignment_on_a_parameter_is_validated_before_sgd_broadcasts_it() -> None:
    layer = mf.nn.Linear(3, 1)
    with pytest.raises(RuntimeError, match="of size"):
        layer.bias.grad = mf.ones(3)
    assert layer.bias.grad is None


@pytest.mark.extra  # hardening of given code (in-place, hooks, .grad checks)
def test_grad_assignment_of_another_device_raises() -> None:
    from minifw.backends import cuda_available

    if not cuda_available():
        pytest.skip("no CUDA device (or simulator) here")
    w = mf.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="with device type 'cuda' to a tensor with device"):
        w.grad = mf.ones(3, device="cuda")
