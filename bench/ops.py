"""Time minifw's FastOps kernels against numpy and PyTorch CPU, in one process.

Run from the repository root:

    python bench/ops.py            # the full table (about a minute once kernels are cached)
    python bench/ops.py --quick    # tiny sizes, a smoke run for CI
    python bench/ops.py --only matmul --repeat 20
    python bench/ops.py --busy     # only the MLP step beside other CPU-bound processes

Each case is run once to warm up (JIT compile or cache load), then `--repeat` times
or for half a second, whichever is more; the best time is reported. "vs numpy" is
numpy's time divided by minifw's: above 1 means minifw is faster. Kernel cases go
through `TensorBackend` (checks, broadcasting and output allocation included), as
tensor operations do.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _busy import busy_lines  # noqa: E402
from _startup import startup_times  # noqa: E402
from _timing import Timer, best_time  # noqa: E402
from _training import training_step_cases  # noqa: E402

from minifw.backends import get_backend  # noqa: E402
from minifw.core import operators as ops  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is optional
    torch = None

# Targets from the issue: the least acceptable numpy_time / minifw_time per case kind.
TARGETS = {"contiguous": 1.0, "broadcast": 0.7, "reduce": 0.7, "matmul": 0.85, "batched": 0.85}


def blas_info() -> str:
    """numpy's BLAS library and its thread count, as threadpoolctl sees them."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    rows = [
        f"{p.get('internal_api')} {p.get('version')} ({p.get('architecture')}, "
        f"{p.get('num_threads')} threads)"
        for p in threadpool_info()
        if p.get("user_api") == "blas"
    ]
    return "; ".join(rows) or "none found"


def kernel_cases(quick: bool) -> list[tuple[str, str, Timer, Timer, Timer | None]]:
    """(name, target kind, minifw, numpy, torch) for every kernel case."""
    fast = get_backend("fast")
    rng = np.random.default_rng(0)
    cases: list[tuple[str, str, Timer, Timer, Timer | None]] = []

    def add(name: str, kind: str, mf: Timer, np_fn: Timer, th: Timer | None) -> None:
        cases.append((name, kind, mf, np_fn, th))

    sizes = [16, 32] if quick else [64, 256, 512, 1024, 2048]
    for dtype in (np.float64, np.float32):
        for n in sizes:
            a, b = rng.random((n, n)).astype(dtype), rng.random((n, n)).astype(dtype)
            add(*_matmul_case(f"matmul {n} {np.dtype(dtype).name}", n, a, b, fast))
    bn = 16 if quick else 256
    for dtype in (np.float64, np.float32):
        a, b = (rng.random((8, bn, bn)).astype(dtype) for _ in range(2))
        add(*_matmul_case(f"batched matmul 8x{bn}x{bn} {np.dtype(dtype).name}", -1, a, b, fast))

    flat = 1000 if quick else 1_000_000
    x, y = rng.random(flat), rng.random(flat)
    fx, fy = fast.from_numpy(x), fast.from_numpy(y)
    tx, ty = _torch(x), _torch(y)
    add(f"map exp {flat:.0e}", "contiguous", lambda: fast.map(ops.EXP, fx),
        lambda: np.exp(x), _maybe(lambda: torch.exp(tx)))  # fmt: skip
    add(f"zip mul {flat:.0e}", "contiguous", lambda: fast.zip(ops.MUL, fx, fy),
        lambda: x * y, _maybe(lambda: tx * ty))  # fmt: skip

    side = 30 if quick else 1000
    m, col = rng.random((side, side)), rng.random((side, 1))
    fm, fc = fast.from_numpy(m), fast.from_numpy(col)
    tm, tc = _torch(m), _torch(col)
    add(f"broadcast add {side}x{side} + {side}x1", "broadcast", lambda: fast.zip(ops.ADD, fm, fc),
        lambda: m + col, _maybe(lambda: tm + tc))  # fmt: skip
    for dim in (0, 1):
        add(f"sum dim {dim} of {side}x{side}", "reduce",
            lambda d=dim: fast.reduce(ops.ADD, fm, d),  # type: ignore[misc]
            lambda d=dim: m.sum(axis=d, keepdims=True),  # type: ignore[misc]
            _maybe(lambda d=dim: tm.sum(dim=d, keepdim=True)))  # fmt: skip
    return cases


