"""make-autograder: Gradescope's bundle, unpacked and run as Gradescope runs it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from minifw_course.assignment import IGNORED, AssignmentError, make_assignment
from minifw_course.autograder import GRADING_PACKAGES, cuda_simulator_line, make_autograder
from minifw_course.sandbox import FRESH_USER, SandboxError, choose_user

pytestmark = pytest.mark.staff
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module 0 bundle of this repository."""
    out = tmp_path_factory.mktemp("bundle") / "module0.zip"
    make_autograder(REPO, out, 0)
    return out


def test_the_bundle_holds_the_scripts_and_the_staff_copy(bundle: Path) -> None:
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        scalar_math = archive.read("minifw/core/scalar_math.py").decode()
        record = json.loads(archive.read("minifw_course/assignment.json"))
        pins = archive.read("requirements.txt").decode().split()
    assert {"setup.sh", "run_autograder", "requirements.txt"} <= names
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert not modes["requirements.txt"] & stat.S_IXUSR
    # the staff copy is the student repository: stubs, never the reference solution
    assert 'NotImplementedError("Task 0.1' in scalar_math
    assert record["module"] == 0
    assert not any(name.startswith(("tests/course/", "minifw/fast_paths/")) for name in names)
    assert [pin.split("==")[0] for pin in pins] == list(GRADING_PACKAGES)
    assert all("==" in pin for pin in pins)
    assert not list(bundle.parent.glob("*.partial"))


def test_a_bundle_must_be_a_zip(tmp_path: Path) -> None:
    with pytest.raises(AssignmentError, match="must be a .zip"):
        make_autograder(REPO, tmp_path / "module0.tar", 0)
    assert not list(tmp_path.iterdir())


def _gradescope(tmp_path: Path, bundle: Path, submission: Path) -> dict[str, object]:
    """Unpack `bundle` as Gradescope does, run setup.sh and run_autograder; the results."""
    root = tmp_path / "autograder"
    (root / "results").mkdir(parents=True)
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    shutil.copytree(submission, root / "submission", ignore=IGNORED)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), MINIFW_PYTHON=sys.executable,
               MINIFW_GRADE_USER="same")  # fmt: skip
    env.pop("PYTHONPATH", None)
    for script in ("setup.sh", "run_autograder"):
        subprocess.run(["bash", str(root / "source" / script)], cwd=root, env=env,
                       check=True, timeout=900, capture_output=True)  # fmt: skip
    return json.loads((root / "results" / "results.json").read_text("utf-8"))  # type: ignore[no-any-return]


@pytest.mark.slow
def test_gradescope_scores_the_reference_full_and_the_stubs_zero(
    tmp_path: Path, bundle: Path
) -> None:
    reference_repo = tmp_path / "reference-repo"
    for folder in ("minifw", "tests", "project"):
        shutil.copytree(REPO / folder, reference_repo / folder, ignore=IGNORED)
    reference = _gradescope(tmp_path / "reference", bundle, reference_repo)
    stubs_repo = tmp_path / "stubs-repo"
    make_assignment(REPO, stubs_repo, 0)
    stubs = _gradescope(tmp_path / "stubs", bundle, stubs_repo)
    full = sum(float(test["max_score"]) for test in reference["tests"])  # type: ignore[attr-defined]
    assert reference["score"] == full == 40.0
    assert stubs["score"] == 0.0
    assert len(stubs["tests"]) == 4  # type: ignore[arg-type]


def test_the_scripts_are_valid_bash(bundle: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(bundle) as archive:
        archive.extract("setup.sh", tmp_path)
        archive.extract("run_autograder", tmp_path)
    for script in ("setup.sh", "run_autograder"):
        check = subprocess.run(["bash", "-n", str(tmp_path / script)], capture_output=True)
        assert check.returncode == 0, check.stderr
    assert "NUMBA_ENABLE_CUDASIM" not in (tmp_path / "run_autograder").read_text()


def test_the_bundle_always_runs_the_tests_as_a_fresh_user(bundle: Path) -> None:
    with zipfile.ZipFile(bundle) as archive:
        script = archive.read("run_autograder").decode()
    assert '--user "${MINIFW_GRADE_USER:-fresh}"' in script
    # "fresh" is a fresh user id or an error, never a fall back to the grader's own user
    if os.geteuid() == 0:
        assert choose_user(FRESH_USER).dropped
    else:
        with pytest.raises(SandboxError, match="only root"):
            choose_user(FRESH_USER)


def test_only_the_cuda_module_grades_on_the_simulator() -> None:
    lines = {module: cuda_simulator_line(module) for module in range(5)}
    assert [module for module, line in lines.items() if line] == [3]
    assert 'export NUMBA_ENABLE_CUDASIM="${NUMBA_ENABLE_CUDASIM:-1}"' in lines[3]
