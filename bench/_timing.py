"""Timing for the bench scripts: the best of several runs after a warm-up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Timer = Callable[[], Any]
# Seconds to wait before timing a library: the worker threads of the one timed before
# keep spinning for a while after its last call (OpenBLAS's for about 0.1 s), and on a
# 2-core machine they would take a core from the next one (a minifw product of 2048 x
# 2048 timed right after numpy's ran 10-20% slower, one of 512 up to 5x).
SETTLE = 0.15


def best_time(fn: Timer, repeat: int, budget: float = 0.5) -> float:
    """The best wall time of at least `repeat` calls of `fn` after one warm-up call.

    Calls continue until `budget` seconds have passed (at most 50 x repeat calls), so
    on a busy machine a quick case still gets some runs its threads were not preempted in.
    """
    time.sleep(SETTLE)
    fn()
    best, spent, runs = float("inf"), 0.0, 0
    while runs < repeat or (spent < budget and runs < 50 * repeat):
        start = time.perf_counter()
        fn()
        took = time.perf_counter() - start
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best


def best_times(fns: dict[str, Timer], repeat: int, rounds: int = 5) -> dict[str, float]:
    """The best wall time of each of `fns`, timed in turns: `rounds` blocks of `repeat` calls.

    Taking turns gives each function the same share of a shared machine's quiet spells,
    so their ratios do not depend on which ran during a busy one.
    """
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            time.sleep(SETTLE)
            fn()  # wakes this library's threads
            for _ in range(repeat):
                start = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - start)
    return best
