"""Adding an elementwise op takes the places docs/ARCHITECTURE.md's recipe names, no more.

The test adds a throwaway op, `cube` (x^3, derivative 3x^2), to a copy of the package
through the recipe: its scalar function and derivative rule in scalar_math.py, its row
in operators.py (which carries its gradient in tensor operations) and its Tensor method.
In a fresh process on that copy, everything else must follow from the row: the `mf.cube`
function and its place in `mf.__all__`, the in-place twin `cube_`, the autograd Function
`CubeBackward` and its second derivative, the row of the tests' op table
(tests/strategies.py), and the kernels of every backend, checked with gradcheck and a
second derivative.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minifw.backends import cuda_available

pytestmark = pytest.mark.extra  # the recipe's machinery is given code

ROOT = Path(__file__).resolve().parents[2]

FUNCTIONS = '''

def cube(x: float) -> float:
    """Return x^3."""
    return x * x * x


def cube_back(x: float, d: float) -> float:
    """Return d * d/dx x^3 = 3 d x^2."""
    return 3.0 * d * x * x
'''
ROW = "CUBE = unary_op(60, sm.cube, sm.cube_back, gradient=lambda a, g: g * (3.0 * a * a))\n\n"
METHOD = '''    def cube(self) -> Tensor:
        """x^3 cell by cell."""
        return math_ops.floating_unary(self, ops.CUBE)

'''

CHILD = """
import sys
import numpy as np
import tests.conftest  # the simulator's settings, as the suite runs it
import minifw as mf
from minifw.autograd import gradcheck
from minifw.core import operators as ops
from tests import strategies as mt

assert mf.__file__.startswith(sys.argv[1]), mf.__file__
assert "cube" in ops.METHODS and "cube" in mf.__all__ and mf.cube is mf.Tensor.cube
spec = mt.OPS_BY_NAME["cube"]
assert spec.code == ops.CUBE and spec.differentiable and spec.arity == 1
values = np.array([[-1.5, 0.5, 0.0], [2.0, -0.25, 1.0]])
for name in sys.argv[2:]:
    x = mf.tensor(values, backend=name, requires_grad=True)
    y = mf.cube(x)
    np.testing.assert_allclose(y.detach().numpy(), values**3, rtol=1e-15)
    assert y.grad_fn.name() == "CubeBackward", y.grad_fn.name()
    assert gradcheck(lambda t: t.cube(), [x]), name
    (g,) = mf.autograd.grad(y.sum(), x, create_graph=True)
    (second,) = mf.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(second.numpy(), 6.0 * values, rtol=1e-12)
    twin = x.detach().clone()
    assert twin.cube_() is twin
    np.testing.assert_allclose(twin.numpy(), values**3, rtol=1e-15)
    print(name, "ok")
"""


def insert_before(path: Path, anchor: str, text: str) -> None:
    """Insert `text` before the one line of `path` that starts with `anchor`."""
    source = path.read_text()
    assert source.count("\n" + anchor) == 1, f"{path.name}: no single line {anchor!r}"
    path.write_text(source.replace("\n" + anchor, "\n" + text + anchor))


def test_an_op_added_through_the_recipe_runs_everywhere(tmp_path: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc")
    shutil.copytree(ROOT / "minifw", tmp_path / "minifw", ignore=ignore)
    (tmp_path / "tests").mkdir()
    for name in ("conftest.py", "strategies.py"):
        shutil.copy(ROOT / "tests" / name, tmp_path / "tests" / name)
    core = tmp_path / "minifw" / "core"
    with (core / "scalar_math.py").open("a") as source:
        source.write(FUNCTIONS)
    insert_before(core / "operators.py", "# ---- Derived from the rows", ROW)
    insert_before(tmp_path / "minifw" / "tensor" / "tensor.py", "    def sign(self)", METHOD)
    backends = ["simple", "fast"] + (["cuda"] if cuda_available() else [])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "MINIFW_COMPILE_AHEAD": "0",
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), *backends],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split() == [word for name in backends for word in (name, "ok")]
