"""Where the time of a computation goes: kernels, FLOPs, memory traffic and dispatch.

Usage::

    with mf.profiler.profile() as prof:
        loss = model(x).sum()
        loss.backward()
    print(prof.table(sort_by="time", row_limit=20))
    prof.export_chrome_trace("trace.json")      # open in chrome://tracing or Perfetto

Every kernel launched by the thread that entered the `with` block becomes an
`Event`: forward and backward ops, the copies that make tensors contiguous, the
fused kernels of `mf.compile`. The counting rules are exact, so they can be
checked by hand:

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

Profiling is per thread: launches of other threads are not recorded (they run
at full speed). When no profile is active anywhere, a launch costs one check.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from . import _launch_hooks, operators
from ._launch_hooks import Launch
from .tensor_data import TensorData

SORT_KEYS = ("time", "python", "total", "calls", "flops", "bytes", "name")
GROUP_KEYS = ("name", "phase", "function", "backend", "shapes")
_FRAMES = 40  # how far up the stack to look for the autograd Function of a launch


@dataclass(slots=True)
class Event:
    """One kernel launch seen by a profile (times in microseconds from the profile start)."""

    name: str
    kind: str
    function: str | None
    phase: str | None
    backend: str
    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    dtype: str
    start_us: float
    kernel_us: float
    python_us: float
    flops: int
    bytes_read: int
    bytes_written: int
    thread: int

    @property
    def bytes(self) -> int:
        """Bytes read plus bytes written."""
        return self.bytes_read + self.bytes_written


@dataclass(slots=True)
class OpSummary:
    """The events of one group (one op name, by default) added up."""

    key: tuple[str, ...]
    calls: int = 0
    kernel_us: float = 0.0
    python_us: float = 0.0
    flops: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def add(self, event: Event) -> None:
        """Count one more event in this group."""
        self.calls += 1
        self.kernel_us += event.kernel_us
        self.python_us += event.python_us
        self.flops += event.flops
        self.bytes_read += event.bytes_read
        self.bytes_written += event.bytes_written


@dataclass(slots=True)
class Totals:
    """Whole-profile figures: what `table` prints below the rows."""

    launches: int
    kernel_us: float
    python_us: float
    wall_us: float
    overhead_us: float
    flops: int
    bytes_read: int
    bytes_written: int
    outside_share: float = field(init=False)

    def __post_init__(self) -> None:
        measured = max(self.wall_us - self.overhead_us, 1e-9)
        self.outside_share = max(0.0, 1.0 - self.kernel_us / measured)

    @property
    def gflops(self) -> float:
        """Achieved GFLOP/s over kernel time."""
        return self.flops / max(self.kernel_us, 1e-9) / 1e3

    @property
    def gbps(self) -> float:
        """Achieved GB/s over kernel time."""
        return (self.bytes_read + self.bytes_written) / max(self.kernel_us, 1e-9) / 1e3

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved."""
        return self.flops / max(self.bytes_read + self.bytes_written, 1)


# BEGIN TASK 3.5


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
    if kind in ("map", "map_into", "zip"):
        return 0 if kind != "zip" and launch.op == operators.ID else launch.outs[0].size
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


# END TASK 3.5


def _function_of(frame: FrameType | None) -> tuple[str | None, str | None]:
    """The autograd Function running a launch (from the call stack) and the pass it is in."""
    function: str | None = None
    phase: str | None = None
    for _ in range(_FRAMES):
        if frame is None:
            break
        code = frame.f_code
        name = code.co_name
        if name in ("forward", "backward") and "ctx" in code.co_varnames[:2]:
            if function is None:
                function = _class_name(frame)
            if name == "backward":
                phase = "backward"
        elif name == "backpropagate":
            phase = "backward"
        frame = frame.f_back
    if phase is None and function is not None:
        phase = "forward"
    return function, phase


def _class_name(frame: FrameType) -> str:
    code = frame.f_code
    if code.co_varnames[:1] == ("cls",):
        owner = frame.f_locals.get("cls")
        if isinstance(owner, type):
            return owner.__name__
    return code.co_qualname.split(".")[-2] if "." in code.co_qualname else code.co_qualname


def _synchronize() -> None:
    from numba import cuda

    wait: Callable[[], None] = cuda.synchronize
    wait()


