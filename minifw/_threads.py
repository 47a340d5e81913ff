"""How many threads a parallel kernel gets: the cores other processes leave free.

A parallel launch waits for its slowest thread. When other programs keep the cores busy,
some of the pool's threads wait for a time slice, and a kernel of a millisecond takes
ten: a training step measured 109 ms with every thread against 10 ms with one, on a
2-core machine running two other CPU-bound processes. So the CPU backends follow the
machine's load: every half second `parallel_threads` reads how busy the cores were
(`/proc/stat`, every process) and how much of that was this process (`/proc/self/stat`),
and gives the pool the cores the others left free. One thread means "run the serial
twin". Where /proc is missing, or shows more CPUs than this process may use (a container
on a larger host), it keeps every thread, as Numba does.

MINIFW_FOLLOW_LOAD=0 turns this off (every thread, always).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numba

INTERVAL = 0.5  # seconds between two readings of the load
# This process's own threads also spin for a while after each launch (OpenMP's wait
# policy); a core counts as taken by others once they use more than this much of it.
SLACK = 0.35


def _usable_cores() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _cpus_in_proc_stat() -> int:
    """How many CPUs /proc/stat reports (0 where it cannot be read)."""
    try:
        with open("/proc/stat", "rb") as stat:
            return sum(1 for line in stat if line[:3] == b"cpu" and line[3:4].isdigit())
    except OSError:
        return 0


def _busy_ticks() -> int | None:
    """Clock ticks every CPU spent busy, or None without /proc."""
    try:
        with open("/proc/stat", "rb") as stat:
            fields = [int(x) for x in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal: idle and iowait are free time;
    # steal (the hypervisor ran something else) is time the pool could not have had.
    return sum(fields) - fields[3] - fields[4]


def _ran_ticks(pid: int | str) -> int | None:
    """Clock ticks process `pid` ("self": this one) has run, or None if it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)
    except (OSError, ValueError, IndexError):
        return None


class LoadGauge:
    """The thread count that pays now; reads the load at most every INTERVAL seconds."""

    def __init__(self) -> None:
        config: Any = numba.config
        self.most: int = config.NUMBA_NUM_THREADS
        self.cores = _usable_cores()
        self.ticks_per_second = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        watching = os.environ.get("MINIFW_FOLLOW_LOAD", "1") != "0"
        self.active = watching and _cpus_in_proc_stat() == self.cores and self.cores > 1
        self.threads: int = self.most
        self.others = 0.0  # cores other processes kept busy in the last reading
        self._lock = threading.Lock()
        self._helpers: dict[int, int] = {}  # pid -> ticks it had run when last read
        self._last = (time.monotonic(), self._ticks())

    def limit(self, count: int) -> None:
        """Use at most `count` threads (never more than Numba's pool has)."""
        config: Any = numba.config
        self.most = min(count, config.NUMBA_NUM_THREADS)
        self.threads = self.most  # the next reading of the load lowers it again if need be

    def count_as_own(self, pid: int) -> None:
        """Count process `pid`'s CPU time as this process's (a helper it started)."""
        with self._lock:
            self._helpers[pid] = 0

    def _ticks(self) -> tuple[int, int] | None:
        """(ticks every CPU spent busy, ticks this process and its helpers ran)."""
        busy, own = _busy_ticks(), _ran_ticks("self")
        if busy is None or own is None:
            return None
        for pid, before in self._helpers.items():
            ran = _ran_ticks(pid)  # None once it has exited: keep what it had run
            self._helpers[pid] = before if ran is None else ran
        return busy, own + sum(self._helpers.values())

    def __call__(self) -> int:
        """How many threads a parallel launch should use now (1: run serially)."""
        if self.active and time.monotonic() - self._last[0] >= INTERVAL:
            self._read()
        return self.threads

    def _read(self) -> None:
        with self._lock:
            now, ticks = time.monotonic(), self._ticks()
            then, before = self._last
            if ticks is None or before is None or now - then < INTERVAL:
                return
            self._last = (now, ticks)
            elapsed = (now - then) * self.ticks_per_second
            self.others = max(0.0, (ticks[0] - before[0]) - (ticks[1] - before[1])) / elapsed
            free = self.cores - int(self.others + 1 - SLACK)
            self.threads = max(1, min(self.most, free))


gauge = LoadGauge()
_chosen = threading.local()  # the thread count this thread last gave Numba
_requested: list[int | None] = [None]  # the count set_num_threads was last given


def set_num_threads(count: int) -> None:
    """Let parallel kernels use at most `count` threads (`torch.set_num_threads`).

    1 runs every kernel's serial twin. minifw still gives a kernel fewer threads while
    other processes keep the cores busy, and never more than Numba's pool has.

    Raises:
        RuntimeError: `count` is not a positive int (PyTorch's errors).
    """
    if isinstance(count, bool) or not isinstance(count, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(count).__name__}")
    if count < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {count}")
    _requested[0] = count
    gauge.limit(count)


def get_num_threads() -> int:
    """The thread count parallel kernels may use: the last `set_num_threads`, else Numba's."""
    return _requested[0] if _requested[0] is not None else gauge.most


def parallel_pays(work: int, threshold: int) -> bool:
    """True to launch a parallel kernel: `work` at least `threshold` and cores free for it."""
    return work >= threshold and parallel_threads() > 1


def parallel_threads() -> int:
    """Threads for a parallel launch from this thread now; sets Numba's count to it.

    1 means the cores are taken: the caller runs the serial twin instead.
    """
    threads = gauge()
    if threads > 1 and getattr(_chosen, "threads", None) != threads:
        numba.set_num_threads(threads)
        _chosen.threads = threads
    return threads


@functools.cache
def thread_count_functions() -> tuple[Callable[[int], None], Callable[[], int]]:
    """(set, get) of this thread's Numba thread count, the fastest ones Numba has.

    Numba's public `set_num_threads` / `get_num_threads` check their argument and that
    the pool is up on every call (a set-and-back pair costs 1.6 us, a small product
    needs one); they end in setters Numba binds when it starts its pool, which cost
    0.4 us a pair. Those are used where this Numba has them.
    """
    numba.get_num_threads()  # starts the pool once, which binds the functions below
    from numba.np.ufunc import parallel

    setter = getattr(parallel, "_set_num_threads", None)
    getter = getattr(parallel, "_get_num_threads", None)
    if setter is None or getter is None:
        return numba.set_num_threads, numba.get_num_threads
    return setter, getter
