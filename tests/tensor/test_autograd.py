"""Autograd semantics of tensors (task 2.4), each error with its PyTorch-like message."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.autograd import Function, FunctionCtx, GradcheckError, gradcheck

# the tensor autograd plumbing (accumulation, hooks, flags, user Functions, checks) is given
pytestmark = pytest.mark.extra


def test_leaves_get_grad_and_it_accumulates() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    assert x.is_leaf and x.grad is None and x.grad_fn is None
    (x * x).sum().backward()
    assert x.grad is not None and x.grad.tolist() == [2.0, 4.0]
    (x * 3.0).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    x.grad = None
    x.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert not x.grad.requires_grad


def test_non_leaves_keep_no_grad_unless_retained() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    z = y * y
    y.retain_grad()
    assert y.retains_grad and not y.is_leaf and y.requires_grad
    z.sum().backward()
    assert y.grad is not None and y.grad.tolist() == [4.0, 8.0]
    assert z.grad is None
    x.retain_grad()  # a no-op on a leaf
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad"):
        mf.zeros(2).retain_grad()


def test_backward_needs_a_one_element_tensor_or_a_gradient() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        y.backward()
    y.backward(mf.tensor([1.0, 10.0]))
    assert x.grad is not None and x.grad.tolist() == [3.0, 30.0]
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 1.0).backward(mf.ones(3))
    (x * 1.0).sum(0, keepdim=True).backward()  # one element, any shape
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        mf.ones(1).backward()


def test_second_backward_raises_unless_graph_retained() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.tolist() if x.grad is not None else None
    y.backward()
    assert x.grad is not None and x.grad.tolist() == [2 * g for g in first]  # type: ignore[union-attr]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_grad_fn_names_and_next_functions() -> None:
    a = mf.tensor([1.0, 2.0], requires_grad=True)
    b = mf.tensor([3.0, 4.0])
    c = a * b
    d = c.sum()
    assert c.grad_fn is not None and c.grad_fn.name() == "MulBackward"
    assert d.grad_fn is not None and d.grad_fn.name() == "SumBackward"
    assert repr(d.grad_fn) == "<SumBackward>"
    ((node, _),) = d.grad_fn.next_functions
    assert node is c.grad_fn
    (acc, _), (none, _) = c.grad_fn.next_functions
    assert acc.name() == "AccumulateGrad" and acc.variable is a and none is None
    assert c.grad_fn.next_functions[0][0] is acc  # the same node each time
    for reflected in (2.0 * a, 2.0 + a):  # the number is the second operand, as in PyTorch
        assert reflected.grad_fn is not None
        (first, _), (second, _) = reflected.grad_fn.next_functions
        assert first is acc and second is None
    names = {
        "AddBackward": a + 1, "SubBackward": a - b, "DivBackward": a / b, "NegBackward": -a,
        "PowBackward": a**2, "ExpBackward": a.exp(), "LogBackward": a.log(),
        "SigmoidBackward": a.sigmoid(), "ReluBackward": a.relu(), "TanhBackward": a.tanh(),
        "SqrtBackward": a.sqrt(), "AbsBackward": a.abs(), "MatMulBackward": a @ b,
        "MaxBackward": a.max(), "ViewBackward": a.view(2, 1), "PermuteBackward": a[None].T,
        "IndexBackward": a[0], "ExpandBackward": a.expand(2, 2), "CatBackward": mf.cat([a, a]),
        "WhereBackward": mf.where(b > 3, a, b), "CopyBackward": a.clone(),
        "CastBackward": a.float(),
    }  # fmt: skip
    for name, t in names.items():
        assert t.grad_fn is not None and t.grad_fn.name() == name


def test_no_grad_enable_grad_and_set_grad_enabled() -> None:
    x = mf.tensor([1.0], requires_grad=True)
    assert mf.is_grad_enabled()
    with mf.no_grad():
        assert not mf.is_grad_enabled()
        y = x * 2.0
        with mf.enable_grad():
            z = x * 2.0
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad

    @mf.no_grad()
    def untracked(t: mf.Tensor) -> mf.Tensor:
        return t * 2.0

    assert not untracked(x).requires_grad and mf.is_grad_enabled()
    mf.set_grad_enabled(False)
    try:
        assert not (x * 2.0).requires_grad
    finally:
        mf.set_grad_enabled(True)
    assert (x * 2.0).requires_grad


def test_detach_shares_storage_without_history() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d._data.base is y._data.base
    d[0] = 100.0
    assert y[0].item() == 100.0
    assert x.data.tolist() == [1.0, 2.0] and not x.data.requires_grad
    y.detach_()
    assert y.is_leaf and not y.requires_grad


def test_requires_grad_flags() -> None:
    x = mf.zeros(2)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    y = mf.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype"):
        mf.tensor([1, 2]).requires_grad_()


def test_inplace_on_leaf_requiring_grad_raises_outside_no_grad() -> None:
    w = mf.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in"):
        w += 1.0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.zero_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[0].mul_(2.0)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[0] = 5.0
    with mf.no_grad():
        w -= 0.5
        w[1] = 0.0
    assert w.tolist() == [0.5, 0.0] and w.is_leaf and w.requires_grad
    target = mf.zeros(2)
    target[0] = w[0] * 3.0  # recorded, as PyTorch does
    target.sum().backward()
    assert w.grad.tolist() == [3.0, 0.0]


def test_inplace_on_intermediate_records_the_new_value() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    z = y + 1.0  # recorded before the in-place op: must still see y = 2x
    y.mul_(3.0)
    assert y.grad_fn is not None and y.grad_fn.name() == "MulBackward"
    (y.sum() + z.sum()).backward()
    assert x.grad is not None and x.grad.tolist() == [8.0, 8.0]
    a = mf.zeros(2)
    a += x  # a constant leaf becomes part of the graph
    assert a.requires_grad and not a.is_leaf


def test_modifying_a_saved_tensor_breaks_its_backward() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    z = y.sigmoid()  # sigmoid's backward needs y
    y += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    w = x * 1.0
    v = w.detach()
    out = (w * w).sum()
    v.mul_(2.0)  # shares w's storage: the version counter is shared too
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        out.backward()


def test_inplace_on_a_view_of_a_tensor_in_the_graph_is_refused() -> None:
    x = mf.tensor([[1.0, 2.0]], requires_grad=True)
    y = x * 2.0
    with pytest.raises(
        RuntimeError, match="in-place operations on a view of a tensor that requires"
    ):
        y[0] += 1.0


class Cube(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, x: mf.Tensor) -> mf.Tensor:
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx: FunctionCtx, grad: mf.Tensor) -> mf.Tensor:
        (x,) = ctx.saved_tensors
        return grad * 3.0 * x * x


class ScaleBy(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, x: mf.Tensor, k: float) -> mf.Tensor:
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx: FunctionCtx, grad: mf.Tensor) -> tuple[mf.Tensor, None]:
        return grad * ctx.k, None


class WrongCube(Cube):
    @staticmethod
    def backward(ctx: FunctionCtx, grad: mf.Tensor) -> mf.Tensor:
        (x,) = ctx.saved_tensors
        return grad * 2.0 * x * x  # should be 3 x^2


def test_user_function_with_saved_tensors() -> None:
    x = mf.tensor([1.0, -2.0], requires_grad=True)
    y = Cube.apply(x)
    assert y.grad_fn is not None and y.grad_fn.name() == "CubeBackward"
    assert y.tolist() == [1.0, -8.0]
    y.sum().backward()
    assert x.grad is not None and x.grad.tolist() == [3.0, 12.0]
    assert gradcheck(Cube.apply, (mf.randn(3, requires_grad=True),))
    assert gradcheck(lambda t: ScaleBy.apply(t, 2.5), (mf.randn(2, 2, requires_grad=True),))
    assert not Cube.apply(mf.ones(2)).requires_grad


def test_user_function_mistakes_are_reported() -> None:
    class TwoGrads(ScaleBy):
        @staticmethod
        def backward(ctx: FunctionCtx, grad: mf.Tensor) -> Any:
            return grad

    class WrongShape(ScaleBy):
        @staticmethod
        def backward(ctx: FunctionCtx, grad: mf.Tensor) -> Any:
            return mf.ones(5), None

    x = mf.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        TwoGrads.apply(x, 2.0).sum().backward()
    with pytest.raises(
        RuntimeError, match="returned an invalid gradient at index 0 - got \\[5\\]"
    ):
        WrongShape.apply(x, 2.0).sum().backward()


def test_gradcheck_reports_a_wrong_backward() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongCube.apply, (x,))
    report = str(info.value)
    assert "Jacobian mismatch" in report
    assert "d output[1] / d input 0[1]: numerical 12, analytical 8" in report
    assert gradcheck(WrongCube.apply, (x,), raise_exception=False) is False
    with pytest.raises(ValueError, match="at least one input tensor with requires_grad"):
        gradcheck(lambda t: t, (mf.ones(2),))
    with pytest.raises(ValueError, match="stride 0"):
        gradcheck(lambda t: t * 1.0, (mf.ones(1).expand(3).detach().requires_grad_(),))


def test_gradcheck_keeps_non_contiguous_inputs_as_they_are() -> None:
    seen: list[tuple[int, ...]] = []

    def f(t: mf.Tensor) -> mf.Tensor:
        seen.append(t.stride())
        return (t * t).sum(0)

    x = mf.randn(3, 2).T.detach().requires_grad_()
    assert gradcheck(f, (x,))
    assert set(seen) == {(1, 2)}
    assert x.tolist() == x.detach().tolist()


def test_hooks_see_and_replace_gradients() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    seen: list[list[float]] = []
    handle = x.register_hook(lambda g: seen.append(g.tolist()))
    y = x * 2.0
    y.register_hook(lambda g: g * 10.0)
    y.sum().backward()
    assert seen == [[20.0, 20.0]] and x.grad is not None and x.grad.tolist() == [20.0, 20.0]
    handle.remove()
    (x * 1.0).sum().backward()
    assert len(seen) == 1


def test_long_chains_do_not_hit_the_recursion_limit() -> None:
    x = mf.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(1500):
        y = y * 1.0
    y.sum().backward()
    assert x.grad is not None and x.grad.tolist() == [1.0]
    assert np.isfinite(x.grad.numpy()).all()


# A leaf keeps a gradient computed during the backward without a copy, unless anything
# else can hold that tensor: every case below must still copy (no aliasing).


def _launches(fn: Any) -> list[str]:
    with mf.profiler.profile() as prof:
        fn()
    return [e.name for e in prof.events]


def _same_storage(a: mf.Tensor, b: mf.Tensor) -> bool:
    return a._data.base is b._data.base


def test_a_fresh_gradient_becomes_the_leaf_grad_without_a_copy() -> None:
    x = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = mf.tensor([2.0, 3.0, 4.0])
    assert "copy" not in _launches(lambda: (x * w).sum().backward())
    assert x.grad is not None and x.grad.tolist() == [2.0, 3.0, 4.0]
    x.grad = None
    assert "copy" not in _launches(lambda: (x * x).sum().backward())  # two parts, summed
    assert x.grad is not None and x.grad.tolist() == [2.0, 4.0, 6.0]


def test_one_upstream_gradient_fed_to_two_leaves_through_add_is_copied_for_each() -> None:
    a = mf.tensor([1.0, 2.0], requires_grad=True)
    b = mf.tensor([3.0, 4.0], requires_grad=True)
    g = mf.tensor([5.0, 6.0])
    (a + b).backward(g)
    assert a.grad is not None and b.grad is not None
    assert not _same_storage(a.grad, b.grad) and not _same_storage(a.grad, g)
    a.grad.zero_()
    assert b.grad.tolist() == [5.0, 6.0] and g.tolist() == [5.0, 6.0]


def test_the_gradient_argument_passed_through_is_copied() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    g = mf.tensor([3.0, 4.0])
    (x + 0.0).backward(g)  # Add hands g itself on to x
    assert x.grad is not None and not _same_storage(x.grad, g)
    g.mul_(10.0)
    assert x.grad.tolist() == [3.0, 4.0]
    mf.optim.SGD([x], lr=0.1).zero_grad(set_to_none=False)
    assert x.grad.tolist() == [0.0, 0.0] and g.tolist() == [30.0, 40.0]
    x.grad = None
    x.backward(g)  # the leaf itself is the root
    assert x.grad is not None and not _same_storage(x.grad, g)


def test_gradients_that_hooks_see_or_return_are_copied() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    kept = mf.tensor([7.0, 8.0])
    handle = x.register_hook(lambda g: kept)
    (x * 2.0).sum().backward()
    assert x.grad is not None and not _same_storage(x.grad, kept)
    handle.remove()
    seen: list[mf.Tensor] = []
    x.grad = None
    x.register_hook(seen.append)  # looks at the fresh gradient and keeps it
    (x * 3.0).sum().backward()
    assert x.grad is not None and not _same_storage(x.grad, seen[0])
    x.grad.zero_()
    assert seen[0].tolist() == [3.0, 3.0]
    y = mf.tensor([1.0, 2.0], requires_grad=True)
    z = y * 1.0
    z.register_hook(lambda g: kept)  # a non-leaf hook's tensor passes through Add to y
    (z + 0.0).sum().backward()
    assert y.grad is not None and not _same_storage(y.grad, kept)


def test_a_retained_gradient_and_the_leaf_gradient_do_not_share_storage() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    (y + 0.0).backward(mf.tensor([1.0, 1.0]))
    assert x.grad is not None and y.grad is not None
    assert not _same_storage(x.grad, y.grad)


def test_gradients_a_function_may_share_are_copied() -> None:
    stash = mf.tensor([9.0, 9.0])

    class Global(Function):  # not marked fresh_grads: whatever it returns is copied
        @staticmethod
        def forward(ctx: FunctionCtx, a: mf.Tensor) -> mf.Tensor:
            return a * 1.0

        @staticmethod
        def backward(ctx: FunctionCtx, grad: mf.Tensor) -> mf.Tensor:
            return stash

    class Twice(Function):  # fresh_grads, but one tensor returned for both inputs
        fresh_grads = True

        @staticmethod
        def forward(ctx: FunctionCtx, a: mf.Tensor, b: mf.Tensor) -> mf.Tensor:
            ctx.save_for_backward(a)
            return a + b

        @staticmethod
        def backward(ctx: FunctionCtx, grad: mf.Tensor) -> tuple[mf.Tensor, mf.Tensor]:
            fresh = grad * 2.0
            return fresh, fresh

    class Saved(Function):  # fresh_grads, but it hands back a saved tensor / a view
        fresh_grads = True

        @staticmethod
        def forward(ctx: FunctionCtx, a: mf.Tensor, b: mf.Tensor) -> mf.Tensor:
            ctx.save_for_backward(b)
            return a * 1.0

        @staticmethod
        def backward(ctx: FunctionCtx, grad: mf.Tensor) -> tuple[mf.Tensor, None]:
            (b,) = ctx.saved_tensors
            return b[1:], None

    x = mf.tensor([1.0, 2.0], requires_grad=True)
    Global.apply(x).sum().backward()
    assert x.grad is not None and not _same_storage(x.grad, stash)
    a = mf.tensor([1.0, 2.0], requires_grad=True)
    b = mf.tensor([3.0, 4.0], requires_grad=True)
    Twice.apply(a, b).sum().backward()
    assert a.grad is not None and b.grad is not None and not _same_storage(a.grad, b.grad)
    a.grad.zero_()
    assert b.grad.tolist() == [2.0, 2.0]
    c = mf.tensor([5.0], requires_grad=True)
    saved = mf.tensor([6.0, 7.0])
    Saved.apply(c, saved).sum().backward()
    assert c.grad is not None and not _same_storage(c.grad, saved)
    assert c.grad.tolist() == [7.0]
