"""Render docs/README.md, the task table of each module guide, and student READMEs.

`docs/moduleN.md` is a hand-written guide. Only the block between the lines BLOCK_BEGIN
and BLOCK_END is generated: a table of the module's tasks with their titles, test
commands, the files and names their fences mark, and their app pages. `python -m
minifw.course docs` rewrites that block (appending it to a page without one) and leaves
the prose around it as written; docs/README.md is generated whole. Everything generated
comes from the course map (`tasks.py`), the prose in `catalog.py` and the fences found in
the repository, so it names the files and functions each task really asks for.
"""

from __future__ import annotations

from pathlib import Path

from minifw_course.catalog import APP_COMMAND, APP_PAGES, MODULE_INFO, TASK_INFO, app_page_text
from minifw_course.classroom import WORKFLOW_PATH
from minifw_course.tasks import MODULES, Task, tasks_of_module
from minifw_course.threat_model import THREAT_MODEL

Scan = dict[str, dict[str, list[str]]]

BLOCK_BEGIN = "<!-- BEGIN GENERATED: tasks (python -m minifw.course docs) -->"
BLOCK_END = "<!-- END GENERATED: tasks -->"
APP_CONFIG = ".streamlit/config.toml"
WORKFLOW = WORKFLOW_PATH

COMPARISON_NOTE = (
    "Comparisons (`<`, `>`, `<=`, `>=`, `==`, `!=`) return bool tensors, as PyTorch's do: "
    "`t[t > 0]` masks, `~ & | ^` combine masks, `(pred == y).float().mean()` is an "
    "accuracy, and `(pred == y).sum()` counts in int64. The scalar operators of Task 0.1 "
    "(`scalar_math.lt`, ...) return 1.0 or 0.0 on Python floats; the tensor layer turns those "
    "into bool cells."
)


class DocsError(ValueError):
    """A module guide whose generated block is malformed."""


def task_files(task: Task, scan: Scan) -> list[str]:
    """Where a task's work lives: the files its fences are in, then the catalog's `also`.

    A folder of `also` that holds a fenced file is already named by that file.
    """
    fenced = sorted(scan.get(task.id, {}))
    also = [name for name in TASK_INFO[task.id].also if name not in fenced]
    return fenced + [n for n in also if not any(f.startswith(n.rstrip("/") + "/") for f in fenced)]


def task_names(task: Task, scan: Scan) -> list[str]:
    """The functions and methods fenced for a task, file by file."""
    files = scan.get(task.id, {})
    return [name for where in sorted(files) for name in files[where]]


def run_command(tasks: list[Task]) -> str:
    """The pytest command that runs the tests of `tasks`."""
    if len(tasks) == 1:
        return f"pytest -m {tasks[0].marker}"
    return 'pytest -m "' + " or ".join(task.marker for task in tasks) + '"'


def _code_list(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names) or "-"


def _task_section(task: Task, scan: Scan, heading: str = "##") -> list[str]:
    info = TASK_INFO[task.id]
    lines = [f"{heading} Task {task.id}: {task.title}", "", info.asks, ""]
    lines.append("- Files: " + _code_list(task_files(task, scan)))
    names = task_names(task, scan)
    if names:
        lines.append("- To implement: " + _code_list(names))
    lines.append(f"- Tests: `{run_command([task])}`")
    if info.app_page is not None:
        lines.append("- Helps: " + app_page_text(info.app_page))
    lines.append("")
    return lines


def render_task_block(module: int, scan: Scan) -> str:
    """The generated block of a module guide: one table row per task, between the markers."""
    tasks = tasks_of_module(module)
    lines = [
        BLOCK_BEGIN,
        "",
        "| Task | Title | Tests | Files | To implement | App page |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for task in tasks:
        page = TASK_INFO[task.id].app_page
        app = f"{page} ({APP_PAGES[page]})" if page is not None else "-"
        files, names = _code_list(task_files(task, scan)), _code_list(task_names(task, scan))
        cells = [task.id, task.title, f"`{run_command([task])}`", files, names, app]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"All of this module's tests: `{run_command(tasks)}`. The app: `{APP_COMMAND}`.",
        "",
        BLOCK_END,
    ]
    return "\n".join(lines)


