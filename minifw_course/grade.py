"""Grade a submission task by task and write Gradescope's autograder `results.json`.

A score comes only from what the staff copy defines. The staff copy (`--staff`, by
default the checkout this grader runs from) is a student repository made by
make-assignment, or the reference repository; the submission supplies only its task
files: the files that fence a task of a graded module (and the catalog's non-test paths
of those tasks, such as `project/`). Everything else in the submission is ignored.

Every pytest child runs with HYPOTHESIS_PROFILE=grade (tests/hypothesis_profiles.py: few
examples, derandomized, no shrinking), so a grade does not depend on luck or on a stub's
shrinking.

1. The plan: in a fresh copy of the staff template, before any submission file is laid
   in, one pytest child collects each task's tests and runs their setup only
   (`--setup-only`). Its test ids are the denominators; the tests that the staff copy
   itself skips on this machine (no CUDA, a later module's stub) are left out. That
   clean process also records the digest of the code each test runs and every hook
   implementation pytest holds: the staff's, to compare each task's run with.
2. Each task: a fresh copy of the template, the submission's task files laid in, every
   file read-only and hashed; then the task's tests run in a pytest child with the
   recorder of this tooling (pytest_plugin.py), which reports over a pipe, each record
   numbered and MAC'd under a key only that run was given. A test scores only if it
   reported "passed": skipped, xfailed, xpassed, failed, errored or missing tests score
   0, and a run that timed out, crashed, changed a file of the copy, or tampered (a test
   whose code is not the staff's, a hook pytest did not hold in the staff's run, a changed
   oracle or import hook, a forged or missing record) scores 0 for the task, "tampered:"
   and the reasons in its output.
3. After each run, every process of the run is killed (sandbox.py), and only then is
   results.json rewritten, atomically, so it is always complete and valid. Its
   `extra_data` lists, for staff, each void task's reasons and every submission file
   outside the task files that differs from the staff copy (submission.py reads them
   without following a link, bounded).

Threat model (docs/README.md has the long form, threat_model.py its text). When `grade`
runs as root, as Gradescope's autograder does, the tests run as a fresh unprivileged user
id: the staff files are root's and read-only, results.json cannot be written, and every
process of that user id is killed before results.json is. If that user cannot run the
interpreter and no --user was given, the tests run as the grader's own user and one line
says so. Code in the test process can still defeat the recorder by walking its closures
(it shares the process), and when the tests run as the grader's user they can reach
everything the grader can. Keep reference solutions off the grading machine: the code
under test can read whatever its user can read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from minifw_course.assignment import IGNORED
from minifw_course.catalog import TASK_INFO
from minifw_course.fences import FenceError, scan_fences
from minifw_course.markers import PytestRun, remove_tree, run_pytest, workspace
from minifw_course.prune import file_tasks
from minifw_course.sandbox import RunUser, SandboxError, usable_user
from minifw_course.submission import FILE_LIMIT, ignored_files, read_bounded, regular, walk
from minifw_course.tasks import TASKS, Task

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
OUTPUT_LIMIT = 8000
# The hypothesis profile of every graded run (tests/hypothesis_profiles.py).
GRADE_ENV = {"HYPOTHESIS_PROFILE": "grade"}
_MESSAGE_LINES = 12
# Left out of the copy of the staff template: version control, environments, caches.
TEMPLATE_SKIPPED = (".git", ".venv", ".venv-ci", "venv", "build", "dist", ".mypy_cache",
                    ".ruff_cache", ".pytest_cache", ".hypothesis", "results.json")  # fmt: skip
FOLDER_LIMIT = 2000  # files taken from one submitted folder
FOLDER_BYTES = 64 * 2**20  # bytes taken from one submitted folder


class GradeError(RuntimeError):
    """The grader cannot grade: a bad staff copy, or a test process that cannot start."""


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
    seconds: float = 0.0  # wall time spent grading the task
    tampered: list[str] = field(default_factory=list)  # why the run was void, for staff

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


@dataclass
class TaskPlan:
    """What the staff copy says about one task, learnt before any submission code ran."""

    files: list[str] | None  # the test files to load (None: let pytest look)
    tests: list[str] = field(default_factory=list)  # the denominator, in order
    skipped: dict[str, str] = field(default_factory=dict)  # staff-skipped here: not counted
    problem: str = ""  # the staff copy's tests of this task are broken
    codes: dict[str, str] = field(default_factory=dict)  # each test's code digest, staff's
    hooks: set[str] = field(default_factory=set)  # pytest's hook implementations, staff's


def max_score(task: Task) -> float:
    """The points a task is worth (catalog.py)."""
    return TASK_INFO[task.id].points if task.id in TASK_INFO else 10.0


def zero(task: Task, why: str, note: str) -> TaskResult:
    """A zero for `task`, explained."""
    return TaskResult(task, 0, 0, 0.0, max_score(task), f"Task {task.id}: 0 points: {why}", note)


def default_staff() -> Path:
    """The checkout this grader runs from, the staff copy when `--staff` is not given."""
    return Path(__file__).resolve().parents[1]


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


def submission_paths(staff_tree: Path, tasks: Sequence[Task]) -> list[str]:
    """The paths the submission supplies (a folder ends with "/"), never a test file.

    They are the files that fence a task of a graded module or an earlier one (students
    carry their work forward), plus the catalog's paths of those tasks (`project/`).
    """
    # earlier modules' task files too: the staff copy holds no solution of any module
    last = max((task.module for task in tasks), default=-1)
    ids = [task.id for task in TASKS if task.module <= last]
    try:
        scan = scan_fences(staff_tree)
    except FenceError as error:
        raise GradeError(f"the staff copy's fences are broken: {error}") from error
    names = {name for task in ids for name in scan.get(task, {})}
    planned = {name for task in ids if task in TASK_INFO for name in TASK_INFO[task].also}
    names |= {name for name in planned if (staff_tree / name).exists()}
    return sorted(name for name in names if _may_submit(name))


def _may_submit(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return (
        bool(parts) and parts[0] not in ("tests", "minifw_course") and "conftest.py" not in parts
    )


def copy_template(staff: Path, tree: Path) -> None:
    """Write a fresh copy of the staff template at `tree` (replacing what is there)."""
    remove_tree(tree)
    tree.mkdir(mode=0o755)
    for entry in sorted(staff.iterdir()):
        if entry.name in TEMPLATE_SKIPPED or IGNORED(str(staff), [entry.name]):
            continue
        if entry.is_dir():
            shutil.copytree(entry, tree / entry.name, ignore=IGNORED)
        elif entry.is_file():
            shutil.copy2(entry, tree / entry.name)
    remove_tree(tree / "tests" / "course")  # the tooling's own tests: never graded


def lay_in(submission: Path, tree: Path, names: Sequence[str]) -> list[str]:
    """Copy the submission's `names` over the template; return the files it lacks."""
    missing = []
    for name in names:
        if name.endswith("/"):
            _lay_in_folder(submission, tree, name.rstrip("/"))
        elif not _copy_submitted(submission, tree, name) and (tree / name).is_file():
            missing.append(name)
    return missing


