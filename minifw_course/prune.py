"""Remove the tests a student repository must not have, reading markers statically.

A student repository for module N keeps only the tests of modules 0..N, and never the
tests marked `extra` (what no task teaches) or `staff` (course tooling). The labels of a
test are read from the source, without importing it: the `pytest.mark.taskX_Y`,
`pytest.mark.extra` and `pytest.mark.staff` marks of the module's `pytestmark`, of its
class (decorators and the class's own `pytestmark`) and of the test itself, following
module-level aliases such as `task2_1 = pytest.mark.task2_1`. Task marks inside
`pytest.param(..., marks=...)` count for the whole test; `extra` or `staff` there does
not (it covers one case only).

A test goes when it carries a dropped label (`extra`, `staff`), or when it names tasks
and all of them belong to later modules. A class goes when none of its tests stays, a
file when none of its tests stays or its `pytestmark` carries a dropped label. A test
with no label stays (the marker check in tests/test_markers.py reports it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

TASK_MARK = re.compile(r"^task(\d+)_(\d+)$")
DROPPED_LABELS = ("extra", "staff")
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass
class PruneResult:
    """The new source (None when the whole file goes) and the names of removed tests.

    A method is named `Class.method`; a class that goes whole is named by itself.
    """

    source: str | None
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _label(name: str) -> str | None:
    """The label of a marker name: "2.1" for task2_1, "extra", "staff", else None."""
    match = TASK_MARK.match(name)
    if match:
        return f"{match.group(1)}.{match.group(2)}"
    return name if name in DROPPED_LABELS else None


def _is_mark(node: ast.Attribute) -> bool:
    """True for `mark.NAME` and `anything.mark.NAME`."""
    owner = node.value
    return (isinstance(owner, ast.Name) and owner.id == "mark") or (
        isinstance(owner, ast.Attribute) and owner.attr == "mark"
    )


def _is_param_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    called = node.func
    name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
    return name == "param"


def marked_labels(
    node: ast.AST, aliases: dict[str, set[str]] | None = None, in_param: bool = False
) -> set[str]:
    """The labels an expression names: task ids ("2.1"), `extra` and `staff`.

    Aliases of earlier assignments are followed; `extra` and `staff` inside a
    `pytest.param(...)` are ignored (they cover one parameter, not the test).
    """
    in_param = in_param or _is_param_call(node)
    found: set[str] = set()
    if isinstance(node, ast.Attribute) and _is_mark(node):
        label = _label(node.attr)
        if label is not None and not (in_param and label in DROPPED_LABELS):
            found.add(label)
    elif isinstance(node, ast.Name) and aliases and node.id in aliases:
        found |= {x for x in aliases[node.id] if not (in_param and x in DROPPED_LABELS)}
    for child in ast.iter_child_nodes(node):
        found |= marked_labels(child, aliases, in_param)
    return found


def task_labels(labels: Collection[str]) -> set[str]:
    """The task ids among labels."""
    return {label for label in labels if label not in DROPPED_LABELS}


def marked_tasks(node: ast.AST, aliases: dict[str, set[str]] | None = None) -> set[str]:
    """The task ids an expression names: `mark.taskX_Y` anywhere in it, or an alias of one."""
    return task_labels(marked_labels(node, aliases))


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


def _is_test(node: ast.stmt) -> bool:
    if isinstance(node, ast.ClassDef):
        return node.name.startswith("Test")
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
        "test"
    )


@dataclass
class TestUnit:
    """One test function or method: its node, its name, its labels, and its class node."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    name: str
    labels: set[str]
    owner: ast.ClassDef | None = None


