"""Shared test setup: the hypothesis profile, task markers and the backend fixture."""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import settings

from minifw_course.tasks import COURSE_TASKS
from tests.hypothesis_profiles import register_profiles

# No compile-ahead helper process per test worker (minifw/fast_paths/ahead.py): the suite
# keeps every core busy already; tests/fast_paths/test_ahead.py starts one itself.
os.environ.setdefault("MINIFW_COMPILE_AHEAD", "0")


def _atomic_shared_array() -> Callable[..., Any]:
    """A `cuda.shared.array` for the simulator that looks up and creates under a lock.

    A block's threads share the array made at one source line (keyed by the caller's file
    and line, as the simulator keys it); dynamic shared memory (shape 0) is left to the
    simulator, which hands out one buffer made up front.
    """
    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    simulators_own = kernelapi.FakeCUDAShared.array
    lock = threading.Lock()

    def array(self: Any, shape: Any, dtype: Any) -> Any:
        if shape == 0:
            return simulators_own(self, shape, dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        kind = numpy_support.as_dtype(dtype) if isinstance(dtype, types.Type) else dtype
        with lock:
            if key not in self._allocations:
                self._allocations[key] = np.empty(shape, kind)
            return self._allocations[key]

    return array


# Numba's CUDA simulator runs each thread of a block as a Python thread, and the thread that
# runs the block polls them in a loop that keeps the GIL: each time a simulated thread is to
# run, it first waits out the interpreter's switch interval (5 ms by default) while the
# poller spins. A short interval hands the GIL over sooner: the same kernels, threads and
# barriers, in about a third of the time (the simulator pass of .ci/run). The simulator's
# `cuda.shared.array` looks up the block's array and creates it if absent without a lock,
# so two threads switched between the two steps would each get an array of their own (a
# reduction then reads values no other thread wrote); more switching makes that likely,
# so the lookup is made atomic.
if int(os.environ.get("NUMBA_ENABLE_CUDASIM") or 0):
    from numba.cuda.simulator import kernelapi

    kernelapi.FakeCUDAShared.array = _atomic_shared_array()
    sys.setswitchinterval(1e-4)

register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_configure(config: pytest.Config) -> None:
    for task in COURSE_TASKS:
        marker = "task" + task.replace(".", "_")
        config.addinivalue_line("markers", f"{marker}: course task {task}")
    config.addinivalue_line("markers", "slow: training runs and app smoke tests (run in CI)")
    # course tooling (minifw_course): tests that check the tooling, not a course task
    config.addinivalue_line("markers", "staff: course tooling tests (tests/course/)")
    config.addinivalue_line("markers", "extra: what no course task teaches (never graded)")


@pytest.fixture(params=["simple", "fast", "cuda"])
def backend(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Each backend in turn; one that cannot run here is skipped with the reason."""
    from minifw.backends import cuda_available, get_backend

    if request.param == "cuda" and not cuda_available():
        pytest.skip("cuda backend: no CUDA GPU here and NUMBA_ENABLE_CUDASIM=1 is not set")
    if request.param != "simple" and not _kernels_written(request.param):
        pytest.skip(f"{request.param} backend: its kernels are a later course task (stubs)")
    return get_backend(request.param)


@functools.cache
def _kernels_written(name: str) -> bool:
    """False in a student repo whose kernels for this backend are still stubs.

    Only the compiled backends are probed: their own task tests (test_fast_ops.py,
    test_cuda_ops.py) still fail red, while the shared suite skips them until then.
    """
    from minifw.backends import get_backend
    from minifw.core import operators

    backend = get_backend(name)
    try:
        backend.map(operators.NEG, backend.full((1,), 1.0, "float64"))
    except NotImplementedError:
        return False
    return True
