"""Fixtures for the course tooling tests: small synthetic repositories in tmp_path.

The mini reference repository has a package called `minifw` with one fenced
function for each of tasks 0.1, 1.1 and 2.1 (a method of a fenced class), and tests
for each, marked as the course requires. Variants replace single files to make
broken submissions.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from minifw_course.assignment import make_assignment
from minifw_course.tasks import COURSE_TASKS

REPO_ROOT = Path(__file__).resolve().parents[2]

CONFTEST = (
    "def pytest_configure(config):\n"
    + "".join(
        f'    config.addinivalue_line("markers", "task{t.replace(".", "_")}: task {t}")\n'
        for t in COURSE_TASKS
    )
    + '    config.addinivalue_line("markers", "staff: tooling")\n'
)

MINI_FILES = {
    "setup.cfg": """
        [tool:pytest]
        testpaths = tests
        addopts = --strict-markers
    """,
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
    """,
    "minifw/__init__.py": '''
        """A mini framework for the tooling tests."""
    ''',
    "minifw/ops.py": '''
        """Mini operators."""

        from __future__ import annotations

        import functools

        # BEGIN TASK 0.1


        @functools.lru_cache(maxsize=None)
        def mul(x: float, y: float) -> float:
            """Return x * y."""
            return x * y


        # END TASK 0.1

        # BEGIN TASK 1.1


        def square_back(x: float, d: float) -> float:
            """Return d times the derivative of x * x."""
            # the hint below goes with the body
            return 2.0 * x * d


        # END TASK 1.1


        def untouched(x: float) -> float:
            """Outside every fence: stays as it is."""
            return x + 1.0
    ''',
    "minifw/strided.py": '''
        """Mini strides."""

        from __future__ import annotations


        class Strided:
            """Strides of a shape."""

            kind = "row-major"

            # BEGIN TASK 2.1
            def strides(self, shape: tuple[int, ...]) -> tuple[int, ...]:
                """Return the row-major strides of `shape`."""
                out, step = [], 1
                for size in reversed(shape):
                    out.append(step)
                    step *= size
                return tuple(reversed(out))

            # END TASK 2.1
    ''',
    "tests/conftest.py": CONFTEST,
    "tests/test_ops.py": """
        import pytest

        from minifw import ops


        @pytest.mark.task0_1
        def test_mul():
            assert ops.mul(2.0, 3.0) == 6.0


        @pytest.mark.task0_1
        @pytest.mark.parametrize("x", [0.0, 1.5, -2.0])
        def test_mul_by_one(x):
            assert ops.mul(x, 1.0) == x


        @pytest.mark.task1_1
        def test_square_back():
            assert ops.square_back(3.0, 2.0) == 12.0


        @pytest.mark.task1_1
        def test_square_back_of_a_negative():
            assert ops.square_back(-1.0, 1.0) == -2.0


        @pytest.mark.task2_1
        def test_strides_in_a_mixed_file():
            from minifw.strided import Strided

            assert Strided().strides((4, 5)) == (5, 1)
    """,
    "tests/test_strided.py": """
        import pytest

        from minifw.strided import Strided

        pytestmark = pytest.mark.task2_1


        def test_strides():
            assert Strided().strides((2, 3, 4)) == (12, 4, 1)


        def test_kind():
            assert Strided.kind == "row-major"
    """,
    "project/train.py": '''
        """A training script: no fences, copied as it is."""
    ''',
}


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (relative path -> dedented text) under `root`; return root."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), "utf-8")
    return root


@pytest.fixture
def mini_files() -> dict[str, str]:
    """The files of the mini reference repository (a copy to edit)."""
    return dict(MINI_FILES)


@pytest.fixture
def make_mini_repo(tmp_path: Path) -> Callable[..., Path]:
    """Build the mini reference repository, with some files replaced, under tmp_path."""
    counter = iter(range(1000))

    def make(overrides: dict[str, str] | None = None, name: str = "") -> Path:
        root = tmp_path / (name or f"repo{next(counter)}")
        root.mkdir()
        return write_files(root, {**MINI_FILES, **(overrides or {})})

    return make


def run_pytest_in(
    repo: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run pytest in `repo` with only `repo` on the import path (no install needed)."""
    env = dict(os.environ, PYTHONPATH=str(repo), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_course(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `python -m minifw.course ARGS` with this checkout's minifw, from `cwd`."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [sys.executable, "-m", "minifw.course", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def tests_in() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_pytest_in` as a fixture."""
    return run_pytest_in


@pytest.fixture
def course_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_course` as a fixture."""
    return run_course


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """The student repository of a module of the real course, made once per test module."""
    made: dict[int, Path] = {}

    def get(module: int) -> Path:
        if module not in made:
            out = tmp_path_factory.mktemp(f"student{module}") / "repo"
            make_assignment(REPO_ROOT, out, module)
            made[module] = out
        return made[module]

    return get
