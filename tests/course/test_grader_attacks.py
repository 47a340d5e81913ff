"""Submissions that try to fool the grader: each scores nothing for the task it stubs.

Every attack starts from a generated module-1 student repository of the mini course (its
task 1.1, `square_back` in minifw/ops.py, is a stub with two tests) and grades task 1.1
against the untouched student repository as the staff copy. The routes: stubs that call
pytest.xfail or pytest.skip, code that patches the recorder or pytest's reports and
runner, a task file that rewrites the tests at import time or swaps them through an
import hook, a plugin registered with pytest at run time, replaced oracles (math.isclose,
numpy.testing), records forged on the results pipe, symbolic links and FIFOs in the
submission, a process left behind to rewrite results.json, and a submission that claims
another module. Where privileges matter (rewriting files, processes left behind) the
attack runs twice: as the grader's own user, and as root with the tests dropped to a
fresh user id, as on Gradescope.
"""

from __future__ import annotations

import ast
import json
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from minifw_course import grade as grade_module
from minifw_course.assignment import make_assignment
from minifw_course.grade import GradeError, TaskResult, grade, parse_tasks
from minifw_course.sandbox import SandboxError, check_interpreter, fresh_user

pytestmark = pytest.mark.staff

OPS = "minifw/ops.py"
TASK = parse_tasks("1.1")

# Every test result the recorder writes becomes "passed" (the old recorder looked up
# json.dumps and its own emit at call time; the new one captured them at import).
RECORDER_ATTACK = """
import json as _json
import os as _os
import sys as _sys

_dumps = _json.dumps


def _passing_dumps(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj.get("event") == "result":
        obj = {**obj, "outcome": "passed", "why": "", "message": ""}
    return _dumps(obj, *args, **kwargs)


_json.dumps = _passing_dumps
_write = _os.write


def _passing_write(fd, data):
    return _write(fd, bytes(data).replace(b'"outcome": "failed"', b'"outcome": "passed"'))


_os.write = _passing_write
_recorder = _sys.modules.get("_minifw_course_recorder")
if _recorder is not None and hasattr(_recorder, "Recorder"):
    _emit = _recorder.Recorder.emit

    def _passing_emit(self, **event):
        if event.get("event") == "result":
            event.update(outcome="passed", message="")
        return _emit(self, **event)

    _recorder.Recorder.emit = _passing_emit
"""

# pytest's report of every phase says "passed", whatever the test raised.
REPORT_ATTACK = """
import _pytest.reports as _reports

_original = _reports.TestReport.from_item_and_call.__func__


def _passing(cls, item, call):
    report = _original(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report


_reports.TestReport.from_item_and_call = classmethod(_passing)
"""

RUNNER_ATTACK = """
import _pytest.runner as _runner

_original = _runner.call_and_report


def _passing(item, when, log=True, **kwds):
    report = _original(item, when, log=False, **kwds)
    report.outcome, report.longrepr = "passed", None
    if log:
        item.ihook.pytest_runtest_logreport(report=report)
    return report


_runner.call_and_report = _passing
"""

# Imported by tests/conftest.py before the test files are read: every test returns at once.
REWRITE_ATTACK = r"""
import pathlib as _pathlib
import re as _re

for _path in (_pathlib.Path(__file__).resolve().parents[1] / "tests").glob("test_*.py"):
    try:
        _path.chmod(0o644)
        _text = _path.read_text()
        _path.write_text(_re.sub(r"(\ndef test_\w+\(.*\):\n)", r"\1    return\n", _text))
    except OSError:
        pass
"""

# A process in a session of its own rewrites results.json for 15 s; another sleeps on.
DAEMON_ATTACK = """
import json as _json
import os as _os
import time as _time

if _os.environ.get("MINIFW_ATTACK_FORKED") is None:
    _os.environ["MINIFW_ATTACK_FORKED"] = "1"
    if _os.fork() == 0:
        _os.setsid()
        if _os.fork() == 0:
            if _os.fork() == 0:
                _os.execv("/bin/sleep", ["sleep", MARK])
            for _ in range(150):
                _time.sleep(0.1)
                try:
                    with open(RESULTS + ".attack", "w") as _out:
                        _json.dump({"score": 999.0, "tests": [], "output": "fooled"}, _out)
                    _os.replace(RESULTS + ".attack", RESULTS)
                except OSError:
                    pass
        _os._exit(0)
"""


