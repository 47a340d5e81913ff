"""Time one training step of a 2-16-16-1 Scalar MLP against micrograd's, GC on.

One step = forward over 100 points, mean squared error, backward, SGD update. Both
engines build the same graph (same op count). Each engine runs its steps in blocks
(after a full collection), so the garbage it leaves behind (micrograd's reference
cycles) is charged to it; the engines' blocks alternate for `--rounds` rounds so
that a change in machine load hits both. Prints best and median seconds per step
and the ratios micrograd / minifw (above 1 means minifw is faster).

    python bench/scalar.py [--repeats 5] [--rounds 2] [--points 100]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minifw.datasets import xor  # noqa: E402
from project.scalar_model import ScalarMLP  # noqa: E402

SIZES = [2, 16, 16, 1]


def minifw_step(points: int) -> Callable[[], float]:
    data = xor(points, seed=0)
    model = ScalarMLP(SIZES, activation="relu", seed=0)
    params = [p.value for p in model.parameters()]

    def step() -> float:
        scores = [model(x)[0] for x in data.X]
        loss = sum((s - y) ** 2 for s, y in zip(scores, data.y, strict=True)) * (1.0 / len(scores))
        loss.backward()
        for p in params:
            p.data -= 0.01 * p.grad
            p.grad = None
        return float(loss.data)

    return step


def micrograd_step(points: int) -> Callable[[], float]:
    from micrograd.nn import MLP

    data = xor(points, seed=0)
    random.seed(0)
    model = MLP(SIZES[0], SIZES[1:])
    params = model.parameters()

    def step() -> float:
        scores = [model(x) for x in data.X]
        loss = sum((s - y) ** 2 for s, y in zip(scores, data.y, strict=True)) * (1.0 / len(scores))
        model.zero_grad()
        loss.backward()
        for p in params:
            p.data -= 0.01 * p.grad
        return float(loss.data)

    return step


def time_steps(step: Callable[[], float], repeats: int) -> list[float]:
    gc.collect()
    step()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed steps per block")
    parser.add_argument("--rounds", type=int, default=2, help="blocks per engine")
    parser.add_argument("--points", type=int, default=100)
    args = parser.parse_args(argv)
    gc.enable()
    steps = args.repeats * args.rounds
    print(f"MLP {'-'.join(map(str, SIZES))}, {args.points} points, GC on, {steps} steps each")
    engines: dict[str, Callable[[], float]] = {}
    for name, make in (("micrograd", micrograd_step), ("minifw", minifw_step)):
        try:
            engines[name] = make(args.points)
        except ImportError:
            print(f"{name}: not installed (pip install micrograd); skipped")
    results: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        for name, step in engines.items():
            results[name].extend(time_steps(step, args.repeats))
    for name, times in results.items():
        print(
            f"{name:>10}: best {min(times) * 1e3:8.1f} ms   "
            f"median {statistics.median(times) * 1e3:8.1f} ms per step"
        )
    if len(results) == 2:
        mg, mf = results["micrograd"], results["minifw"]
        print(
            f"ratio micrograd/minifw: best {min(mg) / min(mf):.2f}x   "
            f"median {statistics.median(mg) / statistics.median(mf):.2f}x"
        )


if __name__ == "__main__":
    main()
