"""What a program's first run compiles: each helper once, and once per machine.

A cold start (an empty kernel cache) spends its time compiling. These tests check the
rules that keep that short: the helpers the line loops call are cached on disk under
names of their own (a second process loads them), a line loop compiles once for all
the calls of its kernels, and each reduction's copy folds with its op alone. Timing is
never asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import config

from minifw import _jit
from minifw.core import operators as ops
from minifw.core import tensor_data
from minifw.fast_paths import line_loops

pytestmark = [
    pytest.mark.extra,  # how kernels are compiled is no course task
    pytest.mark.skipif(config.DISABLE_JIT, reason="NUMBA_DISABLE_JIT=1: nothing compiles"),
]

ROOT = Path(__file__).resolve().parents[2]

# Prints, for each helper the line loops call, its cache hits and misses.
HELPER_STATS = """
import json, sys
import numpy as np
from minifw.fast_paths import line_loops as L
cells, shape, strides = np.ones(4), np.array([2, 2]), np.array([2, 1])
operands = (cells, shape, strides, cells, shape, strides)
L.run_zip(int(sys.argv[1]), cells.copy(), shape, strides, *operands, False)
helpers = [L._numel, L._same_dense, L._steps_along, L._line_step, L._row_jumps,
           L._next_row, L._row_tasks, L.to_index, L.index_to_position]
stats = {h.py_func.__qualname__: [sum(h.stats.cache_hits.values()),
                                  sum(h.stats.cache_misses.values())] for h in helpers}
print(json.dumps(stats))
"""


def helper_stats(op: int, cache: Path) -> dict[str, list[int]]:
    """{helper name: [cache hits, cache misses]} of a fresh process launching zip(op)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "MINIFW_COMPILE_AHEAD": "0"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(HELPER_STATS), str(op)],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_second_process_loads_the_helpers_the_first_one_compiled(tmp_path: Path) -> None:
    first = helper_stats(ops.ADD, tmp_path)
    assert all(misses == 1 for _, misses in first.values()), first
    # Another op's kernel: new to the cache, but every helper it calls is there.
    later = helper_stats(ops.MUL, tmp_path)
    assert all(stats == [1, 0] for stats in later.values()), later
    assert "to_index__line_loops" in later  # a name of its own, apart from other copies


def test_copies_have_names_of_their_own_and_generated_code_is_not_cached() -> None:
    copies = _jit.compile_functions([tensor_data], ["to_index"], _jit.called, suffix="__t")
    assert copies.to_index.py_func.__qualname__ == "to_index__t"
    assert copies.to_index._cache.__class__.__name__ == "FunctionCache"
    generated = _jit.called(ops.dispatchers_for(ops.EXP)["unary"])  # no file: never cached
    assert generated._cache.__class__.__name__ == "NullCache"


def test_a_line_loop_compiles_once_for_every_layout_and_both_kernels() -> None:
    # Copies of the kernels that are never cached, so that they compile (and call the
    # line loop) here, whatever the disk cache holds.
    zips = [_jit.respecialise(kernel, f"__test{i}", line_loops._zip_helpers(ops.SUB), cache=None)
            for i, kernel in enumerate((line_loops._zip_serial, line_loops._zip))]  # fmt: skip
    dense, shape, strides = np.ones(6), np.array([2, 3]), np.array([3, 1])
    row, row_shape, row_strides = np.ones(3), np.array([1, 3]), np.array([0, 1])
    for kernel in zips:
        for b in ((dense, shape, strides), (row, row_shape, row_strides)):
            out = np.empty(6)
            kernel(ops.SUB, out, shape, strides, dense, shape, strides, *b)
            np.testing.assert_array_equal(out, np.zeros(6))
    loops = {kernel.py_func.__globals__["_zip_lines"] for kernel in zips}
    assert len(loops) == 1, "the parallel and serial kernels share the op's line loop"
    # Other tests may have compiled it for other dtypes (argmax subtracts int64 cells).
    float64_signatures = [sig for sig in loops.pop().signatures if str(sig[1].dtype) == "float64"]
    assert len(float64_signatures) == 1, "literal steps would compile it again"


def test_each_reduction_copy_folds_with_its_op_alone() -> None:
    a, shape, strides = np.array([3.0, -1.0, 2.0, 5.0]), np.array([2, 2]), np.array([2, 1])
    cases = ((ops.ADD, 0.0, [2.0, 7.0]), (ops.MAX, -np.inf, [3.0, 5.0]),
             (ops.MUL, 1.0, [-3.0, 10.0]))  # fmt: skip
    for op, start, expected in cases:
        out, out_shape, out_strides = np.full(2, start), np.array([2, 1]), np.array([1, 1])
        line_loops.run_reduce(op, out, out_shape, out_strides, a, shape, strides, 1, False)
        np.testing.assert_array_equal(out, expected)
    folds = {op: line_loops._REDUCE_ALONG[False][op].py_func.__globals__["_fold"]
             for op in (ops.ADD, ops.MAX, ops.MUL)}  # fmt: skip
    assert folds[ops.ADD].py_func.__qualname__ == f"_fold_sum__op{ops.ADD}"
    assert folds[ops.MAX].py_func.__qualname__ == f"_fold_max__op{ops.MAX}"
    assert folds[ops.MUL].py_func.__qualname__ == f"_fold__op{ops.MUL}"
