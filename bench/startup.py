"""Cold start: a fresh process with an empty kernel cache, from `import minifw` to its first
MLP training step, and which kernels it compiled on the way (seconds each).

    python bench/startup.py            # 3 cold runs: median, range and the compile table
    python bench/startup.py --runs 5

Each run is a new Python process whose NUMBA_CACHE_DIR is an empty folder, so every
kernel the step needs compiles (the "first run only" cost a new user meets). The table
lists the top-level compilations of the first run (a kernel's inlined helpers compile
inside it and count towards it), slowest first. Target (issue 19): at most 10 s on a
quiet 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import json, sys, time
start = time.perf_counter()
from numba.core import event
recorder = event.RecordingListener()
event.register("numba:compile", recorder)
import minifw as mf
sys.path.insert(0, {here!r})
from _training import minifw_step
variant, step = minifw_step(mf)
float(step().item())
seconds = time.perf_counter() - start
stack, compiled = [], []
for when, ev in recorder.buffer:
    if ev.is_start:
        stack.append(when)
        continue
    began = stack.pop()
    if not stack:  # top level: not compiled as part of another kernel
        fn = ev.data["dispatcher"].py_func
        name = fn.__module__ + "." + fn.__qualname__
        compiled.append([when - began, name, str(ev.data["args"])])
print(json.dumps({{"seconds": seconds, "variant": variant, "compiled": compiled}}))
"""


def cold_run() -> dict:
    """One fresh process with an empty kernel cache: its seconds, variant and compilations."""
    with tempfile.TemporaryDirectory() as empty:
        env = {**os.environ, "NUMBA_CACHE_DIR": empty}
        env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
        done = subprocess.run(
            [sys.executable, "-c", CHILD.format(here=str(HERE))],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the cold run failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compile_table(compiled: list[list], rows: int = 25) -> list[str]:
    """Lines of the slowest top-level compilations: seconds, kernel, argument types."""
    lines = [f"{'s':>6}  kernel (argument types)"]
    for seconds, name, args in sorted(compiled, reverse=True)[:rows]:
        short = args if len(args) <= 70 else args[:67] + "..."
        lines.append(f"{seconds:6.2f}  {name.removeprefix('minifw.')} {short}")
    total = sum(seconds for seconds, _, _ in compiled)
    lines.append(f"{total:6.2f}  in all: {len(compiled)} compilations")
    return lines


def main() -> None:
    """Run the cold start several times; print the median, the range and the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="cold runs (default 3)")
    args = parser.parse_args()
    runs = [cold_run() for _ in range(args.runs)]
    times = [run["seconds"] for run in runs]
    print(f"first MLP step, empty kernel cache [{runs[0]['variant']}]")
    print(
        f"cold start: median {statistics.median(times):.1f} s, range "
        f"{min(times):.1f}-{max(times):.1f} s over {len(times)} runs (target: <= 10 s)"
    )
    print("\n".join(compile_table(runs[0]["compiled"])))


if __name__ == "__main__":
    main()
