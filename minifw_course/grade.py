"""Grade a repository task by task and write Gradescope's autograder `results.json`.

Each task's tests (`pytest -m task2_1`) run in their own child process, in their own
process group, under a time limit; only the test files whose markers (read without
importing them) name the task, or name no task, are loaded. Per-test outcomes come
from the recording plugin (`pytest_plugin.py`), which the grader loads from its
own copy of the tooling. A task scores `max_score * passed / counted`, where skipped
tests are not counted and a file that cannot be collected counts as one failed
test. A task whose process hangs, exits or crashes before pytest finishes scores
zero, with an explanation; `results.json` is rewritten (atomically) after every
task, so it is complete and valid whatever the submission does.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minifw_course.catalog import TASK_INFO
from minifw_course.markers import PytestRun, run_pytest
from minifw_course.prune import file_tasks
from minifw_course.tasks import TASKS, Task

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
OUTPUT_LIMIT = 8000
_MESSAGE_LINES = 12


@dataclass
class TaskResult:
    """The grade of one task."""

    task: Task
    passed: int
    counted: int
    score: float
    max_score: float
    output: str
    note: str = ""

    def gradescope(self, visibility: str) -> dict[str, Any]:
        """This result as one entry of results.json's `tests` list."""
        return {
            "name": f"Task {self.task.id}: {self.task.title}",
            "number": self.task.id,
            "score": round(self.score, 4),
            "max_score": self.max_score,
            "status": "passed" if self.score >= self.max_score else "failed",
            "output": _cap(self.output),
            "visibility": visibility,
        }


def max_score(task: Task) -> float:
    """The points a task is worth (catalog.py)."""
    return TASK_INFO[task.id].points if task.id in TASK_INFO else 10.0


def zero(task: Task, why: str, note: str) -> TaskResult:
    """A zero for `task`, explained."""
    return TaskResult(task, 0, 0, 0.0, max_score(task), f"Task {task.id}: 0 points: {why}", note)


def grade_task(repo: Path, task: Task, timeout: float, python: str = sys.executable) -> TaskResult:
    """Run the tests of one task in a child process and score them."""
    paths = task_test_files(repo, task)
    if paths == []:
        return zero(task, f"no test file of this repository marks {task.marker}.", "no tests")
    args = ["-m", task.marker, "-q", "--continue-on-collection-errors", *(paths or [])]
    return score_run(task, run_pytest(repo, args, timeout, python))


def task_test_files(repo: Path, task: Task) -> list[str] | None:
    """The test files that may hold tests of `task` (None: no tests/ folder, let pytest look).

    A file is kept when its markers, read without importing it, name the task or
    name no task at all; so a task's run never imports the other tasks' test files.
    """
    folder = repo / "tests"
    if not folder.is_dir():
        return None
    files = []
    for path in sorted(folder.rglob("*.py")):
        name = path.relative_to(repo).as_posix()
        is_test = path.name.startswith("test_") or path.name.endswith("_test.py")
        if not is_test or name.startswith("tests/course/") or "__pycache__" in name:
            continue
        try:
            tasks = file_tasks(path.read_text("utf-8"), name)
        except (SyntaxError, ValueError, OSError):
            tasks = set()  # pytest will report what is wrong with it
        if not tasks or task.id in tasks:
            files.append(name)
    return files


def score_run(task: Task, run: PytestRun) -> TaskResult:
    """Turn what a pytest child recorded into the grade of `task`.

    Each test file that failed to collect counts as one failed test.
    """
    errors = run.collect_errors
    exit_reason = run.describe_exit()
    if exit_reason:
        before = [n for n, r in run.results.items() if r["outcome"] == "passed"]
        why = exit_reason + "."
        if before:
            why += f" ({len(before)} tests had passed before that.)"
        note = "timed out" if run.timed_out else "crashed"
        return zero(task, why + "\n\nLast output:\n" + run.output[-3000:], note)
    if not run.collected and not errors:
        return zero(task, f"no tests marked {task.marker} were collected.", "no tests")
    outcomes = [run.results.get(nodeid, {}).get("outcome", "error") for nodeid in run.collected]
    skipped = outcomes.count("skipped")
    counted = len(outcomes) - skipped + len(errors)
    passed = outcomes.count("passed")
    if counted == 0:
        return zero(task, f"all {skipped} tests were skipped:\n" + _skips(run), "all skipped")
    score = max_score(task) * passed / counted
    lines = [f"Task {task.id}: {passed}/{counted} tests passed"]
    if skipped:
        lines[0] += f" ({skipped} skipped, not counted)"
    lines += _collect_errors(errors) + _failures(run)
    if skipped:
        lines += ["", "Skipped:", _skips(run)]
    return TaskResult(task, passed, counted, score, max_score(task), "\n".join(lines))