# A meta_path finder, first in line, that lets each test module load and then replaces
# every test_* function in it with a no-op that keeps its marks.
IMPORT_HOOK_ATTACK = """
import functools as _functools
import sys as _sys


class _Swap:
    def find_spec(self, name, path=None, target=None):
        if not name.rpartition(".")[2].startswith("test_"):
            return None
        for finder in _sys.meta_path:
            spec = None if finder is self else finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            for key, value in list(vars(module).items()):
                if key.startswith("test_") and callable(value):
                    @_functools.wraps(value)  # the same arguments and marks
                    def noop(*args, **kwargs):
                        return None
                    setattr(module, key, noop)

        spec.loader.exec_module = exec_module
        return spec


_sys.meta_path.insert(0, _Swap())
"""

# Finds pytest's Config (through gc, or up the stack) and registers a plugin whose
# pytest_pyfunc_call runs first and says the test ran: no test function is ever called.
PLUGIN_ATTACK = """
import sys as _sys

import pytest as _pytest


class _Pass:
    @_pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        return True


def _config_by_gc():
    import gc
    return next(o for o in gc.get_objects() if isinstance(o, _pytest.Config))


def _config_by_stack():
    frame = _sys._getframe()
    while frame is not None:
        found = getattr(frame.f_locals.get("self"), "config", None)
        if isinstance(found, _pytest.Config):
            return found
        frame = frame.f_back
    raise LookupError("no Config on the stack")


(_config_by_gc if ROUTE == "gc" else _config_by_stack)().pluginmanager.register(_Pass())
"""

# Everything the tests compare with looks equal; the stub returns 0.0.
ORACLE_ATTACKS = {
    "math.isclose": "import math\nmath.isclose = lambda *a, **k: True",
    "numpy.testing": "import numpy.testing\nnumpy.testing.assert_allclose = lambda *a, **k: None",
}
ORACLE_TESTS = """
import math

import numpy.testing
import pytest

from minifw import ops


@pytest.mark.task1_1
def test_square_back_is_close():
    assert math.isclose(ops.square_back(3.0, 2.0), 12.0)


@pytest.mark.task1_1
def test_square_back_allclose():
    numpy.testing.assert_allclose(ops.square_back(-1.0, 1.0), -2.0)
"""

# The recorder's descriptor now leads to /dev/null; at exit, "passed" for every test of
# task 1.1, in the format of the recorder's lines, goes to the real pipe.
DUP2_ATTACK = """
import atexit as _atexit
import json as _json
import os as _os
import sys as _sys

_fd = next(int(a.split("=")[1]) for a in _sys.argv if a.startswith("--minifw-record-fd="))
_saved = _os.dup(_fd)
_os.dup2(_os.open(_os.devnull, _os.O_WRONLY), _fd)


def _forge():
    events = []
    for seq, name in enumerate(["test_square_back", "test_square_back_of_a_negative"]):
        nodeid = "tests/test_ops.py::" + name
        events.append({"event": "result", "nodeid": nodeid, "outcome": "passed", "why": "",
                       "message": "", "seq": seq})
    events.append({"event": "finished", "exitstatus": 0, "seq": len(events)})
    for event in events:
        _os.write(_saved, (_json.dumps(event) + "\\n").encode())


_atexit.register(_forge)
"""


def with_body(source: str, function: str, body: str) -> str:
    """`source` with the statements after the docstring of `function` replaced by `body`."""
    node = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef) and n.name == function
    )
    lines = source.splitlines(keepends=True)
    indent = " " * node.body[1].col_offset
    new = "".join(indent + line + "\n" for line in textwrap.dedent(body).strip().splitlines())
    return "".join(lines[: node.body[1].lineno - 1]) + new + "".join(lines[node.end_lineno :])


def appended(code: str) -> Callable[[str], str]:
    """An edit that adds `code` at the end of a file."""
    return lambda source: source + "\n" + code


@pytest.fixture
def staff(make_mini_repo, mini_files, tmp_path) -> Callable[..., Path]:
    """The staff copy: the mini course's module-1 student repository, maybe with edits."""

    def make(overrides: dict[str, str] | None = None) -> Path:
        out = tmp_path / f"staff{secrets.token_hex(3)}"
        make_assignment(make_mini_repo(overrides), out, 1)
        return out

    return make


