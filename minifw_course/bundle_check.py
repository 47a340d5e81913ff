"""Check a module's Gradescope bundle the way Gradescope runs it: `check-bundle --module N`.

The bundle is built and unpacked into a temporary Gradescope-shaped folder
(`autograder/source`, `autograder/submission`, `autograder/results`); `setup.sh` creates
the bundle's virtual environment from its `requirements.txt` alone (pip may use its
package index and its cache, never this environment's packages), then `run_autograder`
grades two submissions: the reference repository, which must score exactly full marks,
and the untouched student repository (`make-assignment`), which must score exactly 0.
Before each submission the Numba cache is reset to what `setup.sh` left, as in a fresh
container. When run as root the tests run as a fresh user id, as on Gradescope, so the
folder is made readable to everyone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from minifw_course.assignment import IGNORED, AssignmentError, make_assignment
from minifw_course.autograder import NUMBA_CACHE, make_autograder
from minifw_course.catalog import TASK_INFO
from minifw_course.tasks import MODULES, tasks_of_module

REFERENCE_FOLDERS = ("minifw", "project", "tests")
SETUP_TIMEOUT = 1800.0
GRADE_TIMEOUT = 3600.0


class BundleCheckError(RuntimeError):
    """The bundle could not be set up or run (the message says which step and why)."""


@dataclass
class Graded:
    """What run_autograder gave one submission."""

    name: str
    score: float
    seconds: float
    tasks: dict[str, float] = field(default_factory=dict)


@dataclass
class BundleCheck:
    """The outcome of one module's bundle check."""

    module: int
    full: float
    setup_seconds: float = 0.0
    graded: list[Graded] = field(default_factory=list)

    def problems(self) -> list[str]:
        """What is wrong: the reference below full, the stubs above zero."""
        expected = {"reference": self.full, "stubs": 0.0}
        return [
            f"module {self.module}: the {g.name} scored {g.score:g}, expected "
            f"{expected[g.name]:g} (per task: {_per_task(g.tasks)})"
            for g in self.graded
            if g.score != expected[g.name]
        ]

    def summary(self) -> str:
        """One line per step, for the terminal."""
        lines = [f"module {self.module}: setup.sh {self.setup_seconds:.0f} s"]
        for graded in self.graded:
            lines.append(
                f"module {self.module}: {graded.name} {graded.score:g}/{self.full:g} "
                f"in {graded.seconds:.0f} s"
            )
        return "\n".join(lines)


def _per_task(tasks: dict[str, float]) -> str:
    return ", ".join(f"{task} {score:g}" for task, score in sorted(tasks.items()))


def check_bundle(
    repo: Path, module: int, log: Callable[[str], None] = print, keep: Path | None = None
) -> BundleCheck:
    """Build, set up and run `module`'s bundle on the reference and on the stubs.

    `keep`, when given, is an empty folder that holds the Gradescope-shaped tree
    afterwards (for a look at results.json); by default a temporary one is removed.
    """
    repo = repo.resolve()
    if module not in MODULES:
        raise AssignmentError(f"module {module} is not in the course map (modules {MODULES})")
    if not (repo / "minifw").is_dir():
        raise AssignmentError(f"{repo} has no minifw/ package: is it the reference repository?")
    full = sum(TASK_INFO[task.id].points for task in tasks_of_module(module))
    result = BundleCheck(module, full)
    with tempfile.TemporaryDirectory(prefix=f"minifw-bundle-{module}-") as scratch:
        base = keep.resolve() if keep is not None else Path(scratch)
        if keep is not None and keep.exists() and any(keep.iterdir()):
            raise AssignmentError(f"--keep folder {keep} is not empty")
        root = base / "autograder"
        _unpack(repo, base, root, module)
        log(f"module {module}: running setup.sh (a fresh venv from requirements.txt) ...")
        started = time.monotonic()
        _run(root / "source" / "setup.sh", root, SETUP_TIMEOUT)
        result.setup_seconds = time.monotonic() - started
        pristine = base / "numba-cache-after-setup"
        shutil.copytree(root / NUMBA_CACHE, pristine)
        submissions = {
            "reference": lambda out: _copy_reference(repo, out),
            "stubs": lambda out: make_assignment(repo, out, module),
        }
        for name, write in submissions.items():
            log(f"module {module}: grading the {name} ...")
            result.graded.append(_grade(root, pristine, name, write))
            log(result.summary().splitlines()[-1])
    return result


def _unpack(repo: Path, base: Path, root: Path, module: int) -> None:
    """Build the bundle and unpack it as Gradescope does, readable by every user."""
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    bundle = base / f"module{module}-autograder.zip"
    make_autograder(repo, bundle, module)
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
        for info in archive.infolist():  # zipfile drops the modes: put them back
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                os.chmod(root / "source" / info.filename, mode)
    (root / "results").mkdir()
    for folder in (base, root):
        os.chmod(folder, 0o755)


def _copy_reference(repo: Path, out: Path) -> None:
    for folder in REFERENCE_FOLDERS:
        if (repo / folder).is_dir():
            shutil.copytree(repo / folder, out / folder, ignore=IGNORED)


def _grade(root: Path, pristine: Path, name: str, write: Callable[[Path], object]) -> Graded:
    submission = root / "submission"
    shutil.rmtree(submission, ignore_errors=True)
    write(submission)
    shutil.rmtree(root / NUMBA_CACHE)
    shutil.copytree(pristine, root / NUMBA_CACHE)
    results = root / "results" / "results.json"
    results.unlink(missing_ok=True)
    started = time.monotonic()
    _run(root / "source" / "run_autograder", root, GRADE_TIMEOUT)
    seconds = time.monotonic() - started
    if not results.is_file():
        raise BundleCheckError(f"run_autograder wrote no {results} for the {name}")
    data = json.loads(results.read_text("utf-8"))
    tasks = {str(test["number"]): float(test["score"]) for test in data["tests"]}
    shutil.copy2(results, root / "results" / f"{name}.json")
    return Graded(name, float(data["score"]), seconds, tasks)


def clean_environment(root: Path) -> dict[str, str]:
    """This process's environment without its virtual environment or Python paths.

    The bundle's scripts then find the machine's own `python3`, as on Gradescope. As
    root, the folders other users cannot enter (a Python under /root) are left off PATH
    too: the tests run as a fresh user id, which must be able to start the venv's Python.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MINIFW_"))}
    venv = env.pop("VIRTUAL_ENV", None)
    parts = env.get("PATH", "").split(os.pathsep)
    if venv:
        parts = [p for p in parts if not Path(p).resolve().is_relative_to(Path(venv).resolve())]
    if os.geteuid() == 0:
        parts = [p for p in parts if _open_to_all(Path(p))]
    env["PATH"] = os.pathsep.join(parts)
    env["AUTOGRADER_ROOT"] = str(root)
    return env


def _open_to_all(folder: Path) -> bool:
    """True when every user may enter `folder` and each folder above it."""
    folder = folder.resolve()
    try:
        return all(path.stat().st_mode & 0o001 for path in (folder, *folder.parents))
    except OSError:
        return False


def _run(script: Path, root: Path, timeout: float) -> None:
    try:
        env = clean_environment(root)
        done = subprocess.run(["bash", str(script)], cwd=root, env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)  # fmt: skip
    except subprocess.TimeoutExpired as error:
        raise BundleCheckError(f"{script.name} ran past {timeout:.0f} s") from error
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise BundleCheckError(f"{script.name} exited with {done.returncode}:\n{tail}")
