"""Where the time of a computation goes: kernels, FLOPs, memory traffic and dispatch.

Usage::

    with mf.profiler.profile() as prof:
        loss = model(x).sum()
        loss.backward()
    print(prof.table(sort_by="time", row_limit=20))
    prof.export_chrome_trace("trace.json")      # open in chrome://tracing or Perfetto

Every kernel launched by the thread that entered the `with` block becomes an
`Event`: forward and backward ops, the copies that make tensors contiguous, the
fused kernels of `mf.compile` and of the SGD update. The counting rules are
exact, so they can be checked by hand:

- FLOPs. map and zip: 1 per output cell, whatever the op (exp counts as 1 like
  add), except a copy (the ID map), which counts 0. A fused kernel: 1 per output
  cell for each op it evaluates (copies 0). reduce: 1 per input cell folded in.
  matmul: 2 * B * n * m * k for B batches of (n x k) @ (k x m).
- Bytes. read: for every input, itemsize times the number of *distinct* cells the
  kernel reads (a dim that broadcasts, i.e. has stride 0 or is stretched from
  size 1, counts once); written: itemsize times the output cells. A reduction's
  start value, already in its output, is not counted as read. A "to_host" event
  (a tensor's values copied to the host for numpy(), casts, printing) reads its
  cells and writes none.
- Kernel time: wall time of the kernel call; on CUDA the device is synchronised
  before and after, so it is the kernel's own time, not its launch's.
- Python (dispatch) time of an event: the time on this thread since the previous
  launch ended (or the profile began) until this one starts: Python, autograd,
  checks and allocation, the per-op overhead that fusion removes. The profiler's
  own bookkeeping is measured and left out of both.

Each event names the autograd Function that launched it and the pass ("forward"
or "backward"); the profile hears them, and the launches, through the hooks
registry (`minifw.core.hooks`), as a `Listener`. Profiling is per thread: launches
of other threads are not recorded (they run at full speed). When no profile is
active anywhere, a launch costs one check.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from minifw.core import hooks, operators
from minifw.core.hooks import Launch, Proceed
from minifw.core.tensor_data import TensorData
from minifw.tools.profile_report import (
    SORTS,
    Event,
    OpSummary,
    Totals,
    chrome_trace,
    format_table,
    group_value,
    write_atomically,
)

SORT_KEYS = ("time", "python", "total", "calls", "flops", "bytes", "name")
GROUP_KEYS = ("name", "phase", "function", "backend", "shapes")


def distinct_cells(data: TensorData) -> int:
    """The cells of `data` that are distinct in memory: stride-0 (broadcast) dims count once."""
    n = 1
    for size, stride in zip(data.shape, data.strides, strict=True):
        if stride != 0:
            n *= size
        elif size == 0:
            return 0
    return n


def launch_flops(launch: Launch) -> int:
    """The FLOPs of a launch under the rules in this module's docstring."""
    kind = launch.kind
    if kind in ("map", "map_into", "zip", "zip_into"):
        is_copy = kind in ("map", "map_into") and launch.op == operators.ID
        return 0 if is_copy else launch.outs[0].size
    if kind == "fused":
        return sum(1 for op in launch.fused_ops if op != operators.ID) * launch.outs[0].size
    if kind == "reduce":
        return launch.inputs[0].size
    if kind == "matmul":
        batches, n, m = launch.outs[0].shape
        return 2 * batches * n * m * launch.inputs[0].shape[2]
    return 0


def launch_bytes(launch: Launch) -> tuple[int, int]:
    """(bytes read, bytes written) of a launch under the rules in this module's docstring."""
    read = 0
    for data in launch.inputs:
        read += distinct_cells(data) * data.base.dtype.itemsize
    if launch.kind == "to_host":
        return read, 0
    written = sum(out.size * out.base.dtype.itemsize for out in launch.outs)
    return read, written


def _synchronize() -> None:
    from numba import cuda

    wait: Callable[[], None] = cuda.synchronize
    wait()


