"""The catalog, the fences, the module guides and the test markers cannot disagree.

Each guide `docs/moduleN.md` is written by hand except its task table, the block that
`python -m minifw.course docs` generates from the fences and the catalog. Markers are
read statically (no test module is imported), so these checks stay quick; the marker
check of the collected suite is tests/test_markers.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from minifw_course.catalog import TASK_INFO
from minifw_course.docs import generated_block, render_task_block, task_files, task_names
from minifw_course.fences import scan_fences
from minifw_course.prune import file_tasks
from minifw_course.tasks import COURSE_TASKS, MODULES, TASKS, tasks_of_module

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "run `python -m minifw.course docs` to regenerate the block"
# Markers of pytest itself and its plugins: not the course's business.
PLUGIN_MARKERS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings",
                  "timeout", "hypothesis"}  # fmt: skip
COURSE_MARKERS = {task.marker for task in TASKS} | {"extra", "staff", "slow"}


@pytest.fixture(scope="module")
def scan() -> dict[str, dict[str, list[str]]]:
    return scan_fences(ROOT)


def guide(module: int) -> str:
    path = ROOT / "docs" / f"module{module}.md"
    assert path.is_file(), f"{path} is missing: every module has a hand-written guide"
    return path.read_text("utf-8")


def test_files_come_from_the_fences(scan) -> None:
    for task in TASKS:
        files = task_files(task, scan)
        assert files, f"task {task.id}: no fence and no `also` path in catalog.py"
        assert set(scan.get(task.id, {})) <= set(files)
        missing = [name for name in files if not (ROOT / name).exists()]
        assert missing == [], f"task {task.id}: catalog.py names missing paths {missing}"
        fenced_too = set(TASK_INFO[task.id].also) & set(scan.get(task.id, {}))
        assert not fenced_too, f"task {task.id}: {fenced_too} are fenced; drop them from `also`"


@pytest.mark.parametrize("module", MODULES)
def test_each_task_has_a_section_in_its_guide(module: int) -> None:
    page = guide(module)
    for task in tasks_of_module(module):
        heading = re.compile(rf"^## Task {re.escape(task.id)}\b", re.MULTILINE)
        assert heading.search(page), f"docs/module{module}.md has no `## Task {task.id}` section"


@pytest.mark.parametrize("module", MODULES)
def test_the_generated_block_is_up_to_date(module: int, scan) -> None:
    block = generated_block(guide(module))
    assert block is not None, f"docs/module{module}.md has no generated block; {REGENERATE}"
    assert block == render_task_block(module, scan), f"docs/module{module}.md: {REGENERATE}"
    for task in tasks_of_module(module):
        for name in task_names(task, scan):
            assert f"`{name}`" in block, f"task {task.id}: fenced {name} is not in the block"
        for name in task_files(task, scan):
            assert f"`{name}`" in block, f"task {task.id}: {name} is not in the block"


def _test_files() -> list[Path]:
    return sorted(p for p in (ROOT / "tests").rglob("*.py") if "__pycache__" not in p.parts)


def _marker_names(tree: ast.AST) -> set[str]:
    """The NAME of every `mark.NAME` / `pytest.mark.NAME` in a parsed file."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = node.value
            owned = (isinstance(owner, ast.Name) and owner.id == "mark") or (
                isinstance(owner, ast.Attribute) and owner.attr == "mark"
            )
            if owned:
                names.add(node.attr)
    return names


def test_every_marker_is_a_course_task_or_extra_staff_slow() -> None:
    strays = {}
    for path in _test_files():
        names = _marker_names(ast.parse(path.read_text("utf-8"), str(path)))
        unknown = names - COURSE_MARKERS - PLUGIN_MARKERS
        if unknown:
            strays[path.relative_to(ROOT).as_posix()] = sorted(unknown)
    assert strays == {}, f"markers that are no course task, extra, staff or slow: {strays}"


def test_every_task_has_a_test() -> None:
    tested: set[str] = set()
    for path in _test_files():
        if path.name.startswith("test_") or path.name.endswith("_test.py"):
            tested |= file_tasks(path.read_text("utf-8"), str(path))
    untested = [task for task in COURSE_TASKS if task not in tested]
    assert untested == [], f"tasks with no marked test: {untested}"


def test_the_marker_reader_sees_what_it_must() -> None:
    tree = ast.parse("@pytest.mark.task0_1\n@mark.slow\n@pytest.mark.parametrize('x', [])\n"
                     "def test_x(x): pass\n")  # fmt: skip
    assert _marker_names(tree) == {"task0_1", "slow", "parametrize"}
