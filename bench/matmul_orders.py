"""GFLOP/s of a float64 matrix product in three loop orders, the figures module 3 quotes.

    python bench/matmul_orders.py            # 256 x 256
    python bench/matmul_orders.py --size 512

- naive ijk: out[i, j] = sum over k, innermost k, so b is read down a column (one
  cache line per multiply-add), compiled by Numba, serial.
- ikj: the same sum with k moved out, so the innermost loop runs along a row of b
  and of out (contiguous, vectorised), serial.
- tiled parallel: the reference kernel of task 3.2 (`ReadableFastOps.matmul`): ikj
  per row of out, TILE_J columns at a time, rows spread over threads with `prange`;
  timed on one thread and on all of Numba's threads. On a shared, busy machine the
  parallel figure swings widely (one preempted thread holds up the others).

Each figure is 2 n^3 / (best wall time of a call): the kernels take turns, a few calls
each, so a busy spell of a shared machine does not fall on one kernel only.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence

import numba
import numpy as np
from _timing import best_times

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a file: make `minifw` importable from the checkout
    sys.path.insert(0, ROOT)

from minifw._jit import njit  # noqa: E402
from minifw.fast_ops import ReadableFastOps  # noqa: E402


@njit(cache=True)
def ijk(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a @ b with the textbook loop order: k innermost."""
    n, depth, m = a.shape[0], a.shape[1], b.shape[1]
    for i in range(n):
        for j in range(m):
            acc = 0.0
            for k in range(depth):
                acc += a[i, k] * b[k, j]
            out[i, j] = acc


@njit(cache=True)
def ikj(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a @ b with j innermost: rows of b and out are read and written in order."""
    n, depth, m = a.shape[0], a.shape[1], b.shape[1]
    out[:, :] = 0.0
    for i in range(n):
        for k in range(depth):
            x = a[i, k]
            for j in range(m):
                out[i, j] += x * b[k, j]


def tiled(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a @ b by the reference kernel of task 3.2, on 3-D views of the arrays."""
    shape_a, shape_b, shape_out = (np.array((1, *x.shape), np.int64) for x in (a, b, out))
    strides_a, strides_b, strides_out = (
        np.array((x.size, x.shape[1], 1), np.int64) for x in (a, b, out)
    )
    ReadableFastOps.matmul(
        out.reshape(-1), shape_out, strides_out,
        a.reshape(-1), shape_a, strides_a, b.reshape(-1), shape_b, strides_b,
    )  # fmt: skip


def tiled_one_thread(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """`tiled` on one thread: the loop order and tiles alone, without the parallelism."""
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        tiled(a, b, out)
    finally:
        numba.set_num_threads(threads)


def main(argv: Sequence[str] | None = None) -> int:
    """Check each order against numpy, then print its GFLOP/s."""
    parser = argparse.ArgumentParser(prog="matmul_orders", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5, help="calls per turn")
    parser.add_argument("--rounds", type=int, default=5, help="turns of each kernel")
    args = parser.parse_args(argv)
    n = args.size
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, (n, n))
    kernels: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], None]] = {
        "naive ijk (numba, serial)": ijk,
        "ikj (numba, serial)": ikj,
        "tiled, 1 thread (task 3.2 reference)": tiled_one_thread,
        f"tiled, {numba.get_num_threads()} threads (task 3.2 reference)": tiled,
    }
    out = np.empty((n, n))
    for kernel in kernels.values():
        out[:] = np.nan
        kernel(a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-9, atol=1e-9)
    timers: dict[str, Callable[[], None]] = {
        name: functools.partial(kernel, a, b, out) for name, kernel in kernels.items()
    }
    best = best_times(timers, args.repeat, args.rounds)
    print(f"{n} x {n} float64 product, best of {args.rounds} x {args.repeat} calls in turns")
    for name, seconds in best.items():
        print(f"  {name:<38} {2 * n**3 / seconds / 1e9:7.2f} GFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
