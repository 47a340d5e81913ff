"""A pytest plugin that records what a test run collected and how each test ended.

The grader loads it with `-p` from its own copy (under another module name) and hands it
the write end of a pipe: `pytest -p _minifw_course_recorder --minifw-record-fd=N`. It
writes one JSON object per line to that descriptor, one `os.write` per event as it
happens, so a run killed half way still delivers every event before:

- `{"event": "collected", "nodeid", "path", "markers", "all_markers"}` for each selected
  test: its task markers (`task2_3`) and `staff` or `extra`, then all its marker names;
- `{"event": "collect_error", "nodeid", "message"}` for a file that cannot be collected;
- `{"event": "result", "nodeid", "outcome", "why", "message"}` once per test, outcome one of
  passed, failed, error, skipped, xfailed, xpassed; `why` is the first line of the reason;
- `{"event": "tamper", "names": [...]}` when pytest's runner or report code changed;
- `{"event": "finished", "exitstatus"}` when the session ends normally.

Defence in depth against the code under test, which runs in this same process: every
function and class the recorder uses is captured when this module is imported, before
any conftest or test module (and so any submission code) is; its hooks are closures, so
patching this module changes nothing; a test's outcome comes from the exceptions its
setup, call and teardown raised, seen by outermost hook wrappers, never from pytest's
report objects; and the runner and report functions a submission could patch to turn a
failure into a pass are compared with their originals after every test. Code in the
process can still defeat all of this (see the threat model in grade.py).

This file imports nothing from minifw or minifw_course: the grader copies it next to a
submission under another name, so a broken submission cannot break it.
"""

from __future__ import annotations

import json
import os
import re
import traceback
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import _pytest.outcomes
import _pytest.python
import _pytest.reports
import _pytest.runner
import pytest

OPTION = "--minifw-record-fd"
TASK_MARKER = re.compile(r"^task\d+_\d+$")
STAFF_MARKER = "staff"
EXTRA_MARKER = "extra"
_MESSAGE_LIMIT = 4000
_WHY_LIMIT = 300
Hook = Callable[..., Any]


def course_markers(item: pytest.Item) -> list[str]:
    """The distinct task markers (and `staff`, `extra`) that apply to a test, sorted."""
    names = {mark.name for mark in item.iter_markers()}
    return sorted(n for n in names if TASK_MARKER.match(n) or n in (STAFF_MARKER, EXTRA_MARKER))


def _guard() -> Callable[[], dict[str, object]]:
    """A function that reads the pytest internals a submission could patch to fake a pass."""
    runner, reports, python = _pytest.runner, _pytest.reports, _pytest.python
    call_info, test_report, function = runner.CallInfo, reports.TestReport, python.Function

    def now() -> dict[str, object]:
        return {
            "_pytest.runner.runtestprotocol": runner.runtestprotocol,
            "_pytest.runner.call_and_report": runner.call_and_report,
            "_pytest.runner.pytest_runtest_makereport": runner.pytest_runtest_makereport,
            "_pytest.runner.pytest_runtest_call": runner.pytest_runtest_call,
            "_pytest.runner.CallInfo.from_call": vars(call_info).get("from_call"),
            "_pytest.reports.TestReport.from_item_and_call": vars(test_report).get(
                "from_item_and_call"
            ),
            "_pytest.reports.TestReport.__init__": vars(test_report).get("__init__"),
            "_pytest.python.Function.runtest": vars(function).get("runtest"),
            "_pytest.python.pytest_pyfunc_call": python.pytest_pyfunc_call,
        }

    return now


_GUARD = _guard()


