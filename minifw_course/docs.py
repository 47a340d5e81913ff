"""Render the docs pages (`docs/moduleN.md`, `docs/README.md`) and student READMEs.

Everything is rendered from the course map (`tasks.py`), the prose in `catalog.py`
and the fences found in the repository, so the pages name the files and functions
each task really asks for. Regenerate with `python -m minifw.course docs`.
"""

from __future__ import annotations

from pathlib import Path

from minifw_course.catalog import APP_COMMAND, APP_PAGES, MODULE_INFO, TASK_INFO, app_page_text
from minifw_course.tasks import MODULES, Task, tasks_of_module

Scan = dict[str, dict[str, list[str]]]

COMPARISON_NOTE = (
    "minifw comparisons (`<`, `>`, `<=`, `>=`, `==`, `!=`) return 0./1. float tensors in "
    "the operands' float dtype, where PyTorch returns bool tensors. Code written for "
    "PyTorch such as `(pred == y).float().mean()` works unchanged; code that uses the "
    "result as a boolean mask (`t[t > 0]`) must change, e.g. to `t * (t > 0)`."
)


def task_files(task: Task, scan: Scan) -> list[str]:
    """The files a task's work lives in: its fences if it has any, else the catalog's plan."""
    fenced = sorted(scan.get(task.id, {}))
    return fenced or list(TASK_INFO[task.id].files)


def run_command(tasks: list[Task]) -> str:
    """The pytest command that runs the tests of `tasks`."""
    if len(tasks) == 1:
        return f"pytest -m {tasks[0].marker}"
    return 'pytest -m "' + " or ".join(task.marker for task in tasks) + '"'


def _task_section(task: Task, scan: Scan, heading: str = "##") -> list[str]:
    info = TASK_INFO[task.id]
    lines = [f"{heading} Task {task.id}: {task.title}", "", info.asks, ""]
    lines.append("- Files: " + ", ".join(f"`{f}`" for f in task_files(task, scan)))
    functions = [
        f"`{name}`" for where in sorted(scan.get(task.id, {})) for name in scan[task.id][where]
    ]
    if functions:
        lines.append("- To implement: " + ", ".join(functions))
    lines.append(f"- Tests: `{run_command([task])}`")
    if info.app_page is not None:
        lines.append("- Helps: " + app_page_text(info.app_page))
    lines.append("")
    return lines


def render_module_page(module: int, scan: Scan) -> str:
    """The docs page of one module: its tasks, what they ask, files, tests, app pages."""
    info = MODULE_INFO[module]
    tasks = tasks_of_module(module)
    lines = [f"# Module {module}: {info.title}", "", info.intro, ""]
    lines += [
        "| Task | Title | Tests | App page |",
        "| --- | --- | --- | --- |",
    ]
    for task in tasks:
        page = TASK_INFO[task.id].app_page
        app = f"{page} ({APP_PAGES[page]})" if page is not None else "-"
        lines.append(f"| {task.id} | {task.title} | `{run_command([task])}` | {app} |")
    lines += ["", f"All of this module's tests: `{run_command(tasks)}`.", ""]
    for task in tasks:
        lines += _task_section(task, scan)
    if module >= 2:
        lines += ["## Differences from PyTorch", "", COMPARISON_NOTE, ""]
    lines += [
        "## Where to work",
        "",
        "Each function you write is fenced by `# BEGIN TASK x.y` / `# END TASK x.y` "
        "comments. In the starter code its body raises "
        '`NotImplementedError("Task x.y: ...")`; the signature and docstring say what '
        "it must do.",
        "",
    ]
    return "\n".join(lines)


def render_index(scan: Scan) -> str:
    """docs/README.md: the course at a glance, for students and for staff."""
    lines = ["# minifw course", "", "One page per module:", ""]
    for module in MODULES:
        titles = ", ".join(f"{t.id} {t.title}" for t in tasks_of_module(module))
        lines.append(
            f"- [Module {module}: {MODULE_INFO[module].title}](module{module}.md): {titles}"
        )
    lines += ["", "## Running the tests of one task", ""]
    lines += [
        "Every test carries exactly one task marker, so `pytest -m task2_3` runs task "
        "2.3 alone and `python -m minifw.course grade --tasks 2.3` scores it the way "
        "the autograder does. Tooling tests carry the `staff` marker instead and live "
        "in `tests/course/` (plus the marker check, `tests/test_markers.py`).",
        "",
        "## The app",
        "",
        f"`{APP_COMMAND}` opens the streamlit app. Its pages: "
        + ", ".join(f"{n} {name}" for n, name in APP_PAGES.items())
        + ".",
        "",
        "## Differences from PyTorch",
        "",
        COMPARISON_NOTE,
        "",
    ]
    lines += _STAFF_GUIDE
    return "\n".join(lines)


