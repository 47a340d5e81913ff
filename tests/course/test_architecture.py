"""The layers of docs/ARCHITECTURE.md, checked on the source, package by package.

Every file under minifw/ is parsed with `ast`; every import it makes (at the top, inside
functions, under `if TYPE_CHECKING:`, or through `importlib.import_module("literal")`)
is resolved to a module of minifw and mapped to its layer. An import may point to its own
layer or any layer below it, never up. `minifw/__init__.py` and the thin `minifw.course`
entry sit above every layer. Also checked: minifw never imports the test and staff
toolchain, `import minifw` stays light, and functions stay short (STYLE.md).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

pytestmark = pytest.mark.staff

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "minifw"

# docs/ARCHITECTURE.md, "Layers": index = height. A module belongs to the layer of the
# longest package (or module) name that it is or lies inside.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("minifw.core",),
    ("minifw.scalar",),
    (
        "minifw.tensor_ops", "minifw.simple_ops", "minifw.fast_ops", "minifw.cuda_ops",
        "minifw.backends", "minifw._jit", "minifw._threads", "minifw.cuda", "minifw.cpu",
        "minifw.fast_paths",
    ),
    ("minifw.tensor",),
    (
        "minifw.nn", "minifw.optim", "minifw.utils", "minifw.serialization",
        "minifw.datasets", "minifw.autograd",
    ),
    ("minifw.tools", "minifw.compiler"),
)  # fmt: skip
TOP = len(LAYERS)  # above every layer: the package root and the course entry
TOP_MODULES = ("minifw", "minifw.course")
LAYER_NAMES = ("core", "scalar", "backends", "tensor", "nn/optim/utils", "tools/compiler", "top")

# Upward imports that are allowed, each with its reason: (importing file, imported module).
# None today: `backends.py` building FastOps and CudaOps is an import within layer 2, and
# `minifw/__init__.py` loads layer 5 lazily from the top.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}

# Top-level packages that minifw never imports: the staff and test toolchain, the app.
FORBIDDEN = ("minifw_course", "hypothesis", "pytest", "streamlit", "project", "tests")
FORBIDDEN_ALLOWED = {
    ("minifw/course/__main__.py", "minifw_course"): "the documented command "
    "`python -m minifw.course` hands over to the tooling; nothing imports this entry",
}

MAX_FUNCTION_LINES = 60
# Functions longer than the cap, each with its reason: "file:qualified name".
LONG_FUNCTIONS: dict[str, str] = {}
# The PyTorch surface (indexing, shaping, reductions, linear algebra, sorting, math) is
# part of the Tensor class, so it loads with it; the compiler, tools and course do not.
# fast_ops and the fast paths' kernel files load on first use (the first tensor on the
# fast backend, or a layer asking `backends.fast_path`). One module per optimizer (as
# torch.optim), the kernel-level API and losses apart from their functions: 67 modules.
MAX_MODULES_ON_IMPORT = 70


class Import(NamedTuple):
    """One import statement's target: the importing file, its line, the module named."""

    path: str
    line: int
    module: str