class _Reader:
    """Reads the labels of the tests of one parsed test module."""

    def __init__(self, tree: ast.Module) -> None:
        self.aliases: dict[str, set[str]] = {}
        for name, value in _assignments(tree.body):
            if name != "pytestmark":
                labels = marked_labels(value, self.aliases)
                if labels:
                    self.aliases[name] = labels
        self.module_labels = self.pytestmark(tree.body)
        self.units: list[TestUnit] = []
        self.classes: list[ast.ClassDef] = []
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and _is_test(node):
                self.classes.append(node)
                self._read_class(node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_test(node):
                labels = self.module_labels | self.decorated(node)
                self.units.append(TestUnit(node, node.name, labels))

    def _read_class(self, node: ast.ClassDef) -> None:
        shared = self.module_labels | self.decorated(node) | self.pytestmark(node.body)
        for child in node.body:
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and _is_test(child):
                labels = shared | self.decorated(child)
                self.units.append(TestUnit(child, f"{node.name}.{child.name}", labels, node))

    def pytestmark(self, body: list[ast.stmt]) -> set[str]:
        """The labels of the `pytestmark` assignments of a module or class body."""
        labels: set[str] = set()
        for name, value in _assignments(body):
            if name == "pytestmark":
                labels |= marked_labels(value, self.aliases)
        return labels

    def decorated(self, node: Definition) -> set[str]:
        """The labels named by a definition's decorators."""
        labels: set[str] = set()
        for decorator in node.decorator_list:
            labels |= marked_labels(decorator, self.aliases)
        return labels


def file_tasks(source: str, filename: str = "<test>") -> set[str]:
    """Every task the tests of a test file belong to (empty when none can be read)."""
    reader = _Reader(ast.parse(source, filename))
    tasks = task_labels(reader.module_labels)
    for unit in reader.units:
        tasks |= task_labels(unit.labels)
    return tasks


def file_labels(source: str, filename: str = "<test>") -> set[str]:
    """Every label (task ids, `extra`, `staff`) any test of a test file carries."""
    reader = _Reader(ast.parse(source, filename))
    labels = set(reader.module_labels)
    for unit in reader.units:
        labels |= unit.labels
    return labels


def goes(labels: set[str], later: Callable[[str], bool], dropped: Collection[str]) -> bool:
    """True when a test with `labels` leaves the student repository (see the module doc)."""
    if labels & set(dropped):
        return True
    tasks = task_labels(labels)
    return bool(tasks) and all(later(task) for task in tasks)


def prune_tests(
    source: str,
    later: Callable[[str], bool],
    filename: str = "<test>",
    dropped: Collection[str] = DROPPED_LABELS,
) -> PruneResult:
    """Remove the tests whose tasks all satisfy `later(task_id)` or that carry `dropped`."""
    reader = _Reader(ast.parse(source, filename))
    gone = [unit for unit in reader.units if goes(unit.labels, later, dropped)]
    staying = [unit for unit in reader.units if unit not in gone]
    if reader.module_labels & set(dropped) or (reader.units and not staying):
        return PruneResult(None, [unit.name for unit in reader.units])
    emptied = [c for c in reader.classes if not any(u.owner is c for u in staying)]
    emptied = [c for c in emptied if any(u.owner is c for u in gone)]
    cut_nodes: list[Definition] = list(emptied)
    cut_nodes += [unit.node for unit in gone if unit.owner not in emptied]
    result = PruneResult(source, kept=[unit.name for unit in staying])
    result.removed = [u.name for u in gone if u.owner not in emptied] + [c.name for c in emptied]
    result.removed.sort(key=lambda name: _line_of(reader, name))
    result.source = _cut(source, cut_nodes)
    ast.parse(result.source, filename)
    return result


def _line_of(reader: _Reader, name: str) -> int:
    for node in reader.classes:
        if node.name == name:
            return node.lineno
    return next(unit.node.lineno for unit in reader.units if unit.name == name)


def _cut(source: str, nodes: list[Definition]) -> str:
    """Delete the lines of `nodes` (decorators included, and the blank lines after)."""
    lines = source.splitlines(keepends=True)
    spans = []
    for node in nodes:
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        spans.append((first, node.end_lineno or node.lineno))
    for first, last in sorted(spans, reverse=True):
        while last < len(lines) and not lines[last].strip():
            last += 1  # take the blank lines after the test with it
        del lines[first - 1 : last]
    return "".join(lines)
