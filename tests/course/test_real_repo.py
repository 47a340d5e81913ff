"""The tooling on this repository as it is: generate modules 1 and 2, grade the reference.

Only a handful of tests per task run here (the first few that are not `slow`), so
these checks stay quick; the synthetic-repository tests cover every rule in detail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minifw_course.assignment import LATER_FILES, LEFT_OUT, make_assignment
from minifw_course.fences import scan_fences
from minifw_course.grade import grade, parse_tasks
from minifw_course.markers import PytestRun, check_markers, collect, run_pytest
from minifw_course.tasks import TASKS

pytestmark = [pytest.mark.staff, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MODULE_OF = {task.marker: task.module for task in TASKS}
PER_TASK = 4


def task_of(event: dict) -> str | None:
    tasks = [m for m in event["markers"] if m in MODULE_OF]
    return tasks[0] if tasks else None


def a_few_tests(run: PytestRun, wanted) -> dict[str, list[str]]:
    """Up to PER_TASK non-slow test ids for each task marker that `wanted` accepts."""
    chosen: dict[str, list[str]] = {}
    for nodeid, event in run.collected.items():
        marker = task_of(event)
        if marker and wanted(MODULE_OF[marker]) and "slow" not in event["all_markers"]:
            picked = chosen.setdefault(marker, [])
            if len(picked) < PER_TASK:
                picked.append(nodeid)
    return chosen


@pytest.fixture(scope="module")
def reference() -> PytestRun:
    run = collect(ROOT)
    assert run.finished, run.output
    return run


@pytest.mark.parametrize("module", [1, 2])
def test_generated_assignment_of_this_repository(module: int, tmp_path: Path) -> None:
    out = tmp_path / f"module{module}"
    # the earlier modules' solutions released, as after a student synced their own work
    report = make_assignment(ROOT, out, module, solutions_through=module - 1)
    dropped = {name for later, names in LATER_FILES.items() if later > module for name in names}
    assert not any((out / name).exists() for name in dropped)

    scan = scan_fences(ROOT)
    expected = {
        (name, function)
        for task, files in scan.items()
        if MODULE_OF["task" + task.replace(".", "_")] >= module
        for name, functions in files.items()
        if name not in dropped
        for function in functions
    }
    stubbed = {(name, stub.qualname) for name, stubs in report.stubs.items() for stub in stubs}
    assert stubbed == expected
    assert (out / "minifw_course/tasks.py").is_file() and (out / "tests/strategies.py").is_file()
    for folder in LEFT_OUT:  # expert kernels: the student repository runs the readable ones
        assert not (out / folder).exists(), f"{folder} was copied"
    for path in sorted((ROOT / "minifw").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if "__pycache__" in name or name in report.stubs or name.startswith(LEFT_OUT):
            continue
        if name in dropped:
            continue
        expected_text = path.read_text("utf-8")
        if name == "minifw/backends.py" and module <= 3:  # SimpleOps by default up to module 3
            expected_text = expected_text.replace('"cpu": "fast"', '"cpu": "simple"')
            assert expected_text != path.read_text("utf-8")
        assert (out / name).read_text("utf-8") == expected_text, f"{name} changed"

    env = dict(os.environ, PYTHONPATH=str(out))
    imported = subprocess.run(
        [sys.executable, "-c", "import minifw"], cwd=out, env=env, capture_output=True, text=True
    )
    assert imported.returncode == 0, imported.stderr

    student = collect(out)
    assert check_markers(student) == []
    later = [
        n for n, e in student.collected.items() if MODULE_OF.get(task_of(e) or "", 0) > module
    ]
    assert later == [], "tests of later modules were kept"

    earlier = a_few_tests(student, lambda m: m < module)
    if earlier:
        ids = [nodeid for ids in earlier.values() for nodeid in ids]
        run = run_pytest(out, ["-q", *ids], timeout=600)
        failing = {n: r["message"] for n, r in run.results.items() if r["outcome"] != "passed"}
        assert run.finished and not failing, failing
    current = a_few_tests(student, lambda m: m == module)
    if current:
        ids = [nodeid for ids in current.values() for nodeid in ids]
        run = run_pytest(out, ["-q", *ids], timeout=600)
        assert run.finished
        outcomes = run.results.items()
        failed = {
            n: r["message"] for n, r in outcomes if r["outcome"] not in ("passed", "skipped")
        }
        skipped = {n: r["message"] for n, r in outcomes if r["outcome"] == "skipped"}
        for nodeid, message in skipped.items():  # compiled backends of a later module
            assert "later course task" in message or "CUDA" in message, (nodeid, message)
        assert failed, "no test of the current module failed"
        for nodeid, message in failed.items():  # the stub's message, maybe re-raised
            assert re.search(r"Task \d+\.\d+: implement ", message), (nodeid, message)
        fenced = {"task" + task.replace(".", "_") for task in scan}
        for marker, nodeids in current.items():
            if marker in fenced:  # a task with stubbed code has red tests
                assert set(nodeids) & set(failed), f"no test of {marker} failed: {nodeids}"


def test_grading_the_reference_gives_full_marks(reference: PytestRun, tmp_path: Path) -> None:
    counts: dict[str, int] = {}
    for event in reference.collected.values():
        marker = task_of(event)
        if marker:
            counts[marker] = counts.get(marker, 0) + 1
    preferred = ["0.1", "1.1", "0.3", "1.4", "2.1", "2.2"]
    present = [t for t in preferred if "task" + t.replace(".", "_") in counts]
    chosen = sorted(present, key=lambda t: counts["task" + t.replace(".", "_")])[:2]
    assert chosen, f"none of the tasks {preferred} has tests in this repository yet"
    tasks = parse_tasks(",".join(chosen))
    results = grade(ROOT, tasks, 600, tmp_path / "r.json", log=print, staff=ROOT, user="same")
    for result in results:
        assert result.counted > 0 and result.score == result.max_score, result.output