def _lay_in_folder(submission: Path, tree: Path, folder: str) -> None:
    base = regular(submission, folder, directory=True)
    if base is None:
        return
    names = [f"{folder}/{name}" for name, kind in walk(base, 10 * FOLDER_LIMIT) if kind == "file"]
    left = FOLDER_BYTES
    for name in names[:FOLDER_LIMIT]:
        if _may_submit(name) and left > 0:
            left -= _copy_submitted(submission, tree, name, left)


def _copy_submitted(submission: Path, tree: Path, name: str, most: int = FILE_LIMIT) -> int:
    """Copy one submitted file; return its size (at least 1), or 0 when it was not copied.

    Only a regular file reached without a symbolic link, of at most FILE_LIMIT and `most`
    bytes, is copied.
    """
    source = regular(submission, name)
    read = read_bounded(source, min(FILE_LIMIT, most)) if source is not None else None
    if read is None:
        return 0
    data, status = read
    target = tree / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():
        return 0
    target.unlink(missing_ok=True)
    target.write_bytes(data)
    # keep the time stamp: Numba's cache index checks it
    os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))
    return max(len(data), 1)


def lock(tree: Path) -> dict[str, str]:
    """Make every file under `tree` read-only; return each file's SHA-256."""
    hashes = snapshot(tree)
    for folder, _dirs, files in os.walk(tree):
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, 0o555 if os.stat(path).st_mode & 0o111 else 0o444)
        os.chmod(folder, 0o555)
    return hashes


