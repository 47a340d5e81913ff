"""A student's first hour in a generated repository of this course, module by module.

For each module the repository made by make-assignment from this checkout must say
what to do first (README), keep the app on localhost, raise stubs that name their task
and guide, hold no `extra` or `staff` test, and let `pytest -m taskN_1` collect without
errors even where the optional packages (the app's, PyTorch) are missing. The `slow`
checks install a module-0 repository in a fresh virtual environment and run its first
task's tests, and grade a half-solved module-0 submission end to end.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from minifw_course.fences import fenced_functions, find_fences, python_files, scan_fences
from minifw_course.grade import grade, parse_tasks
from minifw_course.prune import file_labels
from minifw_course.tasks import MODULES, TASKS, tasks_of_module

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[2]
MODULE_OF = {task.id: task.module for task in TASKS}
# Packages of the optional extras (app, digits, oracle): a test file must not need them
# to be collected, or `pytest -m taskN_1` stops before running anything.
OPTIONAL = ("streamlit", "matplotlib", "pandas", "sklearn", "torch", "websockets")


@pytest.mark.parametrize("module", MODULES)
def test_the_readme_says_what_to_do_first(module: int, student) -> None:
    out = student(module)
    readme = (out / "README.md").read_text("utf-8")
    start = readme.index("## Start here")
    first = tasks_of_module(module)[0].marker
    wanted = ['pip install -e ".[test]"', f"pytest -m {first}", f"docs/module{module}.md",
              "# BEGIN TASK x.y"]  # fmt: skip
    places = [readme.find(text, start) for text in wanted]
    assert -1 not in places and places == sorted(places), dict(zip(wanted, places, strict=True))
    assert (out / f"docs/module{module}.md").is_file()
    config = (out / ".streamlit/config.toml").read_text("utf-8")
    server = config.split("[server]", 1)[1].split("\n[", 1)[0]  # the [server] table
    assert re.search(r'^address\s*=\s*"localhost"', server, re.M), config


def _raised_message(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The message of the `raise NotImplementedError("...")` a stub's body ends with."""
    last = node.body[-1]
    if not (isinstance(last, ast.Raise) and isinstance(last.exc, ast.Call)):
        return None
    called, args = last.exc.func, last.exc.args
    if not (isinstance(called, ast.Name) and called.id == "NotImplementedError" and args):
        return None
    text = args[0]
    return text.value if isinstance(text, ast.Constant) and isinstance(text.value, str) else None


@pytest.mark.parametrize("module", MODULES)
def test_every_stub_names_its_task_and_guide(module: int, student) -> None:
    out = student(module)
    stubs = 0
    for path in python_files(out):
        source = path.read_text("utf-8")
        name = path.relative_to(out).as_posix()
        fences = find_fences(source, name)
        if not fences:
            continue
        for task, qualname, node in fenced_functions(source, ast.parse(source), fences, name):
            if MODULE_OF[task] < module:
                continue  # an earlier module's solution
            message = _raised_message(node)
            assert message is not None, f"{name}: {qualname} (task {task}) is not a stub"
            assert message.startswith(f"Task {task}: implement {qualname}: "), message
            assert message.endswith(f"(see docs/module{MODULE_OF[task]}.md)"), message
            stubs += 1
    assert stubs > 0 or not any(MODULE_OF[t] >= module for t in scan_fences(ROOT))


@pytest.mark.parametrize("module", MODULES)
def test_no_extra_or_staff_test_reaches_students(module: int, student) -> None:
    out = student(module)
    assert not (out / "tests/course").exists()
    found = {}
    for path in sorted((out / "tests").rglob("*.py")):
        labels = file_labels(path.read_text("utf-8"), str(path)) & {"extra", "staff"}
        if labels:
            found[path.relative_to(out).as_posix()] = sorted(labels)
    assert found == {}
    assert any((out / "tests").rglob("test_*.py")), "no test file left at all"


