"""Numba's disk cache never serves machine code built from old kernel sources.

Numba alone keys a cached kernel on the kernel's own file; minifw's locators
(`minifw/_jit.py`) key it also on every file the kernels inline. Each test works on a
copy of the package with its own NUMBA_CACHE_DIR, runs FastOps' map(NEG) on three
cells in a fresh process, edits the copy and runs again. Only one small kernel compiles.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minifw import _jit

pytestmark = pytest.mark.extra  # the cache key is no course task

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import numpy as np
from numba.core.registry import CPUDispatcher
from minifw._jit import PerOp
import minifw
from minifw import fast_ops
from minifw.core import operators
from minifw.backends import get_backend
fast = get_backend("fast")
x = fast.from_numpy(np.array([1.0, 2.0, 3.0]))
values = fast.to_numpy(fast.map(operators.NEG, x)).tolist()
modules = [fast_ops] + ([fast_ops.fast_paths.line_loops] if fast_ops.fast_paths else [])
copies = [copy for table in PerOp.tables for copy in table.copies.values()]
ran = [k for m in modules for k in vars(m).values() if isinstance(k, CPUDispatcher)] + copies
ran = [k for k in ran if k.signatures]
print(minifw.__file__)
print(*values)
print(sum(sum(k.stats.cache_hits.values()) for k in ran),
      sum(sum(k.stats.cache_misses.values()) for k in ran))
"""

# Appended to the copy's scalar_math.py: neg now adds 100.
NEW_NEG = '''

def neg(x: float) -> float:
    """x + 100 (an edit the compiled kernels must pick up)."""
    return x + 100.0
'''


def run_child(copy: Path) -> tuple[list[float], int, int]:
    """(map(NEG) of [1, 2, 3], cache hits, cache misses) in a fresh process on `copy`."""
    env = {**os.environ, "PYTHONPATH": str(copy), "NUMBA_CACHE_DIR": str(copy / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=copy, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    package, values, counts = done.stdout.splitlines()[-3:]
    assert Path(package).resolve().is_relative_to(copy.resolve()), f"imported {package}"
    hits, misses = map(int, counts.split())
    return [float(v) for v in values.split()], hits, misses


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the minifw package (no compiled caches) under a fresh directory."""
    from numba import config

    if config.DISABLE_JIT:
        pytest.skip("NUMBA_DISABLE_JIT=1: nothing is compiled, so nothing is cached")
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc")
    shutil.copytree(ROOT / "minifw", tmp_path / "minifw", ignore=ignore)
    return tmp_path


def test_editing_an_inlined_source_recompiles_instead_of_loading_stale_code(
    package_copy: Path,
) -> None:
    assert run_child(package_copy)[0] == [-1.0, -2.0, -3.0]
    values, hits, misses = run_child(package_copy)
    assert (values, misses) == ([-1.0, -2.0, -3.0], 0) and hits >= 1, "unchanged: cache hit"
    # A comment only: same machine code, but the stamp changed, so the kernel recompiles.
    with (package_copy / "minifw/core/tensor_data.py").open("a") as source:
        source.write("\n# edited by test_cache_key\n")
    values, hits, misses = run_child(package_copy)
    assert (values, hits) == ([-1.0, -2.0, -3.0], 0) and misses >= 1, "tensor_data edited"
    with (package_copy / "minifw/core/scalar_math.py").open("a") as source:
        source.write(NEW_NEG)
    values, hits, misses = run_child(package_copy)
    assert values == [101.0, 102.0, 103.0], "scalar_math.py edited: the cache served old code"


def test_the_stamp_covers_every_kernel_source() -> None:
    names = {path.relative_to(_jit.PACKAGE_DIR).as_posix() for path in _jit.kernel_sources()}
    expected = {"_jit.py", "fast_ops.py", "core/operators.py", "core/tensor_data.py"}
    expected.add("core/scalar_math.py")  # the rows' functions, which kernels inline
    assert expected <= names
    in_folder = {f"fast_paths/{p.name}" for p in (_jit.PACKAGE_DIR / "fast_paths").glob("*.py")}
    assert in_folder <= names
    assert len(_jit.kernel_sources_hash()) == 64


def test_minifw_kernels_use_the_keyed_locator() -> None:
    from numba import config

    from minifw import fast_ops

    if config.DISABLE_JIT:
        pytest.skip("NUMBA_DISABLE_JIT=1: nothing is compiled, so nothing is cached")
    locator = fast_ops._map._cache._impl.locator
    assert isinstance(locator, _jit._KeyedOnKernelSources)
    stamp = locator.get_source_stamp()
    assert stamp[1] == _jit.kernel_sources_hash()
