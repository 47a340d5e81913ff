"""Print Numba's parallel diagnostics for each FastOps kernel (course tasks 3.1 and 3.2).

Each parallel kernel is compiled afresh (the kernel cache is pointed at an empty
temporary directory: diagnostics exist only for code compiled in this process), run
once on small inputs, and then Numba reports which loops it made parallel, what it
fused and what it hoisted out of them.

    python project/parallel_check.py             # level 1, every kernel
    python project/parallel_check.py --level 4 --kernel matmul
"""

from __future__ import annotations

import argparse
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

from minifw.core import operators as ops  # noqa: E402
from minifw.core.tensor_data import TensorData  # noqa: E402
from minifw.fast_paths import line_loops as loops  # noqa: E402
from minifw.fast_paths import matmul as fast_matmul  # noqa: E402


def _triple(values: np.ndarray) -> tuple[Any, ...]:
    return TensorData(values.reshape(-1).copy(), values.shape).tuple()


def runs() -> dict[str, tuple[Any, Callable[[], None]]]:
    """Each kernel with a call that compiles and runs it once on small inputs."""
    rng = np.random.default_rng(0)
    x, col = rng.random((8, 6)), rng.random((8, 1))
    out = TensorData(np.empty(48), (8, 6))
    row_out = TensorData(np.zeros(8), (8, 1))
    col_out = TensorData(np.zeros(6), (1, 6))
    a, b = rng.random((2, 9, 5)), rng.random((2, 5, 7))
    mm_out = TensorData(np.empty(2 * 9 * 7), (2, 9, 7))
    permuted = TensorData(x.T.reshape(-1).copy(), (6, 8)).permute(1, 0)
    b_cols = TensorData(b.transpose(0, 2, 1).reshape(-1).copy(), (2, 7, 5)).permute(0, 2, 1)
    return {
        "map": (loops._map, lambda: loops._map(ops.EXP, *out.tuple(), *permuted.tuple())),
        "zip": (loops._zip,
                lambda: loops._zip(ops.ADD, *out.tuple(), *_triple(x), *_triple(col))),
        "reduce_along": (loops._reduce_along,
                         lambda: loops._reduce_along(ops.ADD, *row_out.tuple(),
                                                        *_triple(x), 1)),
        "reduce_across": (loops._reduce_across,
                          lambda: loops._reduce_across(ops.ADD, *col_out.tuple(),
                                                          *_triple(x), 0)),
        "k_major": (fast_matmul._k_major, lambda: fast_matmul._k_major(*_triple(b), 2, 1)),
        "matmul": (fast_matmul._matmul,
                   lambda: fast_matmul._matmul(*mm_out.tuple(), *_triple(a), *b_cols.tuple())),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, default=1, choices=[1, 2, 3, 4])
    parser.add_argument("--kernel", default="", help="only kernels whose name contains this")
    args = parser.parse_args()
    for name, (kernel, call) in runs().items():
        if args.kernel and args.kernel not in name:
            continue
        call()
        print(f"\n{'=' * 30} {name} {'=' * 30}", flush=True)
        kernel.parallel_diagnostics(level=args.level)


if __name__ == "__main__":
    main()
