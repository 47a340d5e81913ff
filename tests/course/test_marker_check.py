"""The marker check: the recording plugin, the rules, and the command line."""

from __future__ import annotations

import pytest

from minifw_course.markers import PytestRun, check_markers, collect, is_staff_path

pytestmark = pytest.mark.staff

BAD_TESTS = {
    "tests/test_bad.py": """
        import pytest


        def test_without_marker():
            pass


        @pytest.mark.task0_1
        @pytest.mark.task0_3
        def test_with_two():
            pass


        @pytest.mark.staff
        def test_staff_outside_its_place():
            pass


        @pytest.mark.task0_1
        @pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.task1_1)])
        def test_param_with_a_second_task(x):
            pass
    """,
    "tests/course/test_tooling.py": """
        import pytest


        def test_tooling_without_staff():
            pass


        @pytest.mark.staff
        def test_tooling_with_staff():
            pass
    """,
}


def test_the_mini_repository_follows_the_rules(make_mini_repo):
    run = collect(make_mini_repo())
    assert run.finished and len(run.collected) == 9
    assert check_markers(run) == []
    event = run.collected["tests/test_ops.py::test_mul_by_one[1.5]"]
    assert event["markers"] == ["task0_1"] and event["path"] == "tests/test_ops.py"
    assert "parametrize" in event["all_markers"]


def test_every_kind_of_breach_is_reported(make_mini_repo):
    problems = check_markers(collect(make_mini_repo(BAD_TESTS)))
    text = "\n".join(problems)
    assert len(problems) == 5, text
    assert "tests/test_bad.py::test_without_marker: no task marker" in text
    assert "tests/test_bad.py::test_with_two: 2 task markers task0_1, task0_3" in text
    assert "test_staff_outside_its_place: the `staff` marker belongs only in" in text
    assert "test_param_with_a_second_task[2]: 2 task markers task0_1, task1_1" in text
    assert "tests/course/test_tooling.py::test_tooling_without_staff: tests in" in text
    assert "test_param_with_a_second_task[1]" not in text
    assert "test_tooling_with_staff" not in text


def test_unknown_tasks_and_collection_errors_are_reported(make_mini_repo):
    repo = make_mini_repo({"tests/test_broken.py": "import nowhere_to_be_found\n"})
    run = collect(repo)
    problems = check_markers(run, known=["1.1", "2.1"])
    text = "\n".join(problems)
    assert "tests/test_broken.py: could not be collected" in text
    assert "No module named 'nowhere_to_be_found'" in text
    assert "tests/test_ops.py::test_mul: unknown task marker task0_1" in text


def test_a_run_that_never_finished_is_a_problem():
    run = PytestRun(returncode=-9, output="boom")
    problems = check_markers(run)
    assert problems and "killed by SIGKILL" in problems[0]


def test_staff_paths():
    assert is_staff_path("tests/course/test_grade.py")
    assert is_staff_path("tests/test_markers.py")
    assert not is_staff_path("tests/test_markers_extra.py")
    assert not is_staff_path("tests/test_course/x.py")


def test_command_line_exit_status(make_mini_repo, tmp_path, course_cli):
    good = course_cli("check-markers", "--repo", str(make_mini_repo()), cwd=tmp_path)
    assert good.returncode == 0 and "markers: all good" in good.stdout
    bad = course_cli("check-markers", "--repo", str(make_mini_repo(BAD_TESTS)), cwd=tmp_path)
    assert bad.returncode == 1 and "5 marker problems" in bad.stdout