def submission_of(staff_copy: Path, edits: dict[str, Callable[[str], str] | str]) -> Path:
    """A copy of the staff copy (the student's starting point) with `edits` applied."""
    out = staff_copy.with_name(staff_copy.name + "-submission")
    shutil.copytree(staff_copy, out)
    for name, edit in edits.items():
        path = out / name
        old = path.read_text("utf-8") if path.exists() else ""
        path.write_text(edit if isinstance(edit, str) else edit(old), "utf-8")
    return out


def grade_one(
    submission: Path, staff_copy: Path, user: str = "same", python: str = sys.executable
) -> tuple[TaskResult, dict[str, Any]]:
    """Grade task 1.1 of `submission`; return its result and the results.json written."""
    path = submission.parent / f"results-{submission.name}.json"
    (result,) = grade(submission, TASK, 60, path, log=lambda _: None, staff=staff_copy,
                      user=user, python=python)  # fmt: skip
    return result, json.loads(path.read_text("utf-8"))


@pytest.fixture(scope="module")
def dropped_python() -> Iterator[str]:
    """An interpreter a fresh unprivileged user can run (skip when not root or none).

    The interpreter of this test run may live where other users cannot reach it (a
    pyenv under /root): then a virtual environment of the system Python of the same
    version is made in a folder everyone can read, seeing this run's packages.
    """
    if os.geteuid() != 0:
        pytest.skip("dropping privileges needs root (CI and Gradescope run as root)")
    folder = Path(tempfile.mkdtemp(prefix="minifw-python-"))
    folder.chmod(0o755)
    try:
        yield _usable_python(folder)
    finally:
        shutil.rmtree(folder)


def _usable_python(folder: Path) -> str:
    if _runs_dropped(sys.executable, folder):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/bin:/usr/local/bin:/bin")
    if system is None:
        pytest.skip(f"{sys.executable} is not usable by other users, and there is no {version}")
    venv = folder / "venv"
    subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = sysconfig.get_paths()["purelib"]
    (venv / "lib" / version / "site-packages" / "parent.pth").write_text(
        f"import site; site.addsitedir({packages!r})\n"
    )
    subprocess.run(["chmod", "-R", "a+rX", str(folder)], check=True)
    python = str(venv / "bin" / "python")
    if not _runs_dropped(python, folder):
        pytest.skip(f"neither {sys.executable} nor {python} can run as another user")
    return python


def _runs_dropped(python: str, folder: Path) -> bool:
    scratch = folder / f"check{secrets.token_hex(3)}"
    try:
        check_interpreter(python, folder, scratch, fresh_user())
    except SandboxError:
        return False
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return True


def test_a_stub_that_calls_xfail_scores_zero(staff):
    copy = staff()
    xfail = lambda s: with_body(s, "square_back", 'import pytest\npytest.xfail("later")')  # noqa: E731
    result, data = grade_one(submission_of(copy, {OPS: xfail}), copy)
    assert (result.score, result.passed, result.counted) == (0.0, 0, 2)
    assert data["score"] == 0
    assert "XFAILED tests/test_ops.py::test_square_back: " in result.output
    assert "(an expected failure scores 0)" in result.output


@pytest.mark.parametrize(
    ("body", "score"),
    [
        ('import pytest\npytest.skip("later")', 0.0),
        ('if (x, d) == (3.0, 2.0):\n    return 12.0\nimport pytest\npytest.skip("later")', 5.0),
    ],
    ids=["every-test-skips", "one-passes-one-skips"],
)
def test_skipped_tests_stay_in_the_denominator_and_score_zero(staff, body, score):
    copy = staff()
    submission = submission_of(copy, {OPS: lambda s: with_body(s, "square_back", body)})
    result, _ = grade_one(submission, copy)
    assert (result.score, result.counted) == (score, 2)
    assert "SKIPPED tests/test_ops.py::test_square_back_of_a_negative: " in result.output
    assert "(a skipped test scores 0)" in result.output


