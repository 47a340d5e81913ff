"""The grader on the mini repository: full marks, broken submissions, results.json.

Each submission is graded against a pristine copy of the mini reference repository as the
staff copy, with the tests run as this user (`user="same"`); test_grader_attacks.py
covers hostile submissions and the privilege drop used when the grader runs as root.
"""

from __future__ import annotations

import hmac
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from minifw_course.assignment import make_assignment
from minifw_course.docs import render_student_readme
from minifw_course.grade import (
    TaskPlan,
    grade,
    parse_tasks,
    results_json,
    score_run,
    submission_paths,
    task_test_files,
    write_json_atomic,
)
from minifw_course.markers import PytestRun, read_events
from minifw_course.submission import read_bounded, walk

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


@pytest.fixture
def graded(make_mini_repo, tmp_path):
    """Grade tasks 0.1, 1.1 and 2.1 of a submission against a pristine mini repository."""

    def run(repo: Path, timeout: float = 60) -> tuple[dict[str, Any], list]:
        path = tmp_path / "out" / "results.json"
        results = grade(repo, THREE, timeout, path, log=lambda _: None, staff=make_mini_repo(),
                        user="same")  # fmt: skip
        data = json.loads(path.read_text())
        check_gradescope_schema(data, len(THREE))
        return data, results

    return run


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


def test_the_reference_gets_full_marks(make_mini_repo, graded):
    data, results = graded(make_mini_repo())
    assert scores(data) == {"0.1": 10.0, "1.1": 10.0, "2.1": 10.0}
    assert data["score"] == 30.0
    assert [(r.passed, r.counted) for r in results] == [(4, 4), (2, 2), (3, 3)]
    assert all(entry["status"] == "passed" for entry in data["tests"])


def test_a_wrong_derivative_zeroes_its_task_only(ops_with, graded):
    repo = ops_with("return 2.0 * x * d", "return d * x")
    data, _ = graded(repo)
    assert scores(data) == {"0.1": 10.0, "1.1": 0.0, "2.1": 10.0}
    out = output_of(data, "1.1")
    assert "0/2 tests passed" in out
    assert "FAILED tests/test_ops.py::test_square_back" in out and "assert" in out


def test_an_infinite_loop_is_killed_and_zeroes_its_task(ops_with, graded):
    loop = "while x == x:\n                pass\n            return x * y"
    repo = ops_with("return x * y", loop)
    data, results = graded(repo, timeout=8)
    assert scores(data) == {"0.1": 0.0, "1.1": 10.0, "2.1": 10.0}
    assert "timed out after" in output_of(data, "0.1")
    assert results[0].note == "timed out"


def test_os_exit_at_import_zeroes_every_task_and_the_file_is_complete(ops_with, graded):
    repo = ops_with(
        "import functools", "import functools\n        import os\n\n        os._exit(1)"
    )
    data, _ = graded(repo)
    assert scores(data) == {"0.1": 0.0, "1.1": 0.0, "2.1": 0.0}
    for task in ("0.1", "1.1", "2.1"):
        assert "exited with code 1 before pytest finished" in output_of(data, task)


def test_a_segfault_zeroes_its_task_only(ops_with, graded):
    repo = ops_with(
        "return 2.0 * x * d", "import ctypes\n\n            return ctypes.string_at(0)"
    )
    data, _ = graded(repo)
    assert scores(data) == {"0.1": 10.0, "1.1": 0.0, "2.1": 10.0}
    assert "killed by SIGSEGV" in output_of(data, "1.1")


def test_an_import_error_costs_the_tasks_of_the_file_that_cannot_load(
    make_mini_repo, mini_files, graded
):
    broken = mini_files["minifw/strided.py"] + '\n        raise ImportError("broken on purpose")\n'
    data, results = graded(make_mini_repo({"minifw/strided.py": broken}))
    assert scores(data) == {"0.1": 10.0, "1.1": 10.0, "2.1": 0.0}
    assert "COULD NOT COLLECT tests/test_strided.py" in output_of(data, "2.1")
    assert "broken on purpose" in output_of(data, "2.1")
    assert "test_strided" not in output_of(data, "0.1")  # that file is not even loaded
    assert (results[2].passed, results[2].counted) == (0, 3)  # the staff's three tests
    assert "NO RESULT tests/test_strided.py::test_strides: " in output_of(data, "2.1")


def test_only_task_files_are_taken_from_the_submission(make_mini_repo, graded):
    repo = make_mini_repo(
        {
            "minifw/__init__.py": "raise ImportError('never graded')\n",
            "tests/test_ops.py": "def test_nothing():\n    pass\n",
            "tests/conftest.py": "import os\n\nos._exit(3)\n",
        }
    )
    data, _ = graded(repo)
    assert scores(data) == {"0.1": 10.0, "1.1": 10.0, "2.1": 10.0}
    assert "Ignored (only task files are graded): minifw/__init__.py" in data["output"]
    assert submission_paths(repo, parse_tasks("0.1")) == ["minifw/ops.py"]
    assert submission_paths(repo, THREE) == ["minifw/ops.py", "minifw/strided.py", "project/"]