def snapshot(tree: Path) -> dict[str, str]:
    """The SHA-256 of every file under `tree`, by path relative to it."""
    hashes = {}
    for folder, _dirs, files in os.walk(tree):
        for name in files:
            path = Path(folder, name)
            digest = hashlib.sha256()
            try:
                with path.open("rb") as stream:
                    while chunk := stream.read(1 << 20):
                        digest.update(chunk)
            except OSError:
                digest.update(b"unreadable")
            hashes[path.relative_to(tree).as_posix()] = digest.hexdigest()
    return hashes


def changed_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Files added, removed or changed between two snapshots."""
    return sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )


@dataclass
class Grading:
    """One grading session: the staff copy, the submission, and where the runs happen."""

    staff: Path
    submission: Path
    work: Path
    user: RunUser
    python: str
    timeout: float

    @property
    def tree(self) -> Path:
        """Where each run's fresh copy of the template lives (the same path every time)."""
        return self.work / "tree"

    def pytest(self, args: Sequence[str]) -> PytestRun:
        """Run pytest in the tree, as the run's user, with the recorder and GRADE_ENV."""
        return run_pytest(
            self.tree, args, self.timeout, self.python, self.user, self.work, GRADE_ENV
        )

    def plan(self, tasks: Sequence[Task]) -> dict[str, TaskPlan]:
        """Each task's tests, from the staff copy alone (no submission file laid in yet)."""
        copy_template(self.staff, self.tree)
        lock(self.tree)
        plans = {task.id: TaskPlan(task_test_files(self.tree, task)) for task in tasks}
        wanted = [task for task in tasks if plans[task.id].files != []]
        if not wanted:
            return plans
        files = sorted({name for t in wanted for name in plans[t.id].files or []})
        expression = " or ".join(task.marker for task in wanted)
        run = self.pytest(["--setup-only", "-q", "-m", expression,
                           "--continue-on-collection-errors", *files])  # fmt: skip
        for task in wanted:
            _fill_plan(plans[task.id], task, run)
        return plans

    def grade_task(self, task: Task, plan: TaskPlan, paths: Sequence[str]) -> TaskResult:
        """Lay the submission's task files into a fresh template and score the task."""
        if plan.problem:
            return zero(task, "grader error: the staff copy's tests of this task do not "
                        f"run:\n{plan.problem}", "staff error")  # fmt: skip
        if not plan.tests:
            where = "no test file of the staff copy marks" if plan.files == [] else "no tests"
            return zero(task, f"{where} {task.marker}.", "no tests")
        copy_template(self.staff, self.tree)
        missing = lay_in(self.submission, self.tree, paths)
        before = lock(self.tree)
        args = ["-m", task.marker, "-q", "--continue-on-collection-errors", *(plan.files or [])]
        run = self.pytest(args)
        changed = changed_files(before, snapshot(self.tree))
        run.tampered += tampering(plan, run)
        result = score_run(task, plan, run, changed)
        if missing:
            result.output += "\n\nNot in the submission (the starter code was graded): " + (
                ", ".join(missing)
            )
        return result


def _fill_plan(plan: TaskPlan, task: Task, run: PytestRun) -> None:
    broken = [e for e in run.collect_errors if plan.files is None or e["nodeid"] in plan.files]
    if not run.finished or broken or run.tampered:
        why = run.describe_exit() or "; ".join(run.tampered)
        plan.problem = "\n".join([why, *_collect_errors(broken)]).strip() or run.output[-3000:]
        return
    plan.hooks = set(run.hooks)
    for nodeid, event in run.collected.items():
        if task.marker not in event["markers"]:
            continue
        plan.codes[nodeid] = str(event.get("code"))
        result = run.results.get(nodeid, {})
        if result.get("outcome") == "skipped":
            plan.skipped[nodeid] = result.get("why", "")
        else:
            plan.tests.append(nodeid)


def tampering(plan: TaskPlan, run: PytestRun) -> list[str]:
    """What a task's run held that the staff's run did not: changed test code, new hooks.

    The staff's run is the plan's, in a process of its own before any submission code ran.
    """
    found = [f"the code of {nodeid} is not the staff copy's"
             for nodeid, event in run.collected.items()
             if nodeid in plan.codes and event.get("code") != plan.codes[nodeid]]  # fmt: skip
    for hook in sorted(run.hooks - plan.hooks):
        name, plugin, function, *_ = (hook.split(" ") + ["?"] * 3)[:3]
        found.append(f"pytest holds a hook that is not the staff's: {name} ({function}, "
                     f"plugin {plugin})")  # fmt: skip
    return found


