"""Turning an expert fast path off for a block, to compare it with what it stands in for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from minifw import fast_ops


@contextmanager
def turned_off(name: str, off: bool = True) -> Iterator[None]:
    """The fast path `name` (`fused_loss`, `fused_update`, ...) off inside the block, if `off`.

    `fast_ops.fast_path(name)` then answers None, and the layers run the course's ops.
    """
    was_off = name in fast_ops.switched_off
    if off:
        fast_ops.switched_off.add(name)
    try:
        yield
    finally:
        if not was_off:
            fast_ops.switched_off.discard(name)
