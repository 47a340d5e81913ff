"""check-tasks: walks a module through its states and names the tests that break the rules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from minifw_course.task_check import all_problems, check_tasks
from minifw_course.tasks import tasks_of_module

pytestmark = pytest.mark.staff


def test_a_clean_module_has_no_problems(make_mini_repo: Callable[..., Path]) -> None:
    results = check_tasks(make_mini_repo(), 0, timeout=120)
    assert [result.solved for result in results] == [[], ["0.1"], ["0.1", "0.2"],
                                                     ["0.1", "0.2", "0.3"],
                                                     ["0.1", "0.2", "0.3", "0.4"]]  # fmt: skip
    assert {outcome for _, outcome in results[0].outcomes.values()} == {"failed"}
    assert {outcome for _, outcome in results[-1].outcomes.values()} == {"passed"}
    assert all_problems(results) == []


def test_a_test_that_passes_on_stubs_is_named(make_mini_repo: Callable[..., Path]) -> None:
    # test_kind reads a class attribute outside the fence: it passes with 2.1 stubbed
    problems = all_problems(check_tasks(make_mini_repo(), 2, timeout=120))
    assert problems == [
        "[solved: none] tests/test_strided.py::test_kind: passed although task 2.1 is a stub"
    ]


def test_a_test_that_needs_a_later_task_is_named(
    make_mini_repo: Callable[..., Path], mini_files: dict[str, str]
) -> None:
    mini_files["tests/test_later.py"] = """
        import pytest

        from minifw import ops


        @pytest.mark.task0_1
        def test_mul_of_a_square():
            assert ops.mul(ops.square_back(1.0, 1.0), 1.0) == 2.0
    """
    problems = all_problems(check_tasks(make_mini_repo(mini_files), 0, timeout=120))
    # square_back is task 1.1, stubbed in every state of module 0
    assert problems and all(
        "test_mul_of_a_square: failed although task 0.1" in p for p in problems
    )
    assert len(problems) == 4  # one per state with 0.1 solved


@pytest.mark.slow
@pytest.mark.parametrize("module", [0, 1])
def test_the_pure_python_modules_of_this_repository(module: int) -> None:
    # Modules 2-4 take minutes each (Numba compiles every state's kernels): staff run
    # `python -m minifw.course check-tasks --module N` before releasing them (docs/staff.md).
    results = check_tasks(Path(__file__).resolve().parents[2], module, timeout=600)
    assert all_problems(results) == []
    assert all(outcome == "failed" for _, outcome in results[0].outcomes.values())
    tested = {task for task, _ in results[0].outcomes.values()}
    assert tested == {task.id for task in tasks_of_module(module)}  # every task has tests