# Closures rather than methods or module globals: patching this module or the plugin object
# changes nothing the hooks use.
def _build_recorder(
    write: Callable[[int, bytes], int] = os.write,
    dumps: Callable[..., str] = json.dumps,
    format_only: Callable[..., list[str]] = traceback.format_exception_only,
    extract: Callable[..., Any] = traceback.extract_tb,
    format_list: Callable[..., list[str]] = traceback.format_list,
    skipped: type[BaseException] = _pytest.outcomes.Skipped,
    xfailed: type[BaseException] = _pytest.outcomes.XFailed,
    internals: Callable[[], dict[str, object]] = _GUARD,
    hookimpl: Callable[..., Any] = pytest.hookimpl,
    markers_of: Callable[[pytest.Item], list[str]] = course_markers,
) -> tuple[Callable[[int, Path, bool], object], Callable[[], None]]:
    """Capture everything now (at import); return the recorder's factory and `rebase`.

    `rebase` takes the baseline of pytest's internals again: it runs once the installed
    pytest plugins are loaded and before any conftest is, so only later changes count.
    """
    originals = internals()

    def rebase() -> None:
        originals.update(internals())

    def make(fd: int, root: Path, setup_only: bool) -> object:
        seen: dict[str, dict[str, BaseException | None]] = {}
        reported: set[str] = set()

        def emit(**event: Any) -> None:
            data = (dumps(event) + "\n").encode("utf-8")
            try:
                while data:
                    data = data[write(fd, data) :]
            except OSError:
                pass  # the grader is gone: nothing to report to

        def check(item: pytest.Item | None = None) -> None:
            current = internals()
            names = [name for name, value in originals.items() if current[name] is not value]
            if item is not None and "runtest" in vars(item):
                names.append(f"{item.nodeid}: item.runtest")
            fresh = [name for name in names if name not in reported]
            if fresh:
                reported.update(fresh)
                emit(event="tamper", names=fresh)

        def relative(item: pytest.Item) -> str:
            try:
                return item.path.relative_to(root).as_posix()
            except ValueError:
                return item.path.as_posix()

        def why(error: BaseException) -> str:
            lines = "".join(format_only(type(error), error)).strip().splitlines() or ["?"]
            return lines[0][:_WHY_LIMIT]

        def details(error: BaseException) -> str:
            prefix = str(root) + os.sep
            frames = [f for f in extract(error.__traceback__) if f.filename.startswith(prefix)]
            for frame in frames:
                frame.filename = frame.filename[len(prefix) :]
            text = "".join(format_list(frames[-8:]) + format_only(type(error), error))
            return text if len(text) <= _MESSAGE_LIMIT else "...\n" + text[-_MESSAGE_LIMIT:]

        def kind(error: BaseException, default: str) -> str:
            if isinstance(error, skipped):
                return "skipped"
            return "xfailed" if isinstance(error, xfailed) else default

        def outcome(item: pytest.Item) -> tuple[str, BaseException | str]:
            """The test's outcome and its exception, or a reason when it raised none."""
            phases = seen.pop(item.nodeid, {})
            if "setup" not in phases:
                return "error", "its setup never ran"
            if phases["setup"] is not None:
                return kind(phases["setup"], "error"), phases["setup"]
            if not setup_only:
                if "call" not in phases:
                    return "error", "the test function was never called"
                if phases["call"] is not None:
                    return kind(phases["call"], "failed"), phases["call"]
                if item.get_closest_marker("xfail") is not None:
                    return "xpassed", "it passed, but it is marked xfail"
            teardown = phases.get("teardown")
            return ("passed", "") if teardown is None else ("error", teardown)

        def report(item: pytest.Item) -> None:
            result, error = outcome(item)
            if isinstance(error, str):
                emit(event="result", nodeid=item.nodeid, outcome=result, why=error, message="")
            else:
                emit(event="result", nodeid=item.nodeid, outcome=result, why=why(error),
                     message=details(error))  # fmt: skip

        def observer(when: str) -> Hook:
            def hook(item: pytest.Item) -> Generator[None, Any, Any]:
                try:
                    value = yield
                except BaseException as error:
                    seen.setdefault(item.nodeid, {})[when] = error
                    raise
                else:
                    seen.setdefault(item.nodeid, {})[when] = None
                    return value
                finally:
                    if when != "setup":
                        check(item)
                    if when == "teardown":
                        report(item)

            return hookimpl(wrapper=True, tryfirst=True)(hook)  # type: ignore[no-any-return]

        def pytest_collection_finish(session: pytest.Session) -> None:
            for item in session.items:
                emit(event="collected", nodeid=item.nodeid, path=relative(item),
                     markers=markers_of(item),
                     all_markers=sorted({mark.name for mark in item.iter_markers()}))  # fmt: skip

        def pytest_collectreport(report: pytest.CollectReport) -> None:
            if report.failed:
                text = str(report.longrepr)
                if len(text) > _MESSAGE_LIMIT:
                    text = "...\n" + text[-_MESSAGE_LIMIT:]
                emit(event="collect_error", nodeid=report.nodeid, message=text)

        def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
            check()
            emit(event="finished", exitstatus=int(exitstatus))

        class Recorder:
            """The hooks, as closures over the names captured at import."""

        recorder = Recorder()
        hooks: dict[str, Hook] = {
            "pytest_runtest_setup": observer("setup"),
            "pytest_runtest_call": observer("call"),
            "pytest_runtest_teardown": observer("teardown"),
            "pytest_collection_finish": hookimpl(trylast=True)(pytest_collection_finish),
            "pytest_collectreport": pytest_collectreport,
            "pytest_sessionfinish": pytest_sessionfinish,
        }
        for name, hook in hooks.items():
            setattr(recorder, name, hook)
        return recorder

    return make, rebase


def _build_hooks(
    make: Callable[[int, Path, bool], object], rebase: Callable[[], None]
) -> tuple[Hook, Hook, Hook]:
    """This module's hooks, closed over the recorder's factory and `rebase`.

    `pytest_load_initial_conftests` runs before any conftest is loaded.
    """

    def pytest_addoption(parser: pytest.Parser) -> None:
        parser.addoption(
            OPTION,
            dest="minifw_record_fd",
            type=int,
            default=None,
            help="write JSON lines describing collected tests and their outcomes to this fd",
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
        rebase()

    def pytest_configure(config: pytest.Config) -> None:
        fd = config.getoption("minifw_record_fd")
        if fd is not None:
            setup_only = bool(config.getoption("setuponly", False))
            config.pluginmanager.register(make(fd, config.rootpath, setup_only), "minifw-recorder")

    return pytest_addoption, pytest_load_initial_conftests, pytest_configure


pytest_addoption, pytest_load_initial_conftests, pytest_configure = _build_hooks(
    *_build_recorder()
)
