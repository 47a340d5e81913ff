"""Graph capture for `mf.compile`: record what a function launches, and what it returns.

While a function runs under `recording(recorder)`, every kernel launch of this
thread is recorded as a `Step` over numbered buffers, and the function's result
(with its autograd graph, if it has one) is described by `analyse` as a `Graph`
whose tensors all point back at those buffers. A buffer is a graph input's
storage, the output of a step, the storage of a tensor object the graph reads
(a parameter: looked up again at every replay), or a constant (read by reference).

The `Recorder` hears all it needs through the hooks registry (`minifw.core.hooks`):
launches, backward passes, leaf gradients, host reads, and what optimizers report.
What cannot be replayed is listed in `Recorder.problems` (a capture with problems
runs eagerly instead): reading values on the host (`item()`, `numpy()`,
`tolist()`, printing, casts), writing in place into a tensor the traced ops did
not compute, random numbers, and autograd state the replay cannot rebuild.

In-place writes a replay can repeat go into: an argument; a step's output; a buffer
made inside the function without a launch (`zeros`, `full`, `empty`, conv's padding:
`hooks.fresh` tells the recorder), which becomes a "fill" step that makes it again,
filled, before its first use; a leaf whose gradient a backward in the function made
(an optimizer step); and state an optimizer keeps across calls (`hooks.state`: Adam's
moments and step counts), which the replay looks up on its tensor at every call.
Optimizers report what they cannot replay (`hooks.unreplayable`), and the Python
values they read that a replay must match (`hooks.guard`). Losses report the checks
they make on an argument's values (class indices in range: `hooks.check`), which a
replay repeats on its own arguments (or on the tensors it reads by reference) before
running anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from minifw.core import hooks, operators
from minifw.core.autodiff import topological_sort
from minifw.core.hooks import Launch, Proceed
from minifw.core.random import generator
from minifw.core.tensor_data import TensorData, strides_from_shape
from minifw.tensor.autograd import recorded_inputs
from minifw.tensor.functions import is_tensor
from minifw.tensor.kernel_api import cells, has_hooks
from minifw.tensor.tensor import Tensor


class UnsupportedError(Exception):
    """The captured function does something a replay cannot reproduce."""


@dataclass(frozen=True, slots=True)
class Ref:
    """A view of buffer number `buf`: shape, strides and offset in cells."""

    buf: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int


@dataclass(slots=True)
class Buffer:
    """Where a buffer comes from: "input", "step", "object" or "const".

    `index` is the argument's position for an "input", the step's for a "step".
    """

    origin: str
    index: int
    size: int
    dtype: np.dtype[Any]
    storage: Any = None  # the array itself, for "const" buffers only
    fill: Any = None  # the start value a reduction's output is filled with


@dataclass(slots=True)
class Step:
    """One recorded launch: `kind` ("map", "map_into", "zip", "reduce", "matmul", "call").

    A "fill" step launches nothing: it makes its output buffer again, every cell the
    buffer's `fill` (or unset), for a buffer made without a launch and written in place.
    A "call" step is a fused launch that can be replayed (the fused cross-entropy):
    `call` is (its `replay`, run as replay(out, *inputs) on TensorData, name, fused_ops).
    """

    kind: str
    op: int
    dim: int
    backend: Any
    out: Ref
    inputs: tuple[Ref, ...]
    call: tuple[Callable[..., None], str, tuple[int, ...]] | None = None


@dataclass(slots=True)
class Node:
    """One autograd node of the result: its Function, inputs, saved values and output."""

    function: type
    args: tuple[Any, ...]
    saved: tuple[Any, ...]
    attrs: dict[str, Any]
    out: Ref
    backend: Any


@dataclass(slots=True)
class Graph:
    """A captured function: buffers, steps, objects, autograd nodes, and the result.

    `grads` pairs each leaf (a reference) whose `.grad` a backward inside the
    function set with the view of the buffer holding that gradient, or None when
    the function used that gradient and set `.grad` back to None (an update step).
    `guards` pairs functions reading Python state with the values they returned
    at capture: a replay runs only while they return the same. `checks` are checks of
    an argument's values (its view, backend, check) that a replay repeats first.
    `cleared` holds the leaves whose `.grad` the function set to None before its
    backward set it (`optimizer.zero_grad()` first): a replay clears them too.
    """

    buffers: list[Buffer]
    steps: list[Step]
    objects: list[tuple[Tensor, Ref, bool]]
    nodes: list[Node]
    result: Any
    needed: set[int] = field(default_factory=set)
    grads: list[tuple[Any, Ref | None]] = field(default_factory=list)
    guards: list[tuple[Callable[[], Any], Any]] = field(default_factory=list)
    cleared: list[Any] = field(default_factory=list)
    checks: list[tuple[Ref, Any, Callable[[Any], None]]] = field(default_factory=list)


def host_values(backend: Any, data: TensorData) -> np.ndarray:
    """The cells of `data` as a host array, read without telling any listener (a check)."""
    host = np.asarray(backend.ops.to_numpy(data.storage))  # from the view's first cell on
    if data.dense:  # row-major: a plain slice (a tenth of as_strided's cost)
        view = host[: data.size].reshape(data.shape)
        view.flags.writeable = False
        return view
    size = host.itemsize
    return np.lib.stride_tricks.as_strided(
        host, data.shape, [s * size for s in data.strides], writeable=False
    )


class Recorder(hooks.Listener):
    """The listener of one capture: records its launches and what cannot be replayed."""

    records_launches = True  # fused fast paths launch their steps one by one for it

    def __init__(self, inputs: list[Tensor]) -> None:
        self.inputs = inputs
        self.buffers: list[Buffer] = []
        self.steps: list[Step] = []
        self.problems: list[str] = []
        self.grads_before = [t.grad for t in inputs]
        self.backward_ran = False
        self._backward_depth = 0  # backward passes running now
        self.leaves: dict[int, Tensor] = {}  # leaves whose .grad a backward in f made
        self.guards: list[tuple[Callable[[], Any], Any]] = []
        self.checks: list[tuple[Ref, Any, Callable[[Any], None]]] = []
        self.cleared: dict[int, Tensor] = {}  # leaves whose .grad f set to None first
        self.fresh: dict[int, tuple[Any, Any, Any]] = {}  # made unlaunched: storage, backend, fill
        self.state: dict[int, Tensor] = {}  # state kept across calls, by storage
        self._ids: dict[int, int] = {}
        self._alive: list[Any] = []  # every storage seen, so that ids stay unique
        for i, t in enumerate(inputs):
            if id(cells(t).base) not in self._ids:
                self._register(cells(t).base, "input", i)

    def _register(self, storage: Any, origin: str, index: int, fill: Any = None) -> int:
        number = len(self.buffers)
        keep = storage if origin == "const" else None
        self.buffers.append(
            Buffer(origin, index, int(storage.size), np.dtype(storage.dtype), keep, fill)
        )
        self._ids[id(storage)] = number
        self._alive.append(storage)
        return number

    def buffer_of(self, data: TensorData) -> int:
        """The number of the buffer under `data` (a new constant if not seen before)."""
        number = self._ids.get(id(data.base))
        if number is None:
            number = self._register(data.base, "const", -1)
        return number

    def ref(self, data: TensorData) -> Ref:
        """`data` as a view of a numbered buffer."""
        return Ref(self.buffer_of(data), data.shape, data.strides, data.offset)

    def on_host_read(self, what: str) -> None:
        """Note that the function read tensor values on the host."""
        self.problems.append(f"it reads tensor values on the host ({what})")

    def on_unreplayable(self, reason: str) -> None:
        """Note something the function does that a replay cannot redo."""
        self.problems.append(reason)

    def on_guard(self, read: Callable[[], Any]) -> None:
        """Replay only while `read()` returns what it returns now (an optimizer's lr)."""
        self.guards.append((read, read()))

    def on_check(self, data: TensorData, backend: Any, check: Callable[[Any], None]) -> None:
        """Check the values now; a replay checks the same tensor's values the same way.

        That is an argument, or a tensor read by reference (closed-over labels); the
        values of one the function computes are not known before the replay runs.
        """
        ref = self.ref(data)
        check(host_values(backend, data))
        if self.buffers[ref.buf].origin not in ("input", "const"):
            self.on_host_read(f"a check of the values of a tensor of shape {tuple(data.shape)}")
            return
        self.checks.append((ref, backend, check))

    def on_fresh(self, data: TensorData, backend: Any, fill: Any) -> None:
        """Note a buffer made without a launch: if written in place, a replay makes it again."""
        self.fresh[id(data.base)] = (data.base, backend, fill)

    def on_state(self, tensors: list[Any]) -> None:
        """Note state kept across calls: the replay may write it in place, as f does."""
        for t in tensors:
            self.fresh.pop(id(cells(t).base), None)
            self.state[id(cells(t).base)] = t
            self._alive.append(t)

    def on_backward(self, entering: bool) -> None:
        """Follow the backward passes, so that their launches count as a backward in f."""
        self._backward_depth += 1 if entering else -1

    def on_launch(self, launch: Launch, proceed: Proceed) -> None:
        """Record `launch` as a step of the captured graph, then run it."""
        kind = launch.kind
        if kind == "to_host":
            shape = launch.inputs[0].shape
            self.on_host_read(f"a copy to the host of a tensor of shape {shape}")
        elif kind == "fused" and (launch.replay is None or len(launch.outs) != 1):
            self.problems.append("it launched a fused kernel while being captured")
        else:
            inputs = tuple(self.ref(d) for d in launch.inputs)
            out = launch.outs[0]
            if kind in ("map_into", "zip_into"):
                self._refill(out.base)
                if not self._writable(out):
                    self.problems.append(
                        f"it writes in place into a tensor of shape {tuple(out.shape)} that the "
                        "traced ops did not compute (state outside the function other than "
                        "a leaf whose gradient its backward made or an optimizer's state, "
                        "or a tensor made from numpy data)"
                    )
            else:
                fill = out.base[0] if kind == "reduce" else None
                self._register(out.base, "step", len(self.steps), fill)
            op = launch.op
            if kind == "zip_into":
                # Recorded as a zip into a new buffer and a copy into `out`: kinds that
                # fusion and replay know, with the same result.
                inputs = (self._zip_into_temp(launch, inputs),)
                kind, op = "map_into", operators.ID
            call = None
            if kind == "fused":
                assert launch.replay is not None
                kind, call = "call", (launch.replay, launch.name, launch.fused_ops)
            step = Step(kind, op, launch.dim, launch.backend, self.ref(out), inputs, call)
            self.steps.append(step)
            if self._backward_depth:
                self.backward_ran = True
        proceed(launch)

    def _writable(self, out: TensorData) -> bool:
        """True if a replay can write into `out`: an input, a step's output, a leaf, state.

        A leaf qualifies once a backward in f made its gradient (an optimizer step); the
        replay looks its storage up again at every call, as it does for parameters, and
        for the state an optimizer reported (`on_state`).
        """
        number = self._ids.get(id(out.base))
        if number is not None and self.buffers[number].origin in ("input", "step"):
            return True
        if id(out.base) in self.state:
            return True
        return any(cells(leaf).base is out.base for leaf in self.leaves.values())

    def _refill(self, storage: Any) -> None:
        """Make a buffer made without a launch, now written in place, the output of a step.

        The "fill" step goes before the first step that reads the buffer (it was a
        constant until now), so a replay makes it again, filled, before using it.
        """
        found = self.fresh.pop(id(storage), None)
        if found is None:
            return
        _, backend, fill = found
        number = self._ids.get(id(storage))
        at = len(self.steps)
        if number is None:
            number = self._register(storage, "step", at, fill)
        else:
            at = next((i for i, step in enumerate(self.steps) if number in _buffers(step)), at)
            for buffer in self.buffers:
                if buffer.origin == "step" and buffer.index >= at:
                    buffer.index += 1
            buffer = self.buffers[number]
            buffer.origin, buffer.index, buffer.storage, buffer.fill = "step", at, None, fill
        ref = Ref(number, (int(storage.size),), (1,), 0)
        self.steps.insert(at, Step("fill", -1, -1, backend, ref, ()))

    def on_grads_cleared(self, tensors: list[Any]) -> None:
        """Note tensors whose `.grad` f sets to None (those no backward in f set yet)."""
        for t in tensors:
            if id(t) not in self.leaves:
                self.cleared.setdefault(id(t), t)

    def _zip_into_temp(self, launch: Launch, inputs: tuple[Ref, ...]) -> Ref:
        """Record the zip of a "zip_into" launch into a new buffer; return its view."""
        out = launch.outs[0]
        number = len(self.buffers)
        self.buffers.append(Buffer("step", len(self.steps), out.size, np.dtype(out.base.dtype)))
        temp = Ref(number, out.shape, strides_from_shape(out.shape), 0)
        self.steps.append(Step("zip", launch.op, -1, launch.backend, temp, inputs))
        return temp

    def on_leaf_grad(self, leaf: Any, added: bool) -> None:
        """Note a leaf whose `.grad` a backward in f set (or added to, which cannot replay)."""
        self.backward_ran = True
        if added or id(leaf) in self.leaves:
            self.problems.append(
                "its backward adds to a .grad that is already set (set grads to None "
                "first, e.g. zero_grad(set_to_none=True))"
            )
        self.leaves[id(leaf)] = leaf


def _buffers(step: Step) -> list[int]:
    """The buffers a step writes or reads."""
    return [step.out.buf, *(ref.buf for ref in step.inputs)]


def capturing() -> bool:
    """True while this thread captures a function."""
    return hooks.recording()


@contextmanager
def recording(recorder: Recorder) -> Iterator[None]:
    """Record this thread's launches, host reads, leaf grads and random draws."""
    rng = generator()
    state = rng.bit_generator.state
    with hooks.listen(recorder):
        yield
    if generator() is not rng or rng.bit_generator.state != state:
        recorder.problems.append("it draws random numbers (rand, randn, dropout, ...)")


# Describing the result


def analyse(recorder: Recorder, result: Any) -> Graph:
    """Describe the function's result (and its autograd graph) over the recorded buffers."""
    graph = Graph(recorder.buffers, recorder.steps, [], [], None, guards=recorder.guards)
    graph.checks = recorder.checks
    if any(graph.buffers[ref.buf].origin == "step" for ref, _, _ in graph.checks):
        raise UnsupportedError("it checks the values of a tensor that it writes in place")
    describer = _Describer(recorder, graph)
    describer.state_objects()
    outputs: list[Tensor] = []
    _collect(result, outputs)
    for t, before in zip(recorder.inputs, recorder.grads_before, strict=True):
        if t.grad is not before and id(t) not in recorder.leaves:
            raise UnsupportedError("it sets the .grad of an argument in a way the replay cannot")
    if recorder.backward_ran:
        describer.detached = True  # the graph is spent: results come back without history
        cleared = [t for key, t in recorder.cleared.items() if key in recorder.leaves]
        graph.cleared = [describer.value(t) for t in cleared]
        for leaf in recorder.leaves.values():
            if has_hooks(leaf):
                raise UnsupportedError("its backward runs hooks on a leaf")
            if leaf.grad is None:  # used (by an update step) and set back to None
                graph.grads.append((describer.value(leaf), None))
                continue
            grad = recorder.ref(cells(leaf.grad))
            if graph.buffers[grad.buf].origin != "step" or leaf.history is not None:
                raise UnsupportedError("its backward sets a .grad in a way the replay cannot")
            graph.needed.add(grad.buf)
            graph.grads.append((describer.value(leaf), grad))
        if any(t.history is not None and t.grad is not None for t in outputs):
            raise UnsupportedError("it keeps the .grad of a tensor it returns (retain_grad)")
    elif any(t.requires_grad and t.history is not None for t in outputs):
        describer.nodes_of(outputs)
    graph.result = describer.value(result, output=True)
    return graph


def _collect(value: Any, found: list[Tensor]) -> None:
    if is_tensor(value):
        found.append(value)
    elif isinstance(value, tuple | list):
        for item in value:
            _collect(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, found)


class _Describer:
    """Turns tensors into references the replay can resolve: input, node, object, view."""

    def __init__(self, recorder: Recorder, graph: Graph) -> None:
        self.recorder = recorder
        self.graph = graph
        self.inputs = {id(t): i for i, t in enumerate(recorder.inputs)}
        self.node_ids: dict[int, int] = {}
        self.object_ids: dict[int, int] = {}
        self.detached = False

    def state_objects(self) -> None:
        """Make the optimizer state the steps use objects: looked up at every replay."""
        for t in self.recorder.state.values():
            number = self.recorder._ids.get(id(cells(t).base))
            if number is None or self.graph.buffers[number].origin == "input":
                continue
            if self.graph.buffers[number].origin == "step":
                raise UnsupportedError("it keeps state that it computes (make it before f runs)")
            self._object(t, self.recorder.ref(cells(t)))

    def nodes_of(self, outputs: list[Tensor]) -> None:
        """Describe every autograd node behind `outputs`, inputs before users."""
        order: list[Tensor] = []
        for out in outputs:
            if out.history is None:
                continue
            for t in reversed(topological_sort(out)):
                assert isinstance(t, Tensor)
                if t.history is not None and id(t) not in self.node_ids:
                    self.node_ids[id(t)] = len(order)
                    order.append(t)
        for t in order:
            self.graph.nodes.append(self._node(t))

    def _node(self, t: Tensor) -> Node:
        history = t.history
        assert history is not None and history.ctx is not None
        ctx: Any = history.ctx
        if getattr(ctx, "_freed", False):
            raise UnsupportedError("it runs backward inside the function (the graph is freed)")
        if has_hooks(t) or t.retains_grad:
            raise UnsupportedError("it registers hooks (or retain_grad) on an intermediate tensor")
        args = tuple(self.value(v) for v in recorded_inputs(history))
        saved = tuple(self.value(v) for v in ctx.saved_values)
        attrs = {k: self.value(v) for k, v in vars(ctx).items()}
        ref = self.recorder.ref(cells(t))
        self.graph.needed.add(ref.buf)
        return Node(history.last_fn, args, saved, attrs, ref, t.backend)

    def value(self, v: Any, output: bool = False) -> Any:
        """A reference the replay resolves: ("input", i), ("node", j), ("object", k), ..."""
        if is_tensor(v):
            return self._tensor(v, output)
        if isinstance(v, tuple | list):
            if type(v) not in (tuple, list) and any(is_tensor(x) for x in v):
                raise UnsupportedError(f"it keeps tensors in a {type(v).__name__}")
            if type(v) in (tuple, list):
                return ("seq", type(v), [self.value(x, output) for x in v])
        if isinstance(v, dict):
            if output:
                return ("dict", {k: self.value(x, output) for k, x in v.items()})
            if any(is_tensor(x) for x in v.values()):
                raise UnsupportedError("a Function keeps tensors inside a dict in its ctx")
        elif output and not (v is None or isinstance(v, bool | int | float | str)):
            raise UnsupportedError(f"it returns a {type(v).__name__} (return tensors, tuples, "
                              "lists, dicts and plain numbers)")  # fmt: skip
        return ("value", v)

    def _tensor(self, t: Tensor, output: bool) -> tuple[Any, ...]:
        if id(t) in self.inputs:
            return ("input", self.inputs[id(t)])
        if id(t) in self.node_ids:
            return ("node", self.node_ids[id(t)])
        ref = self.recorder.ref(cells(t))
        origin = self.graph.buffers[ref.buf].origin
        if origin in ("step", "input"):
            if t.requires_grad and not (self.detached and t.history is not None):
                raise UnsupportedError(
                    "it makes a leaf tensor that requires grad from computed values"
                )
            self.graph.needed.add(ref.buf)
            return ("tensor", ref, t.backend)
        if output and not t.requires_grad and origin == "const":
            return ("copy", ref, t.backend)  # made inside the function: a fresh copy per call
        return ("object", self._object(t, ref))

    def _object(self, t: Tensor, ref: Ref) -> int:
        if id(t) not in self.object_ids:
            buffer = self.graph.buffers[ref.buf]
            if buffer.origin == "const":
                buffer.origin, buffer.storage = "object", None
            self.object_ids[id(t)] = len(self.graph.objects)
            self.graph.objects.append((t, ref, t.requires_grad))
        return self.object_ids[id(t)]


__all__ = ["Buffer", "Graph", "Node", "Recorder", "Ref", "Step", "UnsupportedError", "analyse",
           "capturing", "recording"]  # fmt: skip
