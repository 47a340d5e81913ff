"""Removing the tests of later modules from test files, reading markers statically."""

from __future__ import annotations

import textwrap

import pytest

from minifw_course.prune import file_tasks, marked_tasks, prune_tests

pytestmark = pytest.mark.staff


def later_than_1(task: str) -> bool:
    return int(task.split(".")[0]) > 1


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


MIXED = src("""
    import pytest


    def helper():
        return 1


    @pytest.mark.task0_1
    def test_early():
        assert helper() == 1


    @pytest.mark.task2_3
    @pytest.mark.parametrize("x", [1, 2])
    def test_late(x):
        assert x


    @pytest.mark.task3_1
    class TestLateClass:
        def test_a(self):
            assert True


    class TestEarlyMethods:
        @pytest.mark.task1_2
        def test_b(self):
            assert True


    @pytest.mark.parametrize("x", [pytest.param(1, marks=pytest.mark.task1_1),
                                   pytest.param(2, marks=pytest.mark.task2_1)])
    def test_params_of_two_modules(x):
        assert x


    def test_without_marker():
        assert True
""")


def test_later_tests_are_removed_and_the_rest_kept() -> None:
    result = prune_tests(MIXED, later_than_1, "test_mixed.py")
    assert result.removed == ["test_late", "TestLateClass"]
    assert result.kept == [
        "test_early",
        "TestEarlyMethods",
        "test_params_of_two_modules",
        "test_without_marker",
    ]
    assert result.source is not None
    assert "def test_late" not in result.source and "TestLateClass" not in result.source
    assert "task2_3" not in result.source and "task3_1" not in result.source
    assert "def helper" in result.source and "def test_early" in result.source
    compile(result.source, "test_mixed.py", "exec")


def test_a_file_of_later_tests_goes_whole() -> None:
    text = src("""
        import pytest

        pytestmark = [pytest.mark.task2_1]


        def test_one():
            assert True


        @pytest.mark.task2_2
        def test_two():
            assert True
    """)
    result = prune_tests(text, later_than_1)
    assert result.source is None
    assert result.removed == ["test_one", "test_two"]


def test_a_module_marker_of_an_early_task_keeps_the_file() -> None:
    text = "import pytest\n\npytestmark = pytest.mark.task1_1\n\n\ndef test_one():\n    pass\n"
    result = prune_tests(text, later_than_1)
    assert result.source == text and result.removed == []


def test_file_tasks_reads_every_marker() -> None:
    assert file_tasks(MIXED) == {"0.1", "1.1", "1.2", "2.1", "2.3", "3.1"}
    assert file_tasks("def test_x():\n    pass\n") == set()


def test_marked_tasks_reads_attribute_chains() -> None:
    import ast

    tree = ast.parse("x = [pytest.mark.task4_5, mark.task0_2(), something.task1_1]")
    assert marked_tasks(tree) == {"4.5", "0.2"}


def test_marker_aliases_are_followed() -> None:
    text = src("""
        import pytest

        task0_1 = pytest.mark.task0_1
        late = [pytest.mark.task2_2, pytest.mark.slow]


        @task0_1
        def test_early():
            pass


        @late
        def test_late():
            pass
    """)
    result = prune_tests(text, later_than_1)
    assert result.removed == ["test_late"] and result.kept == ["test_early"]
    assert file_tasks(text) == {"0.1", "2.2"}