def _block_span(lines: list[str]) -> tuple[int, int] | None:
    """The indices of the BEGIN and END lines of the generated block, or None."""
    begins = [i for i, line in enumerate(lines) if line.strip() == BLOCK_BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == BLOCK_END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise DocsError(
            f"expected one {BLOCK_BEGIN!r} line followed by one {BLOCK_END!r} line; "
            f"found {len(begins)} and {len(ends)}"
        )
    return begins[0], ends[0]


def generated_block(text: str) -> str | None:
    """The generated block of a guide as it is written (markers included), or None."""
    lines = text.splitlines()
    span = _block_span(lines)
    return None if span is None else "\n".join(lines[span[0] : span[1] + 1])


def update_module_page(text: str, module: int, scan: Scan) -> str:
    """The guide `text` with its generated block rewritten (appended when missing).

    Everything outside the block stays as written.
    """
    block = render_task_block(module, scan)
    lines = text.splitlines()
    span = _block_span(lines)
    if span is None:
        return text.rstrip("\n") + "\n\n" + block + "\n"
    tail = "\n" if text.endswith("\n") else ""
    return "\n".join([*lines[: span[0]], block, *lines[span[1] + 1 :]]) + tail


def render_module_page(module: int, scan: Scan) -> str:
    """A starting page for a module without a guide: its title, intro and generated block."""
    info = MODULE_INFO[module]
    lines = [f"# Module {module}: {info.title}", "", info.intro, ""]
    return "\n".join(lines) + "\n" + render_task_block(module, scan) + "\n"


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
    "repository of module N: the fenced code of every module becomes "
    "`NotImplementedError` stubs (`--with-solutions-through M` keeps modules 0..M's after "
    "their deadline), later modules' files, tests of later modules and `extra` and `staff` "
    "tests are removed, SimpleOps is the CPU default up to module 3, and a README and a "
    "GitHub Classroom workflow for the module are generated.",
    "- `python -m minifw.course sync OLD_REPO NEW_REPO` carries a student's fenced work "
    "from an earlier module's repository into the next one.",
    "- `python -m minifw.course grade [--tasks 2.1,2.2 | --module N] [--json results.json] "
    "[--timeout 600] [--repo SUBMISSION] [--staff STAFF] [--user USER]` grades a submission "
    "task by task, prints a score table with each task's wall time, and writes Gradescope's "
    "`results.json`. Its tests run with `HYPOTHESIS_PROFILE=grade` (10 examples, "
    "derandomized, no shrinking), so every grading run of a submission sees the same cases. "
    "Only the submission's task files (the files that fence a task of a graded module, and "
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
    "known task marker; `python -m minifw.course docs` regenerates this page and the "
    "task table of each module guide (the block between its `<!-- BEGIN GENERATED` and "
    "`<!-- END GENERATED` lines); the rest of a guide is written by hand.",
    "- The grader's children inherit its environment: on a machine without a GPU, set "
    "`NUMBA_ENABLE_CUDASIM=1` to grade the CUDA tasks (3.3, 3.4) on Numba's simulator; "
    "otherwise their tests are skipped by the staff copy too and a task with no test left "
    "scores 0.",
    "- Run these commands from a checkout whose `minifw` and `minifw_course` are "
    'importable (installed with `pip install -e ".[dev]"`, or with `PYTHONPATH=.`). '
    "The tooling is the package `minifw_course`, which `minifw` never imports; "
    "`python -m minifw.course` is a thin entry that only calls it.",
    "",
    "- `python -m minifw.course check-tasks --module N` walks the module's student "
    "repository through the states a student passes through (the first k tasks solved, "
    "the rest stubs) and names every test that passes on a stub or fails although its "
    "task and the ones before it are solved: stubs score exactly 0 and correct work "
    "exactly full marks.",
    "- `python -m minifw.course make-autograder --module N OUT.zip` writes Gradescope's "
    "autograder bundle: the module's student repository as the staff copy, pinned "
    "`requirements.txt`, `setup.sh` and `run_autograder`. [`staff.md`](staff.md) says how "
    "to set up a course with it, how to regrade, and how long grading takes; "
    "`check-bundle --module N` runs the bundle as Gradescope does, and "
    "`grade-batch SUBMISSIONS --module N --out grades.csv` grades a whole class without it.",
    "",
    *THREAT_MODEL,
]


