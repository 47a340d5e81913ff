"""make-assignment on the mini repository: stubs, removed tests, README, and test runs."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from minifw_course.assignment import AssignmentError, assignment_module, make_assignment
from minifw_course.fences import FenceError

pytestmark = pytest.mark.staff


def test_module_1_stubs_module_1_and_later_and_keeps_module_0(make_mini_repo, tmp_path):
    out = tmp_path / "student"
    report = make_assignment(make_mini_repo(), out, 1)
    stubs = {name: [(s.task, s.qualname) for s in found] for name, found in report.stubs.items()}
    assert stubs == {
        "minifw/ops.py": [("1.1", "square_back")],
        "minifw/strided.py": [("2.1", "Strided.strides")],
    }
    ops = (out / "minifw/ops.py").read_text()
    assert "return x * y" in ops and "@functools.lru_cache(maxsize=None)" in ops
    assert "return 2.0 * x * d" not in ops and "the hint below" not in ops
    assert "raise NotImplementedError(" in ops
    assert '"Task 1.1: implement square_back: Return d times the derivative of x * x."' in ops
    assert "# BEGIN TASK 1.1" in ops and "# END TASK 1.1" in ops
    assert "return x + 1.0" in ops  # unfenced code stays
    strided = (out / "minifw/strided.py").read_text()
    assert 'kind = "row-major"' in strided and "step *= size" not in strided
    for path in out.rglob("*.py"):
        ast.parse(path.read_text(), str(path))


def test_module_1_removes_later_tests_and_writes_readme_docs_and_record(make_mini_repo, tmp_path):
    out = tmp_path / "student"
    report = make_assignment(make_mini_repo(), out, 1)
    assert not (out / "tests/test_strided.py").exists()
    assert report.removed_files == ["tests/test_strided.py"]
    assert report.removed_tests["tests/test_ops.py"] == ["test_strides_in_a_mixed_file"]
    tests = (out / "tests/test_ops.py").read_text()
    assert "test_strides_in_a_mixed_file" not in tests and "def test_square_back" in tests
    readme = (out / "README.md").read_text()
    assert readme.startswith("# minifw, module 1: Autodiff")
    for task in ("1.1", "1.2", "1.3", "1.4", "1.5"):
        assert f"Task {task}:" in readme and f"pytest -m task{task.replace('.', '_')}" in readme
    assert "`square_back`" in readme and "`minifw/ops.py`" in readme
    assert (out / "docs/module1.md").read_text().startswith("# Module 1: Autodiff")
    assert not (out / "docs/module2.md").exists()
    assert json.loads((out / "minifw/course/assignment.json").read_text())["module"] == 1
    assert assignment_module(out) == 1
    assert (out / "project/train.py").exists() and (out / "setup.cfg").exists()


def test_generated_repo_runs_earlier_tests_green_and_current_ones_red(
    make_mini_repo, tmp_path, tests_in
):
    out = tmp_path / "student"
    make_assignment(make_mini_repo(), out, 1)
    earlier = tests_in(out, "-q", "-m", "task0_1")
    assert earlier.returncode == 0, earlier.stdout + earlier.stderr
    assert "4 passed" in earlier.stdout
    current = tests_in(out, "-q", "-m", "task1_1")
    assert current.returncode == 1
    assert "2 failed" in current.stdout
    assert "NotImplementedError: Task 1.1: implement square_back" in current.stdout
    everything = tests_in(out, "-q")
    assert "2 failed, 4 passed" in everything.stdout, everything.stdout


def test_module_0_stubs_everything_and_keeps_only_module_0_tests(
    make_mini_repo, tmp_path, tests_in
):
    out = tmp_path / "student0"
    report = make_assignment(make_mini_repo(), out, 0)
    assert sorted(s.task for found in report.stubs.values() for s in found) == [
        "0.1",
        "1.1",
        "2.1",
    ]
    assert report.removed_tests["tests/test_ops.py"] == [
        "test_square_back",
        "test_square_back_of_a_negative",
        "test_strides_in_a_mixed_file",
    ]
    run = tests_in(out, "-q")
    assert run.returncode == 1 and "4 failed" in run.stdout
    assert "NotImplementedError: Task 0.1: implement mul: Return x * y." in run.stdout


def test_module_2_keeps_module_0_and_1_code(make_mini_repo, tmp_path, tests_in):
    out = tmp_path / "student2"
    report = make_assignment(make_mini_repo(), out, 2)
    assert list(report.stubs) == ["minifw/strided.py"] and not report.removed_tests
    run = tests_in(out, "-q", "-m", "task0_1 or task1_1")
    assert run.returncode == 0 and "6 passed" in run.stdout
    run = tests_in(out, "-q", "-m", "task2_1")
    assert "2 failed, 1 passed" in run.stdout  # test_kind reads a class attribute: kept
    assert "NotImplementedError: Task 2.1" in run.stdout


def test_tooling_tests_and_caches_are_not_copied(make_mini_repo, tmp_path):
    repo = make_mini_repo(
        {
            "tests/course/test_tooling.py": "def test_x():\n    pass\n",
            "minifw/__pycache__/ops.cpython-311.pyc": "junk",
            "minifw/course/assignment.json": '{"module": 4}',
        }
    )
    out = tmp_path / "student"
    make_assignment(repo, out, 1)
    assert not (out / "tests/course").exists()
    assert not (out / "minifw/__pycache__").exists()
    assert assignment_module(out) == 1


def test_output_folder_rules(make_mini_repo, tmp_path):
    repo = make_mini_repo()
    out = tmp_path / "busy"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(AssignmentError, match="not empty"):
        make_assignment(repo, out, 1)
    assert (out / "keep.txt").exists()
    make_assignment(repo, out, 1, force=True)
    assert not (out / "keep.txt").exists() and (out / "README.md").exists()
    with pytest.raises(AssignmentError, match="overlaps"):
        make_assignment(repo, repo / "minifw" / "out", 1)
    with pytest.raises(AssignmentError, match="module 7"):
        make_assignment(repo, tmp_path / "x", 7)


def test_a_bad_fence_stops_before_anything_is_written(make_mini_repo, tmp_path):
    repo = make_mini_repo({"minifw/bad.py": "# BEGIN TASK 0.1\ndef f():\n    pass\n"})
    out = tmp_path / "student"
    with pytest.raises(FenceError, match="minifw/bad.py:1: BEGIN TASK 0.1 is never closed"):
        make_assignment(repo, out, 1)
    assert not out.exists()


def test_command_line(make_mini_repo, tmp_path, course_cli):
    repo = make_mini_repo()
    out = tmp_path / "cli-out"
    done = course_cli(
        "make-assignment", "--module", "1", str(out), "--repo", str(repo), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (
        "1 functions stubbed" not in done.stdout
        and "2 functions stubbed in 2 files" in done.stdout
    )
    again = course_cli(
        "make-assignment", "--module", "1", str(out), "--repo", str(repo), cwd=tmp_path
    )
    assert again.returncode == 2 and "not empty" in again.stderr


def test_generated_files_parse(make_mini_repo, tmp_path: Path):
    out = tmp_path / "student"
    make_assignment(make_mini_repo(), out, 0)
    parsed = [ast.parse(p.read_text()) for p in out.rglob("*.py")]
    assert len(parsed) >= 6
