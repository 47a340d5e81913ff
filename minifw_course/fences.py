"""Find `# BEGIN TASK x.y` / `# END TASK x.y` fences and turn fenced code into stubs.

A fence is a pair of comment lines around whole top-level functions, classes or
methods. Stubbing keeps every fenced function's decorators, signature and
docstring and replaces the rest of its body with
`raise NotImplementedError("Task x.y: ...")`; a fenced class keeps its class
attributes and has each of its methods stubbed the same way. The fences stay, so
students see where to work.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from minifw_course.tasks import COURSE_TASKS, TASKS

FENCE = re.compile(r"^#\s*(BEGIN|END)\s+TASK\b\s*(.*?)\s*$")
# What every fence comment contains: a source without it has no fences (no need to tokenize).
MAYBE_FENCE = re.compile(r"#\s*(?:BEGIN|END)\s+TASK\b")
TASK_ID = re.compile(r"^\d+\.\d+$")
MAX_LINE = 99
_TITLES = {task.id: task.title for task in TASKS}
_MODULES = {task.id: task.module for task in TASKS}

Function = ast.FunctionDef | ast.AsyncFunctionDef


class FenceError(ValueError):
    """A fence that is malformed, unbalanced, or not around whole definitions."""


@dataclass(frozen=True)
class Fence:
    """One fenced region: the task id and the 1-based lines of its two comments."""

    task: str
    begin: int
    end: int

    def encloses(self, first: int, last: int) -> bool:
        """True when lines first..last lie strictly between the two fence comments."""
        return self.begin < first and last < self.end


@dataclass(frozen=True)
class Stub:
    """A function whose body was (or would be) replaced: where, which task, what message."""

    task: str
    qualname: str
    lineno: int
    message: str


def find_fences(
    source: str, filename: str = "<source>", known: Collection[str] = COURSE_TASKS
) -> list[Fence]:
    """Return the fences of a Python source, checking they pair up and name known tasks."""
    fences: list[Fence] = []
    open_task: tuple[str, int] | None = None
    for line_no, alone, kind, task in _fence_comments(source, filename):
        where = f"{filename}:{line_no}"
        if not alone:
            raise FenceError(f"{where}: a fence comment must be alone on its line")
        if not TASK_ID.match(task):
            raise FenceError(f"{where}: expected '# {kind} TASK x.y', got task id {task!r}")
        if task not in known:
            raise FenceError(f"{where}: task {task} is not in the course map (tasks.py)")
        if kind == "BEGIN":
            if open_task is not None:
                raise FenceError(
                    f"{where}: BEGIN TASK {task} inside the fence of task {open_task[0]} "
                    f"opened at line {open_task[1]} (fences do not nest)"
                )
            open_task = (task, line_no)
        else:
            if open_task is None or open_task[0] != task:
                opened = f"task {open_task[0]} is open" if open_task else "no fence is open"
                raise FenceError(f"{where}: END TASK {task} but {opened}")
            fences.append(Fence(task, open_task[1], line_no))
            open_task = None
    if open_task is not None:
        raise FenceError(f"{filename}:{open_task[1]}: BEGIN TASK {open_task[0]} is never closed")
    return fences


def _fence_comments(source: str, filename: str) -> Iterator[tuple[int, bool, str, str]]:
    if not MAYBE_FENCE.search(source):  # most files: tokenizing them would find nothing
        return
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise FenceError(f"{filename}: cannot tokenize: {error}") from error
    for token in tokens:
        if token.type == tokenize.COMMENT:
            match = FENCE.match(token.string)
            if match:
                alone = token.line[: token.start[1]].strip() == ""
                yield token.start[0], alone, match.group(1), match.group(2)


def fenced_functions(
    source: str, tree: ast.Module, fences: list[Fence], filename: str = "<source>"
) -> list[tuple[str, str, Function]]:
    """Return (task, qualified name, node) for every function or method inside a fence.

    Raises FenceError for a fence that cuts a definition or sits inside a function.
    """
    found: list[tuple[str, str, Function]] = []
    _scan(source.splitlines(), tree.body, "", fences, found, filename)
    return found


def _span(lines: list[str], node: ast.stmt) -> tuple[int, int]:
    """First and last line of a statement, with decorators and trailing indented comments."""
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno] + [d.lineno for d in decorators])
    last = node.end_lineno or node.lineno
    indent = _indent_width(lines[node.lineno - 1])
    probe = last
    while probe < len(lines):
        following = lines[probe]
        if following.strip() and not following.strip().startswith("#"):
            break
        probe += 1
        if following.strip() and _indent_width(following) > indent:
            last = probe
        elif following.strip():
            break
    return first, last


def _scan(
    lines: list[str],
    body: list[ast.stmt],
    prefix: str,
    fences: list[Fence],
    found: list[tuple[str, str, Function]],
    filename: str,
) -> None:
    for node in body:
        first, last = _span(lines, node)
        fence = next((f for f in fences if f.encloses(first, last)), None)
        for f in fences:
            cut = (f.begin < first <= f.end < last) or (first < f.begin <= last < f.end)
            if cut:
                raise FenceError(
                    f"{filename}:{f.begin}: the fence of task {f.task} (lines {f.begin}-"
                    f"{f.end}) cuts the statement at lines {first}-{last}; fences go around "
                    "whole functions, classes or methods"
                )
        if fence is not None:
            _take_all(node, prefix, fence.task, found)
        elif isinstance(node, ast.ClassDef):
            _scan(lines, node.body, prefix + node.name + ".", fences, found, filename)
        else:
            inner = [f for f in fences if first < f.begin and f.end < last]
            if inner:
                raise FenceError(
                    f"{filename}:{inner[0].begin}: the fence of task {inner[0].task} is inside "
                    f"the statement at lines {first}-{last}; fences go around whole "
                    "top-level functions, classes or methods"
                )


def _take_all(
    node: ast.stmt, prefix: str, task: str, found: list[tuple[str, str, Function]]
) -> None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        found.append((task, prefix + node.name, node))
    elif isinstance(node, ast.ClassDef):
        for child in node.body:
            _take_all(child, prefix + node.name + ".", task, found)
    else:
        for name in ("body", "orelse", "finalbody"):
            for child in getattr(node, name, []):
                _take_all(child, prefix, task, found)
        for handler in getattr(node, "handlers", []):
            for child in handler.body:
                _take_all(child, prefix, task, found)


def stub_message(task: str, qualname: str, docstring: str | None) -> str:
    """The text of a stub's NotImplementedError: task id, what to implement, the guide.

    "Task 2.1: implement index_to_position: <docstring's first line> (see docs/module2.md)"
    """
    summary = ""
    if docstring and docstring.strip():
        summary = docstring.strip().splitlines()[0].strip()
    if not summary:
        summary = "part of " + _TITLES.get(task, "this task")
    guide = f" (see docs/module{_MODULES[task]}.md)" if task in _MODULES else ""
    return f"Task {task}: implement {qualname}: {summary}{guide}"


def _raise_line(indent: str, message: str) -> str:
    literal = json.dumps(message, ensure_ascii=False)
    line = f"{indent}raise NotImplementedError({literal})"
    if len(line) <= MAX_LINE:
        return line
    room = max(MAX_LINE - len(indent) - 4 - 2, 30)
    pieces: list[str] = []
    for word in re.split(r"(?<= )", message):  # keep each space with the word before it
        if pieces and len(json.dumps(pieces[-1] + word, ensure_ascii=False)) <= room:
            pieces[-1] += word
        else:
            pieces.append(word)
    body = "".join(f"{indent}    {json.dumps(p, ensure_ascii=False)}\n" for p in pieces)
    return f"{indent}raise NotImplementedError(\n{body}{indent})"


def stub_source(
    source: str,
    tasks: Collection[str],
    filename: str = "<source>",
    known: Collection[str] = COURSE_TASKS,
) -> tuple[str, list[Stub]]:
    """Stub every function fenced for one of `tasks`; return the new source and the stubs.

    Functions fenced for other tasks are left alone. The result is checked to parse.
    """
    fences = find_fences(source, filename, known)
    if not fences:
        return source, []
    tree = ast.parse(source, filename)
    lines = source.splitlines(keepends=True)
    fence_lines = {f.begin for f in fences} | {f.end for f in fences}
    starts = _line_starts(lines)
    edits: list[tuple[int, int, str]] = []
    stubs: list[Stub] = []
    for task, qualname, node in fenced_functions(source, tree, fences, filename):
        if task not in tasks:
            continue
        docstring = ast.get_docstring(node)
        message = stub_message(task, qualname, docstring)
        edits.append(_body_edit(lines, starts, node, message, fence_lines))
        stubs.append(Stub(task, qualname, node.lineno, message))
    text = source
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    try:
        ast.parse(text, filename)
    except SyntaxError as error:  # a bug here, never the author's fault: say so loudly
        raise FenceError(f"{filename}: the stubbed source does not parse: {error}") from error
    return text, stubs


def _line_starts(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def _offset(lines: list[str], starts: list[int], lineno: int, byte_col: int) -> int:
    line = lines[lineno - 1]
    return starts[lineno - 1] + len(line.encode("utf-8")[:byte_col].decode("utf-8"))


def _body_edit(
    lines: list[str], starts: list[int], node: Function, message: str, fence_lines: set[int]
) -> tuple[int, int, str]:
    """The (start, end, replacement) character edit that turns `node`'s body into a stub."""
    first, last = node.body[0], node.body[-1]
    has_doc = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    def_indent = _indent_width(lines[node.lineno - 1])
    prefix = lines[first.lineno - 1].encode("utf-8")[: first.col_offset].decode("utf-8")
    own_line = prefix.strip() == ""  # else the body shares the `def` line: `def f(): ...`
    indent = prefix if own_line else " " * (def_indent + 4)
    end_line = last.end_lineno or last.lineno
    end = _offset(lines, starts, end_line, last.end_col_offset or 0)
    rest = lines[end_line - 1][end - starts[end_line - 1] :].strip()
    if rest == "" or rest.startswith("#"):  # drop a trailing comment and comment lines after
        end_line = _eat_comments(lines, end_line, def_indent, fence_lines)
        end = starts[end_line - 1] + len(lines[end_line - 1].rstrip("\r\n"))
    raise_line = _raise_line(indent, message)
    if has_doc:
        start = _offset(lines, starts, first.end_lineno or first.lineno, first.end_col_offset or 0)
        if own_line:
            return start, max(start, end), "\n" + raise_line
        return start, max(start, end), "; " + raise_line.strip().replace("\n", " ")
    start = _offset(lines, starts, first.lineno, first.col_offset)
    return start, end, raise_line[len(indent) :] if own_line else raise_line.strip()


