"""Turning an expert fast path off for a block, to compare it with what it stands in for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType


@contextmanager
def turned_off(module: ModuleType, name: str, off: bool = True) -> Iterator[None]:
    """`module.name` (a fast path's kernel module) set to None inside the block, if `off`.

    The layers check that name before each call: without it they run the course's ops.
    """
    saved = getattr(module, name)
    if off:
        setattr(module, name, None)
    try:
        yield
    finally:
        setattr(module, name, saved)
