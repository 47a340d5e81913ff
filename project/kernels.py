"""Visible compiling: is the kernel cache warm, what is Numba compiling now, warm it up.

The fast backend's kernels are Numba functions compiled on first use and cached on
disk, so only the first run on a machine pays for compiling (one to a few minutes
for a model); later processes load the machine code in seconds. The app says so:

* `CompileMonitor` listens to Numba's "numba:compile" event, which fires only when a
  kernel is really compiled (a cache miss): how many compiled, which one now, since
  when. One listener per process, installed on first use.
* `is_warm(workload)` / `mark_warm(workload)`: a marker file per workload ("points
  MLP (fast)", ...) under the kernel cache, keyed on the hash of the kernel sources
  and Numba's version (the cache's own key), written after a run of that workload.
* `WarmUp` runs one tiny step of each workload in a background thread (the "warm
  the kernels" button), with its phase and elapsed time for the page; `warm_steps`
  leaves out the workloads of course modules a student has not reached.

Nothing here imports streamlit.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CPU_WORKLOADS = ("points MLP (fast)", "digits conv net (fast)", "profiler (fast, compiled)")
# The course module each workload needs: the fast backend is module 3, the conv net module 4.
WORKLOAD_MODULE = {CPU_WORKLOADS[0]: 3, CPU_WORKLOADS[1]: 4, CPU_WORKLOADS[2]: 3}


@dataclass(frozen=True)
class CompileState:
    """What Numba has compiled in this process.

    Attributes:
        compiled: kernels compiled since the monitor was installed (cache misses; the
            helpers compiled as part of a kernel count with it).
        current: the kernel being compiled now ("" when none).
        current_seconds: how long the current one has been compiling.
        seconds: total seconds spent compiling.
    """

    compiled: int = 0
    current: str = ""
    current_seconds: float = 0.0
    seconds: float = 0.0


class CompileMonitor:
    """Counts Numba compilations through its event API (thread-safe, read any time)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._compiled = 0
        self._seconds = 0.0
        self._stack: list[tuple[str, float]] = []
        self._installed = False

    def install(self) -> CompileMonitor:
        """Register the listener with Numba (once); returns self."""
        with self._lock:
            if self._installed:
                return self
            self._installed = True
        from numba.core import event

        monitor = self

        class _Listener(event.Listener):  # type: ignore[misc]
            def on_start(self, ev: Any) -> None:
                monitor._started(_kernel_name(ev))

            def on_end(self, ev: Any) -> None:
                monitor._ended()

        event.register("numba:compile", _Listener())  # type: ignore[no-untyped-call]
        return self

    def state(self) -> CompileState:
        """A copy of the counts, with the kernel compiling now and for how long."""
        now = time.perf_counter()
        with self._lock:
            current, since = self._stack[-1] if self._stack else ("", now)
            return CompileState(self._compiled, current, now - since, self._seconds)

    def _started(self, name: str) -> None:
        with self._lock:
            self._stack.append((name, time.perf_counter()))

    def _ended(self) -> None:
        with self._lock:
            if self._stack:
                _, since = self._stack.pop()
                if not self._stack:  # a nested compile (a helper) is part of its outer one
                    self._compiled += 1
                    self._seconds += time.perf_counter() - since


def _kernel_name(ev: Any) -> str:
    """The compiled function's name from a Numba event."""
    dispatcher = (ev.data or {}).get("dispatcher")
    fn = getattr(dispatcher, "py_func", None)
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "a kernel"))


MONITOR = CompileMonitor()


def monitor() -> CompileMonitor:
    """The process's compile monitor, installed."""
    return MONITOR.install()


class CompileNotices:
    """While kernels compile, a line on `stream` every `every` seconds saying so.

    "compiling kernels (first run only, cached after): 12 so far, now `_zip__op100`, 9 s".
    Used as a context manager around a run; at the end, if anything compiled, one line
    with the count and the seconds. Nothing is printed when the cache was warm.
    """

    def __init__(self, stream: Any, every: float = 2.0) -> None:
        self.stream = stream
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._start = CompileState()
        self._started = 0.0

    def __enter__(self) -> CompileNotices:
        self._start = monitor().state()
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        done = monitor().state()
        count = done.compiled - self._start.compiled
        if count:
            seconds = done.seconds - self._start.seconds
            print(f"compiled {count} kernels in {seconds:.1f} s (cached: later runs "
                  "load them from disk)", file=self.stream, flush=True)  # fmt: skip

    def _watch(self) -> None:
        while not self._stop.wait(self.every):
            state = monitor().state()
            if state.current:
                count = state.compiled - self._start.compiled
                print(f"compiling kernels (first run only, cached after): {count} so far, "
                      f"now `{state.current}`, {time.perf_counter() - self._started:.0f} s",
                      file=self.stream, flush=True)  # fmt: skip


def marker_dir() -> Path:
    """Where the "warm" markers live: beside minifw's generated kernels."""
    from minifw.compiler.fusion import cache_dir

    return Path(cache_dir()).parent / "app-warm"


def cache_key() -> str:
    """The kernel cache's own key: the hash of the kernel sources and Numba's version."""
    import numba

    from minifw._jit import kernel_sources_hash

    return f"{kernel_sources_hash()[:16]}-numba{numba.__version__}"


