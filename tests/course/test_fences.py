"""Fences: finding them, rejecting bad ones, and stubbing the code inside them."""

from __future__ import annotations

import ast
import textwrap

import pytest

from minifw_course.fences import FenceError, find_fences, stub_message, stub_source

pytestmark = pytest.mark.staff


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


SOURCE = src('''
    """A module."""

    import math

    # BEGIN TASK 0.1


    @decorator(x=1)
    def mul(x: float, y: float) -> float:
        """Return x * y.

        More text.
        """
        # a hint that must go
        z = x * y  # an inline hint
        return z
        # a trailing hint


    def nodoc(x):
        return x + 1


    def oneline(x): return x


    class Kernels:
        """Kernels."""

        device = "cpu"

        @staticmethod
        def map(
            op: int, out,
        ) -> None:  # fmt: skip
            """Map café over out."""
            for i in range(3):
                pass

        def only_doc(self) -> int:
            """Only a docstring."""


    # END TASK 0.1


    def untouched():
        return 3


    class Data:
        """Data."""

        def keep(self):
            return 1

        # BEGIN TASK 1.1
        def permute(self, *order: int) -> "Data":
            """A view with dims reordered: new dim i is old dim order[i], said at length here."""
            n = len(order)
            return self

        # END TASK 1.1
''')


def stubbed(tasks: set[str]) -> tuple[str, list[str]]:
    text, stubs = stub_source(SOURCE, tasks, "mod.py")
    return text, [stub.qualname for stub in stubs]


def test_find_fences_pairs_begin_and_end() -> None:
    fences = find_fences(SOURCE, "mod.py")
    assert [(f.task, f.begin < f.end) for f in fences] == [("0.1", True), ("1.1", True)]
    lines = SOURCE.splitlines()
    assert lines[fences[0].begin - 1] == "# BEGIN TASK 0.1"
    assert lines[fences[1].end - 1].strip() == "# END TASK 1.1"


def test_stub_keeps_signatures_decorators_and_docstrings() -> None:
    text, names = stubbed({"0.1", "1.1"})
    assert names == ["mul", "nodoc", "oneline", "Kernels.map", "Kernels.only_doc", "Data.permute"]
    assert "@decorator(x=1)\ndef mul(x: float, y: float) -> float:" in text
    assert '"""Return x * y.\n\n    More text.\n    """' in text
    assert "op: int, out,\n    ) -> None:  # fmt: skip" in text
    assert "Task 0.1: implement mul: Return x * y. (see docs/module0.md)" in text
    assert "Task 0.1: implement Kernels.map: Map café over out." in text
    assert "Task 0.1: implement nodoc: part of operators" in text
    assert "def oneline(x): raise NotImplementedError(" in text
    assert 'device = "cpu"' in text  # class attributes stay


def test_stub_removes_the_whole_body_and_its_comments() -> None:
    text, _ = stubbed({"0.1"})
    for gone in ("x * y  #", "a hint that must go", "an inline hint", "a trailing hint",
                 "for i in range(3)", "return x + 1"):  # fmt: skip
        assert gone not in text
    assert "return 3" in text  # outside the fences
    assert "n = len(order)" in text  # task 1.1 was not asked for


def test_stub_keeps_the_fences_and_the_result_parses() -> None:
    text, _ = stubbed({"0.1", "1.1"})
    assert text.count("# BEGIN TASK") == 2 and text.count("# END TASK") == 2
    tree = ast.parse(text)
    assert any(isinstance(n, ast.ClassDef) and n.name == "Data" for n in tree.body)


def test_long_messages_wrap_over_lines_without_losing_words() -> None:
    text, _ = stubbed({"1.1"})
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "raise NotImplementedError(" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == ")")
    assert end - start >= 3  # the message went over two or more lines
    assert all(len(line) <= 99 for line in lines[start : end + 1])
    namespace: dict[str, object] = {}
    exec(compile(text, "mod.py", "exec"), {"decorator": lambda **_: lambda f: f}, namespace)
    data = namespace["Data"]()  # type: ignore[operator]
    with pytest.raises(NotImplementedError) as info:
        data.permute(1, 0)
    assert str(info.value) == (
        "Task 1.1: implement Data.permute: A view with dims reordered: new dim i is old dim "
        "order[i], said at length here. (see docs/module1.md)"
    )
    assert data.keep() == 1


def test_stubbed_functions_raise_and_others_run() -> None:
    text, _ = stubbed({"0.1"})
    namespace: dict[str, object] = {}
    exec(compile(text, "mod.py", "exec"), {"decorator": lambda **_: lambda f: f}, namespace)
    exact = r"^Task 0\.1: implement mul: Return x \* y\. \(see docs/module0\.md\)$"
    with pytest.raises(NotImplementedError, match=exact):
        namespace["mul"](2, 3)  # type: ignore[operator]
    with pytest.raises(NotImplementedError, match="Task 0.1: implement Kernels.only_doc"):
        namespace["Kernels"]().only_doc()  # type: ignore[operator]
    assert namespace["untouched"]() == 3  # type: ignore[operator]


def test_source_without_fences_is_unchanged() -> None:
    plain = "def f():\n    return 1\n"
    assert stub_source(plain, {"0.1"}) == (plain, [])


def test_stub_message_falls_back_to_the_task_title() -> None:
    assert stub_message("2.2", "f", None) == (
        "Task 2.2: implement f: part of broadcasting (see docs/module2.md)"
    )
    assert stub_message("2.2", "f", "Map an index.\n\nMore.") == (
        "Task 2.2: implement f: Map an index. (see docs/module2.md)"
    )
    assert stub_message("4.1", "conv1d", "").endswith("part of conv1d (see docs/module4.md)")


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("# BEGIN TASK 0.1\ndef f():\n    pass\n", "never closed"),
        ("# END TASK 0.1\n", "no fence is open"),
        ("# BEGIN TASK 0.1\n# BEGIN TASK 0.3\n", "do not nest"),
        ("# BEGIN TASK 0.1\n# END TASK 0.3\n", "task 0.1 is open"),
        ("# BEGIN TASK 9.9\n# END TASK 9.9\n", "not in the course map"),
        ("# BEGIN TASK 2_3\n# END TASK 2_3\n", "expected '# BEGIN TASK x.y'"),
        ("x = 1  # BEGIN TASK 0.1\n# END TASK 0.1\n", "alone on its line"),
    ],
)
def test_malformed_fences_raise_with_the_line(text: str, complaint: str) -> None:
    with pytest.raises(FenceError, match=complaint) as info:
        find_fences(text, "bad.py")
    assert str(info.value).startswith("bad.py:")


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (
            "def f():\n    # BEGIN TASK 0.1\n    x = 1\n    # END TASK 0.1\n    return x\n",
            "inside the statement",
        ),
        (
            "# BEGIN TASK 0.1\ndef f():\n    x = 1\n    # END TASK 0.1\n    return x\n",
            "cuts the statement",
        ),
        ("class A:\n    x = 1\n# BEGIN TASK 0.1\n    y = 2\n# END TASK 0.1\n", "cuts"),
    ],
)
def test_fences_must_enclose_whole_definitions(text: str, complaint: str) -> None:
    with pytest.raises(FenceError, match=complaint):
        stub_source(text, {"0.1"}, "bad.py")


def test_fence_text_inside_a_string_is_not_a_fence() -> None:
    text = 'DOC = """\n# BEGIN TASK 0.1\n"""\n'
    assert find_fences(text) == []
