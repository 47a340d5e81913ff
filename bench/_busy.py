"""The busy-machine case of bench/ops.py (`--busy`): a training step while other work runs.

Times the MLP training step of `_training.py` (median of many steps) with one thread on
the machine as it is, then again while `--busy N` other CPU-bound processes (default:
as many as there are cores) spin beside it, with minifw's and PyTorch's default thread
counts. The ratio busy / single-thread is the figure to watch (target: <= 1.5x).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

from _timing import Timer
from _training import minifw_step, torch_step

SPIN = "while True: pass"


def median_time(fn: Timer, seconds: float = 3.0, least: int = 20) -> float:
    """The median wall time of `fn` over `seconds` (at least `least` calls), after a warm-up."""
    warm_until = time.perf_counter() + 1.0  # also lets minifw notice the load (_threads)
    while time.perf_counter() < warm_until:
        fn()
    times: list[float] = []
    stop = time.perf_counter() + seconds
    while len(times) < least or time.perf_counter() < stop:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _set_threads(n: int | None, torch: Any) -> None:
    """Numba's and torch's thread counts: n, or each library's default for None."""
    import numba

    numba.set_num_threads(n or numba.config.NUMBA_NUM_THREADS)
    if torch is not None:
        torch.set_num_threads(n or os.cpu_count() or 1)


def busy_lines(competitors: int) -> list[str]:
    """Table lines: each library's step single-threaded, then busy, and the ratio."""
    import minifw as mf
    from minifw import _threads

    try:
        import torch
    except ImportError:
        torch = None
    steps = {"minifw": minifw_step(mf)[1]}
    if torch is not None:
        steps["torch"] = torch_step(torch)
    gauge_was = _threads.gauge.active
    single: dict[str, float] = {}
    _threads.gauge.active = False  # one thread, chosen by hand: no load to follow
    _set_threads(1, torch)
    for name, step in steps.items():
        single[name] = median_time(step)
    _threads.gauge.active = gauge_was
    _set_threads(None, torch)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(competitors)]
    try:
        time.sleep(1.0)
        busy = {name: median_time(step) for name, step in steps.items()}
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    lines = [f"busy machine: MLP step (median), {competitors} CPU-bound processes beside it"]
    for name in steps:
        ratio = busy[name] / single[name]
        verdict = " (target <= 1.5x: " + ("ok)" if ratio <= 1.5 else "MISS)")
        lines.append(
            f"  {name:<7} 1 thread quiet {single[name] * 1e3:8.2f} ms   default threads busy "
            f"{busy[name] * 1e3:8.2f} ms   busy / single {ratio:5.2f}x"
            + (verdict if name == "minifw" else "")
        )
    return lines
