"""Replaying a captured function (`mf.compile`): its kernels, then its autograd graph.

A `Plan` runs the captured program on new inputs of the same signature: it binds
the buffers (the new inputs' storage, each parameter's current storage, the
constants), allocates and runs each step straight on the kernel set (no checks,
no Tensor objects, no autograd bookkeeping) or each fused group as one generated
kernel, and then rebuilds the result. When the result needs gradients, every
captured autograd node is rebuilt over the new buffers with `Replayed.apply`:
the node keeps its Function's backward (and its name, e.g. `MulBackward`), so
`loss.backward()` runs that backward eagerly, op by op, exactly as after an
eager call.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from minifw._jit import PARALLEL_FROM
from minifw._threads import parallel_pays
from minifw.compiler.capture import Graph, Ref, Step, host_values
from minifw.compiler.fusion import (
    Group,
    fused_kernel,
    kernel_source,
    leaf_access,
    plan_fusion,
)
from minifw.core import hooks
from minifw.core.hooks import Launch, anyone_listening, op_name
from minifw.core.tensor_data import TensorData, numel_of, strides_from_shape
from minifw.tensor.functions import Function, FunctionCtx
from minifw.tensor.kernel_api import cells, has_hooks, store_grad
from minifw.tensor.tensor import Tensor

WRITABLE = ("input", "object")  # buffers from outside whose in-place writes a replay repeats


class RecaptureError(Exception):
    """A parameter's layout or requires_grad, or a guarded value, changed: capture again."""


class RunEagerError(Exception):
    """This call cannot be replayed (a leaf's .grad is already set): run it eagerly."""


class _Payload:
    """What a replayed node outputs and saves (the last, non-tensor argument of apply)."""

    __slots__ = ("out", "saved", "attrs")

    def __init__(self, out: Tensor, saved: tuple[Any, ...], attrs: dict[str, Any]) -> None:
        self.out, self.saved, self.attrs = out, saved, attrs


class Replayed(Function):
    """A captured autograd node: its output is already computed; its backward is the original."""

    original: type[Function] = Function

    @classmethod
    def forward(cls, ctx: FunctionCtx, *args: Any) -> Tensor:  # type: ignore[override]
        """Restore what the original forward saved; return the replayed output."""
        payload: _Payload = args[-1]
        ctx.needs_input_grad = ctx.needs_input_grad[:-1]
        for name, value in payload.attrs.items():
            setattr(ctx, name, value)
        ctx.save_for_backward(*payload.saved)
        return payload.out

    @classmethod
    def backward(cls, ctx: FunctionCtx, grad: Any) -> tuple[Any, ...]:  # type: ignore[override]
        """The original Function's backward (and None for the payload)."""
        grads = cls.original.backward(ctx, grad)
        return (*(grads if isinstance(grads, tuple) else (grads,)), None)


_replayed: dict[type, type[Replayed]] = {}


def replayed(function: type[Function]) -> type[Replayed]:
    """The Replayed subclass standing for `function` (named like it, for grad_fn)."""
    if function not in _replayed:
        name = getattr(function, "node_name", function.__name__)
        _replayed[function] = type(
            function.__name__, (Replayed,), {"original": function, "node_name": name}
        )
    return _replayed[function]


def _storage(bufs: list[Any], ref: Ref) -> Any:
    base = bufs[ref.buf]
    return base[ref.offset :] if ref.offset else base


