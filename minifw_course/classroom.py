"""GitHub Classroom's autograding workflow of a module: `.github/workflows/classroom.yml`.

Classroom runs the workflow on every push to a student's repository. Each task is one
step of `education/autograding-command-grader`, which awards the task's points when its
command exits 0 (`pytest -m taskN_M`: every test of the task passes); the last step,
`education/autograding-grading-reporter`, adds the steps up and reports the total to
Classroom. The tests run with the `grade` hypothesis profile, as the grader's do.
"""

from __future__ import annotations

import json

from minifw_course.catalog import TASK_INFO
from minifw_course.tasks import Task, has_cuda_tasks, tasks_of_module

WORKFLOW_PATH = ".github/workflows/classroom.yml"
COMMAND_GRADER = "education/autograding-command-grader@v1"
REPORTER = "education/autograding-grading-reporter@v1"
PYTHON_VERSION = "3.11"
TASK_TIMEOUT_MINUTES = 15
PYTEST = "python -m pytest -q -p no:cacheprovider -m "


def step_id(task: Task) -> str:
    """The id of a task's step, e.g. "task2-3" (the reporter reads TASK2-3_RESULTS)."""
    return task.marker.replace("_", "-")


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text)


def classroom_workflow(module: int) -> str:
    """The text of the module's `classroom.yml`."""
    tasks = tasks_of_module(module)
    env = {"HYPOTHESIS_PROFILE": "grade"}
    if has_cuda_tasks(module):
        env["NUMBA_ENABLE_CUDASIM"] = "1"  # no GPU on GitHub's runners
    lines = [
        f"# GitHub Classroom autograding for module {module}, written by make-assignment.",
        "name: Autograding Tests",
        '"on":',
        "  - push",
        "  - workflow_dispatch",
        "  - repository_dispatch",
        "permissions:",
        "  checks: write",
        "  actions: read",
        "  contents: read",
        "jobs:",
        "  run-autograding-tests:",
        "    runs-on: ubuntu-latest",
        "    if: github.actor != 'github-classroom[bot]'",
        "    env:",
        *[f"      {name}: {_quoted(value)}" for name, value in env.items()],
        "    steps:",
        "      - name: Checkout code",
        "        uses: actions/checkout@v4",
        "      - uses: actions/setup-python@v5",
        "        with:",
        f"          python-version: {_quoted(PYTHON_VERSION)}",
        "      - name: Install",
        '        run: python -m pip install -e ".[test]"',
    ]
    for task in tasks:
        lines += [
            f"      - name: {_quoted(f'Task {task.id}: {task.title}')}",
            f"        id: {step_id(task)}",
            f"        uses: {COMMAND_GRADER}",
            "        with:",
            f"          test-name: {_quoted(f'Task {task.id}: {task.title}')}",
            f"          command: {_quoted(PYTEST + task.marker)}",
            f"          timeout: {TASK_TIMEOUT_MINUTES}",
            f"          max-score: {TASK_INFO[task.id].points:g}",
        ]
    lines += [
        "      - name: Autograding Reporter",
        f"        uses: {REPORTER}",
        "        env:",
        *[
            f'          {step_id(t).upper()}_RESULTS: "${{{{steps.{step_id(t)}.outputs.result}}}}"'
            for t in tasks
        ],
        "        with:",
        f"          runners: {','.join(step_id(t) for t in tasks)}",
    ]
    return "\n".join(lines) + "\n"
