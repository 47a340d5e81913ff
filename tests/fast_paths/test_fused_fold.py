"""The one-kernel fold (fast_paths/fused_fold.py) against the fold of nn/conv.py's task.

`Unfold.backward` takes the fused kernel on the fast backend for small 2-D folds whose
windows overlap; with `fused_fold` switched off it runs the task's fold (one
in-place add per kernel offset). Both add the same values in the same order: their
gradients must be equal, cell for cell.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.nn import conv
from minifw.tools.profiler import profile
from tests.fast_paths.switches import turned_off

pytestmark = pytest.mark.extra  # an expert fast path: no task teaches it

rng = np.random.default_rng(12)


def _unfold_grad(x: np.ndarray, kernel: Any, stride: Any, padding: Any, fused: bool) -> Any:
    """d(sum(w * unfold(x)))/dx for random weights w, fused fold or the task's."""
    with turned_off("fused_fold", not fused), profile() as prof:
        t = mf.tensor(x, requires_grad=True)
        cols = conv.unfold(t, kernel, stride, padding)
        weights = mf.tensor(np.random.default_rng(0).standard_normal(cols.shape), dtype=t.dtype)
        (cols * weights).sum().backward()
    assert t.grad is not None
    return t.grad.numpy(), [event.name for event in prof.events]


CASES = [  # (input shape, kernel, stride, padding): windows that overlap
    ((2, 3, 8, 8), (3, 3), (1, 1), (1, 1)),
    ((1, 2, 7, 9), (3, 2), (2, 1), (1, 0)),
    ((3, 1, 5, 6), (4, 4), (3, 2), (2, 1)),
    ((2, 2, 6, 6), (2, 3), (1, 2), (0, 1)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "kernel", "stride", "padding"), CASES)
def test_the_fused_fold_equals_the_tasks_fold(
    dtype: Any, shape: Any, kernel: Any, stride: Any, padding: Any
) -> None:
    x = rng.standard_normal(shape).astype(dtype)
    fused, fused_launches = _unfold_grad(x, kernel, stride, padding, True)
    task, task_launches = _unfold_grad(x, kernel, stride, padding, False)
    assert fused.dtype == task.dtype == dtype
    np.testing.assert_array_equal(fused, task)
    assert fused_launches.count("fused[fold]") == 1 and "fused[fold]" not in task_launches
    assert len(fused_launches) < len(task_launches)


def test_windows_that_do_not_overlap_keep_the_tasks_one_copy() -> None:
    x = rng.standard_normal((2, 3, 8, 8))
    _, launches = _unfold_grad(x, (2, 2), (2, 2), (0, 0), True)
    assert "fused[fold]" not in launches


def test_a_conv_gradient_through_the_fused_fold_matches_pytorch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch, the oracle here, is missing")
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 3))
    ours = mf.tensor(x, requires_grad=True)
    with profile() as prof:
        mf.nn.functional.conv2d(ours, mf.tensor(w), padding=1, stride=(1, 2)).sum().backward()
    assert "fused[fold]" in [event.name for event in prof.events]
    theirs = torch.tensor(x, requires_grad=True)
    torch.nn.functional.conv2d(theirs, torch.tensor(w), padding=1, stride=(1, 2)).sum().backward()
    assert ours.grad is not None and theirs.grad is not None
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_big_folds_take_the_tasks_parallel_kernels() -> None:
    x = rng.standard_normal((8, 8, 24, 24))  # 36864 cells: PARALLEL_FROM or more
    _, launches = _unfold_grad(x, (3, 3), (1, 1), (1, 1), True)
    assert "fused[fold]" not in launches
