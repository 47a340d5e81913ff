"""Run pytest in a child process with the recording plugin, and check task markers.

`run_pytest` is shared by the marker check and the grader: it starts pytest in a
repository with `minifw_course/pytest_plugin.py` loaded from *this* copy of the course
tooling (copied to a folder of its own under another module name, first on the import
path), so the repository under test cannot replace the recorder. The recorder reports
over a pipe (sandbox.py), and the child, everything it started, and everything that
carries its token are killed when it ends or overruns.
"""

from __future__ import annotations

import hmac
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minifw_course.sandbox import RunUser, run_child
from minifw_course.tasks import COURSE_TASKS

PLUGIN_MODULE = "_minifw_course_recorder"
RECORD_OPTION = "--minifw-record-fd"
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
    tampered: list[str] = field(default_factory=list)
    leftovers: int = 0
    hooks: set[str] = field(default_factory=set)  # the hook implementations pytest held

    def describe_exit(self) -> str:
        """Say in words why the run ended early, or "" when it finished normally."""
        if self.timed_out:
            return f"timed out after {self.duration:.0f} s (every process of the run was killed)"
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


def install_plugin(folder: Path) -> Path:
    """Copy the recorder into `folder` under PLUGIN_MODULE's name, readable by everyone."""
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    target = folder / f"{PLUGIN_MODULE}.py"
    shutil.copyfile(Path(__file__).with_name("pytest_plugin.py"), target)
    target.chmod(0o444)
    folder.chmod(0o555)
    return folder


@contextmanager
def workspace(folder: Path | None = None) -> Iterator[Path]:
    """`folder`, or a temporary folder (removed after) that other users may traverse."""
    if folder is not None:
        yield folder
        return
    temp = Path(tempfile.mkdtemp(prefix="minifw-course-"))
    try:
        temp.chmod(0o755)
        yield temp
    finally:
        remove_tree(temp)


def remove_tree(path: Path) -> None:
    """Delete a folder, read-only parts included."""

    def retry(function: Any, name: str, _info: Any) -> None:
        Path(name).parent.chmod(0o755)
        Path(name).chmod(0o755)
        function(name)

    if path.exists():
        shutil.rmtree(path, onerror=retry)


def run_pytest(
    repo: Path,
    args: Sequence[str],
    timeout: float,
    python: str = sys.executable,
    user: RunUser | None = None,
    work: Path | None = None,
    env: dict[str, str] | None = None,
) -> PytestRun:
    """Run `python -m pytest ARGS` in `repo` with the recorder and gather its events.

    `user` is who the child runs as (default: the caller's user); `work` is a folder for
    the plugin and the scratch folders (default: a temporary one); `env` adds variables
    to the child's environment (PYTHONPATH is always the recorder's). Never raises for what
    the child does: a crash, an exit or a hang (killed after `timeout` seconds, with every
    process of the run) shows in the returned run.
    """
    repo = repo.resolve()
    with workspace(work) as folder:
        plugin = folder / "plugin"
        if not (plugin / f"{PLUGIN_MODULE}.py").is_file():
            install_plugin(plugin)

        def command(fd: int) -> list[str]:
            return [python, "-m", "pytest", "-p", PLUGIN_MODULE, f"{RECORD_OPTION}={fd}",
                    "-p", "no:cacheprovider", *args]  # fmt: skip

        path = os.pathsep.join([str(plugin), str(repo), os.environ.get("PYTHONPATH", "")])
        extra = {**(env or {}), "PYTHONPATH": path.rstrip(os.pathsep)}
        child = run_child(command, repo, folder / "scratch", timeout, user or RunUser(), extra)
    run = PytestRun(returncode=child.returncode, timed_out=child.timed_out)
    run.duration, run.output, run.leftovers = child.duration, child.output, child.leftovers
    read_events(child.events, run, child.key)
    return run


def read_events(data: bytes, run: PytestRun, key: bytes = b"") -> None:
    """Fold the recorder's records (`MAC JSON` lines) into `run`.

    With a `key`, a record whose MAC is not the HMAC-SHA256 of its JSON under `key`, or
    whose `seq` is not the next number, is tampering, and so is a second result for a
    test. The bytes after the last newline are a record cut short when the child died.
    """
    *lines, _cut_short = data.split(b"\n")
    forged, expected = 0, 0
    for line in lines:
        mac, _, body = line.partition(b" ")
        good = hmac.new(key, body, "sha256").hexdigest().encode() if key else mac
        try:
            event = json.loads(body) if hmac.compare_digest(mac, good) else None
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            forged += 1
            continue
        if key and event.get("seq") != expected:
            run.tampered.append(f"records {expected}-{event.get('seq')} of the results pipe "
                                "are missing or out of order")  # fmt: skip
        expected = event["seq"] + 1 if isinstance(event.get("seq"), int) else expected + 1
        try:
            _fold(event, run)
        except (AttributeError, KeyError, TypeError):
            forged += 1
    if forged:
        run.tampered.append(f"{forged} records on the results pipe are forged (no valid MAC)")


def _fold(event: dict[str, Any], run: PytestRun) -> None:
    kind = event.get("event")
    if kind == "collected":
        run.collected[event["nodeid"]] = event
    elif kind == "result":
        if event["nodeid"] in run.results:
            run.tampered.append(f"two results for {event['nodeid']}")
        run.results[event["nodeid"]] = event
    elif kind == "collect_error":
        run.collect_errors.append(event)
    elif kind == "tamper":
        run.tampered += [str(name) for name in event.get("names", [])]
    elif kind == "hooks":
        run.hooks.update(str(hook) for hook in event.get("hooks", []))
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