def _marker(workload: str) -> Path:
    digest = hashlib.sha256(f"{cache_key()}:{workload}".encode()).hexdigest()[:24]
    return marker_dir() / digest


def is_warm(workload: str) -> bool:
    """True once `workload` ran on this machine with the current kernel sources."""
    try:
        return _marker(workload).exists()
    except OSError:
        return False


def mark_warm(workload: str) -> None:
    """Remember that `workload`'s kernels are compiled and cached (best effort)."""
    try:
        path = _marker(workload)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{workload}\n{cache_key()}\n")
    except OSError:
        pass


def workload_of(model: str, backend: str) -> str | None:
    """The workload name of a model on a backend, or None when nothing compiles.

    The Scalar engine and the simple backend run plain Python: nothing to compile.
    """
    if backend not in ("fast", "cuda"):
        return None
    return f"{model} ({backend})"


def warm_points(backend: str = "fast") -> None:
    """One epoch of the Train page's default run, and its decision boundary."""
    from project.plots import grid
    from project.points import PointsTrainer

    trainer = PointsTrainer("xor", backend=backend)
    trainer.train(1)
    trainer.predict_proba(grid(50))
    trainer.accuracy()


def warm_digits(backend: str = "fast") -> None:
    """One short epoch of the digits net, its test accuracy and its feature maps."""
    from project.digits import DigitsTrainer

    trainer = DigitsTrainer(backend=backend, limit=64)
    trainer.train(1)
    trainer.test_accuracy()
    trainer.feature_maps(trainer.images.test_images[0])


def warm_profiler(backend: str = "fast", models: tuple[str, ...] | None = None) -> None:
    """The Profiler page's default steps, eager and compiled (its fused kernels).

    Args:
        backend: the backend to warm.
        models: the models to step (all of the page's models when None).
    """
    from project.profiling import MODELS, make_step

    for model in MODELS if models is None else models:
        for compiled in (False, True):
            step = make_step(model, backend, 32, 100, compiled=compiled)
            step()
            step()


WARMUPS: dict[str, Callable[[], None]] = {
    CPU_WORKLOADS[0]: warm_points,
    CPU_WORKLOADS[1]: warm_digits,
    CPU_WORKLOADS[2]: warm_profiler,
}


def workloads_up_to(max_module: int | None) -> tuple[str, ...]:
    """The workloads of course modules up to `max_module` (all of them when None)."""
    return tuple(
        name for name in CPU_WORKLOADS if max_module is None or WORKLOAD_MODULE[name] <= max_module
    )


def warm_steps(max_module: int | None) -> dict[str, Callable[[], None]]:
    """The warm-up steps of a student of course module `max_module` (None: all of them).

    Before module 4 the profiler warms its MLP step only: the conv net is not built yet.
    """
    steps = {name: WARMUPS[name] for name in workloads_up_to(max_module)}
    if CPU_WORKLOADS[2] in steps and max_module is not None and max_module < 4:
        steps[CPU_WORKLOADS[2]] = functools.partial(warm_profiler, models=("points MLP",))
    return steps


@dataclass(frozen=True)
class WarmState:
    """A warm-up's progress: phase i of n, its name, elapsed seconds, any error."""

    phase: int
    phases: int
    name: str
    elapsed: float
    running: bool
    error: str = ""


class WarmUp:
    """Run `WARMUPS` (or the given steps) one after the other in a background thread."""

    def __init__(self, steps: dict[str, Callable[[], None]] | None = None) -> None:
        self.steps = dict(WARMUPS if steps is None else steps)
        self._phase = 0
        self._name = ""
        self._error = ""
        self._started = 0.0
        self._ended: float | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> WarmUp:
        """Start the thread (once); returns self."""
        if self._thread is None:
            monitor()
            self._started = time.perf_counter()
            if self.steps:  # the first phase is current from the start, not once it runs
                self._phase, self._name = 1, next(iter(self.steps))
            self._thread = threading.Thread(target=self._work, name="minifw-warm", daemon=True)
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        """True while the warm-up thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the warm-up to end; True if it has."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def state(self) -> WarmState:
        """The phase running now (or the last one), and the seconds since the start."""
        end = self._ended if self._ended is not None else time.perf_counter()
        elapsed = end - self._started if self._started else 0.0
        return WarmState(
            self._phase, len(self.steps), self._name, elapsed, self.running, self._error
        )

    def _work(self) -> None:
        from project.jobs import training_threads

        try:
            import numba

            numba.set_num_threads(training_threads())
        except (ImportError, ValueError, RuntimeError):
            pass
        for number, (name, step) in enumerate(self.steps.items(), start=1):
            self._phase, self._name = number, name
            try:
                step()
            except Exception:  # noqa: BLE001 - shown on the page; the other phases go on
                self._error += f"{name}:\n{traceback.format_exc()}\n"
            else:
                mark_warm(name)
        self._ended = time.perf_counter()


def cold_workloads(names: tuple[str, ...] = CPU_WORKLOADS) -> list[str]:
    """The workloads whose kernels have not been compiled on this machine yet."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return []
    return [name for name in names if not is_warm(name)]
