"""Carry a student's work into the next module's repository: `sync OLD_REPO NEW_REPO`.

Both folders must be student repositories written by make-assignment (they record their
module in `minifw_course/assignment.json`), OLD of an earlier module than NEW. Fences are
matched by task and by the names of the functions they hold, wherever the file now lives
(a fence whose file moved between modules is still found). For each matched fence:

- OLD's fence is still a stub (every function raises the stub's NotImplementedError):
  nothing to carry, NEW's fence stays as it is;
- NEW's fence is a stub: OLD's fenced lines replace it ("filled");
- NEW's fence is not a stub (released solutions, or work already carried) and differs:
  it is kept, unless `force` is given ("kept"; never overwritten silently).

A fence whose functions differ between the two modules is reported and left alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from minifw_course.assignment import assignment_module
from minifw_course.fences import Fence, FenceError, fenced_functions, find_fences, python_files

Key = tuple[str, tuple[str, ...]]  # (task, names of the fenced functions)


class SyncError(RuntimeError):
    """The two folders cannot be synced (not student repositories, wrong module order)."""


@dataclass
class Region:
    """One fence of one file: where it is, what it holds, whether it is still a stub."""

    path: Path
    fence: Fence
    names: tuple[str, ...]
    stub: bool
    lines: list[str]  # the lines strictly between the two fence comments


@dataclass
class SyncReport:
    """What sync did, fence by fence: `task file (names)` lines by outcome."""

    old_module: int
    new_module: int
    filled: list[str] = field(default_factory=list)
    stubs: list[str] = field(default_factory=list)  # still stubs in NEW afterwards
    kept: list[str] = field(default_factory=list)  # NEW's own work, not overwritten
    unmatched: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """The report for the terminal."""
        lines = [f"synced module {self.old_module} work into module {self.new_module}: "
                 f"{len(self.filled)} fences filled, {len(self.stubs)} still stubs, "
                 f"{len(self.kept)} kept, {len(self.unmatched)} not matched"]  # fmt: skip
        for title, entries in (("filled", self.filled), ("kept (pass --force to replace)",
                               self.kept), ("not matched", self.unmatched)):  # fmt: skip
            lines += [f"  {title}: {entry}" for entry in entries]
        counts: dict[str, int] = {}
        for entry in self.stubs:  # "task x.y file (names)"
            task = entry.split()[1]
            counts[task] = counts.get(task, 0) + 1
        if counts:
            lines.append(
                "  still stubs: "
                + ", ".join(
                    f"task {task} ({n} fence{'s' if n > 1 else ''})" for task, n in counts.items()
                )
            )
        return "\n".join(lines)


def _is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef, task: str) -> bool:
    last = node.body[-1]
    if not (isinstance(last, ast.Raise) and isinstance(last.exc, ast.Call)):
        return False
    called, args = last.exc.func, last.exc.args
    if not (isinstance(called, ast.Name) and called.id == "NotImplementedError" and args):
        return False
    text = args[0]
    while isinstance(text, ast.BinOp):  # implicit concatenation folds; "+" does not
        text = text.left
    return (
        isinstance(text, ast.Constant)
        and isinstance(text.value, str)
        and text.value.startswith(f"Task {task}:")
    )


def regions(root: Path) -> dict[Key, list[Region]]:
    """Every fence of a repository, by task and function names."""
    found: dict[Key, list[Region]] = {}
    for path in python_files(root):
        source = path.read_text("utf-8")
        name = path.relative_to(root).as_posix()
        fences = find_fences(source, name)
        if not fences:
            continue
        functions = fenced_functions(source, ast.parse(source, name), fences, name)
        lines = source.splitlines(keepends=True)
        for fence in fences:
            inside = [(q, n) for t, q, n in functions if fence.begin < n.lineno < fence.end]
            names = tuple(q for q, _ in inside)
            stub = bool(inside) and all(_is_stub(n, fence.task) for _, n in inside)
            region = Region(path, fence, names, stub, lines[fence.begin : fence.end - 1])
            found.setdefault((fence.task, names), []).append(region)
    return found


def _describe(root: Path, region: Region) -> str:
    names = ", ".join(region.names) or "no functions"
    return f"task {region.fence.task} {region.path.relative_to(root).as_posix()} ({names})"


def check_repos(old: Path, new: Path) -> tuple[int, int]:
    """The modules of OLD and NEW, or SyncError saying in one line what is wrong."""
    modules = []
    for label, root in (("OLD_REPO", old), ("NEW_REPO", new)):
        if not root.is_dir():
            raise SyncError(f"{label} {root} is not a folder")
        module = assignment_module(root)
        if module is None:
            raise SyncError(f"{label} {root} is not a minifw student repository "
                            "(no minifw_course/assignment.json from make-assignment)")  # fmt: skip
        modules.append(module)
    if old.resolve() == new.resolve():
        raise SyncError(f"OLD_REPO and NEW_REPO are the same folder ({old})")
    if modules[0] >= modules[1]:
        raise SyncError(f"OLD_REPO is module {modules[0]} and NEW_REPO module {modules[1]}: "
                        "sync carries work from an earlier module into a later one")  # fmt: skip
    return modules[0], modules[1]


def sync(old: Path, new: Path, force: bool = False) -> SyncReport:
    """Copy the student's fenced work from `old` into `new` (see the module doc)."""
    old_module, new_module = check_repos(old, new)
    try:
        before, after = regions(old), regions(new)
    except (FenceError, SyntaxError, UnicodeDecodeError) as error:
        raise SyncError(f"cannot read the fences: {error}") from error
    report = SyncReport(old_module, new_module)
    edits: dict[Path, list[tuple[Region, list[str]]]] = {}
    for key, targets in sorted(after.items()):
        sources = before.get(key, [])
        for index, target in enumerate(targets):
            source = sources[index] if index < len(sources) else None
            outcome = _carry(source, target, force)
            if outcome == "filled":
                assert source is not None
                edits.setdefault(target.path, []).append((target, source.lines))
            entry = _describe(new, target)
            {"filled": report.filled, "kept": report.kept, "stub": report.stubs,
             "same": [], "unmatched": report.unmatched}[outcome].append(entry)  # fmt: skip
    gone = [r for key, rs in sorted(before.items()) if key not in after for r in rs]
    report.unmatched += [f"{_describe(old, r)} (in OLD_REPO only)" for r in gone if not r.stub]
    for path, changes in edits.items():
        _write(path, changes)
    return report


def _carry(source: Region | None, target: Region, force: bool) -> str:
    """What to do with one fence of NEW: filled, kept, stub, same or unmatched."""
    if source is None:
        return "stub" if target.stub else "same"
    if source.stub or source.lines == target.lines:
        return "stub" if target.stub else "same"
    if target.stub or force:
        return "filled"
    return "kept"


def _write(path: Path, changes: list[tuple[Region, list[str]]]) -> None:
    lines = path.read_text("utf-8").splitlines(keepends=True)
    for region, replacement in sorted(changes, key=lambda c: c[0].fence.begin, reverse=True):
        lines[region.fence.begin : region.fence.end - 1] = replacement
    text = "".join(lines)
    ast.parse(text, str(path))  # a fence's lines are whole functions: still parses
    path.write_text(text, "utf-8")
