"""Shared test setup: hypothesis profiles, task markers and the backend fixture."""

from __future__ import annotations

import functools
import os

import pytest
from hypothesis import HealthCheck, Phase, settings

from minifw_course.tasks import COURSE_TASKS

# No compile-ahead helper process per test worker (minifw/fast_paths/ahead.py): the suite
# keeps every core busy already; tests/fast_paths/test_ahead.py starts one itself.
os.environ.setdefault("MINIFW_COMPILE_AHEAD", "0")

settings.register_profile(
    "dev",
    max_examples=25,
    deadline=None,
    # the `backend` fixture is function-scoped on purpose: each example reuses its backend
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
settings.register_profile(
    "cudasim",
    max_examples=5,
    deadline=None,
    derandomize=True,  # CI runs the same small sample every time
    suppress_health_check=list(HealthCheck),
)
settings.register_profile(
    "grade",
    max_examples=10,
    deadline=None,
    derandomize=True,  # every grading run of a submission sees the same examples
    # a stub's NotImplementedError fails at the first example instead of being shrunk
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
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
