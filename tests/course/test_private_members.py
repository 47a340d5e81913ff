"""nn, optim and the compiler reach below the Tensor through two doors only.

A Tensor's cells through `minifw.tensor.kernel_api`, and the expert kernels through
`backends.fast_path`: no file of theirs imports `minifw.fast_paths`. Every file under
minifw/nn, minifw/optim and minifw/compiler is parsed with `ast`; an attribute read or
write whose name is a private member of `Tensor` (`t._data`, `t._zip(...)`, `t._grad`)
is refused: the kernel-level API (docs/ARCHITECTURE.md, "The kernel-level API") is the
way down.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from minifw.tensor.tensor import Tensor

pytestmark = pytest.mark.staff

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("minifw/nn", "minifw/optim", "minifw/compiler")

# PyTorch's own underscored names, public there too: `t._version`, `t._base`.
PYTORCH_NAMES = {"_version", "_base"}


def tensor_private_names() -> set[str]:
    """Tensor's private attributes and methods (one underscore, not dunders)."""
    names = set(dir(Tensor)) | set(Tensor.__slots__)
    return {
        n for n in names if n.startswith("_") and not n.startswith("__") and n not in PYTORCH_NAMES
    }


def private_uses(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each `x.<name>` in `source` where `x` is not `self` or `cls`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or node.attr not in names:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append((node.lineno, node.attr))
    return found


def uses_by_file() -> dict[str, list[tuple[int, str]]]:
    """Each file of PACKAGES with its uses of Tensor's private members."""
    names = tensor_private_names()
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            uses = private_uses(path.read_text("utf-8"), names)
            if uses:
                out[path.relative_to(REPO).as_posix()] = uses
    return out


def test_the_scanner_sees_reads_writes_and_calls() -> None:
    names = {"_data", "_zip", "_grad"}
    source = "a = t._data\nt._grad = None\nu = x._zip(1, y)\nself._data = 3\nz = t.data\n"
    assert private_uses(source, names) == [(1, "_data"), (2, "_grad"), (3, "_zip")]


def test_tensor_has_the_private_members_the_scanner_looks_for() -> None:
    assert {"_data", "_zip", "_map", "_reduce", "_new", "_grad"} <= tensor_private_names()


def test_nn_optim_and_compiler_use_no_private_tensor_member() -> None:
    found = {path: Counter(name for _, name in uses) for path, uses in uses_by_file().items()}
    assert found == {}, f"use minifw.tensor.kernel_api instead: {found}"


def test_only_fast_ops_opens_the_fast_paths_to_the_layers_above() -> None:
    opened = []
    for package in (*PACKAGES, "minifw/tools", "minifw/utils"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                named = []
                if isinstance(node, ast.Import):
                    named = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                if any(name.startswith("minifw.fast_paths") for name in named):
                    opened.append(f"{path.relative_to(REPO).as_posix()}:{node.lineno}")
    assert opened == [], f"use minifw.backends.fast_path instead: {opened}"
