"""Removing later modules' tests and `extra`/`staff` tests from test files, statically."""

from __future__ import annotations

import textwrap

import pytest

from minifw_course.prune import file_labels, file_tasks, marked_tasks, prune_tests

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
        "TestEarlyMethods.test_b",
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


def keep_every_task(task: str) -> bool:
    return False


EXTRAS = src("""
    import pytest

    extra = pytest.mark.extra


    @pytest.mark.task0_1
    def test_graded():
        assert True


    @pytest.mark.extra
    def test_given_code():
        assert True


    @extra
    def test_given_code_by_alias():
        assert True


    @pytest.mark.extra
    class TestGivenClass:
        def test_a(self):
            assert True


    class TestMarkedInside:
        pytestmark = pytest.mark.extra

        def test_b(self):
            assert True


    class TestMixedMethods:
        @pytest.mark.task0_1
        def test_kept(self):
            assert True

        @pytest.mark.extra
        def test_dropped(self):
            assert True


    @pytest.mark.task0_1
    @pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.extra)])
    def test_one_extra_case(x):
        assert x
""")


def test_extra_tests_classes_and_methods_are_removed() -> None:
    result = prune_tests(EXTRAS, keep_every_task, "test_extras.py")
    assert result.removed == [
        "test_given_code",
        "test_given_code_by_alias",
        "TestGivenClass",
        "TestMarkedInside",
        "TestMixedMethods.test_dropped",
    ]
    assert result.kept == ["test_graded", "TestMixedMethods.test_kept", "test_one_extra_case"]
    assert result.source is not None
    for gone in ("test_given_code", "TestGivenClass", "TestMarkedInside", "test_dropped"):
        assert gone not in result.source
    assert "class TestMixedMethods:" in result.source and "def test_kept" in result.source
    compile(result.source, "test_extras.py", "exec")


@pytest.mark.parametrize("marker", ["extra", "staff"])
def test_a_module_marked_extra_or_staff_goes_whole(marker: str) -> None:
    text = src(f"""
        import pytest

        pytestmark = [pytest.mark.{marker}, pytest.mark.slow]

        TestMachine = object  # e.g. a hypothesis state machine's TestCase: still goes


        @pytest.mark.task0_1
        def test_one():
            assert True
    """)
    result = prune_tests(text, keep_every_task)
    assert result.source is None and result.removed == ["test_one"]
    assert file_labels(text) == {marker, "0.1"} and file_tasks(text) == {"0.1"}


def test_a_file_of_only_extra_tests_goes_whole() -> None:
    text = "import pytest\n\n\n@pytest.mark.extra\ndef test_x():\n    pass\n"
    assert prune_tests(text, keep_every_task).source is None


def test_extra_is_kept_when_not_dropped() -> None:
    result = prune_tests(EXTRAS, keep_every_task, dropped=())
    assert result.removed == [] and result.source == EXTRAS
