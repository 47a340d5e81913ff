"""`mf.cpu`: PyTorch's `torch.cpu` device module, where streams and events are no-ops.

CPU work runs at once, in order, so there is nothing to wait for: a program written for
any device (`torch.cpu.synchronize()` beside `torch.cuda.synchronize()`) runs unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Stream:
    """A CPU stream: work on the CPU is already ordered, so every method does nothing."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream: Stream) -> None:
        """Nothing to wait for on the CPU."""
        del stream

    def wait_event(self, event: Event) -> None:
        """Nothing to wait for on the CPU."""
        del event

    def record_event(self, event: Event | None = None) -> Event:
        """An event marking this point (`event` itself if given)."""
        return event if event is not None else Event()


class Event:
    """A CPU event: recorded, waited on and queried at once."""

    def record(self, stream: Stream | None = None) -> None:
        """Nothing to record on the CPU."""
        del stream

    def wait(self, stream: Stream | None = None) -> None:
        """Nothing to wait for on the CPU."""
        del stream

    def query(self) -> bool:
        """True: the work before it has finished."""
        return True

    def synchronize(self) -> None:
        """Nothing to wait for on the CPU."""


_current = [Stream()]


def is_available() -> bool:
    """True: the CPU is always there."""
    return True


def device_count() -> int:
    """1, as PyTorch counts the CPU."""
    return 1


def current_device() -> str:
    """'cpu'."""
    return "cpu"


def synchronize(device: Any = None) -> None:
    """Returns at once: CPU work has finished when its call returns."""
    del device


def current_stream(device: Any = None) -> Stream:
    """The stream `with mf.cpu.stream(s)` made current, else the default one."""
    del device
    return _current[-1]


@contextmanager
def stream(chosen: Stream | None) -> Iterator[None]:
    """Within the block, current_stream() is `chosen` (None: nothing changes)."""
    if chosen is None:
        yield
        return
    _current.append(chosen)
    try:
        yield
    finally:
        _current.pop()
