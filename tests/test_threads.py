"""minifw/_threads.py: parallel kernels get the cores other processes leave free."""

from __future__ import annotations

import time

import numpy as np
import pytest

from minifw import _threads, fast_ops

pytestmark = pytest.mark.extra  # following the machine's load is no course task


def gauge_after(
    monkeypatch: pytest.MonkeyPatch, cores: int, others: float, mine: float, helper: float = 0
) -> _threads.LoadGauge:
    """A gauge on `cores` cores that has just read one second in which other processes
    kept `others` cores busy, this one `mine` and a helper it started (pid 4242) `helper`
    (clock ticks faked at 100 a second)."""
    gauge = _threads.LoadGauge()
    gauge.active, gauge.cores, gauge.most, gauge.ticks_per_second = True, cores, cores, 100
    gauge._last = (time.monotonic() - 1.0, (1000, 300))
    if helper:
        gauge.count_as_own(4242)
    busy = 1000 + round(100 * (others + mine + helper))
    ran = {"self": 300 + round(100 * mine), 4242: round(100 * helper)}
    monkeypatch.setattr(_threads, "_busy_ticks", lambda: busy)
    monkeypatch.setattr(_threads, "_ran_ticks", lambda pid: ran.get(pid))
    gauge()
    return gauge


@pytest.mark.parametrize(
    ("cores", "others", "mine", "threads"),
    [
        (2, 0.05, 1.9, 2),  # a quiet machine: every core, however busy this process is
        (2, 0.3, 1.0, 2),  # a little background work does not count
        (2, 1.0, 1.0, 1),  # one other CPU-bound process on two cores: run serially
        (2, 2.0, 0.5, 1),  # two of them (a busy machine)
        (16, 4.0, 8.0, 12),  # four busy cores of sixteen: the other twelve
        (16, 16.0, 0.0, 1),
    ],
)
def test_the_pool_gets_the_cores_others_leave_free(
    monkeypatch: pytest.MonkeyPatch, cores: int, others: float, mine: float, threads: int
) -> None:
    gauge = gauge_after(monkeypatch, cores, others, mine)
    assert gauge.others == pytest.approx(others, abs=0.02)
    assert gauge() == threads


def test_a_helper_this_process_started_does_not_count_as_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the compile-ahead helper (minifw/fast_paths/ahead.py) busy on the second core
    gauge = gauge_after(monkeypatch, 2, 0.05, 1.0, helper=1.0)
    assert gauge.others == pytest.approx(0.05, abs=0.02)
    assert gauge() == 2


def test_the_load_is_read_at_most_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    gauge = gauge_after(monkeypatch, 2, 2.0, 0.5)
    monkeypatch.setattr(_threads, "_busy_ticks", lambda: pytest.fail("read again too soon"))
    assert gauge() == 1


def test_turned_off_it_keeps_every_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIFW_FOLLOW_LOAD", "0")
    gauge = _threads.LoadGauge()
    assert not gauge.active
    monkeypatch.setattr(_threads, "_busy_ticks", lambda: pytest.fail("read while off"))
    assert gauge() == gauge.most


def test_a_busy_machine_runs_the_serial_twins(monkeypatch: pytest.MonkeyPatch) -> None:
    work = 4 * fast_ops.PARALLEL_FROM
    monkeypatch.setattr(_threads.gauge, "threads", 1)
    monkeypatch.setattr(_threads.gauge, "active", False)  # keep the faked count
    assert not fast_ops.FastOps.parallel(work)
    monkeypatch.setattr(_threads.gauge, "threads", 2)
    assert fast_ops.FastOps.parallel(work)
    assert not fast_ops.FastOps.parallel(fast_ops.PARALLEL_FROM - 1)


def test_this_machine_reads_a_sane_load() -> None:
    busy, mine = _threads._busy_ticks(), _threads._ran_ticks("self")
    if busy is None or mine is None:
        pytest.skip("no /proc here: the gauge keeps every thread")
    assert busy >= mine >= 0
    np.testing.assert_array_less(0, _threads.parallel_threads())


def test_the_fast_thread_count_functions_are_numbas_own() -> None:
    # What the matmul uses to run a small product on one thread: setting through one
    # is what Numba's public functions see, and back.
    import numba

    set_threads, get_threads = _threads.thread_count_functions()
    before = numba.get_num_threads()
    try:
        set_threads(1)
        assert numba.get_num_threads() == get_threads() == 1
    finally:
        set_threads(before)
    assert numba.get_num_threads() == get_threads() == before
