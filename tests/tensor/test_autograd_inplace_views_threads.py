"""Views after an in-place op on their base, and backward passes in several threads at once.

A view shares its base's cells, so an in-place op on the base changes the view: its
gradient must then flow through the base's new history, as PyTorch's does. Gradients
accumulated into one `.grad` from several threads must all arrive.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minifw as mf

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.extra

Case = Callable[[Any, Any], Any]

# Each case: an in-place change of a base after a view of it was taken, then a loss.
VIEW_CASES: dict[str, Case] = {
    "slice, mul_ on the base": lambda lib, x: _after(lib, x, lambda y: y[1:], lambda y: y.mul_(5)),
    "slice, add_ of a tensor": lambda lib, x: _after(
        lib, x, lambda y: y[:2], lambda y: y.add_(x * x)
    ),
    "view of a view": lambda lib, x: _after(
        lib, x, lambda y: y[1:].unsqueeze(0).t(), lambda y: y.mul_(y.detach() + 1.0)
    ),
    "setitem on the base": lambda lib, x: _after(
        lib, x, lambda y: y[::2], lambda y: y.__setitem__(0, x[1] * 3.0)
    ),
    "reshape view, div_": lambda lib, x: _after(
        lib, x, lambda y: y.view(3, 1), lambda y: y.div_(x + 4.0)
    ),
}


def _after(lib: Any, x: Any, view: Callable[[Any], Any], change: Callable[[Any], Any]) -> Any:
    y = x * 2.0
    v = view(y)
    change(y)
    return (v * v).sum()


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_a_view_sees_its_bases_in_place_history(name: str) -> None:
    values = [1.0, 2.0, 3.0]
    grads = []
    for lib in (mf, torch):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        VIEW_CASES[name](lib, x).backward()
        grads.append(np.asarray(x.grad.detach().numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_the_example_of_a_slice_after_mul_() -> None:
    x = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    v = y[1:]
    y.mul_(5)
    v.sum().backward()
    assert x.grad is not None
    assert x.grad.tolist() == [0.0, 10.0, 10.0]


def test_uses_of_a_view_before_the_change_keep_the_old_values() -> None:
    for lib in (mf, torch):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = x * 2.0
        v = y[1:]
        before = (v * 3.0).sum()  # uses v before the change (saving nothing of it)
        y.mul_(5.0)
        after = v.sum()
        (before + after).backward()
        if lib is mf:
            mine = x.grad.numpy()
        else:
            np.testing.assert_allclose(mine, x.grad.numpy(), rtol=1e-12)


def test_a_view_is_still_a_view_of_the_changed_base() -> None:
    x = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    v = y[1:]
    y.mul_(5)
    assert v._version == y._version > 0
    (g,) = mf.autograd.grad(v.sum(), x)
    assert g.tolist() == [0.0, 10.0, 10.0]


@pytest.mark.parametrize("run", range(3))
def test_backward_in_four_threads_loses_no_gradient(run: int) -> None:
    leaf = mf.tensor([1.0, 2.0], requires_grad=True)
    threads, calls = 4, 500
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(calls):
                (leaf * 1.0).sum().backward()
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    assert leaf.grad is not None
    assert leaf.grad.tolist() == [threads * calls, threads * calls]
