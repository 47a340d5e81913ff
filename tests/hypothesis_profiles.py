"""The hypothesis settings the tests share: the run profiles and the caps tests put on them.

Profiles (HYPOTHESIS_PROFILE picks one; tests/conftest.py loads it): "dev" on a laptop,
"ci" derandomized with more examples, "cudasim" a small fixed sample for Numba's CUDA
simulator, "grade" for the grader (few examples, a stub fails at the first one).

Tests draw through the function-scoped `backend` fixture on purpose (each example reuses
its backend): `fixture_ok` allows that, and `at_most(n)` also caps the examples of a test
whose examples are slow (a gradcheck, a PyTorch comparison), under any profile.
"""

from __future__ import annotations

from typing import TypeVar

from hypothesis import HealthCheck, Phase, settings

T = TypeVar("T")


def register_profiles() -> None:
    """Register the "dev", "ci", "cudasim" and "grade" profiles."""
    settings.register_profile(
        "dev",
        max_examples=25,
        deadline=None,
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


def fixture_ok(test: T) -> T:
    """Run `test` under the loaded profile, drawing through the `backend` fixture."""
    return settings(suppress_health_check=[HealthCheck.function_scoped_fixture])(test)


def at_most(examples: int) -> settings:
    """The loaded profile capped at `examples` examples, as `fixture_ok` for fixtures.

    Call it at module level: the profile is loaded (by conftest) before tests import.
    """
    return settings(
        max_examples=min(settings().max_examples, examples),
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