@pytest.mark.parametrize("where", ["minifw/__init__.py", OPS])
def test_patching_the_recorder_scores_zero(staff, where):
    copy = staff()
    result, data = grade_one(submission_of(copy, {where: appended(RECORDER_ATTACK)}), copy)
    assert (result.score, result.counted) == (0.0, 2)
    assert "NotImplementedError: Task 1.1: implement square_back" in result.output
    if where == "minifw/__init__.py":  # not a task file: never even laid in
        assert "Ignored (only task files are graded): minifw/__init__.py" in data["output"]


@pytest.mark.parametrize("attack", [REPORT_ATTACK, RUNNER_ATTACK], ids=["reports", "runner"])
@pytest.mark.parametrize("where", ["minifw/__init__.py", OPS])
def test_patching_pytest_reports_or_runner_scores_zero(staff, attack, where):
    copy = staff()
    result, _ = grade_one(submission_of(copy, {where: appended(attack)}), copy)
    assert (result.score, result.passed) == (0.0, 0)
    if where == OPS:  # laid in, imported, caught patching pytest
        assert result.output.startswith("Task 1.1: 0 points: tampered: _pytest.")
        assert result.note == "tampered"
    else:
        assert "NotImplementedError: Task 1.1: implement square_back" in result.output


@pytest.mark.parametrize("mode", ["same-user", "dropped"])
def test_rewriting_the_tests_at_import_scores_zero(staff, mini_files, mode, request):
    conftest = mini_files["tests/conftest.py"] + "\n\nimport minifw.ops  # noqa: E402, F401\n"
    copy = staff({"tests/conftest.py": conftest})
    python = request.getfixturevalue("dropped_python") if mode == "dropped" else sys.executable
    user = None if mode == "dropped" else "same"
    before = (copy / "tests/test_ops.py").read_text()
    result, data = grade_one(submission_of(copy, {OPS: appended(REWRITE_ATTACK)}), copy,
                             user=user, python=python)  # fmt: skip
    assert result.score == 0 and data["score"] == 0
    assert (copy / "tests/test_ops.py").read_text() == before  # the staff copy is untouched
    if mode == "same-user":  # it could write the copy: caught by the hashes
        assert "the run is void: the test process changed tests/test_ops.py" in result.output
    else:  # the copy is root's and read-only: the tests ran as written, and failed
        assert "NotImplementedError: Task 1.1" in result.output and result.counted == 2


