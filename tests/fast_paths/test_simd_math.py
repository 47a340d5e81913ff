"""The SIMD-friendly e^x of minifw/fast_paths/simd_math.py against math.exp; the vector width."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minifw._jit import njit
from minifw.fast_paths import simd_math as _simd_math

pytestmark = pytest.mark.extra  # expert code: never a course task

ROOT = Path(__file__).resolve().parents[2]


@njit(cache=True)
def exp_each(x: np.ndarray) -> np.ndarray:
    """_simd_math.exp over an array, in the vectorised loop FastOps uses."""
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = _simd_math.exp(x[i])
    return out


def ulps(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|actual - expected| in units of the last place of `expected`."""
    return np.abs(actual - expected) / np.spacing(np.abs(expected))


@given(st.lists(st.floats(-745.0, 709.78), min_size=1, max_size=64))
def test_exp_within_one_ulp_of_libm(values: list[float]) -> None:
    x = np.array(values)
    expected = np.array([math.exp(v) for v in values])
    normal = expected >= np.finfo(np.float64).tiny
    assert ulps(exp_each(x)[normal], expected[normal]).max(initial=0.0) <= 1.0


def test_exp_on_a_dense_sweep_of_the_whole_range() -> None:
    x = np.linspace(-708.0, 709.78, 200_001)
    assert ulps(exp_each(x), np.exp(x)).max() <= 1.0


def test_exp_rounds_subnormal_results_once() -> None:
    x = np.linspace(-745.13, -708.4, 20_001)  # e^x below the smallest normal double
    smallest = np.nextafter(0.0, 1.0)
    assert np.abs(exp_each(x) - np.exp(x)).max() <= smallest


def test_exp_special_values() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 709.79, 800.0, -745.2, -1e300, 1e300])
    expected = np.array([np.nan, np.inf, 0.0, 1.0, 1.0, np.inf, np.inf, 0.0, 0.0, np.inf])
    np.testing.assert_array_equal(exp_each(x), expected)


def test_exp_of_float32_and_int_inputs() -> None:
    assert exp_each(np.array([1.5], np.float32))[0] == np.float32(math.exp(1.5))
    assert _simd_math.exp.py_func(2) == pytest.approx(math.exp(2), rel=1e-15)


def _features_in_fresh_process(env: dict[str, str]) -> str:
    """numba's CPU feature override after `import minifw` in a new interpreter."""
    code = "import numba, minifw; print(numba.config.CPU_FEATURES)"
    knobs = ("MINIFW_VECTOR_WIDTH", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")
    run_env = {k: v for k, v in os.environ.items() if k not in knobs} | env
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=run_env, capture_output=True,
        text=True, check=True,
    ).stdout.strip()  # fmt: skip


def test_vector_width_knob_respects_the_user() -> None:
    assert _features_in_fresh_process({"MINIFW_VECTOR_WIDTH": "256"}) == "None"
    chosen = "+64bit,+sse2"
    assert _features_in_fresh_process({"NUMBA_CPU_FEATURES": chosen}) == chosen
    default = _features_in_fresh_process({})
    import llvmlite.binding as llvm

    if "+avx512f" in llvm.get_host_cpu_features().flatten().split(","):
        assert default.endswith(",-prefer-256-bit")
    else:
        assert default == "None"
