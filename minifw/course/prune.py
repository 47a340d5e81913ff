"""Remove the tests of later course modules from a test file, reading markers statically.

A student repository for module N keeps only the tests of modules 0..N. The task
of a test is read from the source, without importing it: the `pytest.mark.taskX_Y`
decorators of the test (including marks inside `pytest.param`), else those of its
class, else the module's `pytestmark`. A test whose tasks all belong to later
modules is removed; a file left with no tests is dropped. A test whose task cannot
be read stays (the marker check in tests/test_markers.py reports it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

TASK_MARK = re.compile(r"\bmark\.task(\d+)_(\d+)\b")


@dataclass
class PruneResult:
    """The new source (None when the whole file goes) and the names of removed tests."""

    source: str | None
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def marked_tasks(node: ast.AST) -> set[str]:
    """The task ids named by `mark.taskX_Y` anywhere inside an expression or statement."""
    return {f"{a}.{b}" for a, b in TASK_MARK.findall(ast.unparse(node))}


def _pytestmark(body: list[ast.stmt]) -> set[str]:
    tasks: set[str] = set()
    for node in body:
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets = node.targets
            value = node.value
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
            value = node.value
        else:
            continue
        if value is not None and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets
        ):
            tasks |= marked_tasks(value)
    return tasks


def _decorator_tasks(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    tasks: set[str] = set()
    for decorator in node.decorator_list:
        tasks |= marked_tasks(decorator)
    return tasks


def _is_test(node: ast.stmt) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name.startswith("test")
    return isinstance(node, ast.ClassDef) and node.name.startswith("Test")


def test_tasks(node: ast.stmt, module_tasks: set[str]) -> set[str]:
    """The tasks a top-level test function or class belongs to (empty if unknown)."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return set()
    own = _decorator_tasks(node)
    if isinstance(node, ast.ClassDef):
        own |= _pytestmark(node.body)
        if not own:
            for child in node.body:
                if _is_test(child) and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    own |= _decorator_tasks(child)
    return own or set(module_tasks)


def file_tasks(source: str, filename: str = "<test>") -> set[str]:
    """Every task the tests of a test file belong to (empty when none can be read)."""
    tree = ast.parse(source, filename)
    module_tasks = _pytestmark(tree.body)
    tasks = set(module_tasks)
    for node in _tests(tree):
        tasks |= test_tasks(node, module_tasks)
    return tasks


def _tests(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and _is_test(node)
    ]


def prune_tests(source: str, drop: Callable[[str], bool], filename: str = "<test>") -> PruneResult:
    """Remove the top-level tests all of whose tasks satisfy `drop(task_id)`."""
    tree = ast.parse(source, filename)
    module_tasks = _pytestmark(tree.body)
    lines = source.splitlines(keepends=True)
    cuts: list[tuple[int, int]] = []
    result = PruneResult(source)
    tests = _tests(tree)
    for node in tests:
        tasks = test_tasks(node, module_tasks)
        if tasks and all(drop(task) for task in tasks):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            cuts.append((first, node.end_lineno or node.lineno))
            result.removed.append(node.name)
        else:
            result.kept.append(node.name)
    if tests and not result.kept:
        return PruneResult(None, result.removed)
    for first, last in sorted(cuts, reverse=True):
        while last < len(lines) and not lines[last].strip():
            last += 1  # take the blank lines after the test with it
        del lines[first - 1 : last]
    result.source = "".join(lines)
    ast.parse(result.source, filename)
    return result
