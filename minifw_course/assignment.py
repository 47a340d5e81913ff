"""Write the student repository of one course module from the reference solution.

`make_assignment(src, out, module)` copies the package, the course tooling (the
students' tests/conftest.py reads the course map from it), tests, project and config
files, leaving out the expert fast paths (`minifw/fast_paths/` and their tests: never a
course task; FastOps runs the kernels students write when the folder is absent), then:

- stubs every function fenced for a task of any module (fences stay, bodies become
  `raise NotImplementedError("Task x.y: ...")`): no reference body ships, not even an
  earlier module's, since students carry their own work forward (`sync`); staff who
  release module M's solutions after its deadline pass `solutions_through=M`
  (`--with-solutions-through M`), which keeps the bodies of modules 0..M;
- leaves out the files that only later modules need (`LATER_FILES`);
- makes SimpleOps the CPU default up to module 3 (FastOps' kernels are stubs there);
- removes the tests of later modules, the `extra` tests (never graded) and the `staff`
  tests (whole files, single tests or classes of mixed files; see prune.py), and the
  tooling tests in `tests/course/`;
- writes a README for the module, copies `docs/moduleN.md` with its generated task
  table brought up to date, and records the module in `minifw_course/assignment.json`
  so `python -m minifw.course grade` knows it;
- checks that every Python file it wrote still parses.
"""

from __future__ import annotations

import ast
import configparser
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from minifw_course.classroom import WORKFLOW_PATH, classroom_workflow
from minifw_course.docs import (
    DocsError,
    render_module_page,
    render_student_readme,
    update_module_page,
)
from minifw_course.fences import Stub, python_files, scan_fences, stub_source
from minifw_course.prune import prune_tests
from minifw_course.tasks import MODULES, TASKS, tasks_of_module

# Files that only a later module needs, by the module that first needs them: a student
# repository of an earlier module leaves them out. Nothing an earlier module runs imports
# them (the tests of test_student_repos.py run every module's repository).
LATER_FILES = {
    3: ("minifw/cuda_ops.py", "project/fast_network.py", "project/run_fast_tensor.py",
        "project/parallel_check.py"),
    4: ("project/run_digits.py",),
}  # fmt: skip

COPIED_DIRS = ("minifw", "minifw_course", "tests", "project")
# Expert kernels and their tests: the student repository runs the kernels students write.
LEFT_OUT = ("minifw/fast_paths", "tests/fast_paths")
# `.streamlit/config.toml` keeps the app on localhost when students run it.
COPIED_FILES = ("setup.cfg", "pyproject.toml", "ruff.toml", ".gitignore", ".streamlit/config.toml")
IGNORED = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.nbi", "*.nbc", ".hypothesis", ".pytest_cache", "*.egg-info"
)
STAFF_TESTS = "tests/course"
# The last module whose student repository runs on SimpleOps by default.
LAST_SIMPLE_MODULE = 3
ASSIGNMENT_FILE = "minifw_course/assignment.json"
# The reference's extras a student repository keeps as they are (its `test` is its own).
STUDENT_EXTRAS = ("app", "oracle", "cuda")
_MODULE_OF = {task.id: task.module for task in TASKS}


@dataclass
class AssignmentReport:
    """What `make_assignment` did: stubs per file, tests removed, files dropped."""

    module: int
    out: Path
    stubs: dict[str, list[Stub]] = field(default_factory=dict)
    removed_tests: dict[str, list[str]] = field(default_factory=dict)
    removed_files: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """A few lines for the terminal."""
        count = sum(len(stubs) for stubs in self.stubs.values())
        tests = sum(len(names) for names in self.removed_tests.values())
        lines = [
            f"wrote the module {self.module} assignment to {self.out}",
            f"  {count} functions stubbed in {len(self.stubs)} files",
            f"  {tests} tests removed (later modules, extra, staff); "
            f"{len(self.removed_files)} test files dropped",
        ]
        for name, stubs in sorted(self.stubs.items()):
            tasks = sorted({stub.task for stub in stubs})
            lines.append(f"  {name}: {len(stubs)} stubs (tasks {', '.join(tasks)})")
        return "\n".join(lines)


