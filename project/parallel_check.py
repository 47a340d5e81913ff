"""Print Numba's parallel diagnostics for the FastOps kernels (course tasks 3.1 and 3.2).

Each parallel kernel students write in `minifw/fast_ops.py` (`_map`, `_zip`,
`_reduce`, `_matmul`) is compiled afresh (the kernel cache is pointed at an empty
temporary directory: diagnostics exist only for code compiled in this process), run
once on small inputs, and then Numba reports which loops it made parallel, what it
fused and what it hoisted out of them. `--expert` adds the expert kernels of
`minifw/fast_paths/` where that folder exists (not in student repositories).

    python project/parallel_check.py             # level 1, every kernel
    python project/parallel_check.py --level 4 --kernel matmul
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Before numba is imported: compile here instead of loading cached machine code.
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="minifw-parallel-check-")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from minifw import fast_ops  # noqa: E402
from minifw.core import operators as ops  # noqa: E402
from minifw.core.tensor_data import TensorData  # noqa: E402

Runs = dict[str, tuple[Any, Callable[[], None]]]


def _triple(values: np.ndarray) -> tuple[Any, ...]:
    return TensorData(values.reshape(-1).copy(), values.shape).tuple()


class _Inputs:
    """Small operands for every kernel: dense, broadcast, permuted and batched."""

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.x, self.col = rng.random((8, 6)), rng.random((8, 1))
        self.out = TensorData(np.empty(48), (8, 6))
        self.row_out = TensorData(np.zeros(8), (8, 1))
        self.col_out = TensorData(np.zeros(6), (1, 6))
        self.a, self.b = rng.random((2, 9, 5)), rng.random((2, 5, 7))
        self.mm_out = TensorData(np.empty(2 * 9 * 7), (2, 9, 7))
        self.permuted = TensorData(self.x.T.reshape(-1).copy(), (6, 8)).permute(1, 0)
        b_t = self.b.transpose(0, 2, 1).reshape(-1).copy()
        self.b_cols = TensorData(b_t, (2, 7, 5)).permute(0, 2, 1)


def readable_runs(d: _Inputs) -> Runs:
    """The kernels of tasks 3.1 and 3.2, each with a call that compiles and runs it once."""
    f: Any = fast_ops  # Numba's dispatchers: their argument lists are not typed
    return {
        "map": (f._map, lambda: f._map(ops.EXP, *d.out.tuple(), *d.permuted.tuple())),
        "zip": (f._zip,
                lambda: f._zip(ops.ADD, *d.out.tuple(), *_triple(d.x), *_triple(d.col))),
        "reduce": (f._reduce,
                   lambda: f._reduce(ops.ADD, *d.row_out.tuple(), *_triple(d.x), 1)),
        "matmul": (f._matmul,
                   lambda: f._matmul(*d.mm_out.tuple(), *_triple(d.a), *d.b_cols.tuple())),
    }  # fmt: skip


def expert_runs(d: _Inputs) -> Runs:
    """The expert kernels of `minifw/fast_paths/` (empty where the folder is absent)."""
    if fast_ops.fast_paths is None:
        return {}
    loops: Any = importlib.import_module("minifw.fast_paths.line_loops")
    mm: Any = importlib.import_module("minifw.fast_paths.matmul")
    return {
        "expert map": (loops._map,
                       lambda: loops._map(ops.EXP, *d.out.tuple(), *d.permuted.tuple())),
        "expert zip": (loops._zip, lambda: loops._zip(ops.ADD, *d.out.tuple(),
                                                      *_triple(d.x), *_triple(d.col))),
        "expert reduce_along": (loops._reduce_along,
                                lambda: loops._reduce_along(ops.ADD, *d.row_out.tuple(),
                                                            *_triple(d.x), 1)),
        "expert reduce_across": (loops._reduce_across,
                                 lambda: loops._reduce_across(ops.ADD, *d.col_out.tuple(),
                                                              *_triple(d.x), 0)),
        "expert matmul": (mm._matmul, lambda: _expert_matmul(mm, d)),
    }  # fmt: skip


def _expert_matmul(mm: Any, d: _Inputs) -> None:
    """The packed matmul on d's operands, with a workspace and a split into 2 x 1 tasks."""
    out, a, b = d.mm_out.tuple(), _triple(d.a), d.b_cols.tuple()
    cells = mm.workspace_cells(out[1], a[1], b[1], d.a.itemsize)
    mm._matmul(*out, *a, *b, np.empty(cells, d.a.dtype), 2, 1)


def runs(expert: bool = False) -> Runs:
    """Each kernel to diagnose with a call that compiles and runs it once."""
    inputs = _Inputs()
    found = readable_runs(inputs)
    return {**found, **expert_runs(inputs)} if expert else found


def main() -> None:
    """Parse the options and print the diagnostics of each chosen kernel."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, default=1, choices=[1, 2, 3, 4])
    parser.add_argument("--kernel", default="", help="only kernels whose name contains this")
    parser.add_argument("--expert", action="store_true", help="add minifw/fast_paths' kernels")
    args = parser.parse_args()
    if args.expert and fast_ops.fast_paths is None:
        print("no minifw/fast_paths/ here: diagnosing the kernels of minifw/fast_ops.py only")
    for name, (kernel, call) in runs(args.expert).items():
        if args.kernel and args.kernel not in name:
            continue
        call()
        print(f"\n{'=' * 30} {name} {'=' * 30}", flush=True)
        kernel.parallel_diagnostics(level=args.level)


if __name__ == "__main__":
    main()
