"""Write Gradescope's autograder bundle for one module: `make-autograder --module N OUT.zip`.

Gradescope unpacks the zip into `/autograder/source`, runs `setup.sh` once when the
course staff upload it (building the container image), and runs `run_autograder` for
every submission, with the student's files in `/autograder/submission`; the scores must
end up in `/autograder/results/results.json`. The bundle holds:

- the staff copy: the module's student repository as make-assignment writes it (stubs,
  the module's tests, `minifw_course/assignment.json`), so the reference solution of the
  module never reaches the grading machine;
- `requirements.txt`: what grading needs, pinned to the versions of the machine that built
  the bundle (the tests were run with those);
- `setup.sh`: a virtual environment with those packages, then a warm-up that compiles the
  given Numba kernels into the container's cache (students' kernels still compile per run);
- `run_autograder`: runs `python -m minifw_course grade` with the staff copy and the
  submission, which takes only the submission's task files (see grade.py).

Both scripts read AUTOGRADER_ROOT (default /autograder) and MINIFW_PYTHON (default the
bundle's venv), and run_autograder MINIFW_GRADE_USER (grade's --user), so a test can run
them in a temporary folder with the current interpreter. run_autograder's default user
is "fresh": the tests always run as a fresh user id, and grading stops with an error
rather than fall back to root when that user cannot run the interpreter.
"""

from __future__ import annotations

import importlib.metadata
import stat
import tempfile
import zipfile
from pathlib import Path

from minifw_course.assignment import AssignmentError, make_assignment
from minifw_course.tasks import has_cuda_tasks

# What the graded tests and the task files they import need (torch and the app never:
# a test that needs them is `extra`, never graded). tqdm: project/cli.py (task 1.5).
GRADING_PACKAGES = (
    "numpy", "numba", "llvmlite", "pytest", "pytest-timeout", "hypothesis", "scikit-learn",
    "tqdm",
)  # fmt: skip
NUMBA_CACHE = "numba-cache"

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when the autograder image is built.
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
python="${MINIFW_PYTHON:-}"
if [ -z "$python" ]; then
    python3 -m venv "$root/venv"
    "$root/venv/bin/python" -m pip install --quiet --upgrade pip
    "$root/venv/bin/python" -m pip install --quiet -r "$root/source/requirements.txt"
    python="$root/venv/bin/python"
fi
mkdir -p "$root/%(cache)s"
chmod 0755 "$root/%(cache)s"
# Compile the kernels students are given; a kernel whose task is a stub is skipped.
cd "$root/source"
NUMBA_CACHE_DIR="$root/%(cache)s" PYTHONPATH="$root/source" "$python" -m minifw_course.warm
chmod -R a+rX "$root/%(cache)s"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission; scores go to results/results.json.
set -uo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
python="${MINIFW_PYTHON:-$root/venv/bin/python}"
mkdir -p "$root/results"
cd "$root/source"
%(cudasim)sexport NUMBA_CACHE_DIR="$root/%(cache)s" PYTHONPATH="$root/source"
"$python" -m minifw_course grade \\
    --module %(module)d --staff "$root/source" --repo "$root/submission" \\
    --json "$root/results/results.json" --python "$python" \\
    --user "${MINIFW_GRADE_USER:-fresh}"
"""


def pinned_requirements() -> str:
    """requirements.txt lines pinning GRADING_PACKAGES to this machine's versions."""
    lines = []
    for name in GRADING_PACKAGES:
        try:
            lines.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError as error:
            raise AssignmentError(f"{name} is not installed here: cannot pin it") from error
    return "\n".join(lines) + "\n"


def make_autograder(repo: Path, out: Path, module: int) -> list[str]:
    """Write the Gradescope bundle of `module` to the zip file `out`; return its names."""
    if out.suffix != ".zip":
        raise AssignmentError(f"{out}: the bundle must be a .zip file")
    with tempfile.TemporaryDirectory(prefix="minifw-autograder-") as scratch:
        staff = Path(scratch) / "source"
        make_assignment(repo, staff, module)
        fill = {"cache": NUMBA_CACHE, "module": module, "cudasim": cuda_simulator_line(module)}
        files = {
            "requirements.txt": pinned_requirements(),
            "setup.sh": SETUP_SH % fill,
            "run_autograder": RUN_AUTOGRADER % fill,
        }
        for name, text in files.items():
            (staff / name).write_text(text, "utf-8")
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")
        names = _write_zip(staff, partial, executable={"setup.sh", "run_autograder"})
        partial.replace(out)  # never a half-written bundle under the real name
        return names


def cuda_simulator_line(module: int) -> str:
    """For the module whose tasks are CUDA kernels: run them on Numba's simulator.

    Gradescope's machines have no GPU; without the simulator the staff copy skips the
    CUDA tests and tasks 3.3 and 3.4 would have nothing to score.
    """
    if not has_cuda_tasks(module):
        return ""
    return "# No GPU on the grading machine: the CUDA tasks run on Numba's simulator.\n" + (
        'export NUMBA_ENABLE_CUDASIM="${NUMBA_ENABLE_CUDASIM:-1}"\n'
    )


def _write_zip(folder: Path, target: Path, executable: set[str]) -> list[str]:
    names = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(folder.rglob("*")):
            if not path.is_file():
                continue
            name = path.relative_to(folder).as_posix()
            info = zipfile.ZipInfo.from_file(path, name)
            mode = 0o755 if name in executable else 0o644
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, path.read_bytes())
            names.append(name)
    return names