def _matmul_case(
    name: str, n: int, a: np.ndarray, b: np.ndarray, fast: Any
) -> tuple[str, str, Timer, Timer, Timer | None]:
    fa, fb = fast.from_numpy(a), fast.from_numpy(b)
    ta, tb = _torch(a), _torch(b)
    kind = "batched" if a.ndim == 3 else ("matmul" if n >= 256 else "")
    return (name, kind, lambda: fast.matmul(fa, fb), lambda: a @ b,
            _maybe(lambda: torch.matmul(ta, tb)))  # fmt: skip


def _gflops(name: str, t_mf: float, t_np: float) -> str:
    """' [minifw X / numpy Y GFLOP/s]' for a matmul case (its sizes read from its name)."""
    if "matmul" not in name:
        return ""
    sizes = [int(part) for part in name.replace("x", " ").split() if part.isdigit()]
    flops = 2 * sizes[-1] ** 3 * (sizes[0] if len(sizes) > 1 else 1)
    return f" [minifw {flops / t_mf / 1e9:.1f} / numpy {flops / t_np / 1e9:.1f} GFLOP/s]"


def _torch(array: np.ndarray) -> Any:
    return None if torch is None else torch.from_numpy(array)


def _maybe(fn: Timer) -> Timer | None:
    return fn if torch is not None else None


def run(args: argparse.Namespace) -> int:
    """Print the table; return the number of cases below their target (for --strict)."""
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, numba threads: "
          f"{_numba_threads()}, cores: {os.cpu_count()}")  # fmt: skip
    print(f"numpy BLAS: {blas_info()}")
    if os.environ.get("OPENBLAS_CORETYPE"):
        print(f"note: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} is set")
    if torch is not None:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    header = f"{'case':<34}{'minifw ms':>11}{'numpy ms':>10}{'torch ms':>10}"
    print(f"{header}{'vs numpy':>10}{'vs torch':>10}  target")
    misses = 0
    for name, kind, mf, np_fn, th in kernel_cases(args.quick):
        if args.only and args.only not in name:
            continue
        t_mf, t_np = best_time(mf, args.repeat), best_time(np_fn, args.repeat)
        t_th = best_time(th, args.repeat) if th is not None else None
        ratio = t_np / t_mf
        target = None if args.quick else TARGETS.get(kind)
        verdict = "" if target is None else f">= {target}: {'ok' if ratio >= target else 'MISS'}"
        misses += target is not None and ratio < target
        torch_ms = f"{t_th * 1e3:10.3f}" if t_th is not None else f"{'-':>10}"
        torch_ratio = f"{t_th / t_mf:10.2f}" if t_th is not None else f"{'-':>10}"
        rate = _gflops(name, t_mf, t_np)
        print(f"{name:<34}{t_mf * 1e3:11.3f}{t_np * 1e3:10.3f}{torch_ms}"
              f"{ratio:10.2f}{torch_ratio}  {verdict}{rate}", flush=True)  # fmt: skip
    if args.only in ("", "step", "mlp", "lenet"):
        for line in training_step_cases(args.quick, args.repeat, args.only):
            print(line, flush=True)
    if not args.only or "startup" in args.only:
        for line in startup_times(cold=not args.quick and not args.no_cold):
            print(line, flush=True)
    return misses


def limit_threads(n: int) -> None:
    """Run every library on `n` threads: a fairer comparison on a busy machine."""
    import numba

    numba.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:
        print("threadpoolctl not installed: numpy's BLAS keeps its own thread count")
    if torch is not None:
        torch.set_num_threads(n)


def _numba_threads() -> int:
    import numba

    return int(numba.get_num_threads())


def main() -> None:
    """Parse flags and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a CI smoke run")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per case (best)")
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-cache start-up")
    parser.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--threads", type=int, default=0, help="limit numba, BLAS and torch to N threads"
    )
    parser.add_argument(
        "--busy", type=int, nargs="?", const=os.cpu_count() or 1, default=0, metavar="N",
        help="time the MLP step beside N CPU-bound processes (default: one per core)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.threads:
        limit_threads(args.threads)
    if args.busy:
        print("\n".join(busy_lines(args.busy)))
        return
    misses = run(args)
    if args.strict and misses:
        sys.exit(1)


if __name__ == "__main__":
    main()