class _StepRun:
    """One step run as recorded, straight on its kernel set ("fill": only allocated)."""

    def __init__(self, step: Step, graph: Graph) -> None:
        self.step = step
        self.ops = step.backend.ops
        kernel = "map" if step.kind == "map_into" else step.kind
        self.kernel = None if step.kind in ("fill", "call") else getattr(self.ops, kernel)
        self.fresh = step.kind != "map_into"
        out = graph.buffers[step.out.buf]
        self.size, self.dtype, self.fill = out.size, out.dtype, out.fill
        self.refs = (step.out, *step.inputs)
        # Per operand: buffer, offset, shape and strides as the kernels take them.
        self.operands = [
            (r.buf, r.offset, np.array(r.shape, np.int64), np.array(r.strides, np.int64))
            for r in self.refs
        ]
        self.head: list[Any] = [] if step.kind == "matmul" else [step.op]
        self.tail: list[Any] = [step.dim] if step.kind == "reduce" else []
        # A reduction's start value, copied into each new output (host storage only).
        on_host = step.backend.device == "cpu" and self.fill is not None
        self.start = np.full(self.size, self.fill, self.dtype) if on_host else None
        self.views: dict[int, list[TensorData]] = {}  # a "call" step's operands, per thread

    def buffers(self) -> list[int]:
        """The buffers this step reads or writes."""
        return [ref.buf for ref in self.refs]

    def run(self, bufs: list[Any], observed: bool) -> None:
        step = self.step
        if self.fresh:
            if self.fill is None:
                bufs[step.out.buf] = self.ops.empty(self.size, self.dtype)
            elif self.start is not None:
                bufs[step.out.buf] = self.start.copy()
            else:
                bufs[step.out.buf] = self.ops.from_numpy(np.full(self.size, self.fill, self.dtype))
        if step.call is not None:
            self._call(bufs, observed, *step.call)
            return
        if self.kernel is None:  # a "fill" step: the new buffer is all it makes
            return
        if observed:
            datas = [TensorData(bufs[r.buf], r.shape, r.strides, r.offset) for r in self.refs]
            launch = Launch(
                step.backend, step.kind, step.op, (datas[0],), tuple(datas[1:]), step.dim
            )
            hooks.launch(launch)
            return
        args = self.head.copy()
        for buf, offset, shape, strides in self.operands:
            base = bufs[buf]
            args += (base[offset:] if offset else base, shape, strides)
        self.kernel(*args, *self.tail)

    def _call(self, bufs: list[Any], observed: bool, replay: Any, name: str,
              fused_ops: tuple[int, ...]) -> None:  # fmt: skip
        """Run a "call" step: its fused kernel on this run's buffers."""
        if not observed:
            # The views are made once per thread and pointed at each run's buffers (of
            # the same sizes): making five TensorData per call cost more than the kernel.
            views = self.views.get(threading.get_ident())
            if views is None:
                views = self.views[threading.get_ident()] = [
                    TensorData(bufs[r.buf], r.shape, r.strides, r.offset) for r in self.refs
                ]
            else:
                for view, ref in zip(views, self.refs, strict=True):
                    view._storage = bufs[ref.buf]
            replay(*views)
            return
        datas = [TensorData(bufs[r.buf], r.shape, r.strides, r.offset) for r in self.refs]
        hooks.launch_fused(self.step.backend, name, (datas[0],), tuple(datas[1:]), replay,
                           fused_ops)  # fmt: skip


class _FusedRun:
    """A group of elementwise steps run as one generated kernel."""

    def __init__(self, group: Group, graph: Graph, dtypes: list[str]) -> None:
        self.group = group
        self.backend = graph.steps[group.members[0]].backend
        self.source = kernel_source(group, graph.steps, dtypes)
        kernels, self.path = fused_kernel(self.source)
        self.shape = np.array(group.shape, np.int64)
        self.cells = int(np.prod(group.shape, dtype=np.int64))
        self.parallel_kernel, self.serial_kernel = kernels
        self.outputs = [(b, graph.buffers[b].dtype) for b in group.outputs]
        self.into = group.into  # outputs written into another buffer's cells (x -= y)
        # Per operand read: buffer, offset and the sizes the kernel takes after it.
        self.reads = [(r.buf, r.offset, leaf_access(r, group.shape)[1]) for r in group.leaves]
        self.ops = tuple(graph.steps[m].op for m in group.members)
        names = [graph.steps[m] for m in group.members]
        self.name = "fused[" + ",".join(op_name(s.kind, s.op) for s in names) + "]"

    def buffers(self) -> list[int]:
        """The buffers this kernel reads or writes."""
        written = [self.into[b].buf if b in self.into else b for b, _ in self.outputs]
        return written + [ref.buf for ref in self.group.leaves]

    def run(self, bufs: list[Any], observed: bool) -> None:
        empty = self.backend.ops.empty
        outs = []
        for b, dtype in self.outputs:
            if b in self.into:
                outs.append(_storage(bufs, self.into[b]))
            else:
                out = bufs[b] = empty(self.cells, dtype)
                outs.append(out)
        args = [self.shape, *outs]
        for buf, offset, extra in self.reads:
            base = bufs[buf]
            args += (base[offset:] if offset else base, *extra)
        if self.cells == 0:
            return
        # in parallel from PARALLEL_FROM cells while the machine has cores free (_threads)
        parallel = parallel_pays(self.cells, PARALLEL_FROM)
        kernel = self.parallel_kernel if parallel else self.serial_kernel
        if not observed:
            kernel(*args)
            return
        shape = self.group.shape
        datas = tuple(TensorData(out, shape) for out in outs)
        leaves = tuple(
            TensorData(bufs[r.buf], r.shape, r.strides, r.offset) for r in self.group.leaves
        )
        launch = Launch(self.backend, "fused", -1, datas, leaves, name=self.name,
                        fused_ops=self.ops, runner=lambda: kernel(*args))  # fmt: skip
        hooks.launch(launch)


