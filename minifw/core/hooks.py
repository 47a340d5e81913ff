"""The one registry through which tools watch the framework: the profiler, mf.compile.

Code below the tools emits events here; a tool subclasses `Listener`, overrides the
events it cares about, and adds it for the current thread (`listen`). Events:

==================  ==========================================  ===========================
Listener method     emitted by                                  when
==================  ==========================================  ===========================
on_launch           tensor_ops' launcher, replays, optimizers   a kernel is about to run
on_function         Function.apply, Function.chain_rule,        a Function's forward or
                    replays of mf.compile                       backward starts / ends
on_backward         the backward pass (tensor/autograd.py)      the engine starts / ends
on_leaf_grad        the backward pass (tensor/autograd.py)      a backward wrote a .grad
on_host_read        Tensor.numpy (CPU reads launch nothing)     values are read on the host
on_unreplayable     optimizers                                  a step a replay cannot redo
on_guard            optimizers                                  Python state baked into
                                                                kernels (a learning rate)
on_check            losses (class-index targets)                values are checked on the
                                                                host, never computed with
on_grads_cleared    Optimizer.zero_grad                         .grad set to None
on_fresh            tensor creation (zeros, full, empty),       a new buffer is made,
                    conv's padding                              filled without a launch
on_state            optimizers (Adam's moments, step counts)    tensors kept across calls
                                                                that a step updates in place
==================  ==========================================  ===========================

A launch goes down the chain of this thread's listeners, newest first: each gets
`on_launch(launch, proceed)` and calls `proceed(launch)` to run the kernel (and the
listeners below it) once, around which it may time it, or never, to skip it. The
other events reach every listener of the thread.

The cost when nobody listens: emitters first read `anyone_listening[0]` (a module-level
list they import) and call nothing here while it is False, so a launch or a
Function.apply pays one check. It is True while any thread has a listener; launches of
threads without listeners then pass through `launch`, which just runs them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from minifw.core import operators
from minifw.core.tensor_data import TensorData, kernel_operands

T = TypeVar("T")

# [True] while some thread has a listener: read this before calling anything here.
anyone_listening: list[bool] = [False]

KINDS = ("map", "map_into", "zip", "zip_into", "reduce", "matmul", "fused", "to_host")


class Launch:
    """One kernel launch: what runs, on which backend, reading and writing what.

    `outs` are the TensorData the kernel writes (one, except for fused kernels),
    `inputs` those it reads; for a matmul they are the 3-D views the kernel gets.
    `backend` is the `TensorBackend` (typed Any: core does not import backends).
    A fused launch (kind "fused", made by `mf.compile`, the optimizers' update and the
    fused cross-entropy) lists the op codes it evaluates per cell in `fused_ops` and runs
    through `runner`. One that has a `replay`, `replay(*outs, *inputs)` running the same
    kernel on any buffers of the same layouts, is a step `mf.compile` can record.
    A "to_host" launch runs nothing: it reports values copied to the host.
    """

    __slots__ = (
        "backend", "kind", "op", "outs", "inputs", "dim", "name", "fused_ops", "runner", "replay"
    )  # fmt: skip

    def __init__(
        self,
        backend: Any,
        kind: str,
        op: int,
        outs: tuple[TensorData, ...],
        inputs: tuple[TensorData, ...],
        dim: int = -1,
        name: str = "",
        fused_ops: tuple[int, ...] = (),
        runner: Callable[[], None] | None = None,
        replay: Callable[..., None] | None = None,
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
        self.replay = replay

    def run(self) -> None:
        """Run the kernel (nothing for "to_host", which only reports a host read)."""
        ops, kind = self.backend.ops, self.kind
        if kind in ("map", "map_into"):
            ops.map(self.op, *kernel_operands(self.outs[0], self.inputs)[0])
        elif kind in ("zip", "zip_into"):
            ops.zip(self.op, *kernel_operands(self.outs[0], self.inputs)[0])
        elif kind == "reduce":
            args, dim = kernel_operands(self.outs[0], self.inputs, self.dim)
            ops.reduce(self.op, *args, dim)
        elif kind == "matmul":
            ops.matmul(*self.outs[0].tuple(), *self.inputs[0].tuple(), *self.inputs[1].tuple())
        elif kind == "fused":
            assert self.runner is not None
            self.runner()


def op_name(kind: str, op: int) -> str:
    """The name a launch shows in profiles: "exp", "add", "reduce_add", "matmul", "copy"."""
    if kind in ("matmul", "to_host"):
        return kind
    if kind in ("map", "map_into"):
        if op == operators.ID:
            return "copy"
        return operators.UNARY_NAMES.get(op, f"unary{op}")
    name = operators.BINARY_NAMES.get(op, f"binary{op}")
    return "reduce_" + name if kind == "reduce" else name


Proceed = Callable[[Launch], None]


class Listener:
    """What a tool overrides to hear events; every default does nothing (a launch runs).

    `records_launches` is True for a listener that records launches to replay them
    (mf.compile's capture): fast paths that bundle several launches into one kernel
    (the optimizers' fused update) then launch them one by one, as the replay needs.
    """

    records_launches = False

    def on_launch(self, launch: Launch, proceed: Proceed) -> None:
        """A kernel launch: call `proceed(launch)` once to run it (or never, to skip it)."""
        proceed(launch)

    def on_function(self, name: str, phase: str, entering: bool) -> None:
        """The forward or backward (`phase`) of Function `name` starts or ends."""

    def on_backward(self, entering: bool) -> None:
        """A backward pass (Tensor.backward) starts or ends."""

    def on_leaf_grad(self, leaf: Any, added: bool) -> None:
        """A backward set a leaf's .grad (`added`: it added to a .grad already set)."""

    def on_host_read(self, what: str) -> None:
        """Tensor values are read on the host (`what` says how)."""

    def on_unreplayable(self, reason: str) -> None:
        """What runs now cannot be replayed by mf.compile (`reason` says why)."""

    def on_guard(self, read: Callable[[], Any]) -> None:
        """Kernels launched now bake in the value `read()` returns (a learning rate)."""

    def on_grads_cleared(self, tensors: list[Any]) -> None:
        """These tensors' .grad is set to None now (`Optimizer.zero_grad`)."""

    def on_check(self, data: TensorData, backend: Any, check: Callable[[Any], None]) -> None:
        """`check(values)` validates the values of `data` (raising on bad ones) now."""

    def on_fresh(self, data: TensorData, backend: Any, fill: Any) -> None:
        """`data` is a new buffer of `backend`, each cell `fill` (None: unset), made unlaunched."""

    def on_state(self, tensors: list[Any]) -> None:
        """These tensors are state kept across calls (Adam's moments), updated in place."""


class _PerThread(threading.local):
    def __init__(self) -> None:
        self.listeners: list[Listener] = []


_local = _PerThread()
_lock = threading.Lock()
_installed = [0]  # listeners installed, over all threads


def add_listener(listener: Listener) -> None:
    """Start telling `listener` this thread's events (on top of earlier listeners)."""
    with _lock:
        _local.listeners.append(listener)
        _installed[0] += 1
        anyone_listening[0] = True


def remove_listener(listener: Listener) -> None:
    """Stop telling `listener` this thread's events."""
    with _lock:
        stack = _local.listeners
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is listener:
                del stack[i]
                _installed[0] -= 1
                break
        else:
            raise ValueError("remove_listener: this listener is not installed in this thread")
        anyone_listening[0] = _installed[0] > 0


@contextmanager
def listen(listener: Listener) -> Iterator[None]:
    """Tell `listener` this thread's events inside the block."""
    add_listener(listener)
    try:
        yield
    finally:
        remove_listener(listener)


def listening() -> bool:
    """True when some listener hears this thread's events."""
    return bool(_local.listeners)


def recording() -> bool:
    """True when a listener of this thread records launches to replay them."""
    return any(listener.records_launches for listener in _local.listeners)


# Emitting events (call these only while `anyone_listening[0]`)


def launch(seen: Launch) -> None:
    """Run `seen` through this thread's listeners, newest first (or just run it)."""
    stack = tuple(_local.listeners)
    if not stack:
        seen.run()
        return
    _proceed(stack, len(stack) - 1, seen)


def launch_fused(
    backend: Any, name: str, outs: tuple[TensorData, ...], inputs: tuple[TensorData, ...],
    kernel: Callable[..., None], fused_ops: tuple[int, ...],
) -> None:  # fmt: skip
    """Run `kernel(*outs, *inputs)` (a fast path's one-loop kernel) as a fused launch.

    Where no tool listens it just runs. A listener hears a "fused" launch named `name`
    whose `replay` is `kernel`: `mf.compile` records it as one step.
    """
    if not anyone_listening[0]:
        kernel(*outs, *inputs)
        return
    seen = Launch(backend, "fused", -1, outs, inputs, name=name, fused_ops=fused_ops,
                  runner=lambda: kernel(*outs, *inputs), replay=kernel)  # fmt: skip
    launch(seen)


def _proceed(stack: tuple[Listener, ...], level: int, seen: Launch) -> None:
    if level < 0:
        seen.run()
        return
    stack[level].on_launch(seen, lambda passed: _proceed(stack, level - 1, passed))


def run_function(name: str, phase: str, body: Callable[..., T], *args: Any) -> T:
    """`body(*args)`, told to listeners as the `phase` of Function `name`."""
    for listener in tuple(_local.listeners):
        listener.on_function(name, phase, True)
    try:
        return body(*args)
    finally:
        for listener in tuple(_local.listeners):
            listener.on_function(name, phase, False)


def run_backward(body: Callable[..., T], *args: Any) -> T:
    """`body(*args)` (the autograd engine), told to listeners as a backward pass."""
    for listener in tuple(_local.listeners):
        listener.on_backward(True)
    try:
        return body(*args)
    finally:
        for listener in tuple(_local.listeners):
            listener.on_backward(False)


def leaf_grad(leaf: Any, added: bool) -> None:
    """Tell listeners that a backward set (or, `added`, added to) `leaf.grad`."""
    for listener in tuple(_local.listeners):
        listener.on_leaf_grad(leaf, added)


def host_read(what: str) -> None:
    """Tell listeners that tensor values are read on the host."""
    for listener in tuple(_local.listeners):
        listener.on_host_read(what)


def unreplayable(reason: str) -> None:
    """Tell listeners that what runs now cannot be replayed, and why."""
    for listener in tuple(_local.listeners):
        listener.on_unreplayable(reason)


def guard(read: Callable[[], Any]) -> None:
    """Tell listeners that launches now depend on the value `read()` returns."""
    for listener in tuple(_local.listeners):
        listener.on_guard(read)


def check(data: TensorData, backend: Any, check: Callable[[Any], None]) -> None:
    """Tell listeners that `check` validates the values of `data` (a replay repeats it)."""
    for listener in tuple(_local.listeners):
        listener.on_check(data, backend, check)


def grads_cleared(tensors: list[Any]) -> None:
    """Tell listeners that these tensors' .grad is set to None now."""
    for listener in tuple(_local.listeners):
        listener.on_grads_cleared(tensors)


def fresh(data: TensorData, backend: Any, fill: Any) -> None:
    """Tell listeners that `data` is a new buffer whose cells all hold `fill` (None: unset)."""
    for listener in tuple(_local.listeners):
        listener.on_fresh(data, backend, fill)


def state(tensors: list[Any]) -> None:
    """Tell listeners that these tensors are state kept across calls, updated in place."""
    for listener in tuple(_local.listeners):
        listener.on_state(tensors)


__all__ = [
    "KINDS", "Launch", "Listener", "Proceed", "add_listener", "anyone_listening", "check",
    "fresh", "grads_cleared", "guard", "host_read", "launch", "launch_fused", "leaf_grad",
    "listen", "listening", "op_name", "recording", "remove_listener", "run_backward",
    "run_function", "state", "unreplayable",
]  # fmt: skip
