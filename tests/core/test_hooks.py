"""The hooks registry (minifw/core/hooks.py): which events reach a listener, and when none do."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import minifw as mf
from minifw.core import hooks

pytestmark = pytest.mark.extra  # the registry is no course task


class Log(hooks.Listener):
    """Writes down every event it hears, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []

    def on_launch(self, launch: hooks.Launch, proceed: hooks.Proceed) -> None:
        self.events.append(("launch", launch.name))
        proceed(launch)

    def on_function(self, name: str, phase: str, entering: bool) -> None:
        self.events.append(("function", name, phase, entering))

    def on_backward(self, entering: bool) -> None:
        self.events.append(("backward", entering))

    def on_leaf_grad(self, leaf: object, added: bool) -> None:
        self.events.append(("leaf_grad", leaf, added))

    def on_host_read(self, what: str) -> None:
        self.events.append(("host_read", what))


def _pair(backend: str = "simple") -> tuple[mf.Tensor, mf.Tensor]:
    a = mf.tensor([1.0, 2.0, 3.0], backend=backend, requires_grad=True)
    b = mf.tensor([0.5, -1.0, 2.0], backend=backend)
    return a, b


def test_a_listener_hears_functions_launches_and_the_backward_in_order():
    a, b = _pair()
    log = Log()
    with hooks.listen(log):
        (a * b).sum().backward()
    events = log.events
    assert events[:3] == [
        ("function", "Mul", "forward", True), ("launch", "mul"),
        ("function", "Mul", "forward", False),
    ]  # fmt: skip
    assert ("backward", True) in events and events[-1] == ("backward", False)
    inside = events[events.index(("backward", True)) :]
    assert ("function", "Mul", "backward", True) in inside
    assert ("leaf_grad", a, False) in inside
    assert hooks.anyone_listening[0] is False and not hooks.listening()


def test_leaf_grad_says_when_a_backward_adds_to_a_grad():
    a, b = _pair()
    (a * b).sum().backward()
    log = Log()
    with hooks.listen(log):
        (a * b).sum().backward()
    assert [e for e in log.events if e[0] == "leaf_grad"] == [("leaf_grad", a, True)]


def test_numpy_reports_a_host_read_even_when_it_launches_nothing():
    x = mf.tensor([[1.0, 2.0]], backend="fast")
    log = Log()
    with hooks.listen(log):
        x.numpy()
    assert log.events == [("host_read", "numpy() of a tensor of shape (1, 2)")]


def test_launches_go_down_the_chain_newest_first_and_a_listener_may_skip_one():
    order: list[str] = []

    class Skip(hooks.Listener):
        def on_launch(self, launch: hooks.Launch, proceed: hooks.Proceed) -> None:
            order.append("skip")  # never proceeds: the kernel does not run

    class Watch(hooks.Listener):
        def on_launch(self, launch: hooks.Launch, proceed: hooks.Proceed) -> None:
            order.append("watch")
            proceed(launch)

    x = mf.tensor([1.0, 2.0], backend="simple")
    backend = x.backend
    out = backend.full((2,), 7.0, np.float64)
    with hooks.listen(Skip()), hooks.listen(Watch()):
        backend.map(mf.operators.NEG, x._data, out=out)
    assert order == ["watch", "skip"]
    assert backend.to_numpy(out).tolist() == [7.0, 7.0]  # untouched
    backend.map(mf.operators.NEG, x._data, out=out)
    assert backend.to_numpy(out).tolist() == [-1.0, -2.0]


def test_listeners_are_per_thread():
    heard: list[tuple[object, ...]] = []
    log = Log()
    x = mf.tensor([1.0, 2.0], backend="simple")

    def other() -> None:
        heard.append(("listening", hooks.listening()))
        -x  # noqa: B018 - a launch in a thread that has no listener

    with hooks.listen(log):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert heard == [("listening", False)]
    assert log.events == []
    with pytest.raises(ValueError, match="not installed"):
        hooks.remove_listener(log)


def test_nobody_listening_costs_no_call_into_the_registry():
    a, b = _pair()
    hooks_file = Path(hooks.__file__).resolve()
    called: list[str] = []

    def profile(frame, event, arg):  # noqa: ANN001, ANN202 - sys.setprofile's signature
        if event == "call" and Path(frame.f_code.co_filename).resolve() == hooks_file:
            called.append(frame.f_code.co_name)

    assert hooks.anyone_listening[0] is False
    sys.setprofile(profile)
    try:
        (a * b).sum().backward()
    finally:
        sys.setprofile(None)
    assert called == []
    with hooks.listen(hooks.Listener()):  # the same probe does see calls while listened to
        sys.setprofile(profile)
        try:
            (a * b).sum().backward()
        finally:
            sys.setprofile(None)
    assert "launch" in called and "run_function" in called
