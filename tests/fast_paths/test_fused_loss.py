"""The one-kernel softmax cross-entropy (fast_paths/fused_loss.py) against the composed ops.

`F.cross_entropy` takes it on the fast backend for small batches; with `fused_loss`
switched off it composes log_softmax and nll_loss as before, which the PyTorch oracle tests
of tests/nn/test_losses.py check. Here both ways must agree, value and gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw.tools.profiler import profile
from tests.fast_paths.switches import turned_off

pytestmark = pytest.mark.extra  # an expert fast path: no task teaches it

rng = np.random.default_rng(7)


def _loss_and_grad(logits: np.ndarray, labels: np.ndarray, fused: bool, **kwargs: Any) -> Any:
    """cross_entropy's value and d(sum of it)/d(logits), fused or composed."""
    with turned_off("fused_loss", not fused):
        x = mf.tensor(logits, requires_grad=True)
        loss = F.cross_entropy(x, mf.tensor(labels), **kwargs)
        loss.sum().backward()
    assert x.grad is not None
    return loss.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_fused_cross_entropy_agrees_with_the_composed_ops(dtype: Any, reduction: str) -> None:
    logits = (rng.standard_normal((9, 5)) * 4).astype(dtype)
    labels = rng.integers(0, 5, 9)
    labels[[2, 6]] = -100  # ignored rows: no loss, no gradient
    tol = 1e-5 if dtype == np.float32 else 1e-12
    threes = np.where(labels == -100, 3, labels)
    for targets, ignore in ((labels, -100), (threes, 3)):
        kwargs = {"reduction": reduction, "ignore_index": ignore}
        fused = _loss_and_grad(logits, targets, True, **kwargs)
        composed = _loss_and_grad(logits, targets, False, **kwargs)
        for got, want in zip(fused, composed, strict=True):
            assert got.dtype == want.dtype == dtype
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    ignored_rows = _loss_and_grad(logits, labels, True, reduction=reduction)[1][[2, 6]]
    assert not ignored_rows.any()


def test_fused_cross_entropy_is_one_launch_each_way() -> None:
    x = mf.tensor(rng.standard_normal((64, 10)), requires_grad=True)
    labels = mf.tensor(rng.integers(0, 10, 64))
    with profile() as prof:
        F.cross_entropy(x, labels).backward()
    names = [event.name for event in prof.events]
    assert names == ["fused[cross_entropy]", "fused[cross_entropy_backward]"], names


def test_large_or_weighted_inputs_take_the_composed_ops() -> None:
    big = mf.tensor(rng.standard_normal((4096, 10)))
    small = mf.tensor(rng.standard_normal((8, 10)))
    for x, extra in ((big, {}), (small, {"weight": mf.ones(10)}),
                     (small, {"label_smoothing": 0.1})):  # fmt: skip
        labels = mf.tensor(rng.integers(0, 10, x.shape[0]))
        with profile() as prof:
            F.cross_entropy(x, labels, **extra)
        assert not any("cross_entropy" in event.name for event in prof.events)


def test_a_mean_over_ignored_targets_only_is_nan_with_zero_gradients() -> None:
    # As PyTorch: nan for the mean of no losses, and no gradient from the ignored rows.
    x = mf.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    with profile() as prof:
        loss = F.cross_entropy(x, mf.tensor([-100, -100, -100]))
        loss.backward()
    assert np.isnan(loss.item())
    assert x.grad is not None and not x.grad.numpy().any()
    assert "fused[cross_entropy_backward]" in [event.name for event in prof.events]


def test_bad_labels_raise_before_any_kernel() -> None:
    x = mf.tensor(rng.standard_normal((3, 4)))
    with profile() as prof, pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, mf.tensor([0, 4, 1]))
    assert not [event for event in prof.events if event.name != "to_host"]


def test_a_logit_changed_in_place_before_backward_is_refused() -> None:
    x = mf.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    y = x * 1.0
    loss = F.cross_entropy(y, mf.tensor([0, 1, 2]))
    with mf.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_second_derivatives_through_the_fused_loss_match_the_composed_ops() -> None:
    logits, labels = rng.standard_normal((4, 3)), np.array([0, 2, -100, 1])
    results = []
    for fused in (True, False):
        with turned_off("fused_loss", not fused):
            x = mf.tensor(logits, requires_grad=True)
            (grad,) = mf.autograd.grad(F.cross_entropy(x, mf.tensor(labels)), x, create_graph=True)
            (grad * grad).sum().backward()
        assert x.grad is not None
        results.append((grad.detach().numpy(), x.grad.numpy()))
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_second_derivatives_of_per_row_losses_match_pytorch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch, the oracle here, is missing")
    logits, labels = rng.standard_normal((6, 4)), np.array([0, 3, 1, -100, 2, 2])
    weights = rng.standard_normal((6, 2))
    x = mf.tensor(logits, requires_grad=True)
    per_row = F.cross_entropy(x, mf.tensor(labels), reduction="none")
    strided = mf.tensor(weights)[:, 0]  # an incoming gradient with a stride of 2
    (grad,) = mf.autograd.grad(per_row, x, grad_outputs=strided, create_graph=True)
    (grad * grad).sum().backward()
    tx = torch.tensor(logits, requires_grad=True)
    t_rows = torch.nn.functional.cross_entropy(tx, torch.tensor(labels), reduction="none")
    (t_grad,) = torch.autograd.grad(
        t_rows, tx, grad_outputs=torch.tensor(weights[:, 0]), create_graph=True
    )
    (t_grad * t_grad).sum().backward()
    assert x.grad is not None and tx.grad is not None
    np.testing.assert_allclose(grad.detach().numpy(), t_grad.detach().numpy(), atol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-14)
