"""minifw/fast_paths/ahead.py: a helper process compiles kernels into the disk cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minifw.fast_paths import ahead

pytestmark = pytest.mark.extra  # compiling ahead is no course task

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str, cache: Path, ahead_on: bool) -> dict:
    """Run `code` in a fresh process on kernel cache `cache`; the JSON it prints last."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    env["MINIFW_COMPILE_AHEAD"] = "1" if ahead_on else "0"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_helper_compiles_what_follows_the_first_kernel_then_common_from_its_end() -> None:
    order, common, first = ahead.order(), ahead.COMMON, ahead.RIGHT_AFTER_FIRST
    assert order[:first] == list(common[1 : 1 + first])  # while the program compiles common[0]
    assert order[first : len(common) - 1] == list(reversed(common[1 + first :]))
    assert order[len(common) - 1] == common[0]
    assert order[len(common) :] == list(ahead.EXTRA)
    assert len(set(order)) == len(order) == len(common) + len(ahead.EXTRA)


@pytest.mark.parametrize(
    "kernel",
    [("map", 0, False), ("zip", 100, False), ("reduce_along", 100, False),
     ("reduce_across", 100, False), ("matmul", 0, True), ("sub_scaled", 0, False),
     ("adam_step", 0, False), ("cross_entropy", 0, False), ("fold", 0, False),
     ("max_pool2d", 0, False)],
)  # fmt: skip
def test_each_kind_of_kernel_compiles_on_tiny_inputs(kernel: tuple[str, int, bool]) -> None:
    ahead.compile_one(*kernel, "float32")


def test_an_unknown_kind_or_dtype_is_refused() -> None:
    with pytest.raises(ValueError, match="no kernel kind 'conv'"):
        ahead.compile_one("conv", 0, False, "float32")
    with pytest.raises(SystemExit, match="dtype must be one of"):
        ahead.main(["int64"])


def test_off_when_told_or_on_a_single_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIFW_COMPILE_AHEAD", "0")
    assert not ahead.enabled()
    monkeypatch.setenv("MINIFW_COMPILE_AHEAD", "1")
    monkeypatch.setattr(ahead.gauge, "cores", 1)
    assert not ahead.enabled()
    monkeypatch.setattr(ahead.gauge, "cores", 2)
    assert ahead.enabled()


def test_what_the_helper_compiled_a_later_process_loads(tmp_path: Path) -> None:
    # The helper's program on a one-kernel list, then a new process that launches that
    # kernel: Numba must load it from the disk cache, compiling nothing.
    run_python(
        """
        import json
        from minifw.fast_paths import ahead
        ahead.COMMON, ahead.EXTRA = (("sub_scaled", 0, False),), ()
        ahead.main(["float32"])
        print(json.dumps({}))
        """,
        tmp_path, ahead_on=False,
    )  # fmt: skip
    later = run_python(
        """
        import json
        from numba.core import event
        recorder = event.RecordingListener()
        event.register("numba:compile", recorder)
        from minifw.fast_paths import ahead
        ahead.compile_one("sub_scaled", 0, False, "float32")
        print(json.dumps({"compiled": len(recorder.buffer)}))
        """,
        tmp_path, ahead_on=False,
    )  # fmt: skip
    assert later["compiled"] == 0


def test_the_first_compile_starts_one_helper_and_exit_stops_it(tmp_path: Path) -> None:
    found = run_python(
        """
        import json
        import numpy as np
        from minifw.fast_paths import ahead, line_loops
        cells, shape, strides = np.ones(4), np.array([4]), np.array([1])
        line_loops.run_map(0, cells.copy(), shape, strides, cells, shape, strides, False)
        line_loops.run_map(5, cells.copy(), shape, strides, cells, shape, strides, False)
        started = {dtype: helper.pid for dtype, helper in ahead.starter.started.items()}
        ahead.starter.stop()
        codes = [helper.returncode for helper in ahead.starter.started.values()]
        print(json.dumps({"started": started, "codes": codes}))
        """,
        tmp_path, ahead_on=True,
    )  # fmt: skip
    assert list(found["started"]) == ["float64"]  # one helper, though two kernels compiled
    assert all(code is not None for code in found["codes"])  # stopped: nothing left running