class Plan:
    """A captured function, ready to run again on inputs of the same signature."""

    def __init__(self, graph: Graph, fuse: bool, label: str) -> None:
        self.graph = graph
        self.label = label
        dtypes = [str(b.dtype) for b in graph.buffers]
        items = plan_fusion(graph.steps, dtypes, graph.needed) if fuse else range(len(graph.steps))
        self.program: list[_StepRun | _FusedRun] = []
        for item in items:
            if isinstance(item, Group):
                if item.outputs:
                    self.program.append(_FusedRun(item, graph, dtypes))
            else:
                self.program.append(_StepRun(graph.steps[item], graph))
        self.inputs = [(b.index, n) for n, b in enumerate(graph.buffers) if b.origin == "input"]
        # In-place writes into inputs and parameters bump their version, as eager ones do.
        self.bumps = [
            step.out.buf
            for step in graph.steps
            if step.kind == "map_into" and graph.buffers[step.out.buf].origin in WRITABLE
        ]
        self.consts = [(n, b.storage) for n, b in enumerate(graph.buffers) if b.origin == "const"]
        self.layouts = [
            (obj, ref.buf, (ref.shape, ref.strides, ref.offset), requires_grad,
             graph.buffers[ref.buf].dtype)
            for obj, ref, requires_grad in graph.objects
        ]  # fmt: skip
        self.checks = [(_reader(ref, backend), check) for ref, backend, check in graph.checks]
        # The leaves f clears and those it gives gradients: parameters are found once.
        self.cleared = [_fixed(graph, leaf) for leaf in graph.cleared]
        self.leaves = [_fixed(graph, leaf) for leaf, _ in graph.grads]
        # Free each intermediate after its last use, as eager code drops dead tensors.
        last: dict[int, int] = {}
        for i, kernel in enumerate(self.program):
            for n in kernel.buffers():
                last[n] = i
        self.frees: list[list[int]] = [[] for _ in self.program]
        for n, i in last.items():
            if graph.buffers[n].origin == "step" and n not in graph.needed:
                self.frees[i].append(n)

    @property
    def fused(self) -> list[_FusedRun]:
        """The fused kernels of this plan, in program order."""
        return [item for item in self.program if isinstance(item, _FusedRun)]

    def describe(self) -> str:
        """The program, one line per kernel, for reading what was captured and fused."""
        lines = [
            f"{self.label}: {len(self.graph.steps)} launches captured, {len(self.program)} "
            f"kernels per call, {len(self.graph.nodes)} autograd nodes"
        ]
        for item in self.program:
            if isinstance(item, _FusedRun):
                into = f" ({len(item.into)} in place)" if item.into else ""
                reads = len(item.group.leaves)
                lines.append(f"  {item.name} over {list(item.group.shape)}, writes "
                             f"{len(item.outputs)}{into}, reads {reads}")  # fmt: skip
            else:
                s = item.step
                name = "fill" if s.kind == "fill" else op_name(s.kind, s.op)
                name = s.call[1] if s.call is not None else name
                lines.append(f"  {name} -> {list(s.out.shape)}")
        return "\n".join(lines)

    def _execute(self, bufs: list[Any], observed: bool) -> None:
        for item, frees in zip(self.program, self.frees, strict=True):
            item.run(bufs, observed)
            for n in frees:
                bufs[n] = None

    def run(self, inputs: list[Tensor]) -> Any:
        """Run the program on `inputs` and rebuild the result (with its autograd graph)."""
        graph = self.graph
        if any(read() != value for read, value in graph.guards):
            raise RecaptureError
        bufs: list[Any] = [None] * len(graph.buffers)
        versions: dict[int, list[int]] = {}
        for index, n in self.inputs:
            bufs[n] = cells(inputs[index]).base
            versions[n] = cells(inputs[index]).version
        for obj, n, layout, requires_grad, dtype in self.layouts:
            data = cells(obj)
            if (data.shape, data.strides, data.offset) != layout or (
                obj.requires_grad != requires_grad or data.base.dtype != dtype
            ):
                raise RecaptureError
            if bufs[n] is not None and bufs[n] is not data.base:
                raise RecaptureError
            bufs[n] = data.base
            versions[n] = data.version
        for n, storage in self.consts:
            bufs[n] = storage
        for read, check in self.checks:  # class indices in range, ...
            check(read(bufs))
        rebuild = _Rebuild(self, bufs, versions, inputs)
        for leaf in self.cleared:  # f clears these first (optimizer.zero_grad())
            rebuild.value(leaf).grad = None
        leaves = [rebuild.value(leaf) for leaf in self.leaves]
        if any(leaf.grad is not None or has_hooks(leaf) for leaf in leaves):
            raise RunEagerError
        if anyone_listening[0] and hooks.listening():  # tools hear each kernel it runs
            hooks.run_function(self.label, "forward", self._execute, bufs, True)
        else:
            self._execute(bufs, False)
        for n in self.bumps:
            versions[n][0] += 1
        for leaf, (_, grad) in zip(leaves, graph.grads, strict=True):
            if grad is not None:
                # The capture checked this gradient against its leaf, and the guards above
                # refuse a leaf whose layout or dtype changed: no check per call.
                store_grad(leaf, rebuild.tensor(grad, leaf.backend))
        return rebuild.result()