def _indent_width(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _eat_comments(lines: list[str], line_no: int, def_indent: int, fence_lines: set[int]) -> int:
    """Extend a body's end over the comment lines indented inside the function."""
    while line_no < len(lines):
        following = lines[line_no]
        stripped = following.strip()
        if not stripped.startswith("#") or (line_no + 1) in fence_lines:
            break
        if _indent_width(following) <= def_indent:
            break
        line_no += 1
    return line_no


# Where the generator and the docs look for fences, relative to a repository root. The
# course tooling (`minifw_course/`, its entry `minifw/course/`, its tests `tests/course/`)
# is never course work: it is not searched.
SOURCE_DIRS = ("minifw", "tests", "project")
SKIPPED = ("minifw/course/", "tests/course/")


def python_files(root: Path) -> list[Path]:
    """The .py files of SOURCE_DIRS under `root` that may hold fences, sorted.

    The tooling folders in SKIPPED are left out.
    """
    files: list[Path] = []
    for folder in SOURCE_DIRS:
        base = root / folder
        if base.is_dir():
            for path in base.rglob("*.py"):
                name = path.relative_to(root).as_posix()
                if "__pycache__" not in name and not name.startswith(SKIPPED):
                    files.append(path)
    return sorted(files)


def scan_fences(root: Path) -> dict[str, dict[str, list[str]]]:
    """Map each task id to {file relative to root: names of its fenced functions}."""
    found: dict[str, dict[str, list[str]]] = {}
    for path in python_files(root):
        source = path.read_text("utf-8")
        name = path.relative_to(root).as_posix()
        fences = find_fences(source, name)
        if not fences:
            continue
        tree = ast.parse(source, name)
        for fence in fences:
            found.setdefault(fence.task, {}).setdefault(name, [])
        for task, qualname, _node in fenced_functions(source, tree, fences, name):
            found[task][name].append(qualname)
    return found