def _processes_with(argument: str) -> list[int]:
    """The pids of the processes whose command line has `argument`."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            words = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argument.encode() in words:
            found.append(int(name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the process sweep reads /proc (Linux)")
@pytest.mark.parametrize("mode", ["same-user", "dropped"])
def test_a_process_left_behind_cannot_rewrite_results(staff, mode, request):
    python = request.getfixturevalue("dropped_python") if mode == "dropped" else sys.executable
    copy = staff()
    mark = f"{secrets.randbelow(10**6) + 10**6}.25"
    results = copy.parent / f"results-{copy.name}-submission.json"
    attack = f"RESULTS = {str(results)!r}\nMARK = {mark!r}\n" + DAEMON_ATTACK
    submission = submission_of(copy, {OPS: appended(attack)})
    try:
        result, _ = grade_one(submission, copy, None if mode == "dropped" else "same", python)
        time.sleep(2.0)  # the attack would have rewritten results.json by now
        assert _processes_with(mark) == [], "a process of the run outlived the grader"
    finally:
        for pid in _processes_with(mark):  # only after a failure: the sleeper it started
            os.kill(pid, signal.SIGKILL)
    data = json.loads(results.read_text("utf-8"))
    assert data["score"] == 0 and data["tests"][0]["number"] == "1.1"
    assert result.score == 0 and "NotImplementedError: Task 1.1" in result.output


def test_the_graded_module_comes_from_the_staff_side(staff, tmp_path, course_cli):
    copy = staff()
    claim = json.dumps({"module": 0, "tasks": ["0.1", "0.2", "0.3", "0.4"]})
    submission = submission_of(copy, {"minifw_course/assignment.json": claim})
    out = tmp_path / "results.json"
    for pinned in ([], ["--module", "1"]):
        args = ["--repo", str(submission), "--staff", str(copy), *pinned, "--json", str(out)]
        done = course_cli("grade", *args, "--user", "same", "--timeout", "60", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        data = json.loads(out.read_text("utf-8"))
        assert [entry["number"] for entry in data["tests"]] == ["1.1", "1.2", "1.3", "1.4", "1.5"]
        assert data["score"] == 0


def test_as_root_the_tests_run_as_another_user_on_read_only_files(
    make_mini_repo, tmp_path, dropped_python
):
    whoami = """
        import os
        from pathlib import Path

        import pytest


        @pytest.mark.task1_1
        def test_runs_unprivileged_on_read_only_files(tmp_path):
            assert os.geteuid() != 0 and os.getegid() != 0
            (tmp_path / "scratch.txt").write_text("a folder of its own to write in")
            with pytest.raises(PermissionError):
                Path(__file__).write_text("")
            with pytest.raises(PermissionError):
                Path(__file__).with_name("new.py").write_text("")
    """
    reference = make_mini_repo({"tests/test_whoami.py": whoami})
    result, data = grade_one(reference, reference, user=None, python=dropped_python)
    assert (result.score, result.passed, result.counted) == (10.0, 3, 3), result.output
    assert data["score"] == 10.0


@pytest.fixture
def hooked_staff(staff, mini_files) -> Path:
    """A staff copy whose tests/conftest.py imports the package first (as the real one
    does), so a task file runs before any test module is imported."""
    conftest = mini_files["tests/conftest.py"] + "\n\nimport minifw.ops  # noqa: E402, F401\n"
    return staff({"tests/conftest.py": conftest})


def test_an_import_hook_that_swaps_the_tests_scores_zero_as_tampered(hooked_staff):
    submission = submission_of(hooked_staff, {OPS: appended(IMPORT_HOOK_ATTACK)})
    result, data = grade_one(submission, hooked_staff)
    assert result.score == 0 and data["score"] == 0 and result.note == "tampered"
    assert result.output.startswith("Task 1.1: 0 points: tampered: ")
    assert "the code of tests/test_ops.py::test_square_back is not the staff copy's" in (
        result.output
    )
    assert "sys.meta_path holds minifw.ops._Swap" in result.output
    assert any("_Swap" in why for why in data["extra_data"]["tampered"]["1.1"])


@pytest.mark.parametrize("route", ["gc", "stack"])
def test_a_plugin_registered_at_run_time_scores_zero_as_tampered(staff, route):
    copy = staff()
    attack = f"ROUTE = {route!r}\n" + PLUGIN_ATTACK
    result, data = grade_one(submission_of(copy, {OPS: appended(attack)}), copy)
    assert result.score == 0 and data["score"] == 0 and result.note == "tampered"
    if route == "gc":  # refused by the audit hook, and named
        assert "gc.get_objects from minifw/ops.py" in result.output
    else:  # registered: pytest holds a hook the staff's run did not
        assert "pytest holds a hook that is not the staff's: pytest_pyfunc_call" in result.output
        assert "minifw.ops._Pass.pytest_pyfunc_call" in result.output


@pytest.mark.parametrize("oracle", sorted(ORACLE_ATTACKS))
def test_a_replaced_oracle_scores_zero_as_tampered(staff, oracle):
    copy = staff({"tests/test_oracle.py": ORACLE_TESTS})
    zero = lambda s: with_body(s, "square_back", "return 0.0")  # noqa: E731
    edit = lambda s: zero(s) + "\n" + ORACLE_ATTACKS[oracle] + "\n"  # noqa: E731
    result, data = grade_one(submission_of(copy, {OPS: edit}), copy)
    assert result.counted == 0 and result.note == "tampered", result.output
    assert result.score == 0 and data["score"] == 0
    changed = "math.isclose" if oracle == "math.isclose" else "numpy.testing.assert_allclose"
    assert f"tampered: {changed}" in result.output


def test_records_forged_over_a_dup2_of_the_pipe_score_zero_as_tampered(staff):
    copy = staff()
    result, data = grade_one(submission_of(copy, {OPS: appended(DUP2_ATTACK)}), copy)
    assert result.score == 0 and data["score"] == 0 and result.note == "tampered"
    assert "records on the results pipe are forged (no valid MAC)" in result.output


def _limit_memory() -> None:
    """In the grader's process: the 2 GiB address space of a small grading machine."""
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