class AssignmentError(RuntimeError):
    """The assignment cannot be written (bad module, bad output folder)."""


def make_assignment(
    src: Path, out: Path, module: int, force: bool = False, solutions_through: int = -1
) -> AssignmentReport:
    """Write the student repository of `module` into `out` from the repository `src`.

    Every task body is a stub except those of modules 0..`solutions_through` (none by
    default), which must be earlier than `module`.
    """
    src, out = src.resolve(), out.resolve()
    if module not in MODULES:
        raise AssignmentError(f"module {module} is not in the course map (modules {MODULES})")
    if solutions_through >= module:
        raise AssignmentError(
            f"--with-solutions-through {solutions_through} would give away module "
            f"{module}'s own solutions: release only earlier modules' (at most {module - 1})"
        )
    if not (src / "minifw").is_dir():
        raise AssignmentError(f"{src} has no minifw/ package: is it the reference repository?")
    if (
        src == out
        or src.is_relative_to(out)
        or any(out.is_relative_to(src / name) for name in COPIED_DIRS)
    ):
        raise AssignmentError(f"output folder {out} overlaps the repository {src}")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise AssignmentError(f"{out} is not empty (pass --force to replace it)")
        shutil.rmtree(out)
    scan = scan_fences(src)  # also validates every fence before anything is written
    _check_left_out_unfenced(scan)
    guide = _guide(src, module, scan)
    out.mkdir(parents=True, exist_ok=True)
    _copy(src, out, module)
    report = AssignmentReport(module, out)
    _stub_sources(out, solutions_through, report)
    _set_default_backend(out, module)
    _prune_tests(out, module, report)
    _write_extras(out, module, scan, guide, solutions_through)
    _write_student_extras(out, module)
    workflow = out / WORKFLOW_PATH
    workflow.parent.mkdir(parents=True, exist_ok=True)
    workflow.write_text(classroom_workflow(module), "utf-8")
    _check_parses(out)
    return report


def _check_left_out_unfenced(scan: dict[str, dict[str, list[str]]]) -> None:
    """A fence in a folder students never get would silently drop its task: refuse."""
    for task, files in sorted(scan.items()):
        for name in sorted(files):
            if any(name.startswith(folder + "/") for folder in LEFT_OUT):
                raise AssignmentError(
                    f"{name} fences task {task}, but {name.rsplit('/', 1)[0]}/ is left out "
                    "of student repositories (expert code is never a course task)"
                )


def _copy(src: Path, out: Path, module: int) -> None:
    for name in COPIED_DIRS:
        if (src / name).is_dir():
            shutil.copytree(src / name, out / name, ignore=IGNORED)
    for name in LEFT_OUT:
        if (out / name).exists():
            shutil.rmtree(out / name)
    for later, names in LATER_FILES.items():
        for name in names if later > module else ():
            (out / name).unlink(missing_ok=True)
    for name in COPIED_FILES:
        if (src / name).is_file():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, out / name)
    if (out / STAFF_TESTS).exists():
        shutil.rmtree(out / STAFF_TESTS)
    stale = out / ASSIGNMENT_FILE
    if stale.exists():
        stale.unlink()


def _stub_sources(out: Path, solutions_through: int, report: AssignmentReport) -> None:
    stub_tasks = {task.id for task in TASKS if task.module > solutions_through}
    for path in python_files(out):
        name = path.relative_to(out).as_posix()
        source = path.read_text("utf-8")
        new_source, stubs = stub_source(source, stub_tasks, name)
        if stubs:
            path.write_text(new_source, "utf-8")
            report.stubs[name] = stubs


def _set_default_backend(out: Path, module: int) -> None:
    """Up to module 3 FastOps' kernels are stubs (or task 3.1's work): default to SimpleOps.

    In module 3 the earlier modules' tests must keep passing while task 3.1 is undone.
    """
    path = out / "minifw" / "backends.py"
    if module > LAST_SIMPLE_MODULE or not path.is_file():
        return
    source = path.read_text("utf-8")
    changed = source.replace('"cpu": "fast"', '"cpu": "simple"')
    if changed == source:
        raise AssignmentError(f"{path}: could not find the CPU default backend to change")
    path.write_text(changed, "utf-8")


