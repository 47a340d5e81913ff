"""The layering of DESIGN.md and the size limits of STYLE.md, checked on the source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[2] / "minifw"

# DESIGN.md's layers: a module imports (at run time) only from its own layer or below.
LAYERS: dict[int, set[str]] = {
    0: {
        "operators", "autodiff", "datasets", "dtypes", "random", "_jit", "_simd_math",
        "tensor_repr", "_profile_report", "nn.module", "nn.module_hooks", "nn.module_state",
    },
    1: {"tensor_data", "scalar_functions"},
    2: {"scalar", "tensor_ops", "simple_ops"},
    3: {"fast_ops", "fast_matmul", "cuda_ops", "_launch_hooks"},
    4: {"backends", "tensor_functions"},
    5: {
        "tensor", "tensor_autograd", "tensor_convert", "tensor_inplace", "tensor_math",
        "tensor_reduce", "tensor_shape", "tensor_views", "creation",
    },
    6: {
        "nn.functional", "nn.activation", "nn.conv", "nn.loss", "autograd", "cuda", "utils",
        "utils.checkpoint", "utils.data",
    },
    7: {
        "nn", "nn.layers", "nn.containers", "nn.losses", "optim", "serialization", "viz",
        "testing", "profiler", "compile", "_capture", "_fusion", "_replay", "",
    },
}  # fmt: skip
LAYER_OF = {name: layer for layer, names in LAYERS.items() for name in names}
MAX_LINES = 550
MAX_COLUMNS = 99
PRAGMA = re.compile(r"\s+#\s*(type:|noqa|fmt:).*$")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(name: str) -> int:
    if name == "course" or name.startswith("course."):
        return 7
    return LAYER_OF[name]


def runtime_imports(path: Path) -> set[str]:
    """minifw modules imported by `path`, leaving out `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text("utf-8"))
    package = (
        module_name(path).split(".")
        if path.name == "__init__.py"
        else (module_name(path).split(".")[:-1])
    )
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                if node.module:
                    found.add(".".join([*base, node.module]))
                else:
                    found.update(".".join([*base, alias.name]) for alias in node.names)
            elif node.module and node.module.split(".")[0] == "minifw":
                found.add(node.module.removeprefix("minifw").lstrip("."))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "minifw":
                    found.add(alias.name.removeprefix("minifw").lstrip("."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    known = {module_name(p) for p in ROOT.rglob("*.py")}
    # `from . import x` names a module only if x is one; otherwise it is an attribute.
    return {name if name in known else name.rsplit(".", 1)[0] for name in found} - {
        module_name(path)
    }


SOURCES = sorted(ROOT.rglob("*.py"))


def test_every_module_has_a_layer():
    missing = [module_name(p) for p in SOURCES if not module_name(p).startswith("course")]
    assert [m for m in missing if m not in LAYER_OF] == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p) or "minifw")
def test_imports_point_down(path):
    own = layer_of(module_name(path))
    upward = {dep: layer_of(dep) for dep in runtime_imports(path) if layer_of(dep) > own}
    assert upward == {}, f"{module_name(path)} (layer {own}) imports from higher layers"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p) or "minifw")
def test_files_stay_small(path):
    lines = path.read_text("utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"{path.name}: {len(lines)} lines; split it"
    # As in ruff, a trailing pragma comment (type: ignore, noqa, fmt) does not count.
    wide = [i + 1 for i, line in enumerate(lines) if len(PRAGMA.sub("", line)) > MAX_COLUMNS]
    assert wide == [], f"{path.name}: lines over {MAX_COLUMNS} columns: {wide}"


def test_import_minifw_does_not_import_numba_cuda():
    import subprocess
    import sys

    code = "import sys, minifw; print('numba.cuda' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