def score_run(
    task: Task, plan: TaskPlan, run: PytestRun, changed: Sequence[str] = ()
) -> TaskResult:
    """Score `task` from a pytest child's events against the staff's list of its tests.

    Only tests that reported "passed" score; every other outcome, and a missing one,
    counts as a failure. A run that was cut short, changed a file of its copy, or
    tampered with the recorder or pytest's internals scores zero.
    """
    if not plan.tests:
        return zero(task, f"the staff copy has no tests marked {task.marker}.", "no tests")
    if changed:
        shown = ", ".join(changed[:10]) + (" ..." if len(changed) > 10 else "")
        why = f"the run is void: the test process changed {shown} in the grader's read-only copy"
        return zero(task, why + " (only task files may be submitted).", "void")
    if run.tampered:
        shown = "; ".join(run.tampered[:10]) + (" ..." if len(run.tampered) > 10 else "")
        why = f"tampered: {shown}. The run is void: the test process changed what the "
        result = zero(task, why + "tests rely on, or the grader's record of them.", "tampered")
        result.tampered = list(run.tampered)
        return result
    exit_reason = run.describe_exit()
    if exit_reason:
        before = [n for n in plan.tests if run.results.get(n, {}).get("outcome") == "passed"]
        why = exit_reason + "."
        if before:
            why += f" ({len(before)} tests had passed before that.)"
        note = "timed out" if run.timed_out else "crashed"
        return zero(task, why + "\n\nLast output:\n" + run.output[-3000:], note)
    passed = [n for n in plan.tests if run.results.get(n, {}).get("outcome") == "passed"]
    counted = len(plan.tests)
    lines = [f"Task {task.id}: {len(passed)}/{counted} tests passed"]
    if plan.skipped:
        lines[0] += f" ({len(plan.skipped)} tests skipped on the staff copy here: not counted)"
    lines += _failures(plan, run) + _collect_errors(run.collect_errors)
    failed = [run.results.get(n, {}) for n in plan.tests]
    first = next((r for r in failed if r.get("outcome") != "passed" and r.get("message")), None)
    if first is not None:
        lines += ["", f"First failure, {first['nodeid']}:", _short(first["message"])]
    score = max_score(task) * len(passed) / counted
    return TaskResult(task, len(passed), counted, score, max_score(task), "\n".join(lines))


_LABELS = {
    "failed": ("FAILED", ""),
    "error": ("ERROR", ""),
    "skipped": ("SKIPPED", " (a skipped test scores 0)"),
    "xfailed": ("XFAILED", " (an expected failure scores 0)"),
    "xpassed": ("XPASSED", " (a test marked xfail scores 0)"),
}


def _failures(plan: TaskPlan, run: PytestRun) -> list[str]:
    """One line per test that did not pass: what happened and the first line of why."""
    lines = [""]
    for nodeid in plan.tests:
        result = run.results.get(nodeid)
        if result is None:
            lines.append(f"NO RESULT {nodeid}: the test never reported (see COULD NOT COLLECT)")
        elif result.get("outcome") != "passed":
            label, tail = _LABELS.get(str(result.get("outcome")), ("FAILED", ""))
            lines.append(f"{label} {nodeid}: {result.get('why') or 'no reason given'}{tail}")
    return lines if len(lines) > 1 else []


