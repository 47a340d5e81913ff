"""The op profiler: exact FLOP and byte counts, attribution, tables and Chrome traces."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import minifw as mf
from minifw.core import hooks, operators
from minifw.core.tensor_data import TensorData
from minifw.tools.profiler import distinct_cells, profile

pytestmark = pytest.mark.extra  # given code (profiler, mf.compile): no course task


def _t(shape, backend, dtype=mf.float64, requires_grad=False):
    values = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) / 10.0 - 0.3
    return mf.tensor(values, dtype=dtype, backend=backend, requires_grad=requires_grad)


def _only(prof, name):
    events = [e for e in prof.events if e.name == name]
    assert len(events) == 1, [e.name for e in prof.events]
    return events[0]


def test_matmul_flops_and_bytes_are_exact(backend):
    a, b = _t((3, 4), backend), _t((4, 5), backend)
    with profile() as prof:
        a @ b
    event = _only(prof, "matmul")
    assert event.flops == 2 * 3 * 5 * 4
    assert event.bytes_read == 8 * (3 * 4 + 4 * 5)
    assert event.bytes_written == 8 * 3 * 5
    assert event.output_shapes == ((1, 3, 5),)
    assert event.backend == backend.name


def test_batched_matmul_reads_a_broadcast_operand_once(backend):
    a, b = _t((2, 3, 4), backend, mf.float32), _t((4, 5), backend, mf.float32)
    with profile() as prof:
        a @ b
    event = _only(prof, "matmul")
    assert event.flops == 2 * 2 * 3 * 5 * 4
    assert event.bytes_read == 4 * (2 * 3 * 4 + 4 * 5)  # b: one (4, 5) read for both batches
    assert event.bytes_written == 4 * 2 * 3 * 5
    assert event.dtype == "float32"


def test_elementwise_and_reduce_counts_are_exact(backend):
    x, bias = _t((3, 4), backend), _t((4,), backend)
    with profile() as prof:
        y = x + bias
        z = y.exp()
        z.sum(dim=1)
        x.T.contiguous()
    add, exp = _only(prof, "add"), _only(prof, "exp")
    assert (add.flops, add.bytes_read, add.bytes_written) == (12, 8 * (12 + 4), 8 * 12)
    assert (exp.flops, exp.bytes_read, exp.bytes_written) == (12, 8 * 12, 8 * 12)
    reduce = _only(prof, "reduce_add")
    assert (reduce.flops, reduce.bytes_read, reduce.bytes_written) == (12, 8 * 12, 8 * 3)
    copy = _only(prof, "copy")
    assert (copy.flops, copy.bytes_read, copy.bytes_written) == (0, 8 * 12, 8 * 12)
    totals = prof.totals()
    assert totals.flops == 12 + 12 + 12
    assert totals.launches == 4


def test_distinct_cells_counts_broadcast_dims_once():
    storage = np.zeros(6)
    assert distinct_cells(TensorData(storage, (2, 3))) == 6
    assert distinct_cells(TensorData(storage, (4, 2, 3), (0, 3, 1))) == 6
    assert distinct_cells(TensorData(storage, (5, 3), (0, 1))) == 3
    assert distinct_cells(TensorData(storage, (0, 3), (0, 1))) == 0


def test_forward_and_backward_ops_are_attributed():
    x = _t((2, 3), "fast", requires_grad=True)
    w = _t((3, 2), "fast", requires_grad=True)
    with profile() as prof:
        hidden = (x @ w).relu()
        loss = hidden.sum()
        loss.backward()
    phases = {(e.name, e.phase) for e in prof.events}
    assert ("matmul", "forward") in phases
    assert ("matmul", "backward") in phases
    assert ("relu_back", "backward") in phases
    relu = _only(prof, "relu")
    assert relu.function + "Backward" == hidden.grad_fn.name()  # the Function that made it
    assert relu.function == "Relu"  # named by the op table, as PyTorch's ReluBackward0
    assert relu.phase == "forward"
    functions = {e.function for e in prof.events if e.phase == "backward"}
    assert "MatMul" in functions


def test_table_lists_ops_and_totals():
    x = _t((4, 4), "fast")
    with profile() as prof:
        for _ in range(3):
            x = (x * 0.5).tanh()
    text = prof.table(sort_by="calls", row_limit=1)
    lines = text.splitlines()
    assert lines[1].split()[:2] == ["Name", "Calls"]
    assert any(line.split()[:2] in (["mul", "3"], ["tanh", "3"]) for line in lines)
    assert "(1 more rows not shown)" in text
    assert "FLOPs: 96" in text  # 3 muls and 3 tanhs of 16 cells
    assert "Time outside kernels:" in text
    assert "arithmetic intensity" in text
    grouped = prof.key_averages(group_by=("name", "phase"))
    assert sorted(s.calls for s in grouped) == [3, 3]
    with pytest.raises(ValueError, match="sort_by"):
        prof.table(sort_by="speed")
    with pytest.raises(ValueError, match="group_by"):
        prof.key_averages(group_by=("colour",))


def test_times_add_up():
    x = _t((8, 8), "fast")
    with profile() as prof:
        for _ in range(5):
            x = x + 1.0
    totals = prof.totals()
    assert totals.kernel_us > 0
    assert all(e.python_us >= 0 and e.kernel_us >= 0 for e in prof.events)
    assert totals.kernel_us + totals.python_us <= totals.wall_us - totals.overhead_us + 1.0
    assert 0.0 <= totals.outside_share <= 1.0
    starts = [e.start_us for e in prof.events]
    assert starts == sorted(starts)


def test_chrome_trace_is_valid_trace_event_json(tmp_path):
    x = _t((3, 3), "fast", requires_grad=True)
    with profile() as prof:
        (x * x).sum().backward()
    path = tmp_path / "out" / "trace.json"
    prof.export_chrome_trace(path)
    content = json.loads(path.read_text())
    events = content["traceEvents"]
    kernels = [e for e in events if e["cat"] != "python"]
    assert len(kernels) == len(prof.events)
    for event in events:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= event.keys()
        assert event["ph"] == "X"
        assert event["dur"] >= 0
    assert {e["name"] for e in kernels} == {e.name for e in prof.events}
    assert kernels[0]["args"]["flops"] == prof.events[0].flops
    assert [p.name for p in path.parent.iterdir()] == ["trace.json"]  # no temporary left


def test_profiling_is_per_thread_and_the_hook_is_removed():
    assert hooks.anyone_listening[0] is False
    x = _t((2, 2), "fast")
    other_done = threading.Event()

    def other() -> None:
        assert not hooks.listening()  # this thread has no listener of its own
        (x * 3.0).exp()
        other_done.set()

    with profile() as prof:
        assert hooks.anyone_listening[0] is True and hooks.listening()
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        _ = -x
    assert other_done.is_set()
    assert [e.name for e in prof.events] == ["neg"]
    assert hooks.anyone_listening[0] is False
    with profile() as outer, profile() as inner:
        x.abs()
    assert [e.name for e in outer.events] == [e.name for e in inner.events] == ["abs"]
    assert hooks.anyone_listening[0] is False


def test_host_copies_are_reported_without_flops():
    x = _t((2, 3), "fast")
    with profile() as prof:
        x.to(mf.float32)
    event = _only(prof, "to_host")
    assert (event.flops, event.bytes_read, event.bytes_written) == (0, 8 * 6, 0)
    assert prof.totals().launches == 0


def test_a_zip_into_an_existing_tensor_runs_and_counts_like_a_zip():
    x, y = _t((3, 4), "fast"), _t((3, 4), "fast")
    expected = (x - y * 2.0).tolist()
    backend = x.backend
    with profile() as prof:
        backend.zip(operators.SUB, x._data, (y * 2.0)._data, out=x._data)
    sub = _only(prof, "sub")
    assert sub.kind == "zip_into"
    assert (sub.flops, sub.bytes_read, sub.bytes_written) == (12, 8 * 24, 8 * 12)
    assert x.tolist() == expected  # the profiled launch still ran its kernel
