"""Who listens to kernel launches: the profiler and graph capture, per thread.

`tensor_ops.TensorBackend` reads one slot, `tensor_ops._launch_hook`, before each
launch. While no thread listens the slot is None and a launch costs that one
check. While some thread listens, the slot holds `_dispatch`, which hands the
launch, as a `Launch` record, to the listeners of the calling thread (innermost
first to see it, outermost first to act): each is called as `listener(launch,
proceed)` and must call `proceed(launch)` exactly once to run the kernel (and the
listeners below it). Launches of threads that do not listen run unobserved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from minifw.core import operators
from minifw.core.tensor_data import TensorData
from minifw.tensor_ops import TensorBackend, _launch_hook

KINDS = ("map", "map_into", "zip", "zip_into", "reduce", "matmul", "fused", "to_host")


class Launch:
    """One kernel launch: what runs, on which backend, reading and writing what.

    `outs` are the TensorData the kernel writes (one, except for fused kernels),
    `inputs` those it reads; for a matmul they are the 3-D views the kernel gets.
    A fused launch (kind "fused", made by `mf.compile` and by the optimizers' update)
    lists the op codes it evaluates per cell in `fused_ops` and runs through `runner`.
    """

    __slots__ = ("backend", "kind", "op", "outs", "inputs", "dim", "name", "fused_ops", "runner")

    def __init__(
        self,
        backend: TensorBackend,
        kind: str,
        op: int,
        outs: tuple[TensorData, ...],
        inputs: tuple[TensorData, ...],
        dim: int = -1,
        name: str = "",
        fused_ops: tuple[int, ...] = (),
        runner: Callable[[], None] | None = None,
    ) -> None:
        self.backend = backend
        self.kind = kind
        self.op = op
        self.outs = outs
        self.inputs = inputs
        self.dim = dim
        self.name = name or op_name(kind, op)
        self.fused_ops = fused_ops
        self.runner = runner

    def run(self) -> None:
        """Run the kernel (nothing for "to_host", which only reports a host read)."""
        ops, kind = self.backend.ops, self.kind
        if kind in ("map", "map_into"):
            ops.map(self.op, *self.outs[0].tuple(), *self.inputs[0].tuple())
        elif kind in ("zip", "zip_into"):
            ops.zip(
                self.op, *self.outs[0].tuple(), *self.inputs[0].tuple(), *self.inputs[1].tuple()
            )
        elif kind == "reduce":
            ops.reduce(self.op, *self.outs[0].tuple(), *self.inputs[0].tuple(), self.dim)
        elif kind == "matmul":
            ops.matmul(*self.outs[0].tuple(), *self.inputs[0].tuple(), *self.inputs[1].tuple())
        elif kind == "fused":
            assert self.runner is not None
            self.runner()


def op_name(kind: str, op: int) -> str:
    """The name a launch shows in profiles: "exp", "add", "reduce_add", "matmul", "copy"."""
    if kind == "matmul":
        return "matmul"
    if kind == "to_host":
        return "to_host"
    if kind in ("map", "map_into"):
        if op == operators.ID:
            return "copy"
        return operators.UNARY_NAMES.get(op, f"unary{op}")
    name = operators.BINARY_NAMES.get(op, f"binary{op}")
    return "reduce_" + name if kind == "reduce" else name


Listener = Callable[[Launch, Callable[[Launch], None]], None]


class _PerThread(threading.local):
    def __init__(self) -> None:
        self.listeners: list[Listener] = []
        self.context: list[tuple[str | None, str | None]] = []


_local = _PerThread()
_lock = threading.Lock()
_count = [0]  # listeners installed, over all threads


def add_listener(listener: Listener) -> None:
    """Start showing this thread's launches to `listener` (on top of earlier ones)."""
    with _lock:
        _local.listeners.append(listener)
        _count[0] += 1
        _launch_hook[0] = _dispatch


def remove_listener(listener: Listener) -> None:
    """Stop showing this thread's launches to `listener`."""
    with _lock:
        stack = _local.listeners
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] == listener:
                del stack[i]
                _count[0] -= 1
                break
        else:
            raise ValueError("remove_listener: this listener is not installed in this thread")
        if _count[0] == 0:
            _launch_hook[0] = None


def listening() -> bool:
    """True when some listener watches this thread's launches."""
    return bool(_local.listeners)


@contextmanager
def launch_context(function: str | None, phase: str | None) -> Iterator[None]:
    """Label this thread's launches inside the block (e.g. a compiled function's replay)."""
    _local.context.append((function, phase))
    try:
        yield
    finally:
        _local.context.pop()


def context() -> tuple[str | None, str | None] | None:
    """The innermost `launch_context` label of this thread, or None."""
    stack = _local.context
    return stack[-1] if stack else None


def deliver(launch: Launch) -> None:
    """Run `launch` through this thread's listeners (or just run it if there are none)."""
    stack = tuple(_local.listeners)
    if not stack:
        launch.run()
        return
    _proceed(stack, len(stack) - 1, launch)


def _proceed(stack: tuple[Listener, ...], level: int, launch: Launch) -> None:
    if level < 0:
        launch.run()
        return
    stack[level](launch, lambda seen: _proceed(stack, level - 1, seen))


def _dispatch(
    backend: TensorBackend,
    kind: str,
    op: int,
    out: TensorData,
    inputs: tuple[TensorData, ...],
    dim: int,
) -> Any:
    """The hook `tensor_ops` calls while anyone listens."""
    deliver(Launch(backend, kind, op, (out,), inputs, dim))


__all__ = [
    "KINDS", "Launch", "Listener", "add_listener", "context", "deliver", "launch_context",
    "listening", "op_name", "remove_listener",
]  # fmt: skip