def _fixed(graph: Graph, value: Any) -> Any:
    """The object a captured value names if it is the same at every call, else the value."""
    return graph.objects[value[1]][0] if value[0] == "object" else value


def _reader(ref: Ref, backend: Any) -> Any:
    """A function of a replay's buffers giving the host values of `ref` (for a check)."""
    size = numel_of(ref.shape)
    if backend.device == "cpu" and (strides_from_shape(ref.shape) == ref.strides or size <= 1):
        start, stop, shape = ref.offset, ref.offset + size, ref.shape

        def dense(bufs: list[Any]) -> np.ndarray:  # row-major on the host: a slice
            view: np.ndarray = bufs[ref.buf][start:stop].reshape(shape)
            view.flags.writeable = False
            return view

        return dense
    return lambda bufs: host_values(
        backend, TensorData(bufs[ref.buf], ref.shape, ref.strides, ref.offset)
    )


class _Rebuild:
    """Turns the captured result's references into tensors over this run's buffers."""

    def __init__(self, plan: Plan, bufs: list[Any], versions: dict[int, list[int]],
                 inputs: list[Tensor]) -> None:  # fmt: skip
        self.graph, self.bufs, self.versions, self.inputs = plan.graph, bufs, versions, inputs
        self.nodes: list[Tensor] = []

    def result(self) -> Any:
        for node in self.graph.nodes:
            args = tuple(self.value(v) for v in node.args)
            saved = tuple(self.value(v) for v in node.saved)
            attrs = {k: self.value(v) for k, v in node.attrs.items()}
            out = self.tensor(node.out, node.backend)
            function = replayed(node.function)
            self.nodes.append(function.apply(*args, _Payload(out, saved, attrs)))
        return self.value(self.graph.result)

    def tensor(self, ref: Ref, backend: Any) -> Tensor:
        version = self.versions.setdefault(ref.buf, [0])
        data = TensorData(self.bufs[ref.buf], ref.shape, ref.strides, ref.offset, version)
        return Tensor(data, backend)

    def value(self, v: Any) -> Any:
        if type(v) is not tuple:  # an object found once per plan (`_fixed`)
            return v
        tag = v[0]
        if tag == "value":
            return v[1]
        if tag == "input":
            return self.inputs[v[1]]
        if tag == "node":
            return self.nodes[v[1]]
        if tag == "object":
            return self.graph.objects[v[1]][0]
        if tag == "tensor":
            return self.tensor(v[1], v[2])
        if tag == "copy":
            made = self.tensor(v[1], v[2])
            return Tensor(made.backend.contiguous(cells(made)), made.backend)
        if tag == "seq":
            return v[1](self.value(x) for x in v[2])
        return {k: self.value(x) for k, x in v[1].items()}


__all__ = ["Plan", "RecaptureError", "Replayed", "RunEagerError", "replayed"]