def test_links_and_fifos_in_a_submission_are_never_followed(staff, tmp_path):
    copy = staff()
    submission = submission_of(copy, {})
    (submission / "minifw" / "__init__.py").unlink()  # a file of the staff copy too
    (submission / "minifw" / "__init__.py").symlink_to("/dev/zero")
    (submission / "minifw" / "ops.py").unlink()
    (submission / "minifw" / "ops.py").symlink_to("/dev/zero")  # the task file itself
    os.mkfifo(submission / "minifw" / "pipe.py")
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "minifw_course", "grade", "--tasks", "1.1", "--repo",
         str(submission), "--staff", str(copy), "--json", str(out), "--user", "same",
         "--timeout", "60"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, preexec_fn=_limit_memory,
        env=dict(os.environ, PYTHONPATH=str(Path(grade_module.__file__).parents[1])),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text("utf-8"))
    assert [entry["number"] for entry in data["tests"]] == ["1.1"]
    assert data["score"] == 0  # the starter code was graded in place of the link
    assert (
        "Not in the submission (the starter code was graded): minifw/ops.py"
        in (data["tests"][0]["output"])
    )
    assert data["extra_data"]["ignored_files"] == [
        "minifw/__init__.py (a symbolic link: not followed)",
        "minifw/ops.py (a symbolic link: not followed)",
        "minifw/pipe.py (not a regular file: not read)",
    ]


def test_files_outside_the_task_files_are_listed_for_staff(staff):
    copy = staff()
    edits = {"minifw/__init__.py": appended("X = 1"), "notes.txt": "my notes",
             "tests/test_ops.py": appended("def test_more():\n    pass")}  # fmt: skip
    submission = submission_of(copy, edits)
    (submission / ".git").mkdir()
    (submission / ".git" / "HEAD").write_text("ref: refs/heads/main")
    result, data = grade_one(submission, copy)
    assert result.score == 0 and result.counted == 2
    assert data["extra_data"]["ignored_files"] == [
        "minifw/__init__.py", "notes.txt", "tests/test_ops.py"
    ]  # fmt: skip
    assert (
        "Ignored (only task files are graded): minifw/__init__.py, notes.txt" in (data["output"])
    )


def _private_python(folder: Path) -> str:
    """An interpreter that root can run and a fresh user id cannot (a folder of mode 700)."""
    private = folder / "private"
    private.mkdir(mode=0o700)
    wrapper = private / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o700)
    return str(wrapper)


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs root")
def test_as_root_an_interpreter_a_fresh_user_cannot_run_falls_back_with_one_line(
    make_mini_repo, tmp_path
):
    reference = make_mini_repo()
    python = _private_python(tmp_path)
    lines: list[str] = []
    (result,) = grade(reference, TASK, 60, None, log=lines.append, staff=reference,
                      python=python)  # fmt: skip
    assert (result.score, result.counted) == (10.0, 2)
    notes = [line for line in lines if line.startswith("note: ")]
    assert len(notes) == 1 and "\n" not in notes[0]
    assert f"a fresh user id cannot run {python}" in notes[0]
    assert "the tests run as root, this grader's own user" in notes[0]
    assert "tests run as the grader's own user (no isolation)" in "\n".join(lines)
    with pytest.raises(GradeError, match="cannot"):  # asked for isolation: no fallback
        grade(reference, TASK, 60, None, log=lines.append, staff=reference, python=python,
              user="fresh")  # fmt: skip


# From inside the stub: swap the code of the task's other test (so it passes), or open
# the process's memory (where the record key is); the stub answers the first test right.
STUB_ATTACKS = {
    "code-swap": """
        import sys
        for module in list(sys.modules.values()):
            other = getattr(module, "test_square_back_of_a_negative", None)
            if other is not None:
                other.__code__ = (lambda: None).__code__
    """,
    "process-memory": """
        with open(f"/proc/{__import__('os').getpid()}/mem", "rb"):
            pass
    """,
}


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("attack", sorted(STUB_ATTACKS))
def test_a_stub_that_swaps_test_code_or_opens_process_memory_scores_zero(staff, attack):
    copy = staff()
    body = textwrap.dedent(STUB_ATTACKS[attack]) + "return 12.0 if (x, d) == (3.0, 2.0) else -2.0"
    submission = submission_of(copy, {OPS: lambda s: with_body(s, "square_back", body)})
    result, data = grade_one(submission, copy)
    assert result.score == 0 and data["score"] == 0 and result.note == "tampered"
    expected = "set __code__ from minifw/ops.py" if attack == "code-swap" else "opened /proc/"
    assert expected in result.output