def _prune_tests(out: Path, module: int, report: AssignmentReport) -> None:
    tests = out / "tests"
    if not tests.is_dir():
        return

    def later(task: str) -> bool:
        return _MODULE_OF.get(task, -1) > module

    for path in sorted(tests.rglob("test_*.py")) + sorted(tests.rglob("*_test.py")):
        name = path.relative_to(out).as_posix()
        result = prune_tests(path.read_text("utf-8"), later, name)
        if result.source is None:
            path.unlink()
            report.removed_files.append(name)
            report.removed_tests[name] = result.removed
        elif result.removed:
            path.write_text(result.source, "utf-8")
            report.removed_tests[name] = result.removed


def _guide(src: Path, module: int, scan: dict[str, dict[str, list[str]]]) -> str:
    """The module's guide with its task table brought up to date (a stub page if none)."""
    path = src / "docs" / f"module{module}.md"
    if not path.is_file():
        return render_module_page(module, scan)
    try:
        return update_module_page(path.read_text("utf-8"), module, scan)
    except DocsError as error:
        raise AssignmentError(f"{path}: {error}") from error


def _write_extras(
    out: Path,
    module: int,
    scan: dict[str, dict[str, list[str]]],
    guide: str,
    solutions_through: int = -1,
) -> None:
    (out / "README.md").write_text(render_student_readme(module, scan), "utf-8")
    (out / "docs").mkdir(exist_ok=True)
    (out / "docs" / f"module{module}.md").write_text(guide, "utf-8")
    record = {
        "module": module,
        "tasks": [task.id for task in tasks_of_module(module)],
        "solutions_through": solutions_through if solutions_through >= 0 else None,
    }
    target = out / ASSIGNMENT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=2) + "\n", "utf-8")


def student_test_extra(module: int) -> list[str]:
    """What `pip install -e ".[test]"` adds in a module's repository: the graded tests' needs.

    numpy and numba come with the package itself; tqdm from module 1 on (project/cli.py,
    the training scripts), scikit-learn from module 4 on (the digits).
    """
    extra = ["pytest>=7", "pytest-timeout", "hypothesis>=6.80"]
    extra += ["tqdm"] if module >= 1 else []
    return extra + (["scikit-learn"] if module >= 4 else [])


def _write_student_extras(out: Path, module: int) -> None:
    """Give the student repository's setup.cfg light extras: test, app, oracle, cuda.

    The reference's `test` extra is the development environment (PyTorch, the app, the
    linters); a student installs the app (`[app]`) and the PyTorch oracle (`[oracle]`)
    only when they want them.
    """
    path = out / "setup.cfg"
    if not path.is_file():
        return
    text = path.read_text("utf-8")
    config = configparser.ConfigParser()
    config.read_string(text)
    section = "options.extras_require"
    extras = {"test": student_test_extra(module)}
    for name in STUDENT_EXTRAS:
        if config.has_section(section) and config.has_option(section, name):
            extras[name] = config.get(section, name).split()
    body = "".join(f"{name} =\n" + "".join(f"    {req}\n" for req in reqs) for name, reqs in
                   extras.items())  # fmt: skip
    if not config.has_section(section):
        text = text.rstrip("\n") + f"\n\n[{section}]\n"
    start = text.index(f"[{section}]")
    after = text.find("\n[", start + 1)
    rest = text[after + 1 :] if after != -1 else ""
    path.write_text(f"{text[:start]}[{section}]\n{body}\n{rest}", "utf-8")


def _check_parses(out: Path) -> None:
    for path in sorted(out.rglob("*.py")):
        try:
            ast.parse(path.read_text("utf-8"), str(path))
        except SyntaxError as error:
            raise AssignmentError(f"generated file {path} does not parse: {error}") from error


def assignment_module(repo: Path) -> int | None:
    """The module a generated student repository is for, or None for the reference."""
    path = repo / ASSIGNMENT_FILE
    if not path.is_file():
        return None
    try:
        module = json.loads(path.read_text("utf-8"))["module"]
    except (ValueError, KeyError, TypeError):
        return None
    return module if isinstance(module, int) else None
