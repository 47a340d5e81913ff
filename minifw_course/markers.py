"""Run pytest in a child process with the recording plugin, and check task markers.

`run_pytest` is shared by the marker check and the grader: it starts pytest in a
repository with `minifw_course/pytest_plugin.py` loaded from *this* copy of
the course tooling (copied to a scratch folder under another module name), so the
repository under test cannot replace or break the recorder. The child runs in
its own process group and the whole group is killed when it overruns.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minifw_course.tasks import COURSE_TASKS

PLUGIN_MODULE = "_minifw_course_recorder"
STAFF_MARKER = "staff"
# Tests that maintain the repository rather than grade a task carry `staff` instead of
# a task marker. Only these places may hold them (a folder ends with "/").
STAFF_PATHS = ("tests/course/", "tests/test_markers.py")
# Tests of what no task teaches (the expert fast paths, the hooks registry) carry `extra`
# instead of a task marker: they run in the staff suite and are never graded.
EXTRA_MARKER = "extra"


@dataclass
class PytestRun:
    """What one pytest child process collected, how its tests ended, and how it exited."""

    collected: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    collect_errors: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    returncode: int | None = None
    timed_out: bool = False
    duration: float = 0.0
    output: str = ""

    def describe_exit(self) -> str:
        """Say in words why the run ended early, or "" when it finished normally."""
        if self.timed_out:
            return f"timed out after {self.duration:.0f} s (the process group was killed)"
        if self.finished:
            return ""
        code = self.returncode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the Python interpreter was killed by {name} before pytest finished"
        return f"the Python interpreter exited with code {code} before pytest finished"


def child_environment(repo: Path, plugin_dir: Path) -> dict[str, str]:
    """The environment of a pytest child: the repository first on the import path."""
    env = dict(os.environ)
    parts = [str(repo), str(plugin_dir)]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_pytest(
    repo: Path,
    args: Sequence[str],
    timeout: float,
    python: str = sys.executable,
) -> PytestRun:
    """Run `python -m pytest ARGS` in `repo` with the recorder and gather its events.

    Never raises for what the child does: a crash, an exit or a hang (killed after
    `timeout` seconds, with its whole process group) shows in the returned run.
    """
    repo = repo.resolve()
    with tempfile.TemporaryDirectory(prefix="minifw-course-") as scratch_name:
        scratch = Path(scratch_name)
        plugin_source = Path(__file__).with_name("pytest_plugin.py").read_text("utf-8")
        (scratch / f"{PLUGIN_MODULE}.py").write_text(plugin_source, "utf-8")
        events = scratch / "events.jsonl"
        log = scratch / "output.txt"
        command = [python, "-m", "pytest", "-p", PLUGIN_MODULE, f"--minifw-record={events}"]
        command += ["-p", "no:cacheprovider", *args]
        run = PytestRun()
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                command,
                cwd=repo,
                env=child_environment(repo, scratch),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            started = time.monotonic()
            try:
                run.returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                run.timed_out = True
                _kill_group(proc)
                run.returncode = proc.wait()
            run.duration = time.monotonic() - started
        run.output = log.read_text("utf-8", errors="replace")
        if events.exists():
            _read_events(events, run)
    return run


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _read_events(path: Path, run: PytestRun) -> None:
    for line in path.read_text("utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short when the child died
        kind = event.get("event")
        if kind == "collected":
            run.collected[event["nodeid"]] = event
        elif kind == "result":
            run.results[event["nodeid"]] = event
        elif kind == "collect_error":
            run.collect_errors.append(event)
        elif kind == "finished":
            run.finished = True


def collect(repo: Path, timeout: float = 300.0, paths: Sequence[str] = ("tests",)) -> PytestRun:
    """Collect (without running) the tests of `repo` and record their markers."""
    existing = [p for p in paths if (repo / p).exists()]
    return run_pytest(repo, ["--collect-only", "-q", *existing], timeout)


def is_staff_path(path: str) -> bool:
    """True for a test file where `staff` tests belong (see STAFF_PATHS)."""
    return any(path.startswith(p) if p.endswith("/") else path == p for p in STAFF_PATHS)


def check_markers(run: PytestRun, known: Collection[str] = COURSE_TASKS) -> list[str]:
    """List every breach of the marker rules; an empty list means the suite is fine.

    Every test carries exactly one task marker from the course map, or `extra` for what
    no task teaches, except the tests in STAFF_PATHS, which carry `staff` and no task marker.
    """
    known_markers = {"task" + task.replace(".", "_") for task in known}
    problems = [f"{e['nodeid'] or 'tests'}: could not be collected:\n{e['message']}"
                for e in run.collect_errors]  # fmt: skip
    if not run.finished:
        problems.append("collection did not finish: " + run.describe_exit() + "\n" + run.output)
    for nodeid, event in run.collected.items():
        problems.extend(_item_problems(nodeid, event["path"], event["markers"], known_markers))
    if run.finished and not run.collected and not run.collect_errors:
        problems.append("no tests were collected")
    return problems


def _item_problems(nodeid: str, path: str, markers: list[str], known: set[str]) -> list[str]:
    tasks = [m for m in markers if m != STAFF_MARKER]
    staff = STAFF_MARKER in markers
    if tasks == [EXTRA_MARKER]:
        return [] if not staff else [f"{nodeid}: `staff` and `extra` together"]
    if is_staff_path(path):
        if not staff or tasks:
            return [f"{nodeid}: tests in {path} carry the `staff` marker and no task marker "
                    f"(found {markers or 'none'})"]  # fmt: skip
        return []
    if staff:
        return [f"{nodeid}: the `staff` marker belongs only in {', '.join(STAFF_PATHS)}"]
    if not tasks:
        return [f"{nodeid}: no task marker (add @pytest.mark.taskX_Y or a module-level "
                "`pytestmark`; see minifw_course/tasks.py)"]  # fmt: skip
    if len(tasks) > 1:
        return [f"{nodeid}: {len(tasks)} task markers {', '.join(tasks)} (one task per test)"]
    if tasks[0] not in known:
        return [f"{nodeid}: unknown task marker {tasks[0]} (not in minifw_course/tasks.py)"]
    return []