def _collect_errors(errors: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for error in errors:
        lines += ["", f"COULD NOT COLLECT {error['nodeid'] or 'tests'}:", _short(error["message"])]
    return lines


def _failures(run: PytestRun) -> list[str]:
    lines: list[str] = []
    for nodeid in run.collected:
        result = run.results.get(nodeid)
        if result is None:
            lines += ["", f"NO RESULT {nodeid}: the test never reported"]
        elif result["outcome"] in ("failed", "error"):
            lines += ["", f"{result['outcome'].upper()} {nodeid}:", _short(result["message"])]
    return lines


def _skips(run: PytestRun) -> str:
    reasons = [
        f"  {nodeid}: {result['message']}"
        for nodeid, result in run.results.items()
        if result["outcome"] == "skipped"
    ]
    if len(reasons) > 20:
        reasons = reasons[:20] + [f"  ... and {len(reasons) - 20} more"]
    return "\n".join(reasons)


def _short(message: str) -> str:
    """The end of a traceback: where pytest puts the assertion and the exception."""
    lines = message.rstrip().splitlines()
    return "\n".join(lines[-_MESSAGE_LINES:])


def _cap(text: str) -> str:
    return text if len(text) <= OUTPUT_LIMIT else text[: OUTPUT_LIMIT - 40] + "\n... (cut)"


def table(results: Sequence[TaskResult]) -> str:
    """The score table printed at the end of grading."""
    rows = [("task", "title", "passed/total", "score", "")]
    for r in results:
        score = f"{r.score:.2f}/{r.max_score:.2f}"
        rows.append((r.task.id, r.task.title[:38], f"{r.passed}/{r.counted}", score, r.note))
    total = sum(r.score for r in results)
    possible = sum(r.max_score for r in results)
    rows.append(("total", "", "", f"{total:.2f}/{possible:.2f}", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2])]
        lines.append("  ".join([*cells, row[3].rjust(widths[3]), row[4]]).rstrip())
    return "\n".join(lines)


def results_json(
    results: Sequence[TaskResult], pending: Iterable[Task], elapsed: float, visibility: str
) -> dict[str, Any]:
    """Gradescope's autograder results: the total, one entry per task, and the table."""
    done = list(results)
    waiting = [zero(t, "not graded: the grader stopped before this task ran.", "not run")
               for t in pending]  # fmt: skip
    everything = done + waiting
    return {
        "score": round(sum(r.score for r in everything), 4),
        "execution_time": int(round(elapsed)),
        "output": table(everything),
        "visibility": visibility,
        "stdout_visibility": visibility,
        "tests": [r.gradescope(visibility) for r in everything],
    }


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(data, stream, indent=2)
            stream.write("\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def grade(
    repo: Path,
    tasks: Sequence[Task],
    timeout: float = 600.0,
    json_path: Path | None = None,
    visibility: str = "visible",
    python: str = sys.executable,
    log: Callable[[str], None] = print,
) -> list[TaskResult]:
    """Grade `tasks` of the repository `repo`; write results.json after every task."""
    repo = repo.resolve()
    started = time.monotonic()
    results: list[TaskResult] = []

    def save() -> None:
        if json_path is not None:
            pending = tasks[len(results) :]
            data = results_json(results, pending, time.monotonic() - started, visibility)
            write_json_atomic(json_path, data)

    save()
    for task in tasks:
        log(f"grading task {task.id} ({task.title}) ...")
        try:
            result = grade_task(repo, task, timeout, python)
        except Exception as error:  # noqa: BLE001 - one task's trouble must not lose the rest
            result = zero(task, f"the grader failed on this task: {error!r}", "grader error")
        results.append(result)
        save()
    log(table(results))
    return results


def parse_tasks(text: str) -> list[Task]:
    """Turn "2.1,2.2" (or "task2_1 2.2") into Tasks, raising ValueError for unknown ids."""
    by_id = {task.id: task for task in TASKS}
    chosen = []
    for part in text.replace(",", " ").split():
        key = part.removeprefix("task").replace("_", ".")
        if key not in by_id:
            raise ValueError(f"unknown task {part!r}: expected ids like 2.1 ({', '.join(by_id)})")
        chosen.append(by_id[key])
    if not chosen:
        raise ValueError("no tasks given")
    return chosen
