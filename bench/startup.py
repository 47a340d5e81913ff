"""Cold start: a fresh process with an empty kernel cache, from `import minifw` to its first
MLP training step, and which kernels it compiled on the way (seconds each).

    python bench/startup.py            # 3 cold runs: median, range and compile tables
    python bench/startup.py --runs 5 --rows 25

Each run is a new Python process whose NUMBA_CACHE_DIR is an empty folder, so every
kernel the step needs compiles (the "first run only" cost a new user meets). A table
per run lists its top-level compilations (a kernel's helpers compile inside it and count
towards it), slowest first, in wall and CPU seconds of the compiling thread (on a shared
machine the CPU seconds vary less). Target: at most 10 s on a quiet 2-core
machine.
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

class Clock(event.Listener):
    # Wall and CPU seconds (of the compiling thread) at each compile's start and end.
    def __init__(self):
        self.buffer = []

    def on_start(self, ev):
        self.buffer.append((time.perf_counter(), time.thread_time(), ev))

    def on_end(self, ev):
        self.buffer.append((time.perf_counter(), time.thread_time(), ev))

clock = Clock()
event.register("numba:compile", clock)
import minifw as mf
sys.path.insert(0, {here!r})
from _training import minifw_step
variant, step = minifw_step(mf)
float(step().item())
seconds = time.perf_counter() - start
cpu = time.process_time()
stack, compiled = [], []
for when, used, ev in clock.buffer:
    if ev.is_start:
        stack.append((when, used))
        continue
    began, began_cpu = stack.pop()
    if not stack:  # top level: not compiled as part of another kernel
        fn = ev.data["dispatcher"].py_func
        name = fn.__module__ + "." + fn.__qualname__
        compiled.append([when - began, used - began_cpu, name, str(ev.data["args"])])
print(json.dumps({{"seconds": seconds, "cpu": cpu, "variant": variant, "compiled": compiled}}))
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
    """Lines of the slowest top-level compilations: wall and CPU seconds, kernel, arguments.

    CPU seconds are those of the compiling thread: on a busy machine they show what a
    compile costs when wall seconds also count the time other processes held the core.
    """
    lines = [f"{'wall s':>6}  {'cpu s':>6}  kernel (argument types)"]
    for seconds, cpu, name, args in sorted(compiled, reverse=True)[:rows]:
        short = args if len(args) <= 60 else args[:57] + "..."
        lines.append(f"{seconds:6.2f}  {cpu:6.2f}  {name.removeprefix('minifw.')} {short}")
    wall = sum(row[0] for row in compiled)
    cpu = sum(row[1] for row in compiled)
    lines.append(f"{wall:6.2f}  {cpu:6.2f}  in all: {len(compiled)} compilations")
    return lines


def main() -> None:
    """Run the cold start several times; print the median, the range and the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="cold runs (default 3)")
    parser.add_argument("--rows", type=int, default=12, help="table rows per run (default 12)")
    args = parser.parse_args()
    runs = [cold_run() for _ in range(args.runs)]
    times = [run["seconds"] for run in runs]
    print(f"first MLP step, empty kernel cache [{runs[0]['variant']}]")
    cpu = [run["cpu"] for run in runs]
    print(
        f"cold start: median {statistics.median(times):.1f} s, range "
        f"{min(times):.1f}-{max(times):.1f} s over {len(times)} runs (target: <= 10 s)"
    )
    print(
        f"CPU time of the process (helper not counted): median {statistics.median(cpu):.1f} s,"
        f" range {min(cpu):.1f}-{max(cpu):.1f} s"
    )
    for number, run in enumerate(runs, 1):
        print(f"\nrun {number}: {run['seconds']:.1f} s")
        print("\n".join(compile_table(run["compiled"], args.rows)))


if __name__ == "__main__":
    main()
