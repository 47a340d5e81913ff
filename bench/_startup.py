"""The start-up case of bench/ops.py: a fresh process from `import minifw` to a result.

The child process imports minifw and runs one MLP training step (see `_training.py`),
timing from just before `import minifw` to the step's loss. "Warm" uses the kernel
cache as it is (run once first, so it is filled); "cold" points NUMBA_CACHE_DIR at an
empty temporary directory, so every kernel compiles.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import sys, time
start = time.perf_counter()
import minifw as mf
sys.path.insert(0, {here!r})
from _training import minifw_step
variant, step = minifw_step(mf)
float(step().item())
print(f"{{time.perf_counter() - start:.3f}} {{variant}}")
"""


def run_child(cache_dir: str | None) -> tuple[float, str]:
    """Seconds from `import minifw` to the first step's loss in a new process, and variant."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    code = CHILD.format(here=str(HERE))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
    seconds, variant = done.stdout.strip().splitlines()[-1].split(" ", 1)
    return float(seconds), variant


def startup_times(cold: bool) -> list[str]:
    """Table lines for the warm (and, if asked, cold) kernel cache start-up."""
    lines = []
    try:
        run_child(None)  # fill the cache
        warm, variant = min(run_child(None) for _ in range(3))
        verdict = "ok" if warm < 1.5 else "MISS"
        lines.append(f"fresh process, warm cache: {warm:.2f} s  (< 1.5 s: {verdict}) [{variant}]")
        if cold:
            with tempfile.TemporaryDirectory() as empty:
                seconds, _ = run_child(empty)
            lines.append(f"fresh process, cold cache: {seconds:.2f} s (every kernel compiles)")
    except RuntimeError as error:
        lines.append(f"fresh process start-up: skipped ({error})")
    return lines
