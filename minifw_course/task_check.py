"""Check that a module's tasks are graded on their own work: `check-tasks --module N`.

For a module with tasks t1..tn, the check builds the module's student repository once and
then walks it through the states a student passes through: in state k the first k tasks
are solved (their fences hold the reference code) and the rest are stubs. In each state it
runs the module's task tests and expects

- every test of a solved task to pass (a task's tests need only that task and earlier ones);
- every test of a stubbed task to fail (untouched stubs score exactly 0).

A test that breaks either rule is reported with its state, so the fix is to re-mark it
(`extra` for given code, the right task) or to remove a dependency on later work. The states
share one folder, so Numba's disk cache is reused wherever a kernel file did not change.
Each state's run loads only the test files that may hold the module's tests (as the grader
does, `grade.task_test_files`), not every test file of the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from minifw_course.assignment import make_assignment
from minifw_course.fences import find_fences, python_files
from minifw_course.grade import task_test_files
from minifw_course.markers import PytestRun, read_events
from minifw_course.tasks import Task, tasks_of_module

RECORDER = "minifw_course.pytest_plugin"


@dataclass
class StateResult:
    """The outcome of one state: which tasks were solved, and each task test's outcome."""

    solved: list[str]
    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)  # nodeid -> (task, outcome)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """The tests that break the rules in this state, one line each."""
        lines = list(self.errors)
        for nodeid, (task, outcome) in sorted(self.outcomes.items()):
            if task in self.solved and outcome not in ("passed", "skipped"):
                lines.append(f"{nodeid}: {outcome} although task {task} is solved")
            elif task not in self.solved and outcome == "passed":
                lines.append(f"{nodeid}: passed although task {task} is a stub")
        return lines


def check_tasks(
    repo: Path, module: int, python: str = sys.executable, timeout: float = 1800.0
) -> list[StateResult]:
    """Run every state of `module` (0..n tasks solved) in one scratch repository."""
    repo = repo.resolve()
    tasks = tasks_of_module(module)
    with tempfile.TemporaryDirectory(prefix=f"minifw-check-{module}-") as scratch:
        work = Path(scratch) / "repo"
        # the earlier modules solved, as a student who carried their work forward
        make_assignment(repo, work, module, solutions_through=module - 1)
        stubbed = {path: path.read_text("utf-8") for path in python_files(work)}
        results = []
        for solved_count in range(len(tasks) + 1):
            solved = {task.id for task in tasks[:solved_count]}
            for path, text in stubbed.items():
                _write_if_changed(path, _restore(text, repo / path.relative_to(work), solved))
            results.append(_run_state(work, tasks, sorted(solved), python, timeout))
            _print_state(results[-1], len(tasks))
        return results


def _restore(stubbed: str, reference: Path, solved: set[str]) -> str:
    """`stubbed` with the fenced regions of `solved` tasks taken from the reference file."""
    name = reference.name
    fences = find_fences(stubbed, name)
    if not fences or not solved.intersection(f.task for f in fences):
        return stubbed
    ref_lines = reference.read_text("utf-8").splitlines(keepends=True)
    ref_fences = find_fences("".join(ref_lines), name)
    lines = stubbed.splitlines(keepends=True)
    # fences pair up in order: stubbing changes bodies, never the fence comments
    for fence, ref in reversed(list(zip(fences, ref_fences, strict=True))):
        if fence.task in solved:
            lines[fence.begin : fence.end - 1] = ref_lines[ref.begin : ref.end - 1]
    return "".join(lines)


def _write_if_changed(path: Path, text: str) -> None:
    if path.read_text("utf-8") != text:  # unchanged files keep their Numba disk cache
        path.write_text(text, "utf-8")


def _run_state(
    work: Path, tasks: list[Task], solved: list[str], python: str, timeout: float
) -> StateResult:
    result = StateResult(solved)
    markers = " or ".join(task.marker for task in tasks)
    files = _test_files(work, tasks)
    record = work.parent / "record.jsonl"
    # the recorder comes from this tooling; everything else from the scratch repository
    path = os.pathsep.join([str(work), str(Path(__file__).resolve().parents[1])])
    env = dict(os.environ, PYTHONPATH=path, HYPOTHESIS_PROFILE="grade")
    start = time.perf_counter()
    with open(record, "w", encoding="utf-8") as sink:
        command = [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            markers,
            "-p",
            RECORDER,
            f"--minifw-record-fd={sink.fileno()}",
            *files,
        ]
        try:
            subprocess.run(
                command,
                cwd=work,
                env=env,
                pass_fds=(sink.fileno(),),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            result.errors.append(f"state {solved}: pytest ran past {timeout:.0f} s")
    result.seconds = time.perf_counter() - start
    _read_record(record, {task.marker: task.id for task in tasks}, result)
    return result


def _test_files(work: Path, tasks: list[Task]) -> list[str]:
    """The test files that may hold tests of `tasks` ([]: let pytest look everywhere)."""
    files: set[str] = set()
    for task in tasks:
        found = task_test_files(work, task)
        if found is None:
            return []
        files.update(found)
    return sorted(files)


def _read_record(record: Path, task_of_marker: dict[str, str], result: StateResult) -> None:
    run = PytestRun()
    read_events(record.read_bytes(), run)  # no key: a staff run, nothing to authenticate
    result.errors += [f"{error['nodeid']}: cannot be collected" for error in run.collect_errors]
    for nodeid, event in run.collected.items():
        tasks = [task_of_marker[m] for m in event["markers"] if m in task_of_marker]
        if not tasks:
            continue
        # a test marked for several tasks counts as the latest one it needs
        outcome = run.results.get(nodeid, {}).get("outcome", "not run")
        result.outcomes[nodeid] = (max(tasks), str(outcome))


def _print_state(result: StateResult, count: int) -> None:
    solved = ", ".join(result.solved) or "none"
    tally: dict[str, dict[str, int]] = {}
    for task, outcome in result.outcomes.values():
        tally.setdefault(task, {}).setdefault(outcome, 0)
        tally[task][outcome] += 1
    print(f"-- solved: {solved} ({len(result.solved)}/{count}), {result.seconds:.0f} s")
    for task in sorted(tally):
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(tally[task].items()))
        print(f"   task {task}: {counts}")
    for line in result.problems():
        print(f"   PROBLEM {line}")
    sys.stdout.flush()


def all_problems(results: list[StateResult]) -> list[str]:
    """Every rule broken in any state, prefixed by what was solved."""
    lines: list[str] = []
    for result in results:
        solved = ",".join(result.solved) or "none"
        lines.extend(f"[solved: {solved}] {line}" for line in result.problems())
    return lines
