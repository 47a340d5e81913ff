"""sync: a student's fenced work carried from an earlier module's repository into the next."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from minifw_course.assignment import make_assignment
from minifw_course.sync import SyncError, sync

pytestmark = pytest.mark.staff

MY_MUL = "def mul(x: float, y: float) -> float:\n    return y * x  # my own\n"


def _student_work(repo: Path) -> None:
    """Write a student's own task 0.1 in a generated mini repository."""
    path = repo / "minifw/ops.py"
    text = path.read_text()
    begin = text.index("# BEGIN TASK 0.1\n") + len("# BEGIN TASK 0.1\n")
    end = text.index("# END TASK 0.1")
    path.write_text(text[:begin] + "\n\n@functools.lru_cache(maxsize=None)\n" + MY_MUL
                    + "\n\n" + text[end:])  # fmt: skip


@pytest.fixture
def repos(make_mini_repo, tmp_path: Path) -> tuple[Path, Path]:
    """A module 0 repository with task 0.1 done, and a fresh module 1 repository."""
    reference = make_mini_repo()
    old, new = tmp_path / "module0", tmp_path / "module1"
    make_assignment(reference, old, 0)
    make_assignment(reference, new, 1)
    _student_work(old)
    return old, new


def test_sync_fills_the_stubs_the_student_solved_and_reports_the_rest(repos, tests_in) -> None:
    old, new = repos
    report = sync(old, new)
    assert report.filled == ["task 0.1 minifw/ops.py (mul)"]
    assert report.stubs == ["task 1.1 minifw/ops.py (square_back)",
                            "task 2.1 minifw/strided.py (Strided.strides)"]  # fmt: skip
    assert report.kept == [] and report.unmatched == []
    text = (new / "minifw/ops.py").read_text()
    assert "return y * x  # my own" in text and "Task 1.1: implement square_back" in text
    assert "1 fences filled, 2 still stubs" in report.summary()
    assert "still stubs: task 1.1 (1 fence), task 2.1 (1 fence)" in report.summary()
    run = tests_in(new, "-q", "-m", "task0_1")
    assert run.returncode == 0 and "4 passed" in run.stdout, run.stdout
    again = sync(old, new)  # nothing new to carry: the same lines are left alone
    assert again.filled == [] and again.kept == []


def test_sync_never_overwrites_work_without_force(repos) -> None:
    old, new = repos
    sync(old, new)
    path = new / "minifw/ops.py"
    path.write_text(path.read_text().replace("return y * x  # my own", "return x * y  # newer"))
    report = sync(old, new)
    assert report.kept == ["task 0.1 minifw/ops.py (mul)"] and report.filled == []
    assert "return x * y  # newer" in path.read_text()
    forced = sync(old, new, force=True)
    assert forced.filled == ["task 0.1 minifw/ops.py (mul)"]
    assert "return y * x  # my own" in path.read_text()


def test_sync_matches_a_fence_whose_file_moved(repos) -> None:
    old, new = repos
    shutil.move(new / "minifw/ops.py", new / "minifw/moved_ops.py")
    report = sync(old, new)
    assert report.filled == ["task 0.1 minifw/moved_ops.py (mul)"]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "is not a folder"),
        ("not a repo", "is not a minifw student repository"),
        ("same", "are the same folder"),
        ("backwards", "OLD_REPO is module 1 and NEW_REPO module 0"),
        ("half-written", "cannot read the fences"),
    ],
)
def test_bad_input_gets_one_clear_line(repos, tmp_path, course_cli, case, message) -> None:
    old, new = repos
    args = {
        "missing": (tmp_path / "nowhere", new),
        "not a repo": (tmp_path, new),
        "same": (old, old),
        "backwards": (new, old),
        "half-written": (old, new),
    }[case]
    if case == "half-written":
        (old / "minifw/ops.py").write_text("# BEGIN TASK 0.1\ndef mul(x, y:\n")
    before = (new / "minifw/ops.py").read_text()
    with pytest.raises(SyncError, match=message):
        sync(*args)
    done = course_cli("sync", str(args[0]), str(args[1]), cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert (new / "minifw/ops.py").read_text() == before