def test_a_missing_task_file_grades_the_starter_code_and_says_so(make_mini_repo, graded):
    repo = make_mini_repo()
    (repo / "minifw/strided.py").unlink()
    data, _ = graded(repo)
    assert scores(data) == {"0.1": 10.0, "1.1": 10.0, "2.1": 10.0}  # the staff copy's file
    assert "Not in the submission (the starter code was graded): minifw/strided.py" in (
        output_of(data, "2.1")
    )


def test_a_task_without_tests_scores_zero_with_a_reason(make_mini_repo, tmp_path):
    path = tmp_path / "r.json"
    repo = make_mini_repo()
    results = grade(repo, parse_tasks("0.3"), 60, path, log=lambda _: None, staff=repo,
                    user="same")  # fmt: skip
    assert results[0].score == 0 and results[0].note == "no tests"
    assert (
        "no test file of the staff copy marks task0_3"
        in json.loads(path.read_text())["tests"][0]["output"]
    )


def test_command_line_prints_a_table_and_writes_results(
    ops_with, make_mini_repo, tmp_path, course_cli
):
    repo = ops_with("return 2.0 * x * d", "return d * x")
    out = tmp_path / "results.json"
    staff = make_mini_repo()
    done = course_cli(
        "grade", "--repo", str(repo), "--staff", str(staff), "--tasks", "0.1,1.1", "--json",
        str(out), "--timeout", "60", "--visibility", "after_published", "--user", "same",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seconds = r"\s+(\d+\.\d) s"  # the wall time of each task, then of all of them
    row = re.search(r"^0\.1\s+operators\s+4/4\s+10\.00/10\.00" + seconds + "$", done.stdout, re.M)
    assert row, done.stdout
    assert re.search(r"^1\.1\s+central difference\s+0/2\s+0\.00/10\.00" + seconds + "$",
                     done.stdout, re.M)  # fmt: skip
    total = re.search(r"^total\s+10\.00/20\.00" + seconds + "$", done.stdout, re.M)
    assert total and float(total.group(1)) >= float(row.group(1)) > 0
    assert re.search(r"^  task 0\.1: 10\.00/10\.00 in \d+\.\d s$", done.stdout, re.M)
    data = json.loads(out.read_text())
    check_gradescope_schema(data, 2)
    assert {entry["visibility"] for entry in data["tests"]} == {"after_published"}
    assert not list(tmp_path.glob(".results.json.*"))  # no temp file left behind


def test_command_line_rejects_unknown_tasks(tmp_path, course_cli):
    done = course_cli("grade", "--tasks", "0.1,9.9", "--repo", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and "unknown task '9.9'" in done.stderr


def test_command_line_rejects_a_staff_copy_without_tests(tmp_path, course_cli):
    done = course_cli("grade", "--tasks", "0.1", "--staff", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and "has no tests/ folder (pass --staff)" in done.stderr


def test_a_student_repo_is_graded_on_its_module_by_default(make_mini_repo, tmp_path, course_cli):
    student = tmp_path / "student"
    make_assignment(make_mini_repo(), student, 1)
    out = tmp_path / "results.json"
    done = course_cli("grade", "--repo", str(student), "--staff", str(student), "--json",
                      str(out), "--user", "same", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert [entry["number"] for entry in data["tests"]] == ["1.1", "1.2", "1.3", "1.4", "1.5"]
    assert data["score"] == 0
    assert "NotImplementedError: Task 1.1: implement square_back" in output_of(data, "1.1")


def fake_run(outcomes: dict[str, str], errors: int = 0, finished: bool = True) -> PytestRun:
    run = PytestRun(finished=finished, returncode=0 if finished else 1)
    for nodeid, outcome in outcomes.items():
        run.collected[nodeid] = {"nodeid": nodeid, "markers": ["task2_2"]}
        run.results[nodeid] = {"nodeid": nodeid, "outcome": outcome, "why": f"why {nodeid}",
                               "message": f"details of {nodeid}"}  # fmt: skip
    run.collect_errors = [{"nodeid": f"tests/e{i}.py", "message": "boom"} for i in range(errors)]
    return run


def test_only_passed_counts_and_the_staff_list_is_the_denominator():
    (task,) = parse_tasks("2.2")
    plan = TaskPlan(["tests/t.py"], ["a", "b", "c", "d", "e", "f"], {"g": "no CUDA here"})
    outcomes = {"a": "passed", "b": "skipped", "c": "failed", "d": "xfailed", "e": "xpassed"}
    result = score_run(task, plan, fake_run({**outcomes, "x": "passed"}, errors=1))
    assert (result.passed, result.counted) == (1, 6)  # "f" never reported; "x" is not staff's
    assert result.score == pytest.approx(10 / 6)
    assert "(1 tests skipped on the staff copy here: not counted)" in result.output
    for line in ["SKIPPED b: why b (a skipped test scores 0)", "FAILED c: why c",
                 "XFAILED d: why d (an expected failure scores 0)",
                 "XPASSED e: why e (a test marked xfail scores 0)", "NO RESULT f: ",
                 "COULD NOT COLLECT tests/e0.py:", "First failure, b:\ndetails of b"]:  # fmt: skip
        assert line in result.output


def test_a_run_cut_short_tampered_or_void_scores_zero():
    (task,) = parse_tasks("2.2")
    plan = TaskPlan(["tests/t.py"], ["a"])
    result = score_run(task, plan, fake_run({"a": "passed"}, finished=False))
    assert result.score == 0 and result.note == "crashed"
    assert "exited with code 1" in result.output and "1 tests had passed before" in result.output
    tampered = fake_run({"a": "passed"})
    tampered.tampered = ["_pytest.runner.call_and_report"]
    void_run = score_run(task, plan, tampered)
    assert void_run.note == "tampered" and void_run.score == 0
    assert void_run.output.startswith("Task 2.2: 0 points: tampered: _pytest.runner.call_and")
    assert void_run.tampered == ["_pytest.runner.call_and_report"]
    assert results_json([void_run], [], 1.0, "visible")["extra_data"]["tampered"] == {
        "2.2": ["_pytest.runner.call_and_report"]
    }
    void = score_run(task, plan, fake_run({"a": "passed"}), changed=["tests/t.py"])
    assert void.score == 0 and "changed tests/t.py" in void.output


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


PROFILE_TEST = """
    import os

    import pytest


    @pytest.mark.task0_1
    def test_runs_with_the_grade_profile():
        assert os.environ.get("HYPOTHESIS_PROFILE") == "grade"
"""


def test_tests_run_with_the_grade_hypothesis_profile(make_mini_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "dev")
    files = {"tests/test_profile.py": PROFILE_TEST}
    results = grade(make_mini_repo(files), parse_tasks("0.1"), 60, log=lambda _: None,
                    staff=make_mini_repo(files), user="same")  # fmt: skip
    assert results[0].counted == 5 and results[0].score == results[0].max_score, results[0].output
    assert results[0].seconds > 0


@pytest.mark.parametrize("module", [0, 3])
def test_the_student_readme_says_how_to_grade_yourself(module):
    lines = render_student_readme(module, {}).splitlines()
    (line,) = [line for line in lines if "Grade yourself" in line]
    assert f"`python -m minifw.course grade --module {module}`" in line


def test_submission_files_are_read_bounded_and_never_through_a_link(tmp_path):
    (tmp_path / "big.py").write_bytes(b"x" * 100)
    assert read_bounded(tmp_path / "big.py", limit=99) is None
    assert read_bounded(tmp_path / "big.py", limit=100)[0] == b"x" * 100
    (tmp_path / "link.py").symlink_to(tmp_path / "big.py")
    os.mkfifo(tmp_path / "fifo.py")  # opening it for reading would block
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "inner.py").write_text("")
    (tmp_path / "linked").symlink_to(tmp_path / "folder", target_is_directory=True)
    assert (
        read_bounded(tmp_path / "link.py") is None and read_bounded(tmp_path / "fifo.py") is None
    )
    assert walk(tmp_path) == [("big.py", "file"), ("fifo.py", "other"),
                              ("folder/inner.py", "file"), ("link.py", "link"),
                              ("linked", "link")]  # fmt: skip
    assert len(walk(tmp_path, limit=2)) <= 2


def _record(key: bytes, seq: int, **event: object) -> bytes:
    body = json.dumps({**event, "seq": seq}).encode()
    return hmac.new(key, body, "sha256").hexdigest().encode() + b" " + body + b"\n"


def test_records_count_only_with_their_mac_and_in_order():
    key = b"k" * 32
    good = _record(key, 0, event="result", nodeid="a", outcome="passed") + _record(
        key, 1, event="finished", exitstatus=0
    )
    run = PytestRun()
    read_events(good + b'1234 {"event": "cut', run, key)  # a record cut short at the end
    assert run.finished and run.results["a"]["outcome"] == "passed" and run.tampered == []
    forged = PytestRun()
    fake = json.dumps({"event": "result", "nodeid": "b", "outcome": "passed", "seq": 2})
    read_events(good + f"{'0' * 64} {fake}\n".encode(), forged, key)
    assert "b" not in forged.results
    assert forged.tampered == ["1 records on the results pipe are forged (no valid MAC)"]
    gap = PytestRun()
    read_events(_record(key, 0, event="finished") + _record(key, 2, event="finished"), gap, key)
    assert gap.tampered == ["records 1-2 of the results pipe are missing or out of order"]


def test_a_staff_test_may_monkeypatch_an_oracle_for_its_own_duration(make_mini_repo, tmp_path):
    patching = """
        import math

        import pytest

        from minifw import ops


        @pytest.mark.task1_1
        def test_with_a_patched_isclose(monkeypatch):
            monkeypatch.setattr(math, "isclose", lambda a, b: a == b)
            assert math.isclose(ops.square_back(3.0, 2.0), 12.0)
    """
    repo = make_mini_repo({"tests/test_patching.py": patching})
    (result,) = grade(repo, parse_tasks("1.1"), 60, tmp_path / "r.json", log=lambda _: None,
                      staff=repo, user="same")  # fmt: skip
    assert (result.score, result.passed, result.counted, result.note) == (10.0, 3, 3, "")
