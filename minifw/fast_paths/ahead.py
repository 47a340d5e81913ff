"""Compiling ahead: a helper process fills the kernel cache while a new program compiles.

With an empty kernel cache (the first run on a machine) a program compiles each kernel
the first time it launches it, one after another, on one core: about 20 s before the
first step of a small MLP, a minute for the digits net, while the other cores idle.
This file puts a second core to work. On the first kernel a process really compiles
(a cache miss, which Numba reports as a "numba:compile" event), it starts one helper,
`main([DTYPE])` in a new Python process, that compiles the kernels training
programs launch (COMMON, then EXTRA) on tiny inputs of that dtype, into the same disk
cache; when the program reaches a kernel the helper has cached, Numba loads it instead
of compiling it. While the program compiles its first kernel (a product: seconds), the
helper compiles the few it launches next; then it goes on from COMMON's end while the
program compiles what it launches from the front (`order`). The helper is stopped when
the program exits. It runs at the lowest priority, on what the program leaves idle.

Once per process and float dtype. MINIFW_COMPILE_AHEAD=0 turns it off (the test
suite does; so does the helper for itself); it never starts on a single core.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
from numba.core import event

from minifw._threads import gauge
from minifw.core import operators as ops
from minifw.fast_paths import (
    fused_fold,
    fused_loss,
    fused_pool,
    fused_update,
    line_loops,
    matmul,
)

# (kind, op code, parallel): the kernels both the MLP step of bench/ and the digits net
# of project/run_digits.py launch, in the order the MLP first launches them (a serial
# product launches the same kernel as a parallel one).
COMMON: tuple[tuple[str, int, bool], ...] = (
    ("matmul", 0, True),
    ("zip", ops.ADD, False),
    ("map", ops.RELU, False),
    ("cross_entropy", 0, False),
    ("reduce_across", ops.ADD, False),
    ("zip", ops.DERIVATIVES[ops.RELU], False),
)
# Kernels only some programs launch: the SGD update; the digits net's fold and max
# pooling (one kernel each); pooling op by op (max and min across windows, eq/ne masks:
# bigger or overlapping windows), copies, bigger batches (parallel kernels), Adam's fused
# update; log_softmax and nll_loss op by op (softmax, cross_entropy with class weights
# or on a big batch).
EXTRA: tuple[tuple[str, int, bool], ...] = (
    ("sub_scaled", 0, False),
    ("sub_scaled", 0, True),
    ("fold", 0, False),
    ("max_pool2d", 0, False),
    ("map", ops.ID, False),
    ("reduce_across", ops.MAX, False),
    ("zip", ops.EQ, False),
    ("zip", ops.NE, False),
    ("reduce_across", ops.MIN, False),
    ("map", ops.ID, True),
    ("reduce_across", ops.ADD, True),
    ("adam_step", 0, False),
    ("zip", ops.DIV, False),
    ("zip", ops.ADD, True),
    ("map", ops.RELU, True),
    ("reduce_across", ops.MAX, True),
    ("zip", ops.EQ, True),
    ("zip", ops.NE, True),
    ("zip", ops.SELECT, True),
    ("reduce_across", ops.MIN, True),
    ("adam_step", 0, True),
    ("reduce_along", ops.MAX, False),
    ("zip", ops.SUB, False),
    ("map", ops.EXP, False),
    ("reduce_along", ops.ADD, False),
    ("map", ops.LOG, False),
    ("zip", ops.SELECT, False),
    ("zip", ops.MUL, False),
)
# How many kernels of COMMON after its first the helper compiles first: about as many as
# it can while the program compiles that first one (it starts a second or so later).
RIGHT_AFTER_FIRST = 2
FLOATS = ("float32", "float64")
HELPER = "from minifw.fast_paths.ahead import main"  # the helper's program, with main(...)


def compile_one(kind: str, op: int, parallel: bool, dtype: str) -> None:
    """Compile (or load from the disk cache) one kernel, by launching it on 4 cells."""
    cells = np.ones(4, dtype)
    shape, strides = np.array([2, 2]), np.array([2, 1])
    if kind == "map":
        line_loops.run_map(op, cells.copy(), shape, strides, cells, shape, strides, parallel)
    elif kind == "zip":
        operands = (cells, shape, strides, cells, shape, strides)
        line_loops.run_zip(op, cells.copy(), shape, strides, *operands, parallel)
    elif kind in ("reduce_along", "reduce_across"):
        dim = 1 if kind == "reduce_along" else 0
        out_shape = np.array([2, 1]) if dim == 1 else np.array([1, 2])
        out_strides = np.array([1, 1])
        out = np.zeros(2, dtype)
        line_loops.run_reduce(op, out, out_shape, out_strides, cells, shape, strides, dim,
                              parallel)  # fmt: skip
    elif kind == "matmul":
        shape3, strides3 = np.array([1, 2, 2]), np.array([4, 2, 1])
        square = (shape3, strides3)
        matmul.matmul(cells.copy(), *square, cells, *square, cells, *square, parallel)
        deep = np.ones(matmul.DOT_DEPTH, dtype)  # a narrow serial product: `_dots`
        row, column = np.array([1, 1, deep.size]), np.array([1, deep.size, 1])
        layout = (np.array([deep.size, deep.size, 1]), np.array([deep.size, 1, 1]))
        matmul.matmul(np.zeros(1, dtype), np.array([1, 1, 1]), np.array([1, 1, 1]),
                      deep, row, layout[0], deep, column, layout[1], False)  # fmt: skip
    elif kind == "sub_scaled":
        kernel = fused_update.sub_scaled if parallel else fused_update.sub_scaled_serial
        kernel(cells.copy(), cells, np.ones(1, dtype))
    elif kind == "cross_entropy":
        labels, stats = np.zeros(2, np.int64), np.empty(6, dtype)
        fused_loss.cross_entropy_forward(cells, 2, labels, 0, 1, -100, True, stats)
        grad = np.ones(1, dtype)
        fused_loss.cross_entropy_backward(cells, 2, labels, 0, 1, -100, stats, grad, 0, 0,
                                          cells.copy())  # fmt: skip
    elif kind == "fold":  # a 2x2 input, a 2x2 kernel of stride 1 and no padding
        sizes = np.array([1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0])
        fused_fold.fold2d(cells, np.array([4, 4, 2, 1, 1, 1]), cells.copy(), sizes)
    elif kind == "max_pool2d":  # a 2x2 input, one 2x2 window
        sizes, stats = np.array([1, 1, 2, 2, 2, 2, 1, 1, 2, 2]), np.empty(2, dtype)
        fused_pool.max_pool2d_forward(cells, np.array([4, 4, 2, 1]), sizes, stats)
        grad = np.ones(1, dtype)
        fused_pool.max_pool2d_backward(grad, np.array([1, 1, 1, 1]), stats, sizes, cells.copy())
    elif kind == "adam_step":
        kernel = fused_update.adam_step if parallel else fused_update.adam_step_serial
        kernel(cells.copy(), cells, cells.copy(), cells.copy(), np.ones(6, dtype))
    else:
        raise ValueError(f"compile_one: no kernel kind {kind!r}")


def enabled() -> bool:
    """True where a helper may start: not turned off, and more than one core to run on."""
    return os.environ.get("MINIFW_COMPILE_AHEAD", "1") != "0" and gauge.cores > 1


class _Starter(event.Listener):  # type: ignore[misc]
    """Starts the helper on the first compile of a minifw kernel of a float dtype."""

    def __init__(self) -> None:
        self.started: dict[str, subprocess.Popen[bytes]] = {}
        self.lock = threading.Lock()

    def on_start(self, compile_event: Any) -> None:
        data = compile_event.data
        module = getattr(data["dispatcher"].py_func, "__module__", "") or ""
        if not module.startswith("minifw."):
            return
        arrays = [getattr(arg, "dtype", None) for arg in data["args"]]
        dtype = next((str(d) for d in arrays if str(d) in FLOATS), None)
        if dtype is not None and dtype not in self.started and enabled():
            self.start(dtype)

    def on_end(self, compile_event: Any) -> None:
        pass

    def start(self, dtype: str) -> None:
        """Start the helper for `dtype` (once), its CPU time counted as this process's."""
        with self.lock:
            if dtype in self.started:
                return
            env = {**os.environ, "MINIFW_COMPILE_AHEAD": "0"}
            here = str(Path(__file__).resolve().parents[2])  # so that it imports this minifw
            env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
            helper = subprocess.Popen(
                [sys.executable, "-c", f"{HELPER}; main([{dtype!r}])"],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            self.started[dtype] = helper
            gauge.count_as_own(helper.pid)

    def stop(self) -> None:
        """Stop every helper still running (at exit: what it cached stays cached)."""
        for helper in self.started.values():
            if helper.poll() is None:
                helper.terminate()
                helper.wait()


starter = _Starter()


def listen() -> None:
    """Start a helper on this process's first kernel compile (unless turned off)."""
    if enabled():
        event.register("numba:compile", starter)  # type: ignore[no-untyped-call]
        atexit.register(starter.stop)


def order() -> list[tuple[str, int, bool]]:
    """What the helper compiles, in turn.

    The RIGHT_AFTER_FIRST kernels the program launches after its first (which it is
    compiling itself), so that it finds them cached; then the rest of COMMON from its
    end, while the program goes on from the front, so that the two meet in the middle;
    then COMMON's first kernel (long cached by then, where it was the program's first),
    and EXTRA.
    """
    head = COMMON[1 : 1 + RIGHT_AFTER_FIRST]
    tail = COMMON[1 + RIGHT_AFTER_FIRST :]
    return [*head, *reversed(tail), COMMON[0], *EXTRA]


def main(argv: list[str]) -> None:
    """The helper's program: compile `order()` for the dtype named in `argv`."""
    dtype = argv[0] if argv else "float64"
    if dtype not in FLOATS:
        raise SystemExit(f"ahead: dtype must be one of {FLOATS}, not {dtype!r}")
    if hasattr(os, "nice"):
        # The lowest priority: the program's own threads get a core whenever they want one
        # (its parallel kernels wait for their slowest thread), the helper the idle time.
        os.nice(19)
    for kind, op, parallel in order():
        compile_one(kind, op, parallel, dtype)


__all__ = [
    "COMMON",
    "EXTRA",
    "RIGHT_AFTER_FIRST",
    "compile_one",
    "enabled",
    "listen",
    "main",
    "order",
    "starter",
]