def _collect_errors(errors: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for error in errors:
        lines += ["", f"COULD NOT COLLECT {error['nodeid'] or 'tests'}:", _short(error["message"])]
    return lines


def _short(message: str) -> str:
    """The end of a traceback: where pytest puts the assertion and the exception."""
    lines = message.rstrip().splitlines()
    return "\n".join(lines[-_MESSAGE_LINES:])


def _cap(text: str) -> str:
    return text if len(text) <= OUTPUT_LIMIT else text[: OUTPUT_LIMIT - 40] + "\n... (cut)"


def table(results: Sequence[TaskResult]) -> str:
    """The score table printed at the end of grading, with each task's wall time."""
    rows = [("task", "title", "passed/total", "score", "time", "")]
    for r in results:
        score = f"{r.score:.2f}/{r.max_score:.2f}"
        rows.append((r.task.id, r.task.title[:38], f"{r.passed}/{r.counted}", score,
                     f"{r.seconds:.1f} s", r.note))  # fmt: skip
    total = sum(r.score for r in results)
    possible = sum(r.max_score for r in results)
    seconds = sum(r.seconds for r in results)
    rows.append(("total", "", "", f"{total:.2f}/{possible:.2f}", f"{seconds:.1f} s", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [row[i].rjust(widths[i]) for i in (2, 3, 4)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    return "\n".join(lines)


def results_json(
    results: Sequence[TaskResult],
    pending: Iterable[Task],
    elapsed: float,
    visibility: str,
    notes: str = "",
    ignored: Sequence[str] = (),
) -> dict[str, Any]:
    """Gradescope's autograder results: the total, one entry per task, and the table.

    `extra_data` (shown to staff, not students) lists the submission's `ignored` files
    and, per task, why a run was void.
    """
    done = list(results)
    waiting = [zero(t, "not graded: the grader stopped before this task ran.", "not run")
               for t in pending]  # fmt: skip
    everything = done + waiting
    return {
        "score": round(sum(r.score for r in everything), 4),
        "execution_time": int(round(elapsed)),
        "output": table(everything) + (f"\n\n{notes}" if notes else ""),
        "visibility": visibility,
        "stdout_visibility": visibility,
        "tests": [r.gradescope(visibility) for r in everything],
        "extra_data": {
            "ignored_files": list(ignored),
            "tampered": {r.task.id: r.tampered for r in done if r.tampered},
        },
    }


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write `path` so that readers see the old file or the new one, never half."""
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
    staff: Path | None = None,
    user: str | None = None,
) -> list[TaskResult]:
    """Grade `tasks` of the submission `repo` against the staff copy `staff`.

    `staff` defaults to the checkout this grader runs from; `user` is who the tests run
    as (see sandbox.choose_user: by default a fresh user id when root). results.json is
    rewritten after every task, once every process of that task's run is dead. Raises
    GradeError when the staff copy or the test process's user cannot work.
    """
    submission, staff_root = repo.resolve(), (staff or default_staff()).resolve()
    if not (staff_root / "tests").is_dir():
        raise GradeError(f"the staff copy {staff_root} has no tests/ folder (pass --staff)")
    started = time.monotonic()
    results: list[TaskResult] = []
    ignored: list[str] = []

    def save() -> None:
        if json_path is not None:
            notes = "Ignored (only task files are graded): " + ", ".join(ignored[:20])
            data = results_json(results, tasks[len(results) :], time.monotonic() - started,
                                visibility, notes if ignored else "", ignored)  # fmt: skip
            write_json_atomic(json_path, data)

    with workspace() as work:
        try:
            run_user, fallback = usable_user(user, python, work, work / "scratch")
        except SandboxError as error:
            raise GradeError(str(error)) from error
        if fallback:
            log(fallback)
        grading = Grading(staff_root, submission, work, run_user, python, timeout)
        log(f"grading {submission} against {staff_root}, tests run as {run_user.describe()}")
        save()
        plans = grading.plan(tasks)
        paths = submission_paths(grading.tree, tasks)
        ignored += _ignored(submission, staff_root, paths)
        for task in tasks:
            results.append(_grade_one(grading, task, plans[task.id], paths, log))
            save()
    log(table(results))
    return results


def _ignored(submission: Path, staff: Path, paths: Sequence[str]) -> list[str]:
    """`ignored_files`, or one line saying why the list could not be made."""
    try:
        return ignored_files(submission, staff, paths)
    except Exception as error:  # noqa: BLE001 - a list for staff must not stop the grading
        return [f"(the ignored files could not be listed: {error!r})"]


def _grade_one(
    grading: Grading, task: Task, plan: TaskPlan, paths: Sequence[str], log: Callable[[str], None]
) -> TaskResult:
    """Grade one task; whatever goes wrong in the grader costs this task only."""
    log(f"grading task {task.id} ({task.title}) ...")
    begun = time.monotonic()
    try:
        result = grading.grade_task(task, plan, paths)
    except Exception as error:  # noqa: BLE001 - one task's trouble must not lose the rest
        result = zero(task, f"the grader failed on this task: {error!r}", "grader error")
    result.seconds = time.monotonic() - begun
    log(f"  task {task.id}: {result.score:.2f}/{result.max_score:.2f} in {result.seconds:.1f} s")
    return result


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