class profile(hooks.Listener):  # noqa: N801 - PyTorch's name (torch.profiler.profile)
    """Record the kernel launches of this thread while active (a context manager).

    It is a `hooks.Listener`: it times each launch, and follows the Functions and the
    backward passes that run, to name the Function and the pass of each launch.
    """

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._start = 0.0
        self._stop: float | None = None
        self._last_exit = 0.0
        self._overhead = 0.0
        self._thread: int | None = None
        self._functions: list[tuple[str, str]] = []  # (name, phase) running now, innermost last
        self._backwards = 0  # backward passes running now

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Begin recording this thread's launches."""
        if self._thread is not None:
            raise RuntimeError("profile.start(): this profile is already recording")
        self._thread = threading.get_ident()
        self._start = self._last_exit = time.perf_counter()
        self._stop = None
        self._functions, self._backwards = [], 0
        hooks.add_listener(self)

    def stop(self) -> None:
        """Stop recording (the events stay)."""
        if self._thread is None:
            return
        hooks.remove_listener(self)
        self._stop = time.perf_counter()
        self._thread = None

    def on_function(self, name: str, phase: str, entering: bool) -> None:
        """Follow the Functions running now (the innermost one owns a launch)."""
        if entering:
            self._functions.append((name, phase))
        elif self._functions:
            self._functions.pop()

    def on_backward(self, entering: bool) -> None:
        """Follow the backward passes running now."""
        self._backwards = self._backwards + 1 if entering else max(0, self._backwards - 1)

    def _attribution(self) -> tuple[str | None, str | None]:
        """The innermost Function running now, and the pass: "backward" inside any backward."""
        backward = self._backwards > 0
        if not self._functions:
            return None, "backward" if backward else None
        backward = backward or any(phase == "backward" for _, phase in self._functions)
        return self._functions[-1][0], "backward" if backward else "forward"

    def on_launch(self, launch: Launch, proceed: Proceed) -> None:
        """Run the launch, timed, and record it as an `Event`."""
        enter = time.perf_counter()
        sync = launch.backend.device == "cuda"
        if sync:
            _synchronize()
        begin = time.perf_counter()
        proceed(launch)
        if sync:
            _synchronize()
        end = time.perf_counter()
        function, phase = self._attribution()
        read, written = launch_bytes(launch)
        data = launch.outs[0] if launch.outs else launch.inputs[0]
        event = Event(
            name=launch.name,
            kind=launch.kind,
            function=function,
            phase=phase,
            backend=launch.backend.name,
            input_shapes=tuple(x.shape for x in launch.inputs),
            output_shapes=tuple(x.shape for x in launch.outs) if launch.kind != "to_host" else (),
            dtype=str(data.base.dtype),
            start_us=(begin - self._start) * 1e6,
            kernel_us=(end - begin) * 1e6,
            python_us=max(0.0, enter - self._last_exit) * 1e6,
            flops=launch_flops(launch),
            bytes_read=read,
            bytes_written=written,
            thread=threading.get_ident(),
        )
        with self._lock:
            self.events.append(event)
        leave = time.perf_counter()
        self._overhead += (begin - enter) + (leave - end)
        self._last_exit = leave

    # Summaries
    def totals(self) -> Totals:
        """Launches, times, FLOPs and bytes of the whole profile."""
        stop = self._stop if self._stop is not None else time.perf_counter()
        events = list(self.events)
        return Totals(
            launches=sum(1 for e in events if e.kind != "to_host"),
            kernel_us=sum(e.kernel_us for e in events),
            python_us=sum(e.python_us for e in events),
            wall_us=(stop - self._start) * 1e6,
            overhead_us=self._overhead * 1e6,
            flops=sum(e.flops for e in events),
            bytes_read=sum(e.bytes_read for e in events),
            bytes_written=sum(e.bytes_written for e in events),
        )

    def key_averages(self, group_by: Sequence[str] = ("name",)) -> list[OpSummary]:
        """The events added up per group (by op name; also "phase", "function", ...)."""
        for name in group_by:
            if name not in GROUP_KEYS:
                raise ValueError(f"group_by: unknown key {name!r}; expected some of {GROUP_KEYS}")
        groups: dict[tuple[str, ...], OpSummary] = {}
        for event in list(self.events):
            key = tuple(group_value(event, k) for k in group_by)
            if key not in groups:
                groups[key] = OpSummary(key)
            groups[key].add(event)
        return list(groups.values())

    def table(
        self, sort_by: str = "time", row_limit: int = 20, group_by: Sequence[str] = ("name",)
    ) -> str:
        """A per-op summary like PyTorch's `key_averages().table()`, plus totals."""
        if sort_by not in SORT_KEYS:
            raise ValueError(f"sort_by: unknown key {sort_by!r}; expected one of {SORT_KEYS}")
        rows = sorted(self.key_averages(group_by), key=SORTS[sort_by])
        totals = self.totals()
        return format_table(rows[: max(row_limit, 0)], list(group_by), totals, len(rows))

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the events as Chrome trace-event JSON (chrome://tracing, Perfetto), atomically."""
        write_atomically(Path(path), chrome_trace(list(self.events), os.getpid()))


__all__ = ["Event", "OpSummary", "Totals", "distinct_cells", "launch_bytes", "launch_flops",
           "profile"]  # fmt: skip
