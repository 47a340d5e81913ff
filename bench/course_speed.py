"""Module 3's promise, measured: FastOps trains the points network >= 10x faster than SimpleOps.

    python bench/course_speed.py                       # split set, hidden 100, 3 runs
    python bench/course_speed.py --hidden 32 --runs 5

Trains `project.fast_network.FastNetwork` (task 3.5: one matmul per layer) on a toy
2-D set with a fixed seed, once on SimpleOps (the Python kernels of module 2) and once
on "fast" as a student's repository has it: FastOps with the kernels students write in
tasks 3.1 and 3.2 (`ReadableFastOps`) and plain SGD updates, because the script hides
the expert kernels of minifw/fast_paths/ (as if that folder were absent) before
training. Each backend first trains one epoch untimed (Numba compiles or loads its
kernels then); the timed runs then alternate between the backends, `--epochs` epochs
each, so a busy spell of a shared machine slows both alike. Prints the median seconds
per epoch of each backend and their ratio; exits 1 if the ratio is below `--need`
(10 by default).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a file: make `project` importable
    sys.path.insert(0, ROOT)

from minifw import fast_ops  # noqa: E402
from project.fast_network import FastPointsTrainer  # noqa: E402

BACKENDS = ("simple", "fast")


def hide_fast_paths() -> None:
    """Make "fast" run what it runs without minifw/fast_paths/: the readable kernels."""
    fast_ops.fast_paths = None  # FastOps and `fast_ops.fast_path` look it up at every call


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: network and data sizes, runs, and the ratio to reach."""
    parser = argparse.ArgumentParser(prog="course_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="split")
    parser.add_argument("--points", type=int, default=50)
    parser.add_argument("--hidden", type=int, default=100)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=1, help="epochs per timed run")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per backend")
    parser.add_argument("--need", type=float, default=10.0, help="the ratio to reach")
    return parser.parse_args(argv)


def trainer_on(backend: str, args: argparse.Namespace) -> FastPointsTrainer:
    """A fresh trainer of the network on `backend`, seed 0, warmed by one untimed epoch."""
    trainer = FastPointsTrainer(
        args.dataset, backend=backend, points=args.points, hidden=args.hidden, batch=args.batch
    )
    trainer.train(1)
    return trainer


def seconds_per_epoch(trainer: FastPointsTrainer, epochs: int) -> float:
    """Wall seconds per epoch of `epochs` more epochs of `trainer`."""
    start = time.perf_counter()
    trainer.train(trainer.epochs_done + epochs)
    return (time.perf_counter() - start) / epochs


def main(argv: Sequence[str] | None = None) -> int:
    """Time both backends, print the medians and the ratio; 1 if it is below --need."""
    args = parse(argv)
    hide_fast_paths()
    trainers = {name: trainer_on(name, args) for name in BACKENDS}
    times: dict[str, list[float]] = {name: [] for name in BACKENDS}
    for _ in range(args.runs):
        for name, trainer in trainers.items():
            times[name].append(seconds_per_epoch(trainer, args.epochs))
    print(
        f"FastNetwork on {args.dataset}: {args.points} points, hidden {args.hidden}, "
        f"batch {args.batch}; median of {args.runs} runs of {args.epochs} epoch(s)"
    )
    median = {name: statistics.median(values) for name, values in times.items()}
    for name in BACKENDS:
        runs = ", ".join(f"{t:.4f}" for t in times[name])
        print(f"  {name:<9} {median[name]:9.4f} s/epoch   (runs: {runs})")
    ratio = median["simple"] / median["fast"]
    verdict = "ok" if ratio >= args.need else f"BELOW the {args.need:g}x the course promises"
    print(f"  FastOps (readable kernels) is {ratio:.1f}x faster than SimpleOps: {verdict}")
    return 0 if ratio >= args.need else 1


if __name__ == "__main__":
    raise SystemExit(main())
