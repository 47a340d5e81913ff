"""The app's pages, one module each, numbered and tagged with the course tasks they exercise.

Each page module has a `render()` function that draws the whole page, and calls it
when streamlit runs the file as a page script. `app.py` turns `PAGES` into the
sidebar navigation and hides what a student has not built yet: the pages (a hidden
page's file is never run or imported), and the parts of pages, of course modules
after the limit `course_limit` reads: `--max-module N`, else `MINIFW_MAX_MODULE`,
else the module of a generated student repository, else no limit. Nothing here
imports streamlit or minifw, so tests and scripts can read the page list anywhere.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from minifw_course.assignment import assignment_module
from minifw_course.tasks import TASKS

MAX_MODULE_ENV = "MINIFW_MAX_MODULE"
ROOT = Path(__file__).resolve().parents[2]
_MODULE_OF = {task.id: task.module for task in TASKS}
_ORDER = [task.id for task in TASKS]


class Exercise(NamedTuple):
    """One part of a page that runs students' code: the tasks it needs, in a few words."""

    tasks: tuple[str, ...]
    what: str

    @property
    def module(self) -> int:
        """The course module that completes this part (its latest task's module)."""
        return max(_MODULE_OF[task] for task in self.tasks)

    @property
    def text(self) -> str:
        """E.g. "Task 2.1-2.2: strides and broadcasting"."""
        return f"Task {task_ranges(self.tasks)}: {self.what}"


class PageInfo(NamedTuple):
    """One page: its number, title, URL slug (= module name) and the parts it exercises."""

    number: int
    title: str
    slug: str
    exercises: tuple[Exercise, ...]

    @property
    def module(self) -> int:
        """The course module a student needs before the page shows (its first part's)."""
        return min(exercise.module for exercise in self.exercises)

    @property
    def label(self) -> str:
        """The sidebar text, e.g. "1 · Train"."""
        return f"{self.number} · {self.title}"

    def shown_exercises(self, max_module: int | None) -> list[Exercise]:
        """The parts of this page a student of course module `max_module` has built."""
        return [e for e in self.exercises if max_module is None or e.module <= max_module]

    def banner(self, max_module: int | None) -> str:
        """What the page exercises (up to `max_module`) and the module it needs."""
        shown = self.shown_exercises(max_module)
        text = " · ".join([*(e.text for e in shown), f"needs course module {self.module}"])
        if len(shown) < len(self.exercises):
            text += f" · the parts of modules after {max_module} are hidden"
        return text

    @property
    def script(self) -> Path:
        """The page's file: the app runs it as a page script, which calls its `render()`."""
        return Path(__file__).with_name(f"{self.slug}.py")


PAGES = (
    PageInfo(
        1,
        "Train",
        "train",
        (
            Exercise(("1.5",), "train with the Scalar engine"),
            Exercise(("2.5",), "train with tensors on the simple backend"),
            Exercise(("3.5",), "train on the fast (and cuda) backends"),
        ),
    ),
    PageInfo(
        2,
        "Autograd graph",
        "autograd",
        (
            Exercise(("1.2", "1.3", "1.4"), "Scalar graphs and their gradients"),
            Exercise(("2.3", "2.4"), "tensor graphs and their gradients"),
        ),
    ),
    PageInfo(
        3,
        "Tensor explorer",
        "tensors",
        (Exercise(("2.1", "2.2"), "strides and broadcasting"),),
    ),
    PageInfo(
        4,
        "Digits",
        "digits",
        (Exercise(("4.1", "4.2", "4.3", "4.4", "4.5"), "convolution, pooling, the classifier"),),
    ),
    PageInfo(
        5,
        "Profiler",
        "profiler",
        (
            Exercise(("3.1", "3.2", "3.5"), "fast kernels, FLOPs and bytes per op"),
            Exercise(("3.3", "3.4"), "the cuda kernels, with a GPU"),
        ),
    ),
)


def task_ranges(tasks: Sequence[str]) -> str:
    """Task ids with runs of consecutive tasks joined: ("3.1", "3.2", "3.5") -> "3.1-3.2, 3.5"."""
    positions = sorted(_ORDER.index(task) for task in tasks)
    runs: list[list[int]] = []
    for position in positions:
        if runs and position == runs[-1][-1] + 1:
            runs[-1].append(position)
        else:
            runs.append([position])
    return ", ".join(
        _ORDER[run[0]] if len(run) == 1 else f"{_ORDER[run[0]]}-{_ORDER[run[-1]]}" for run in runs
    )


def page_of(slug: str) -> PageInfo:
    """The page with this URL slug."""
    return next(page for page in PAGES if page.slug == slug)


def visible_pages(max_module: int | None = None) -> list[PageInfo]:
    """The pages of course modules up to `max_module` (all pages when None)."""
    return [p for p in PAGES if max_module is None or p.module <= max_module]


def max_module_option(argv: Sequence[str]) -> int | None:
    """The `--max-module N` option after streamlit's `--`, if any."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--max-module", type=int)
    known, _ = parser.parse_known_args(list(argv))
    return known.max_module  # type: ignore[no-any-return]


def course_limit(
    argv: Sequence[str], environ: Mapping[str, str] | None = None, root: Path = ROOT
) -> int | None:
    """The last course module to show: the option, else the variable, else the repository's.

    `--max-module N` wins, then `MINIFW_MAX_MODULE=N`, then the module recorded in
    `minifw_course/assignment.json` of a generated student repository; None (every
    page) in the reference repository.

    Raises:
        ValueError: `MINIFW_MAX_MODULE` is set but not a whole number.
    """
    option = max_module_option(argv)
    if option is not None:
        return option
    text = (os.environ if environ is None else environ).get(MAX_MODULE_ENV, "").strip()
    if text:
        try:
            return int(text)
        except ValueError:
            raise ValueError(
                f"{MAX_MODULE_ENV} must be a course module number, got {text!r}"
            ) from None
    return assignment_module(root)
