"""The one-kernel 2-D max pooling (fast_paths/fused_pool.py) against the task's path.

`max_pool2d` takes `FusedMaxPool2d` on the fast backend for batched float inputs whose
windows neither overlap nor cross padding; with `fused_pool` switched off it runs
conv.max_pool2d (windows as dims, max and argmax along them). Values and gradients must
agree exactly, nans and ties included.
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

rng = np.random.default_rng(13)


def _pool(x: np.ndarray, fused: bool, **kwargs: Any) -> Any:
    """max_pool2d's values, d(sum(values * w))/dx and launch names, fused or the task's."""
    with turned_off("fused_pool", not fused), profile() as prof:
        t = mf.tensor(x, requires_grad=True)
        out = F.max_pool2d(t, **kwargs)
        weights = np.random.default_rng(1).standard_normal(out.shape)
        (out * mf.tensor(weights, dtype=t.dtype)).sum().backward()
    assert t.grad is not None
    return out.detach().numpy(), t.grad.numpy(), [event.name for event in prof.events]


def _with_ties_and_nans(shape: tuple[int, ...], dtype: Any, nans: int = 3) -> np.ndarray:
    x = rng.integers(-2, 3, shape).astype(dtype)  # many ties
    x.flat[rng.choice(x.size, nans, replace=False)] = np.nan
    x.flat[rng.choice(x.size, 3, replace=False)] = -np.inf
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "kwargs",
    [{"kernel_size": 2}, {"kernel_size": (2, 3)}, {"kernel_size": 2, "stride": 3},
     {"kernel_size": (3, 1), "stride": (4, 2)}],
)  # fmt: skip
def test_the_fused_max_pool_equals_the_tasks(dtype: Any, kwargs: dict[str, Any]) -> None:
    x = _with_ties_and_nans((2, 3, 9, 8), dtype)
    fused = _pool(x, True, **kwargs)
    task = _pool(x, False, **kwargs)
    np.testing.assert_array_equal(fused[0], task[0])
    np.testing.assert_array_equal(fused[1], task[1])
    assert fused[2].count("fused[max_pool2d]") == 1 and "fused[max_pool2d]" not in task[2]
    assert fused[2].count("fused[max_pool2d_backward]") == 1


@pytest.mark.parametrize(
    "kwargs", [{"kernel_size": 3, "stride": 1}, {"kernel_size": 2, "padding": 1}]
)
def test_overlapping_or_padded_windows_take_the_tasks_path(kwargs: dict[str, Any]) -> None:
    fused = _pool(rng.standard_normal((2, 2, 6, 6)), True, **kwargs)
    assert not any("max_pool2d" in name for name in fused[2])


def test_gradients_of_the_fused_max_pool_match_pytorch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch, the oracle here, is missing")
    # One nan: in a window with two, PyTorch's CPU kernel takes the last, minifw the first.
    x = _with_ties_and_nans((2, 2, 6, 7), np.float64, nans=1)
    values, grad, launches = _pool(x, True, kernel_size=(2, 3))
    assert "fused[max_pool2d]" in launches
    t = torch.tensor(x, requires_grad=True)
    out = torch.nn.functional.max_pool2d(t, (2, 3))
    weights = np.random.default_rng(1).standard_normal(out.shape)
    (out * torch.tensor(weights)).sum().backward()
    assert t.grad is not None
    np.testing.assert_array_equal(values, out.detach().numpy())
    np.testing.assert_array_equal(grad, t.grad.numpy())


def test_second_derivatives_through_the_fused_max_pool_match_the_tasks() -> None:
    x = rng.standard_normal((2, 2, 4, 6))
    results = []
    for fused in (True, False):
        with turned_off("fused_pool", not fused):
            t = mf.tensor(x, requires_grad=True)
            out = F.max_pool2d(t * t, 2)
            (grad,) = mf.autograd.grad(out.sum(), t, create_graph=True)
            (grad * grad).sum().backward()
        assert t.grad is not None
        results.append((grad.detach().numpy(), t.grad.numpy()))
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
