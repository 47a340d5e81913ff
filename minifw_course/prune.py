"""Remove the tests of later course modules from a test file, reading markers statically.

A student repository for module N keeps only the tests of modules 0..N. The task
of a test is read from the source, without importing it: the `pytest.mark.taskX_Y`
decorators of the test (including marks inside `pytest.param`, and module-level
aliases such as `task2_1 = pytest.mark.task2_1`), else those of its class, else
the module's `pytestmark`. A test whose tasks all belong to later modules is
removed; a file left with no tests is dropped. A test whose task cannot be read
stays (the marker check in tests/test_markers.py reports it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

TASK_MARK = re.compile(r"\bmark\.task(\d+)_(\d+)\b")
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass
class PruneResult:
    """The new source (None when the whole file goes) and the names of removed tests."""

    source: str | None
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def marked_tasks(node: ast.AST, aliases: dict[str, set[str]] | None = None) -> set[str]:
    """The task ids an expression names: `mark.taskX_Y` anywhere in it, or an alias of one."""
    tasks = {f"{a}.{b}" for a, b in TASK_MARK.findall(ast.unparse(node))}
    for child in ast.walk(node):
        if aliases and isinstance(child, ast.Name) and child.id in aliases:
            tasks |= aliases[child.id]
    return tasks


def _assignments(body: list[ast.stmt]) -> list[tuple[str, ast.expr]]:
    """(name, value) of each plain `name = value` or `name: T = value` in a body."""
    found = []
    for node in body:
        if isinstance(node, ast.Assign):
            found += [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            found.append((node.target.id, node.value))
    return found


class _Reader:
    """Reads the tasks of the tests of one parsed test module."""

    def __init__(self, tree: ast.Module) -> None:
        self.aliases: dict[str, set[str]] = {}
        for name, value in _assignments(tree.body):
            if name != "pytestmark":
                tasks = marked_tasks(value, self.aliases)
                if tasks:
                    self.aliases[name] = tasks
        self.module_tasks = self.pytestmark(tree.body)
        self.tests = [
            node for node in tree.body if isinstance(node, Definition) and _is_test(node)
        ]

    def pytestmark(self, body: list[ast.stmt]) -> set[str]:
        """The tasks of the `pytestmark` assignments of a module or class body."""
        tasks: set[str] = set()
        for name, value in _assignments(body):
            if name == "pytestmark":
                tasks |= marked_tasks(value, self.aliases)
        return tasks

    def decorated(self, node: Definition) -> set[str]:
        """The tasks named by a definition's decorators."""
        tasks: set[str] = set()
        for decorator in node.decorator_list:
            tasks |= marked_tasks(decorator, self.aliases)
        return tasks

    def tasks_of(self, node: Definition) -> set[str]:
        """The tasks a top-level test function or class belongs to (empty if unknown)."""
        own = self.decorated(node)
        if isinstance(node, ast.ClassDef):
            own |= self.pytestmark(node.body)
            if not own:
                for child in node.body:
                    if isinstance(child, Definition) and _is_test(child):
                        own |= self.decorated(child)
        return own or set(self.module_tasks)


def _is_test(node: Definition) -> bool:
    if isinstance(node, ast.ClassDef):
        return node.name.startswith("Test")
    return node.name.startswith("test")


def file_tasks(source: str, filename: str = "<test>") -> set[str]:
    """Every task the tests of a test file belong to (empty when none can be read)."""
    reader = _Reader(ast.parse(source, filename))
    tasks = set(reader.module_tasks)
    for node in reader.tests:
        tasks |= reader.tasks_of(node)
    return tasks


def prune_tests(source: str, drop: Callable[[str], bool], filename: str = "<test>") -> PruneResult:
    """Remove the top-level tests all of whose tasks satisfy `drop(task_id)`."""
    reader = _Reader(ast.parse(source, filename))
    lines = source.splitlines(keepends=True)
    cuts: list[tuple[int, int]] = []
    result = PruneResult(source)
    for node in reader.tests:
        tasks = reader.tasks_of(node)
        if tasks and all(drop(task) for task in tasks):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            cuts.append((first, node.end_lineno or node.lineno))
            result.removed.append(node.name)
        else:
            result.kept.append(node.name)
    if reader.tests and not result.kept:
        return PruneResult(None, result.removed)
    for first, last in sorted(cuts, reverse=True):
        while last < len(lines) and not lines[last].strip():
            last += 1  # take the blank lines after the test with it
        del lines[first - 1 : last]
    result.source = "".join(lines)
    ast.parse(result.source, filename)
    return result
