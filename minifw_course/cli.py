"""The course command line: make assignments, grade, check markers, render docs.

Run it as `python -m minifw.course ...` (or `python -m minifw_course ...`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from minifw_course.assignment import AssignmentError, assignment_module, make_assignment
from minifw_course.autograder import make_autograder
from minifw_course.batch import BatchError, grade_batch
from minifw_course.bundle_check import BundleCheckError, check_bundle
from minifw_course.docs import DocsError, write_docs
from minifw_course.fences import FenceError, scan_fences
from minifw_course.grade import VISIBILITIES, GradeError, default_staff, grade, parse_tasks
from minifw_course.markers import check_markers, collect
from minifw_course.sync import SyncError, sync
from minifw_course.task_check import all_problems, check_tasks
from minifw_course.tasks import TASKS, tasks_of_module


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="python -m minifw.course", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    make = commands.add_parser("make-assignment", help="write the student repo of a module")
    make.add_argument("--module", type=int, required=True, help="course module number")
    make.add_argument("out", type=Path, help="output folder (must be empty or absent)")
    make.add_argument("--repo", type=Path, default=Path("."), help="reference repository")
    make.add_argument("--force", action="store_true", help="replace a non-empty output folder")
    make.add_argument(
        "--with-solutions-through",
        type=int,
        default=-1,
        metavar="M",
        help="keep the reference bodies of modules 0..M (after their deadline); "
        "by default every task of every module is a stub",
    )

    bundle = commands.add_parser(
        "make-autograder", help="write Gradescope's autograder zip for a module"
    )
    bundle.add_argument("--module", type=int, required=True, help="course module number")
    bundle.add_argument("out", type=Path, help="the zip file to write")
    bundle.add_argument("--repo", type=Path, default=Path("."), help="reference repository")

    sync_cmd = commands.add_parser(
        "sync", help="copy your fenced work from an earlier module's repository into a new one"
    )
    sync_cmd.add_argument("old", type=Path, help="the earlier module's repository (OLD_REPO)")
    sync_cmd.add_argument("new", type=Path, help="the new module's repository (NEW_REPO)")
    sync_cmd.add_argument(
        "--force", action="store_true", help="also replace fences of NEW_REPO that are not stubs"
    )

    batch = commands.add_parser(
        "grade-batch", help="grade every submission folder of SUBMISSIONS_DIR into one CSV"
    )
    batch.add_argument("submissions", type=Path, help="a folder of submission folders")
    batch.add_argument("--module", type=int, required=True, help="course module number")
    batch.add_argument("--out", type=Path, required=True, help="the CSV file to write")
    batch.add_argument("--repo", type=Path, default=Path("."), help="reference repository")
    batch.add_argument("--jobs", type=int, help="submissions graded at once (default: cores)")
    batch.add_argument("--user", help="grade's --user for every submission")

    check_bundle = commands.add_parser(
        "check-bundle",
        help="build a module's bundle, set it up from its requirements.txt alone, and "
        "check that the reference scores full and the stubs 0",
    )
    check_bundle.add_argument("--module", type=int, required=True, help="course module number")
    check_bundle.add_argument("--repo", type=Path, default=Path("."), help="reference repository")
    check_bundle.add_argument(
        "--keep", type=Path, help="an empty folder to keep the Gradescope-shaped tree in"
    )

    grade_cmd = commands.add_parser("grade", help="grade a submission task by task")
    grade_cmd.add_argument("--tasks", help="comma-separated task ids, e.g. 2.1,2.2")
    grade_cmd.add_argument(
        "--module", type=int, help="grade every task of this module (default: the staff copy's)"
    )
    grade_cmd.add_argument("--json", type=Path, help="write Gradescope's results.json here")
    grade_cmd.add_argument("--timeout", type=float, default=600.0, help="seconds per task")
    grade_cmd.add_argument("--repo", type=Path, default=Path("."), help="the submission")
    grade_cmd.add_argument(
        "--staff",
        type=Path,
        help="the staff copy whose tests and files are used (default: the checkout that "
        "holds this grader); only the task files are taken from the submission",
    )
    grade_cmd.add_argument(
        "--user",
        help="who runs the tests: an account or uid (root only), or 'same' for this user "
        "(default: a fresh unprivileged uid when root, else this user)",
    )
    grade_cmd.add_argument("--visibility", choices=VISIBILITIES, default="visible")
    grade_cmd.add_argument("--python", default=sys.executable, help="interpreter for pytest")

    check = commands.add_parser("check-markers", help="check every test's task marker")
    check.add_argument("--repo", type=Path, default=Path("."))
    check.add_argument("--timeout", type=float, default=300.0)

    tasks_cmd = commands.add_parser(
        "check-tasks",
        help="check a module's tests: stubs fail, solved tasks pass, no test needs later work",
    )
    tasks_cmd.add_argument("--module", type=int, required=True, help="course module number")
    tasks_cmd.add_argument("--repo", type=Path, default=Path("."), help="reference repository")
    tasks_cmd.add_argument("--timeout", type=float, default=1800.0, help="seconds per state")

    docs = commands.add_parser("docs", help="regenerate docs/README.md and docs/moduleN.md")
    docs.add_argument("--repo", type=Path, default=Path("."))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "make-assignment":
            report = make_assignment(args.repo, args.out, args.module, force=args.force,
                                     solutions_through=args.with_solutions_through)  # fmt: skip
            print(report.summary())
            return 0
        if args.command == "make-autograder":
            names = make_autograder(args.repo, args.out, args.module)
            print(f"wrote {args.out}: {len(names)} files, module {args.module} staff copy, "
                  "setup.sh, run_autograder, requirements.txt")  # fmt: skip
            return 0
        if args.command == "sync":
            print(sync(args.old, args.new, force=args.force).summary())
            return 0
        if args.command == "grade-batch":
            grade_batch(args.submissions, args.module, args.out, repo=args.repo,
                        jobs=args.jobs, user=args.user)  # fmt: skip
            return 0
        if args.command == "check-bundle":
            check = check_bundle(args.repo, args.module, keep=args.keep)
            print(check.summary())
            for problem in check.problems():
                print(f"PROBLEM {problem}")
            print(
                f"module {args.module}: the bundle is " + ("wrong" if check.problems() else "good")
            )
            return 1 if check.problems() else 0
        if args.command == "grade":
            return _grade(args, parser)
        if args.command == "check-markers":
            problems = check_markers(collect(args.repo.resolve(), args.timeout))
            for problem in problems:
                print(problem)
            print(f"{len(problems)} marker problems" if problems else "markers: all good")
            return 1 if problems else 0
        if args.command == "check-tasks":
            problems = all_problems(check_tasks(args.repo, args.module, timeout=args.timeout))
            for problem in problems:
                print(problem)
            print(f"{len(problems)} problems" if problems else "tasks: all good")
            return 1 if problems else 0
        for path in write_docs(args.repo, scan_fences(args.repo.resolve())):
            print(f"wrote {path}")
        return 0
    except (
        AssignmentError,
        FenceError,
        DocsError,
        BundleCheckError,
        GradeError,
        SyncError,
        BatchError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _grade(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    repo = args.repo.resolve()
    if not repo.is_dir():
        parser.error(f"--repo {repo} is not a folder")
    staff = (args.staff or default_staff()).resolve()
    if args.tasks:
        try:
            tasks = parse_tasks(args.tasks)
        except ValueError as error:
            parser.error(str(error))
    else:
        # From the staff side only: a submission's own assignment.json is never read.
        module = args.module if args.module is not None else assignment_module(staff)
        tasks = list(TASKS) if module is None else tasks_of_module(module)
        if not tasks:
            parser.error(f"module {module} has no tasks in the course map")
    try:
        grade(repo, tasks, args.timeout, args.json, args.visibility, args.python,
              staff=staff, user=args.user)  # fmt: skip
    except GradeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
