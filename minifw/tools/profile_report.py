"""The reporting half of the profiler: events, per-op summaries, the table, the trace file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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


def chrome_trace(events: Sequence[Event], pid: int) -> dict[str, Any]:
    """The events as Chrome trace-event JSON: one "X" slice per kernel and per dispatch gap."""
    trace: list[dict[str, Any]] = []
    for e in events:
        args = {
            "function": e.function,
            "phase": e.phase,
            "backend": e.backend,
            "input_shapes": [list(s) for s in e.input_shapes],
            "output_shapes": [list(s) for s in e.output_shapes],
            "dtype": e.dtype,
            "flops": e.flops,
            "bytes_read": e.bytes_read,
            "bytes_written": e.bytes_written,
        }
        kernel = {"name": e.name, "cat": e.kind, "ph": "X", "ts": e.start_us}
        trace.append({**kernel, "dur": e.kernel_us, "pid": pid, "tid": e.thread, "args": args})
        if e.python_us > 0:
            gap = {"name": "python dispatch", "cat": "python", "ph": "X"}
            trace.append({**gap, "ts": e.start_us - e.python_us, "dur": e.python_us,
                          "pid": pid, "tid": e.thread, "args": {"before": e.name}})  # fmt: skip
    return {"traceEvents": trace, "displayTimeUnit": "ms"}


def group_value(event: Event, key: str) -> str:
    """The value of `event` that rows are grouped by under `key` (name, shapes, ...)."""
    if key == "shapes":
        return " ".join(str(list(s)) for s in event.input_shapes)
    value = getattr(event, key)
    return "-" if value is None else str(value)


SORTS: dict[str, Callable[[OpSummary], Any]] = {
    "time": lambda s: -s.kernel_us,
    "python": lambda s: -s.python_us,
    "total": lambda s: -(s.kernel_us + s.python_us),
    "calls": lambda s: -s.calls,
    "flops": lambda s: -s.flops,
    "bytes": lambda s: -(s.bytes_read + s.bytes_written),
    "name": lambda s: s.key,
}


def format_table(rows: list[OpSummary], keys: list[str], t: Totals, total_rows: int) -> str:
    """The profiler's table as text: one line per group of launches, then the totals."""
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
    widths = [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(headers)]
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


def write_atomically(path: Path, content: dict[str, Any]) -> None:
    """Write `content` as JSON to `path` through a temporary file, never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(content, stream)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


__all__ = ["SORTS", "Event", "OpSummary", "Totals", "chrome_trace", "format_table", "group_value",
           "write_atomically"]  # fmt: skip