def render_student_readme(module: int, scan: Scan) -> str:
    """The README of the generated student repository of `module`."""
    info = MODULE_INFO[module]
    tasks = tasks_of_module(module)
    earlier = [task for m in MODULES if m < module for task in tasks_of_module(m)]
    lines = [f"# minifw, module {module}: {info.title}", "", info.intro, ""]
    lines += _start_here(module, tasks[0])
    lines += ["## Your tasks", ""]
    for task in tasks:
        lines += _task_section(task, scan, "###")
    lines += [
        "## Checking your work",
        "",
        f"- One task: `{run_command(tasks[:1])}`; this module: `{run_command(tasks)}`.",
        f"- Grade yourself: `python -m minifw.course grade --module {module}`, from the "
        "repository root, scores this module's tasks as the autograder does and prints a "
        "table.",
    ]
    if earlier:
        lines.append(
            f"- Once your earlier work is synced, the earlier modules' tests pass too: "
            f"`{run_command(earlier)}`; this module's tasks build on them."
        )
    lines.append(
        f"- Each push runs `{WORKFLOW}` (GitHub Classroom's autograding), one step per task."
    )
    lines += [
        "",
        "## The app",
        "",
        f"`{APP_COMMAND}`, from the repository root, opens the course app in your browser. "
        f"`{APP_CONFIG}` keeps it on this machine (it listens on localhost only).",
        "",
    ]
    if module >= 2:
        lines += ["## Differences from PyTorch", "", COMPARISON_NOTE, ""]
    return "\n".join(lines)


def _start_here(module: int, first: Task) -> list[str]:
    """The first steps of a student repository's README, in the order to take them."""
    return [
        "## Start here",
        "",
        "1. Install the package and what the graded tests use (numpy, numba, pytest, "
        "pytest-timeout, hypothesis):",
        "",
        "   ```sh",
        '   python -m venv .venv && . .venv/bin/activate && pip install -e ".[test]"',
        "   ```",
        "",
        '   Two more extras are yours to add when you want them: `pip install -e ".[app]"` '
        'for the course app (streamlit), `pip install -e ".[oracle]"` for PyTorch, which '
        "some ungraded tests compare against.",
        *_carry_forward(module),
        "",
        f"2. Run the first task's tests: `{run_command([first])}`. They fail with "
        f'`NotImplementedError("Task {first.id}: ...")`: that is the starting point. Each '
        "failure names the task, the function to write and the guide to read.",
        f"3. Read the guide of this module, [`docs/module{module}.md`](docs/module{module}.md): "
        "each task explained with a worked example and the usual mistakes.",
        "4. Write the code where the fences are: every function you write lies between a "
        "`# BEGIN TASK x.y` and a `# END TASK x.y` line, and its body raises "
        '`NotImplementedError("Task x.y: ...")` until you write it. '
        f'`grep -rn "BEGIN TASK {first.id}" minifw project` finds task {first.id}\'s.',
        "",
    ]


def _carry_forward(module: int) -> list[str]:
    """How a student brings the earlier modules' work into this repository."""
    if module == 0:
        return []
    return [
        "",
        "   Every task of every module is a stub here, the earlier modules' too: bring "
        "your own work over from your module "
        f"{module - 1} repository with `python -m minifw.course sync ../module{module - 1} .` "
        "(it fills the stubs you solved there, says which stayed stubs, and never "
        "overwrites code you already wrote here unless you add `--force`).",
    ]


def write_docs(root: Path, scan: Scan) -> list[Path]:
    """Write docs/README.md and each guide's generated block under `root`; return the paths.

    A guide that does not exist yet is started with its title, intro and block.
    """
    folder = root / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    index = folder / "README.md"
    index.write_text(render_index(scan), "utf-8")
    written = [index]
    for module in MODULES:
        path = folder / f"module{module}.md"
        if path.is_file():
            text = update_module_page(path.read_text("utf-8"), module, scan)
        else:
            text = render_module_page(module, scan)
        path.write_text(text, "utf-8")
        written.append(path)
    return written