_STAFF_GUIDE = [
    "## For course staff",
    "",
    "- `python -m minifw.course make-assignment --module N OUT` writes the student "
    "repository of module N: fenced code of module N and later modules becomes "
    "`NotImplementedError` stubs, tests of later modules are removed, and a README "
    "for the module is generated.",
    "- `python -m minifw.course grade [--tasks 2.1,2.2 | --module N] [--json results.json] "
    "[--timeout 600] [--repo SUBMISSION] [--staff STAFF] [--user USER]` grades a submission "
    "task by task, prints a score table, and writes Gradescope's `results.json`. Only the "
    "submission's task files (the files that fence a task of a graded module, and "
    "`project/` for the training tasks) are laid into a fresh copy of the staff copy "
    "(`--staff`, by default the checkout the grader runs from); its tests, conftest, "
    "tooling and every other file come from the staff copy. The module is `--module` or "
    "the staff copy's `minifw_course/assignment.json`, never the submission's.",
    "- Each task's tests were listed from the staff copy before any submission code ran "
    "(pytest `--setup-only`): that list is the denominator, less the tests the staff copy "
    "itself skips on this machine. A test scores only if it passed: skipped, xfailed, "
    "xpassed, failed, errored and missing tests score 0, and a run that hangs, exits, "
    "crashes, changes a file of its copy or tampers with pytest scores 0 for the task. "
    "Skips for the machine (no CUDA) therefore belong in setup (a `skipif` mark or a "
    "fixture), where the staff run sees them; a skip inside a test body counts as a failure.",
    "- `python -m minifw.course check-markers` checks that every test has exactly one "
    "known task marker; `python -m minifw.course docs` regenerates these pages.",
    "- The grader's children inherit its environment: on a machine without a GPU, set "
    "`NUMBA_ENABLE_CUDASIM=1` to grade the CUDA tasks (3.3, 3.4) on Numba's simulator; "
    "otherwise their tests are skipped by the staff copy too and a task with no test left "
    "scores 0.",
    "- Run these commands from a checkout whose `minifw` and `minifw_course` are "
    'importable (installed with `pip install -e ".[dev]"`, or with `PYTHONPATH=.`). '
    "The tooling is the package `minifw_course`, which `minifw` never imports; "
    "`python -m minifw.course` is a thin entry that only calls it.",
    "",
    "A Gradescope `run_autograder` grades the submission against the module's student "
    "repository (made with make-assignment, holding the grader; never the reference "
    "solutions) with the module pinned:",
    "",
    "```sh",
    "cd /autograder/source && python -m minifw.course grade --repo /autograder/submission \\",
    "    --staff /autograder/source --module 2 --json /autograder/results/results.json",
    "```",
    "",
    "### The grader's threat model",
    "",
    "A submission is hostile code that the grader runs. When `grade` runs as root (as "
    "Gradescope's autograder does) the tests run as a fresh user id that no account or "
    "process has (or the dedicated account given with `--user`): the copy they run in is "
    "root's and read-only, `results.json` and the grader's files cannot be written, and "
    "the interpreter must be readable by other users (`--user same` turns the isolation "
    "off). After each task every process of the run is killed (every process of that user "
    "id, and every process whose environment carries the run's random token), and only "
    "then is `results.json` rewritten, atomically.",
    "",
    "Defended, each by a regression test in `tests/course/test_grader_attacks.py`:",
    "",
    "- stubs that call `pytest.skip` or `pytest.xfail` (only a pass scores; the denominator "
    "is the staff's list);",
    "- a submission that drops, edits or adds tests, conftest or tooling files (only task "
    "files are taken; the copy is read-only and hashed, and a changed file voids the run);",
    "- code that patches the recorder or pytest's report and runner functions (the recorder "
    "captured what it uses before any submission code was imported, decides outcomes from "
    "the exceptions its hook wrappers see, checks pytest's internals after every test, and "
    "reports over a pipe opened by the grader);",
    "- processes left behind (setsid, double fork) to rewrite `results.json`;",
    "- a submission that claims another module in its own `assignment.json`.",
    "",
    "Not defended:",
    "",
    "- code inside the test process can still fake results in memory: it shares the "
    "process with the tests and the recorder, so it can rewrite a test function or forge "
    "lines on the recorder's pipe. The checks above stop the known shortcuts; reviewing "
    "suspicious submissions remains the staff's job;",
    "- when the grader does not run as root, the tests run as the grader's own user: they "
    "can reach everything the grader can (its files, `results.json`, its process), and a "
    "process that execs with a new environment escapes the kill sweep;",
    "- the code under test can read whatever its user can read: keep reference solutions "
    "and other students' work off the grading machine;",
    "- resource exhaustion beyond the per-task timeout and a limit on processes.",
    "",
]


def render_student_readme(module: int, scan: Scan) -> str:
    """The README of the generated student repository of `module`."""
    info = MODULE_INFO[module]
    tasks = tasks_of_module(module)
    earlier = [task for m in MODULES if m < module for task in tasks_of_module(m)]
    lines = [f"# minifw, module {module}: {info.title}", "", info.intro, ""]
    lines += [
        "## Setup",
        "",
        "```sh",
        'python -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]"',
        "```",
        "",
        "## Your tasks",
        "",
    ]
    for task in tasks:
        lines += _task_section(task, scan, "###")
    lines += [
        "## Checking your work",
        "",
        f"- One task: `{run_command(tasks[:1])}`; this module: `{run_command(tasks)}`.",
        "- `python -m minifw.course grade` scores this module's tasks as the autograder "
        "does and prints a table.",
    ]
    if earlier:
        lines.append(f"- The tests of earlier modules already pass: `{run_command(earlier)}`.")
    lines += [
        f"- More detail: `docs/module{module}.md`.",
        "",
        "Each function to write is fenced by `# BEGIN TASK x.y` / `# END TASK x.y` and "
        'raises `NotImplementedError("Task x.y: ...")` until you write it.',
        "",
    ]
    if module >= 2:
        lines += ["## Differences from PyTorch", "", COMPARISON_NOTE, ""]
    return "\n".join(lines)


def write_docs(root: Path, scan: Scan) -> list[Path]:
    """Write docs/README.md and docs/moduleN.md under `root`; return the paths written."""
    folder = root / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    pages = {"README.md": render_index(scan)}
    pages.update({f"module{m}.md": render_module_page(m, scan) for m in MODULES})
    for name, text in pages.items():
        path = folder / name
        path.write_text(text, "utf-8")
        written.append(path)
    return written