def module_name(path: Path) -> str:
    """The dotted module name of a file under minifw/ (`minifw.core.operators`)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


SOURCES = sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)
MODULES = {module_name(p) for p in SOURCES}


def layer_of(module: str) -> int | None:
    """The layer of a minifw module; TOP for the package root and the course entry."""
    if module in TOP_MODULES or module.startswith("minifw.course."):
        return TOP
    best: tuple[int, int] | None = None  # (length of the matching name, layer)
    for layer, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (
                best is None or len(name) > best[0]
            ):
                best = (len(name), layer)
    return None if best is None else best[1]


def _resolve_from(path: Path, node: ast.ImportFrom) -> Iterator[str]:
    """The modules a `from X import a, b` names: X.a where that is a module, else X."""
    if node.level:
        package = module_name(path).split(".")
        if path.name != "__init__.py":
            package.pop()
        base = ".".join(package[: len(package) - node.level + 1])
        target = f"{base}.{node.module}" if node.module else base
    else:
        target = node.module or ""
    for alias in node.names:
        child = f"{target}.{alias.name}"
        yield child if child in MODULES else target


def imports_of(path: Path, source: str | None = None) -> list[Import]:
    """Every module `path` (or `source`, read as if it were `path`) imports, wherever."""
    name = path.relative_to(REPO).as_posix()
    text = path.read_text("utf-8") if source is None else source
    found: set[Import] = set()
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, ast.Import):
            found |= {Import(name, node.lineno, alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {Import(name, node.lineno, m) for m in _resolve_from(path, node)}
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("importlib.import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(Import(name, node.lineno, node.args[0].value))
    return sorted(found)


ALL_IMPORTS = [found for path in SOURCES for found in imports_of(path)]


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in MODULES if layer_of(m) is None)
    assert unplaced == [], f"modules in no layer of docs/ARCHITECTURE.md: {unplaced}"


def test_the_scanner_sees_lazy_relative_and_type_checking_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import module, not_a_module\n"
        "if TYPE_CHECKING:\n"
        "    from minifw.tensor import Tensor\n"
        "def f():\n"
        "    from ..tools import viz\n"
        "    return importlib.import_module('minifw.compiler')\n"
    )
    found = imports_of(ROOT / "nn" / "probe.py", source)
    assert [(f.line, f.module) for f in found] == [
        (1, "typing"),
        (2, "minifw.nn"),
        (2, "minifw.nn.module"),
        (4, "minifw.tensor"),
        (6, "minifw.tools.viz"),
        (7, "minifw.compiler"),
    ]
    assert [layer_of(f.module) for f in found[1:]] == [4, 4, 3, 5, 5]
    assert layer_of("minifw") == layer_of("minifw.course.__main__") == TOP
    assert layer_of("minifw.tensor_ops") == 2 and layer_of("minifw.fast_paths.matmul") == 2


def test_no_import_runs_up_a_layer() -> None:
    upward = []
    for found in ALL_IMPORTS:
        target = layer_of(found.module)
        if not found.module.startswith("minifw") or target is None:
            continue
        own = layer_of(module_name(REPO / found.path))
        if own is None:
            continue  # test_every_module_has_a_layer names it
        if target > own and (found.path, found.module) not in ALLOWED_UPWARD:
            upward.append(
                f"{found.path}:{found.line}: {found.module} (layer {target}, "
                f"{LAYER_NAMES[target]}) from layer {own} ({LAYER_NAMES[own]})"
            )
    assert upward == [], "imports that run up a layer:\n" + "\n".join(upward)


def test_the_allow_list_is_still_needed() -> None:
    used = {(found.path, found.module) for found in ALL_IMPORTS}
    assert set(ALLOWED_UPWARD) <= used, "remove allow-list entries no import needs"


def test_minifw_never_imports_the_toolchain() -> None:
    bad = [
        f"{found.path}:{found.line}: imports {found.module}"
        for found in ALL_IMPORTS
        if found.module.split(".")[0] in FORBIDDEN
        and (found.path, found.module.split(".")[0]) not in FORBIDDEN_ALLOWED
    ]
    assert bad == [], "minifw imports the test/staff toolchain:\n" + "\n".join(bad)


def test_the_course_entry_only_hands_over_to_the_tooling() -> None:
    entry = [f for f in ALL_IMPORTS if f.path.startswith("minifw/course/")]
    assert {f.module for f in entry} <= {"sys", "minifw_course.cli"}, entry


def _python(code: str) -> str:
    """Run `code` in a fresh interpreter at the repository root; return its stdout."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_minifw_stays_light() -> None:
    loaded = [
        name
        for name in _python("import sys, minifw\nprint(*sys.modules)").split()
        if name.split(".")[0] in ("minifw", "minifw_course", "hypothesis", "numba")
    ]
    ours = [name for name in loaded if name == "minifw" or name.startswith("minifw.")]
    print(f"import minifw loads {len(ours)} minifw modules")
    heavy = [
        name
        for name in loaded
        if name.startswith(("minifw.compiler", "minifw.tools", "minifw_course", "hypothesis"))
        or name == "numba.cuda"
    ]
    assert heavy == [], f"import minifw loads {heavy}"
    assert len(ours) < MAX_MODULES_ON_IMPORT, f"import minifw loads {len(ours)} modules: {ours}"


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def function_lengths() -> dict[str, int]:
    """Lines of each function under minifw/ ("file:name"), decorators left out."""
    lengths = {}
    for path in SOURCES:
        name = path.relative_to(REPO).as_posix()
        for qualname, node in _functions(ast.parse(path.read_text("utf-8"))):
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            lengths[f"{name}:{qualname}"] = (node.end_lineno or node.lineno) - node.lineno + 1
    return lengths


def test_functions_stay_short() -> None:
    lengths = function_lengths()
    longest = max(lengths.items(), key=lambda item: item[1])
    print(f"longest function: {longest[0]} ({longest[1]} lines)")
    long = {
        name: n
        for name, n in lengths.items()
        if n > MAX_FUNCTION_LINES and name not in LONG_FUNCTIONS
    }
    assert long == {}, f"functions over {MAX_FUNCTION_LINES} lines; split them: {long}"
    stale = [name for name in LONG_FUNCTIONS if lengths.get(name, 0) <= MAX_FUNCTION_LINES]
    assert stale == [], f"exceptions no longer needed: {stale}"
