"""Grade a whole class without Gradescope: `grade-batch SUBMISSIONS_DIR --module N --out CSV`.

Every folder directly inside SUBMISSIONS_DIR is one submission, named by its folder. The
module's staff copy is written once (make-assignment of the reference repository, so no
solution is on the grading machine's copy); then each submission is graded by its own
`python -m minifw_course grade` process, as many at once as there are cores. Each grade
is isolated as `grade` isolates it (a fresh user id when run as root; see grade.py), and
one submission's trouble (a crash, a timeout, a half-written file) never stops the batch.

Out: one CSV row per submission (its total, each task's score, what went wrong), and
each submission's results.json under the results folder (default: next to the CSV,
`<csv name>-results/<submission>/results.json`).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from minifw_course.assignment import AssignmentError, make_assignment
from minifw_course.catalog import TASK_INFO
from minifw_course.tasks import MODULES, tasks_of_module

# Seconds for one submission's whole grade, beyond the grader's own per-task limit.
SUBMISSION_TIMEOUT = 3600.0


class BatchError(RuntimeError):
    """The batch cannot start (no such folder, no submissions, a bad output path)."""


@dataclass
class Row:
    """One submission's line of the CSV."""

    name: str
    total: float = 0.0
    tasks: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def submissions_in(folder: Path) -> list[Path]:
    """The submission folders of a batch, by name (hidden entries left out)."""
    if not folder.is_dir():
        raise BatchError(f"SUBMISSIONS_DIR {folder} is not a folder")
    found = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    if not found:
        raise BatchError(f"SUBMISSIONS_DIR {folder} holds no submission folders")
    return found


def grade_batch(
    submissions: Path,
    module: int,
    out: Path,
    repo: Path = Path("."),
    jobs: int | None = None,
    user: str | None = None,
    log: Callable[[str], None] = print,
) -> list[Row]:
    """Grade every submission of `submissions` for `module`; write the CSV `out`."""
    if module not in MODULES:
        raise BatchError(f"module {module} is not in the course map (modules {MODULES})")
    if out.suffix != ".csv":
        raise BatchError(f"--out {out}: the grades go to a .csv file")
    folders = submissions_in(submissions)
    results = out.with_name(out.stem + "-results")
    jobs = jobs or os.cpu_count() or 1
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"minifw-batch-{module}-") as scratch:
        staff = Path(scratch) / "staff"
        try:
            make_assignment(repo, staff, module)
        except AssignmentError as error:
            raise BatchError(f"cannot write the staff copy: {error}") from error
        os.chmod(scratch, 0o755)  # a fresh user id reads the staff copy

        def one(folder: Path) -> Row:
            row = _grade_one(folder, module, staff, results / folder.name, user)
            log(f"{row.name}: {row.total:g} in {row.seconds:.0f} s"
                + (f" ({'; '.join(row.notes)})" if row.notes else ""))  # fmt: skip
            return row

        log(f"grading {len(folders)} submissions for module {module}, {jobs} at once")
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            rows = list(pool.map(one, folders))
    write_csv(out, module, rows)
    log(f"wrote {out} and {results}/ in {time.monotonic() - started:.0f} s")
    return rows


def _grade_one(folder: Path, module: int, staff: Path, results: Path, user: str | None) -> Row:
    row = Row(folder.name)
    if not folder.is_dir() or folder.is_symlink():
        row.notes.append("not a folder: nothing graded")
        return row
    results.mkdir(parents=True, exist_ok=True)
    target = results / "results.json"
    target.unlink(missing_ok=True)
    command = [sys.executable, "-m", "minifw_course", "grade", "--module", str(module),
               "--staff", str(staff), "--repo", str(folder), "--json", str(target)]  # fmt: skip
    command += ["--user", user] if user else []
    began = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=SUBMISSION_TIMEOUT)  # fmt: skip
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            row.notes.append(f"grader exited with {done.returncode}: {lines[-1] if lines else ''}")
    except subprocess.TimeoutExpired:
        row.notes.append(f"grading ran past {SUBMISSION_TIMEOUT:.0f} s")
    row.seconds = time.monotonic() - began
    _read_results(target, row)
    return row


def _read_results(path: Path, row: Row) -> None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        row.notes.append("no results.json")
        return
    row.total = float(data.get("score", 0.0))
    for test in data.get("tests", []):
        row.tasks[str(test.get("number"))] = float(test.get("score", 0.0))
        output = str(test.get("output", ""))
        if "tampered" in output or "the run is void" in output:
            row.notes.append(f"task {test.get('number')} void")


def write_csv(out: Path, module: int, rows: list[Row]) -> None:
    """One row per submission: name, total, each task's score, seconds, notes."""
    tasks = [task.id for task in tasks_of_module(module)]
    full = sum(TASK_INFO[task].points for task in tasks)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["submission", f"total (of {full:g})",
                         *(f"task {t}" for t in tasks), "seconds", "notes"])  # fmt: skip
        for row in rows:
            writer.writerow([row.name, f"{row.total:g}",
                             *(f"{row.tasks.get(t, 0.0):g}" for t in tasks),
                             f"{row.seconds:.1f}", "; ".join(row.notes)])  # fmt: skip
