"""The grader on the mini repository: full marks, broken submissions, results.json."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from minifw_course.assignment import make_assignment
from minifw_course.grade import (
    grade,
    parse_tasks,
    results_json,
    score_run,
    task_test_files,
    write_json_atomic,
)
from minifw_course.markers import PytestRun

pytestmark = pytest.mark.staff

THREE = parse_tasks("0.1,1.1,2.1")
OPS = "minifw/ops.py"


@pytest.fixture
def ops_with(make_mini_repo, mini_files):
    """Build the mini repository with one edit to minifw/ops.py."""

    def make(old: str, new: str) -> Path:
        assert old in mini_files[OPS]
        return make_mini_repo({OPS: mini_files[OPS].replace(old, new)})

    return make


def graded(repo: Path, tmp_path: Path, timeout: float = 60) -> tuple[dict[str, Any], list]:
    path = tmp_path / "out" / "results.json"
    results = grade(repo, THREE, timeout=timeout, json_path=path, log=lambda _: None)
    data = json.loads(path.read_text())
    check_gradescope_schema(data, len(THREE))
    return data, results


def check_gradescope_schema(data: dict[str, Any], count: int) -> None:
    assert set(data) >= {"score", "tests", "execution_time", "output"}
    assert len(data["tests"]) == count
    total = 0.0
    for entry in data["tests"]:
        assert set(entry) >= {"name", "score", "max_score", "output", "visibility"}
        assert 0 <= entry["score"] <= entry["max_score"]
        assert isinstance(entry["output"], str) and entry["output"]
        assert entry["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        total += entry["score"]
    assert data["score"] == pytest.approx(total)


def scores(data: dict[str, Any]) -> dict[str, float]:
    return {entry["number"]: entry["score"] for entry in data["tests"]}


def output_of(data: dict[str, Any], task: str) -> str:
    return next(entry["output"] for entry in data["tests"] if entry["number"] == task)


def test_the_reference_gets_full_marks(make_mini_repo, tmp_path):
    data, results = graded(make_mini_repo(), tmp_path)
    assert scores(data) == {"0.1": 10.0, "1.1": 10.0, "2.1": 10.0}
    assert data["score"] == 30.0
    assert [(r.passed, r.counted) for r in results] == [(4, 4), (2, 2), (3, 3)]
    assert all(entry["status"] == "passed" for entry in data["tests"])


def test_a_wrong_derivative_zeroes_its_task_only(ops_with, tmp_path):
    repo = ops_with("return 2.0 * x * d", "return d * x")
    data, _ = graded(repo, tmp_path)
    assert scores(data) == {"0.1": 10.0, "1.1": 0.0, "2.1": 10.0}
    out = output_of(data, "1.1")
    assert "0/2 tests passed" in out
    assert "FAILED tests/test_ops.py::test_square_back" in out and "assert" in out


def test_an_infinite_loop_is_killed_and_zeroes_its_task(ops_with, tmp_path):
    loop = "while x == x:\n                pass\n            return x * y"
    repo = ops_with("return x * y", loop)
    data, results = graded(repo, tmp_path, timeout=8)
    assert scores(data) == {"0.1": 0.0, "1.1": 10.0, "2.1": 10.0}
    assert "timed out after" in output_of(data, "0.1")
    assert results[0].note == "timed out"


def test_os_exit_at_import_zeroes_every_task_and_the_file_is_complete(make_mini_repo, tmp_path):
    repo = make_mini_repo({"minifw/__init__.py": "import os\n\nos._exit(1)\n"})
    data, _ = graded(repo, tmp_path)
    assert scores(data) == {"0.1": 0.0, "1.1": 0.0, "2.1": 0.0}
    for task in ("0.1", "1.1", "2.1"):
        assert "exited with code 1 before pytest finished" in output_of(data, task)


def test_a_segfault_zeroes_its_task_only(ops_with, tmp_path):
    repo = ops_with(
        "return 2.0 * x * d", "import ctypes\n\n            return ctypes.string_at(0)"
    )
    data, _ = graded(repo, tmp_path)
    assert scores(data) == {"0.1": 10.0, "1.1": 0.0, "2.1": 10.0}
    assert "killed by SIGSEGV" in output_of(data, "1.1")


def test_an_import_error_costs_the_tasks_of_the_file_that_cannot_load(
    make_mini_repo, mini_files, tmp_path
):
    broken = mini_files["minifw/strided.py"] + '\n        raise ImportError("broken on purpose")\n'
    data, results = graded(make_mini_repo({"minifw/strided.py": broken}), tmp_path)
    assert scores(data) == {"0.1": 10.0, "1.1": 10.0, "2.1": 0.0}
    assert "COULD NOT COLLECT tests/test_strided.py" in output_of(data, "2.1")
    assert "broken on purpose" in output_of(data, "2.1")
    assert "test_strided" not in output_of(data, "0.1")  # that file is not even loaded
    assert (results[2].passed, results[2].counted) == (0, 2)  # one error, one failed test


def test_a_task_without_tests_scores_zero_with_a_reason(make_mini_repo, tmp_path):
    path = tmp_path / "r.json"
    results = grade(make_mini_repo(), parse_tasks("0.3"), 60, path, log=lambda _: None)
    assert results[0].score == 0 and results[0].note == "no tests"
    assert (
        "no test file of this repository marks task0_3"
        in json.loads(path.read_text())["tests"][0]["output"]
    )


def test_command_line_prints_a_table_and_writes_results(ops_with, tmp_path, course_cli):
    repo = ops_with("return 2.0 * x * d", "return d * x")
    out = tmp_path / "results.json"
    done = course_cli(
        "grade", "--repo", str(repo), "--tasks", "0.1,1.1", "--json", str(out),
        "--timeout", "60", "--visibility", "after_published", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.search(r"^0\.1\s+operators\s+4/4\s+10\.00/10\.00$", done.stdout, re.M), done.stdout
    assert re.search(r"^1\.1\s+central difference\s+0/2\s+0\.00/10\.00$", done.stdout, re.M)
    assert re.search(r"^total\s+10\.00/20\.00$", done.stdout, re.M)
    data = json.loads(out.read_text())
    check_gradescope_schema(data, 2)
    assert {entry["visibility"] for entry in data["tests"]} == {"after_published"}
    assert not list(tmp_path.glob(".results.json.*"))  # no temp file left behind


def test_command_line_rejects_unknown_tasks(tmp_path, course_cli):
    done = course_cli("grade", "--tasks", "0.1,9.9", "--repo", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and "unknown task '9.9'" in done.stderr


def test_a_student_repo_is_graded_on_its_module_by_default(make_mini_repo, tmp_path, course_cli):
    student = tmp_path / "student"
    make_assignment(make_mini_repo(), student, 1)
    out = tmp_path / "results.json"
    done = course_cli("grade", "--repo", str(student), "--json", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert [entry["number"] for entry in data["tests"]] == ["1.1", "1.2", "1.3", "1.4", "1.5"]
    assert data["score"] == 0
    assert "NotImplementedError: Task 1.1: implement square_back" in output_of(data, "1.1")


def fake_run(outcomes: dict[str, str], errors: int = 0, finished: bool = True) -> PytestRun:
    run = PytestRun(finished=finished, returncode=0 if finished else 1)
    for nodeid, outcome in outcomes.items():
        run.collected[nodeid] = {"nodeid": nodeid, "markers": ["task2_2"]}
        run.results[nodeid] = {"outcome": outcome, "message": f"why {nodeid}"}
    run.collect_errors = [{"nodeid": f"tests/e{i}.py", "message": "boom"} for i in range(errors)]
    return run


def test_skipped_tests_are_not_counted_and_errors_are():
    (task,) = parse_tasks("2.2")
    result = score_run(task, fake_run({"a": "passed", "b": "skipped", "c": "failed"}, errors=1))
    assert (result.passed, result.counted) == (1, 3)
    assert result.score == pytest.approx(10 / 3)
    assert "(1 skipped, not counted)" in result.output and "why b" in result.output
    assert "FAILED c:\nwhy c" in result.output and "COULD NOT COLLECT tests/e0.py" in result.output
    everything_skipped = score_run(task, fake_run({"a": "skipped"}))
    assert everything_skipped.score == 0 and everything_skipped.note == "all skipped"


def test_a_run_cut_short_scores_zero_even_after_passes():
    (task,) = parse_tasks("2.2")
    result = score_run(task, fake_run({"a": "passed"}, finished=False))
    assert result.score == 0 and result.note == "crashed"
    assert "exited with code 1" in result.output and "1 tests had passed before" in result.output


def test_results_list_pending_tasks_as_not_run():
    tasks = parse_tasks("0.1,1.1")
    data = results_json([], tasks, 3.4, "hidden")
    assert data["score"] == 0 and data["execution_time"] == 3
    assert [t["output"] for t in data["tests"]] == [
        "Task 0.1: 0 points: not graded: the grader stopped before this task ran.",
        "Task 1.1: 0 points: not graded: the grader stopped before this task ran.",
    ]
    assert "not run" in data["output"]


def test_results_are_written_atomically(tmp_path):
    path = tmp_path / "results.json"
    write_json_atomic(path, {"score": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"score": object()})
    assert json.loads(path.read_text()) == {"score": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_only_the_files_that_name_a_task_are_loaded(make_mini_repo):
    repo = make_mini_repo({"tests/test_unmarked.py": "def test_x():\n    pass\n"})
    (t01, t21, t45) = parse_tasks("0.1,2.1,4.5")
    assert task_test_files(repo, t01) == ["tests/test_ops.py", "tests/test_unmarked.py"]
    assert task_test_files(repo, t21) == [
        "tests/test_ops.py",
        "tests/test_strided.py",
        "tests/test_unmarked.py",
    ]
    assert task_test_files(repo, t45) == ["tests/test_unmarked.py"]


def test_parse_tasks():
    assert [t.id for t in parse_tasks("2.1, task2_2 3.1")] == ["2.1", "2.2", "3.1"]
    with pytest.raises(ValueError, match="unknown task '7.7'"):
        parse_tasks("7.7")
    with pytest.raises(ValueError, match="no tasks"):
        parse_tasks(" , ")
