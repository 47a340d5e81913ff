"""make-assignment on the mini repository: stubs, removed tests, README, and test runs."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minifw_course.assignment import (
    LEFT_OUT,
    AssignmentError,
    assignment_module,
    make_assignment,
)
from minifw_course.docs import BLOCK_BEGIN, BLOCK_END
from minifw_course.fences import FenceError, scan_fences

pytestmark = pytest.mark.staff


def test_module_1_stubs_every_task_of_every_module(make_mini_repo, tmp_path):
    out = tmp_path / "student"
    report = make_assignment(make_mini_repo(), out, 1)
    stubs = {name: [(s.task, s.qualname) for s in found] for name, found in report.stubs.items()}
    assert stubs == {
        "minifw/ops.py": [("0.1", "mul"), ("1.1", "square_back")],
        "minifw/strided.py": [("2.1", "Strided.strides")],
    }
    ops = (out / "minifw/ops.py").read_text()
    assert "return x * y" not in ops and "@functools.lru_cache(maxsize=None)" in ops
    assert "return 2.0 * x * d" not in ops and "the hint below" not in ops
    assert "raise NotImplementedError(" in ops
    assert "Task 1.1: implement square_back: Return d times the derivative of x * x." in ops
    assert "Task 0.1: implement mul: Return x * y." in ops
    assert "docs/module1.md)" in ops  # the guide to read, maybe on the next line
    assert "# BEGIN TASK 1.1" in ops and "# END TASK 1.1" in ops
    assert "return x + 1.0" in ops  # unfenced code stays
    strided = (out / "minifw/strided.py").read_text()
    assert 'kind = "row-major"' in strided and "step *= size" not in strided
    record = json.loads((out / "minifw_course/assignment.json").read_text())
    assert record["solutions_through"] is None
    for path in out.rglob("*.py"):
        ast.parse(path.read_text(), str(path))


def test_staff_may_release_earlier_solutions_but_never_the_modules_own(make_mini_repo, tmp_path):
    repo = make_mini_repo()
    report = make_assignment(repo, tmp_path / "student", 1, solutions_through=0)
    assert sorted(s.task for found in report.stubs.values() for s in found) == ["1.1", "2.1"]
    assert "return x * y" in (tmp_path / "student/minifw/ops.py").read_text()
    record = json.loads((tmp_path / "student/minifw_course/assignment.json").read_text())
    assert record["solutions_through"] == 0
    with pytest.raises(AssignmentError, match="would give away module 1's own solutions"):
        make_assignment(repo, tmp_path / "other", 1, solutions_through=1)
    assert not (tmp_path / "other").exists()


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
    guide = (out / "docs/module1.md").read_text()
    assert guide.startswith("# Module 1: Autodiff") and BLOCK_BEGIN in guide
    assert not (out / "docs/module2.md").exists()
    assert json.loads((out / "minifw_course/assignment.json").read_text())["module"] == 1
    assert assignment_module(out) == 1
    assert (out / "project/train.py").exists() and (out / "setup.cfg").exists()


def test_generated_repo_runs_earlier_tests_green_and_current_ones_red(
    make_mini_repo, tmp_path, tests_in
):
    out = tmp_path / "student"
    make_assignment(make_mini_repo(), out, 1, solutions_through=0)
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


def test_module_2_with_solutions_through_1_keeps_module_0_and_1_code(
    make_mini_repo, tmp_path, tests_in
):
    out = tmp_path / "student2"
    report = make_assignment(make_mini_repo(), out, 2, solutions_through=1)
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
            "minifw_course/assignment.json": '{"module": 4}',
        }
    )
    out = tmp_path / "student"
    make_assignment(repo, out, 1)
    assert not (out / "tests/course").exists()
    assert not (out / "minifw/__pycache__").exists()
    assert assignment_module(out) == 1


def test_tooling_is_copied_and_expert_fast_paths_are_left_out(make_mini_repo, tmp_path):
    repo = make_mini_repo(
        {
            "minifw_course/__init__.py": '"""Tooling."""\n',
            "minifw_course/tasks.py": "COURSE_TASKS = ()\n",
            "minifw/fast_paths/__init__.py": '"""Expert kernels."""\n',
            "minifw/fast_paths/matmul.py": "def matmul():\n    pass\n",
            "tests/fast_paths/test_matmul.py": "def test_x():\n    pass\n",
            "tests/strategies.py": "SHAPES = ()\n",
        }
    )
    out = tmp_path / "student"
    make_assignment(repo, out, 3)
    assert (out / "minifw_course/tasks.py").read_text() == "COURSE_TASKS = ()\n"
    assert (out / "tests/strategies.py").is_file()
    assert not (out / "minifw/fast_paths").exists()
    assert not (out / "tests/fast_paths").exists()
    assert (out / "minifw/ops.py").is_file()


def test_a_fence_in_the_left_out_fast_paths_is_refused(make_mini_repo, tmp_path):
    fenced = "# BEGIN TASK 3.2\ndef matmul():\n    pass\n# END TASK 3.2\n"
    repo = make_mini_repo({"minifw/fast_paths/matmul.py": fenced})
    out = tmp_path / "student"
    with pytest.raises(AssignmentError, match="minifw/fast_paths/matmul.py fences task 3.2"):
        make_assignment(repo, out, 3)
    assert not out.exists()


def test_no_task_of_this_repository_is_fenced_in_code_students_never_get():
    root = Path(__file__).resolve().parents[2]
    fenced = [
        (task, name)
        for task, files in scan_fences(root).items()
        for name in files
        if name.startswith(tuple(folder + "/" for folder in LEFT_OUT))
    ]
    assert fenced == [], "expert fast paths are never a course task"


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
    assert "3 functions stubbed in 2 files" in done.stdout
    again = course_cli(
        "make-assignment", "--module", "1", str(out), "--repo", str(repo), cwd=tmp_path
    )
    assert again.returncode == 2 and "not empty" in again.stderr
    released = course_cli("make-assignment", "--module", "1", str(out), "--repo", str(repo),
                          "--force", "--with-solutions-through", "0", cwd=tmp_path)  # fmt: skip
    assert released.returncode == 0 and "2 functions stubbed in 2 files" in released.stdout
    refused = course_cli("make-assignment", "--module", "1", str(out), "--repo", str(repo),
                         "--force", "--with-solutions-through", "1", cwd=tmp_path)  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "would give away module 1's own solutions" in refused.stderr


def test_generated_files_parse(make_mini_repo, tmp_path: Path):
    out = tmp_path / "student"
    make_assignment(make_mini_repo(), out, 0)
    parsed = [ast.parse(p.read_text()) for p in out.rglob("*.py")]
    assert len(parsed) >= 6


@pytest.mark.parametrize("command", ["minifw.course", "minifw_course"])
def test_both_module_commands_run_the_tooling(command: str, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", command, "make-assignment", "--help"],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(root)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "--module MODULE" in done.stdout and "python -m minifw.course" in done.stdout


EXTRA_AND_STAFF = {
    "tests/test_given.py": """
        import pytest

        from minifw import ops


        @pytest.mark.task0_1
        def test_graded():
            assert ops.mul(1.0, 2.0) == 2.0


        @pytest.mark.extra
        def test_given_code():
            assert ops.untouched(1.0) == 2.0


        @pytest.mark.extra
        class TestGivenClass:
            def test_a(self):
                assert True
    """,
    "tests/test_all_extra.py": """
        import pytest

        pytestmark = pytest.mark.extra


        def test_x():
            assert True
    """,
    "tests/test_markers.py": """
        import pytest

        pytestmark = pytest.mark.staff


        def test_tooling():
            assert True
    """,
}


@pytest.mark.parametrize("module", [0, 2])
def test_extra_and_staff_tests_never_reach_students(make_mini_repo, tmp_path, module):
    out = tmp_path / "student"
    report = make_assignment(make_mini_repo(EXTRA_AND_STAFF), out, module)
    assert not (out / "tests/test_all_extra.py").exists()
    assert not (out / "tests/test_markers.py").exists()
    assert {"tests/test_all_extra.py", "tests/test_markers.py"} <= set(report.removed_files)
    given = (out / "tests/test_given.py").read_text()
    assert "def test_graded" in given
    assert "test_given_code" not in given and "TestGivenClass" not in given
    assert report.removed_tests["tests/test_given.py"] == ["test_given_code", "TestGivenClass"]
    for path in (out / "tests").rglob("*.py"):
        text = path.read_text()
        assert "mark.extra" not in text and "mark.staff" not in text, path


BACKENDS = '''
    """Backends."""

    _defaults: dict[str, str] = {"cpu": "fast", "cuda": "cuda"}
'''


@pytest.mark.parametrize(("module", "default"), [(0, "simple"), (3, "simple"), (4, "fast")])
def test_simple_ops_is_the_cpu_default_up_to_module_3(make_mini_repo, tmp_path, module, default):
    out = tmp_path / "student"
    make_assignment(make_mini_repo({"minifw/backends.py": BACKENDS}), out, module)
    assert f'"cpu": "{default}"' in (out / "minifw/backends.py").read_text()


def test_the_app_config_is_copied(make_mini_repo, tmp_path):
    config = '[server]\naddress = "localhost"\n'
    out = tmp_path / "student"
    make_assignment(make_mini_repo({".streamlit/config.toml": config}), out, 0)
    assert (out / ".streamlit/config.toml").read_text() == config
    assert ".streamlit/config.toml" in (out / "README.md").read_text()


def test_readme_says_what_to_do_first(make_mini_repo, tmp_path):
    out = tmp_path / "student"
    make_assignment(make_mini_repo(), out, 2)
    readme = (out / "README.md").read_text()
    start = readme.index("## Start here")
    steps = [readme.index(text, start) for text in (
        'pip install -e ".[test]"', "`pytest -m task2_1`", "docs/module2.md", "# BEGIN TASK x.y"
    )]  # fmt: skip
    assert steps == sorted(steps), "the first steps are out of order"
    assert start < readme.index("## Your tasks")
    assert '`NotImplementedError("Task 2.1: ...")`' in readme


def test_the_guide_keeps_its_prose_and_gets_a_fresh_task_table(make_mini_repo, tmp_path):
    stale = f"{BLOCK_BEGIN}\nan old table\n{BLOCK_END}"
    guide = f"# Module 1: Autodiff\n\nHand-written prose.\n\n{stale}\n\n## Task 1.1\n\nMore.\n"
    out = tmp_path / "student"
    make_assignment(make_mini_repo({"docs/module1.md": guide}), out, 1)
    page = (out / "docs/module1.md").read_text()
    assert "an old table" not in page and "`square_back`" in page and "`minifw/ops.py`" in page
    before, after = page.split(BLOCK_BEGIN)
    assert before == "# Module 1: Autodiff\n\nHand-written prose.\n\n"
    assert after.split(BLOCK_END)[1] == "\n\n## Task 1.1\n\nMore.\n"


def test_a_malformed_guide_block_stops_before_anything_is_written(make_mini_repo, tmp_path):
    repo = make_mini_repo({"docs/module1.md": f"# Module 1\n\n{BLOCK_BEGIN}\nno end\n"})
    out = tmp_path / "student"
    with pytest.raises(AssignmentError, match="docs/module1.md: expected one"):
        make_assignment(repo, out, 1)
    assert not out.exists()
