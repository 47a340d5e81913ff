"""What a released module holds: no solution of any module, no later module's files, and
graded tests that never skip themselves (a skip scores 0, so the reference would lose marks).
"""

from __future__ import annotations

import ast
import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minifw_course.assignment import LATER_FILES
from minifw_course.catalog import TASK_INFO
from minifw_course.classroom import COMMAND_GRADER, WORKFLOW_PATH, step_id
from minifw_course.prune import _Reader, task_labels
from minifw_course.tasks import MODULES, tasks_of_module
from minifw_course.twins import Twin, canonical_body, find_twins, reference_bodies

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[2]
# What the bundle installs (autograder.GRADING_PACKAGES), by import name: a test file may
# skip itself at import when one of these is missing, never for anything else.
GRADING_IMPORTS = {"numpy", "numba", "pytest", "hypothesis", "sklearn", "tqdm"}


@pytest.mark.parametrize("module", MODULES)
def test_no_function_of_a_student_repository_computes_a_task_body(module: int, student) -> None:
    twins = find_twins(ROOT, student(module))
    assert twins == [], "\n".join(f"{t.where} is {t.reference} (task {t.task})" for t in twins)


@pytest.mark.parametrize("module", MODULES)
def test_later_modules_files_are_left_out(module: int, student) -> None:
    out = student(module)
    for later, names in LATER_FILES.items():
        for name in names:
            assert (ROOT / name).is_file(), f"LATER_FILES names {name}, which is gone"
            assert (out / name).is_file() == (later <= module), name


def test_the_twin_finder_sees_a_copy_with_renamed_locals(tmp_path: Path) -> None:
    source = (ROOT / "minifw/core/autodiff.py").read_text("utf-8")
    tree = ast.parse(source)
    node = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "topological_sort"
    )
    assert canonical_body(node) in reference_bodies(ROOT)
    renamed = ast.unparse(node).replace("visited", "seen").replace("stack", "todo")
    renamed = renamed.replace("def topological_sort", "def _graph_order")
    (tmp_path / "engine.py").write_text(renamed + "\n", "utf-8")
    assert find_twins(ROOT, tmp_path) == [
        Twin("1.4", "minifw/core/autodiff.py:topological_sort", "engine.py:1")
    ]
    (tmp_path / "engine.py").write_text(renamed.replace("order.append", "order.insert"), "utf-8")
    assert find_twins(ROOT, tmp_path) == []


def _skips(node: ast.AST) -> list[str]:
    """The `pytest.skip(...)` / `pytest.importorskip(...)` calls under `node`, as text."""
    found = []
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            called = child.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name in ("skip", "importorskip"):
                found.append(ast.unparse(child))
    return found


def _imported_by_skip(call: str) -> str:
    return call.split("(", 1)[1].split(",")[0].strip("'\") ").split(".")[0]


def test_no_graded_test_skips_itself_at_run_time() -> None:
    problems = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith(("tests/course/", "tests/fast_paths/")):
            continue
        tree = ast.parse(path.read_text("utf-8"), name)
        reader = _Reader(tree)
        graded = [u for u in reader.units if task_labels(u.labels) and "extra" not in u.labels]
        if not graded or {"extra", "staff"} & reader.module_labels:
            continue
        top = [s for node in tree.body if not isinstance(node, ast.FunctionDef | ast.ClassDef)
               for s in _skips(node)]  # fmt: skip
        problems += [f"{name}: {call}" for call in top if _imported_by_skip(call) not in
                     GRADING_IMPORTS or "importorskip" not in call]  # fmt: skip
        for unit in graded:
            problems += [f"{name}::{unit.name}: {call}" for call in _skips(unit.node)]
    assert problems == [], "graded tests that skip themselves:\n" + "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_every_task_test_of_a_student_repository_collects(module: int, student) -> None:
    out = student(module)
    markers = " or ".join(task.marker for m in MODULES if m <= module
                          for task in tasks_of_module(m))  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q", "-m", markers],
        cwd=out,
        env=dict(os.environ, PYTHONPATH=str(out), PYTHONDONTWRITEBYTECODE="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "error" not in done.stdout.splitlines()[-1]


@pytest.mark.parametrize("module", MODULES)
def test_the_classroom_workflow_has_one_step_per_task_with_its_points(
    module: int, student
) -> None:
    text = (student(module) / WORKFLOW_PATH).read_text("utf-8")
    tasks = tasks_of_module(module)
    assert text.count(f"uses: {COMMAND_GRADER}") == len(tasks)
    for task in tasks:
        step = text.split(f"id: {step_id(task)}\n", 1)[1].split("- name:", 1)[0]
        assert f'command: "python -m pytest -q -p no:cacheprovider -m {task.marker}"' in step
        assert f"max-score: {TASK_INFO[task.id].points:g}\n" in step
        assert (
            f'{step_id(task).upper()}_RESULTS: "${{{{steps.{step_id(task)}.outputs.result}}}}"'
            in text
        )
    assert f"runners: {','.join(step_id(t) for t in tasks)}\n" in text
    assert 'pip install -e ".[test]"' in text and "HYPOTHESIS_PROFILE" in text
    assert ("NUMBA_ENABLE_CUDASIM" in text) == (module == 3)


@pytest.mark.parametrize("module", MODULES)
def test_the_student_test_extra_is_light(module: int, student) -> None:
    config = configparser.ConfigParser()
    config.read(student(module) / "setup.cfg")
    extras = {name: config.get("options.extras_require", name).split()
              for name in config.options("options.extras_require")}  # fmt: skip
    names = {req.split(">")[0].split("=")[0] for req in extras["test"]}
    assert {"pytest", "pytest-timeout", "hypothesis"} <= names
    assert names <= {"pytest", "pytest-timeout", "hypothesis", "tqdm", "scikit-learn"}
    assert ("tqdm" in names) == (module >= 1) and ("scikit-learn" in names) == (module >= 4)
    assert any(req.startswith("torch") for req in extras["oracle"])
    assert any(req.startswith("streamlit") for req in extras["app"])
    readme = (student(module) / "README.md").read_text("utf-8")
    assert '".[app]"' in readme and '".[oracle]"' in readme
    assert ("minifw.course sync" in readme) == (module > 0)