def blocked_packages(folder: Path) -> Path:
    """A folder of stand-ins that fail to import as if OPTIONAL were not installed."""
    for name in OPTIONAL:
        package = folder / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(
            f'raise ModuleNotFoundError("No module named {name!r} (left out by the test)", '
            f"name={name!r})\n"
        )
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES)
def test_the_first_task_collects_without_optional_packages(
    module: int, student, tmp_path: Path
) -> None:
    out = student(module)
    first = tasks_of_module(module)[0].marker
    path = os.pathsep.join([str(blocked_packages(tmp_path / "blocked")), str(out)])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q", "-m", first],
        cwd=out,
        env=dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert re.search(r"^\d+/\d+ tests collected", done.stdout, re.M), output[-2000:]
    assert "error" not in done.stdout.splitlines()[-1]


def fresh_venv(folder: Path) -> Path:
    """A virtual environment that sees this interpreter's packages; return its python.

    `--system-site-packages` alone would see the base interpreter's packages only; a
    .pth line adds this environment's, so installing needs the package index only for
    the build backend, never for PyTorch.
    """
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(folder)],
                   check=True, timeout=300)  # fmt: skip
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "_minifw_parent_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.slow
def test_a_fresh_install_runs_the_first_task_red(student, tmp_path: Path) -> None:
    out = student(0)
    python = fresh_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-e", ".[test]"],
        cwd=out, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    where = subprocess.run([str(python), "-c", "import minifw; print(minifw.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)  # fmt: skip
    assert where.stdout.strip() == str(out / "minifw" / "__init__.py"), where.stderr
    ran = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "task0_1"],
        cwd=out, env={**env, "HYPOTHESIS_PROFILE": "grade"}, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    summary = ran.stdout.strip().splitlines()[-1]
    assert ran.returncode == 1, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert re.search(r"\d+ failed", summary) and "error" not in summary, summary
    assert "NotImplementedError: Task 0.1: implement " in ran.stdout


def fill_task(submission: Path, reference: Path, task: str) -> list[str]:
    """Copy the reference's code inside the fences of `task` into the submission's files."""
    filled = []
    for name in sorted(scan_fences(reference).get(task, {})):
        theirs = (reference / name).read_text("utf-8").splitlines(keepends=True)
        mine = (submission / name).read_text("utf-8").splitlines(keepends=True)
        pairs = zip(
            [f for f in find_fences("".join(mine), name) if f.task == task],
            [f for f in find_fences("".join(theirs), name) if f.task == task],
            strict=True,
        )
        for own, ref in reversed(list(pairs)):
            mine[own.begin : own.end - 1] = theirs[ref.begin : ref.end - 1]
        (submission / name).write_text("".join(mine), "utf-8")
        filled.append(name)
    return filled


@pytest.mark.slow
def test_grading_a_module_0_submission_with_task_0_1_done(student, tmp_path: Path) -> None:
    staff = student(0)
    submission = tmp_path / "submission"
    shutil.copytree(staff, submission)
    assert fill_task(submission, ROOT, "0.1") == ["minifw/core/scalar_math.py"]
    solved = (submission / "minifw/core/scalar_math.py").read_text()
    stub = r'NotImplementedError\(\s*"Task 0\.{}'  # the formatter may break the call's line
    assert not re.search(stub.format(1), solved)
    assert re.search(stub.format(3), (submission / "minifw/core/list_ops.py").read_text())
    lines: list[str] = []
    results = grade(submission, parse_tasks("0.1,0.3"), 600, tmp_path / "results.json",
                    log=lines.append, staff=staff, user="same")  # fmt: skip
    done, undone = results
    assert done.counted > 0 and done.score == done.max_score, done.output
    assert undone.counted > 0 and undone.score == 0, undone.output
    assert "Task 0.3: implement" in undone.output
    assert re.search(r"^0\.1\s.*\d+\.\d s$", lines[-1], re.M), lines[-1]
