"""Find functions of a student repository that compute a task body of the reference.

Two functions are twins when their bodies (the docstring left out) have the same syntax
tree once local names are canonicalised: parameters and assigned names become `_0`,
`_1`, ... in order of first appearance, so renaming variables does not hide a copy.
Names read from outside (modules, globals, builtins) and attributes keep their spelling.
Bodies smaller than `MIN_NODES` syntax nodes (`return x * y`) are too common to tell a
copy from a coincidence and are not compared.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from pathlib import Path

from minifw_course.fences import fenced_functions, find_fences, python_files

MIN_NODES = 25
Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Twin:
    """A function of the repository whose body is a reference task body."""

    task: str
    reference: str  # file:qualname of the task's fenced function
    where: str  # file:line of the twin


class _Canon(ast.NodeTransformer):
    """Renames the local names of one function to `_0`, `_1`, ... by first appearance."""

    def __init__(self, local: set[str]) -> None:
        self.local = local
        self.names: dict[str, str] = {}

    def _rename(self, name: str) -> str:
        if name not in self.local:
            return name
        return self.names.setdefault(name, f"_{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self._rename(node.id), node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        return ast.copy_location(ast.arg(self._rename(node.arg), None), node)


def _local_names(node: Function) -> set[str]:
    local = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store | ast.Del):
            local.add(child.id)
        elif isinstance(child, ast.arg):
            local.add(child.arg)
    return local


def canonical_body(node: Function) -> str | None:
    """The canonical dump of a function's body, or None when it is too small to compare.

    The parameters are numbered first, in order, then the other local names as the body
    first uses them.
    """
    body = copy.deepcopy(node.body)  # the renaming below rewrites nodes in place
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    module = ast.Module(body=body, type_ignores=[])
    if sum(1 for _ in ast.walk(module)) < MIN_NODES:
        return None
    canon = _Canon(_local_names(node) - {"self", "cls"})
    canon.visit(ast.parse(ast.unparse(node.args).join(("def f(", "): pass"))))
    return ast.dump(canon.visit(module), annotate_fields=False)


def _functions(tree: ast.AST) -> list[Function]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def reference_bodies(reference: Path) -> dict[str, tuple[str, str]]:
    """Canonical body -> (task, file:qualname) for every fenced function of `reference`."""
    found: dict[str, tuple[str, str]] = {}
    for path in python_files(reference):
        source = path.read_text("utf-8")
        name = path.relative_to(reference).as_posix()
        fences = find_fences(source, name)
        if not fences:
            continue
        for task, qualname, node in fenced_functions(source, ast.parse(source), fences, name):
            key = canonical_body(node)
            if key is not None:
                found.setdefault(key, (task, f"{name}:{qualname}"))
    return found


def find_twins(reference: Path, repo: Path) -> list[Twin]:
    """Every function under `repo` (any .py file) whose body is a reference task body."""
    bodies = reference_bodies(reference)
    twins = []
    for path in sorted(repo.rglob("*.py")):
        name = path.relative_to(repo).as_posix()
        try:
            tree = ast.parse(path.read_text("utf-8"), name)
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in _functions(tree):
            key = canonical_body(node)
            if key is not None and key in bodies:
                task, where = bodies[key]
                twins.append(Twin(task, where, f"{name}:{node.lineno}"))
    return twins
