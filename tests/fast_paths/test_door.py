"""`fast_ops.fast_path`, the one door of nn, optim and the compiler to the expert kernels."""

from __future__ import annotations

import subprocess
import sys

import pytest

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw import backends, fast_ops, optim
from minifw.tools.profiler import profile
from tests.fast_paths.switches import turned_off

pytestmark = pytest.mark.extra  # given code: the fast paths are never a course task

NAMES = ["fused_update", "fused_loss", "fused_fold", "fused_pool", "simd_math"]


@pytest.mark.parametrize("name", NAMES)
def test_the_door_gives_each_fast_path_module_and_none_when_switched_off(name: str) -> None:
    module = fast_ops.fast_path(name)
    assert module is not None and module.__name__ == f"minifw.fast_paths.{name}"
    with turned_off(name):
        assert fast_ops.fast_path(name) is None
        assert all(fast_ops.fast_path(other) is not None for other in NAMES if other != name)
    assert fast_ops.fast_path(name) is module


def launches(run: object) -> list[str]:
    """The names of the launches `run()` makes."""
    with profile() as prof:
        run()  # type: ignore[operator]
    return [event.name for event in prof.events]


def test_without_the_fast_paths_folder_every_layer_runs_the_courses_ops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logits, labels = mf.randn(4, 3), mf.tensor([0, 2, 1, 0])
    w = mf.tensor([1.0, 2.0], requires_grad=True)
    w.grad = mf.tensor([0.5, 0.5])

    def step() -> None:
        optim.SGD([w], lr=0.1).step()

    assert launches(lambda: F.cross_entropy(logits, labels)) == ["fused[cross_entropy]"]
    assert launches(step) == ["fused[mul,sub]"]
    monkeypatch.setattr(fast_ops, "fast_paths", None)  # as in a student's repository
    assert all(fast_ops.fast_path(name) is None for name in NAMES)
    composed = launches(lambda: F.cross_entropy(logits, labels))
    assert len(composed) > 2 and not any(name.startswith("fused") for name in composed)
    assert launches(step) == ["mul", "sub"]


def test_the_layers_ask_through_backends_and_import_minifw_loads_no_fast_path() -> None:
    assert backends.fast_path("fused_loss") is fast_ops.fast_path("fused_loss")
    with turned_off("fused_loss"):
        assert backends.fast_path("fused_loss") is None
    code = "import sys, minifw\nprint(*sorted(n for n in sys.modules if 'fast' in n))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "minifw.fast_ops" not in loaded
    assert not any(name.startswith("minifw.fast_paths") for name in loaded)