class profile:  # noqa: N801 - PyTorch's name (torch.profiler.profile)
    """Record the kernel launches of this thread while active (a context manager)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._start = 0.0
        self._stop: float | None = None
        self._last_exit = 0.0
        self._overhead = 0.0
        self._thread: int | None = None
        self._context: list[tuple[str | None, str | None]] = []

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
        _launch_hooks.add_listener(self._listen)

    def stop(self) -> None:
        """Stop recording (the events stay)."""
        if self._thread is None:
            return
        _launch_hooks.remove_listener(self._listen)
        self._stop = time.perf_counter()
        self._thread = None

    def _listen(self, launch: Launch, proceed: Callable[[Launch], None]) -> None:
        enter = time.perf_counter()
        sync = launch.backend.device == "cuda"
        if sync:
            _synchronize()
        begin = time.perf_counter()
        proceed(launch)
        if sync:
            _synchronize()
        end = time.perf_counter()
        function, phase = _launch_hooks.context() or _function_of(sys._getframe(1))
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
            key = tuple(_group_value(event, k) for k in group_by)
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
        rows = sorted(self.key_averages(group_by), key=_SORTS[sort_by])
        totals = self.totals()
        return _format_table(rows[: max(row_limit, 0)], list(group_by), totals, len(rows))

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the events as Chrome trace-event JSON (chrome://tracing, Perfetto), atomically."""
        pid = os.getpid()
        trace: list[dict[str, Any]] = []
        for e in list(self.events):
            args = {
                "function": e.function, "phase": e.phase, "backend": e.backend,
                "input_shapes": [list(s) for s in e.input_shapes],
                "output_shapes": [list(s) for s in e.output_shapes], "dtype": e.dtype,
                "flops": e.flops, "bytes_read": e.bytes_read, "bytes_written": e.bytes_written,
            }  # fmt: skip
            trace.append({"name": e.name, "cat": e.kind, "ph": "X", "ts": e.start_us,
                          "dur": e.kernel_us, "pid": pid, "tid": e.thread,
                          "args": args})  # fmt: skip
            if e.python_us > 0:
                trace.append({"name": "python dispatch", "cat": "python", "ph": "X",
                              "ts": e.start_us - e.python_us, "dur": e.python_us, "pid": pid,
                              "tid": e.thread, "args": {"before": e.name}})  # fmt: skip
        _write_atomically(Path(path), {"traceEvents": trace, "displayTimeUnit": "ms"})


def _group_value(event: Event, key: str) -> str:
    if key == "shapes":
        return " ".join(str(list(s)) for s in event.input_shapes)
    value = getattr(event, key)
    return "-" if value is None else str(value)


_SORTS: dict[str, Callable[[OpSummary], Any]] = {
    "time": lambda s: -s.kernel_us,
    "python": lambda s: -s.python_us,
    "total": lambda s: -(s.kernel_us + s.python_us),
    "calls": lambda s: -s.calls,
    "flops": lambda s: -s.flops,
    "bytes": lambda s: -(s.bytes_read + s.bytes_written),
    "name": lambda s: s.key,
}


def _format_table(rows: list[OpSummary], keys: list[str], t: Totals, total_rows: int) -> str:
    headers = [k.capitalize() for k in keys] + [
        "Calls", "Kernel ms", "Kernel %", "Python ms", "Avg kernel us",
        "MFLOP", "MB", "GFLOP/s", "GB/s", "FLOP/B",
    ]  # fmt: skip
    body = []
    for s in rows:
        moved = s.bytes_read + s.bytes_written
        body.append(
            [*s.key, str(s.calls), f"{s.kernel_us / 1e3:.3f}",
             f"{100 * s.kernel_us / max(t.kernel_us, 1e-9):.1f}", f"{s.python_us / 1e3:.3f}",
             f"{s.kernel_us / s.calls:.1f}", f"{s.flops / 1e6:.3f}", f"{moved / 1e6:.3f}",
             f"{s.flops / max(s.kernel_us, 1e-9) / 1e3:.2f}",
             f"{moved / max(s.kernel_us, 1e-9) / 1e3:.2f}", f"{s.flops / max(moved, 1):.3f}"]
        )  # fmt: skip
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]
    line = "-" * (sum(widths) + 2 * (len(widths) - 1))
    out = [line, _row(headers, widths, len(keys)), line]
    out += [_row(r, widths, len(keys)) for r in body]
    out.append(line)
    if total_rows > len(rows):
        out.append(f"({total_rows - len(rows)} more rows not shown)")
    out += [
        f"Kernel launches: {t.launches}   kernel time: {t.kernel_us / 1e3:.3f} ms   "
        f"Python (dispatch) time: {t.python_us / 1e3:.3f} ms   wall time: "
        f"{(t.wall_us - t.overhead_us) / 1e3:.3f} ms (profiler overhead "
        f"{t.overhead_us / 1e3:.3f} ms left out)",
        f"FLOPs: {t.flops:,}   bytes: {t.bytes_read + t.bytes_written:,} (read "
        f"{t.bytes_read:,}, written {t.bytes_written:,})",
        f"Achieved: {t.gflops:.3f} GFLOP/s, {t.gbps:.3f} GB/s over kernel time   arithmetic "
        f"intensity: {t.intensity:.3f} FLOP/byte",
        f"Time outside kernels: {100 * t.outside_share:.1f}% of wall time",
    ]
    return "\n".join(out)


def _row(cells: Sequence[str], widths: list[int], left: int) -> str:
    parts = [
        c.ljust(w) if i < left else c.rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    ]
    return "  ".join(parts)


def _write_atomically(path: Path, content: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(content, stream)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


__all__ = ["Event", "OpSummary", "Totals", "distinct_cells", "launch_bytes", "launch_flops",
           "profile"]  # fmt: skip
