"""Time per epoch in the app's training path against the command line's, in one process.

Run from the repository root:

    python bench/app.py                     # digits, xor (fast), spiral (Scalar engine)
    python bench/app.py --quick             # fewer epochs and rounds, a smoke run
    python bench/app.py --only digits --rounds 5

The CLI path is `project.cli.run`, the loop behind `run_digits.py` / `run_tensor.py` /
`run_scalar.py` (with its log lines and their evaluations; no progress bar). The app
path is the page's own: the Train or Digits page's `start` builds the `TrainingJob` the
page builds (same observations, same cadence, same Numba threads), and this process's
main thread redraws the page's `draw` from `job.snapshot()` every `REFRESH_SECONDS`
(streamlit in bare mode: every element is built and serialised, then dropped) while
the job trains in its own thread, as the page's live fragment does in the server.

The app trains with all cores but one (`project.jobs.training_threads`: the server and
the browser need the other), so the CLI path is also timed with that many Numba
threads ("CLI same threads"), to show what the redraws cost apart from the threads.

Each round runs the paths back to back (in alternating order), after one warm-up run
of each. Reported per case: the median over rounds of the wall time per epoch (start
to end of the run, observations and evaluations included) of each path, and of the
ratios app / CLI (target: <= 1.3) and app / CLI same threads.
"""

from __future__ import annotations

import argparse
import io
import logging
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@dataclass(frozen=True)
class Case:
    """A training run: how to build its trainer, how many epochs, and its page."""

    name: str
    make: Callable[[], Any]
    epochs: int
    page: str  # "train" or "digits"


def cases(quick: bool) -> list[Case]:
    """The runs the issue measured: digits, a fast-backend 2-D set, the Scalar spiral."""
    from project.digits import DigitsTrainer
    from project.points import PointsTrainer, ScalarTrainer

    scale = 2 if quick else 1
    return [
        Case("digits (fast)", lambda: DigitsTrainer(), 6 // scale, "digits"),
        Case("xor (fast)", lambda: PointsTrainer("xor", backend="fast"), 150 // scale, "train"),
        Case("spiral (Scalar)", lambda: ScalarTrainer("spiral"), 100 // scale, "train"),
    ]


def cli_run(case: Case, threads: int | None = None) -> float:
    """Seconds per epoch of the command line's loop (with `threads` Numba threads)."""
    import numba

    from project.cli import run

    before = numba.get_num_threads()
    numba.set_num_threads(threads or numba.config.NUMBA_NUM_THREADS)
    try:
        trainer = case.make()
        start = time.perf_counter()
        run(trainer, case.epochs, progress=False, out=io.StringIO())
        return (time.perf_counter() - start) / case.epochs
    finally:
        numba.set_num_threads(before)


def app_run(case: Case) -> tuple[float, int]:
    """Seconds per epoch of the page's job while the page redraws; and the redraws."""
    from project.app_pages import common, digits, train

    trainer = case.make()
    start = time.perf_counter()
    if case.page == "digits":
        job = digits.start(trainer, case.epochs)
        backend = trainer.config["backend"]

        def draw(snapshot: Any) -> None:
            digits.draw(snapshot, case.epochs, backend)
    else:
        job = train.start(trainer, case.epochs)

        def draw(snapshot: Any) -> None:
            train.draw(snapshot, trainer, case.epochs)

    redraws = 0
    while job.running:
        draw(job.snapshot())
        redraws += 1
        job.join(common.REFRESH_SECONDS)
    seconds = time.perf_counter() - start
    draw(job.snapshot())  # the final redraw, as the page's
    snapshot = job.snapshot()
    if snapshot.status != "finished":
        raise RuntimeError(f"{case.name}: the app's job ended {snapshot.status}\n{snapshot.error}")
    return seconds / case.epochs, redraws


def measure(case: Case, rounds: int) -> dict[str, float]:
    """Median seconds per epoch of each path and of the ratios, over `rounds` rounds."""
    from project.jobs import training_threads

    same = training_threads()
    paths: dict[str, Callable[[], float]] = {
        "cli": lambda: cli_run(case),
        "same": lambda: cli_run(case, same),
        "app": lambda: app_run(case)[0],
    }
    for path in paths.values():
        path()  # warm-up: kernels loaded or compiled, caches filled
    times: dict[str, list[float]] = {name: [] for name in paths}
    for i in range(rounds):
        order = list(paths) if i % 2 == 0 else list(paths)[::-1]
        for name in order:
            times[name].append(paths[name]())
    app = times["app"]
    return {
        **{name: statistics.median(values) for name, values in times.items()},
        "ratio": statistics.median(a / c for a, c in zip(app, times["cli"], strict=True)),
        "ratio same": statistics.median(a / c for a, c in zip(app, times["same"], strict=True)),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure each case and print a table; exit status 1 when a ratio is above 1.3."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs and rounds")
    parser.add_argument("--rounds", type=int, help="rounds per case (default 3, quick 1)")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # streamlit's bare-mode warnings, one per element
    import numba

    from project.app_pages.common import REFRESH_SECONDS
    from project.jobs import training_threads

    rounds = args.rounds or (1 if args.quick else 3)
    print(
        f"app: redraw every {REFRESH_SECONDS} s, training with {training_threads()} Numba "
        f"thread(s); CLI: {numba.config.NUMBA_NUM_THREADS}; median of {rounds} round(s)"
    )
    print(f"{'case':16} {'epochs':>6} {'CLI ms/epoch':>13} {'CLI same threads':>17} "
          f"{'app ms/epoch':>13} {'app / CLI':>10} {'app / same':>11}")  # fmt: skip
    worst = 0.0
    for case in cases(args.quick):
        if args.only and args.only not in case.name:
            continue
        result = measure(case, rounds)
        worst = max(worst, result["ratio"])
        print(
            f"{case.name:16} {case.epochs:6d} {result['cli'] * 1e3:13.1f} "
            f"{result['same'] * 1e3:17.1f} {result['app'] * 1e3:13.1f} "
            f"{result['ratio']:9.2f}x {result['ratio same']:10.2f}x",
            flush=True,
        )
    print(f"worst ratio {worst:.2f}x (target <= 1.3x)")
    return 0 if worst <= 1.3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
