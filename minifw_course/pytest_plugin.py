"""A pytest plugin that records what a test run collected and how each test ended.

Load it with `-p` and give it a file: `pytest -p minifw_course.pytest_plugin
--minifw-record=events.jsonl`. It appends one JSON object per line, flushed as
it goes, so a run killed half way (a hang, `os._exit`, a segfault) still leaves
every event that happened before:

- `{"event": "collected", "nodeid": ..., "path": ..., "markers": [...],
  "all_markers": [...]}` for each selected test: its task markers (`task2_3`) and
  `staff` or `extra` if it has one, then the names of all its markers (`slow`, ...);
- `{"event": "collect_error", "nodeid": ..., "message": ...}` for a file that
  could not be collected (an import error, a syntax error);
- `{"event": "result", "nodeid": ..., "outcome": ..., "message": ...}` once per
  test, outcome one of passed, failed, error, skipped;
- `{"event": "finished", "exitstatus": ...}` when the session ends normally.

This file imports nothing from minifw or minifw_course: the grader copies it next to a
submission under another name, so a broken submission cannot break it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

OPTION = "--minifw-record"
TASK_MARKER = re.compile(r"^task\d+_\d+$")
STAFF_MARKER = "staff"
EXTRA_MARKER = "extra"
_MESSAGE_LIMIT = 4000


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the `--minifw-record=PATH` option."""
    parser.addoption(
        OPTION,
        dest="minifw_record",
        default=None,
        help="append JSON lines describing collected tests and their outcomes to PATH",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Start recording when `--minifw-record` was given."""
    path = config.getoption("minifw_record")
    if path:
        config.pluginmanager.register(Recorder(Path(path), config.rootpath), "minifw-recorder")


def course_markers(item: pytest.Item) -> list[str]:
    """The distinct task markers (and `staff`, `extra`) that apply to a test, sorted."""
    names = {mark.name for mark in item.iter_markers()}
    return sorted(n for n in names if TASK_MARKER.match(n) or n in (STAFF_MARKER, EXTRA_MARKER))


def _text(longrepr: Any) -> str:
    text = str(longrepr) if longrepr is not None else ""
    if len(text) > _MESSAGE_LIMIT:
        text = "...\n" + text[-_MESSAGE_LIMIT:]
    return text


class Recorder:
    """Writes the events of one pytest session to a JSON-lines file."""

    def __init__(self, path: Path, root: Path) -> None:
        self.root = root
        self.stream = path.open("a", encoding="utf-8")
        self.outcomes: dict[str, tuple[str, str]] = {}

    def emit(self, **event: Any) -> None:
        """Append one event and flush it to disk at once."""
        self.stream.write(json.dumps(event) + "\n")
        self.stream.flush()

    def _relative(self, item: pytest.Item) -> str:
        try:
            return item.path.relative_to(self.root).as_posix()
        except ValueError:
            return item.path.as_posix()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Record every selected test with its course markers."""
        for item in session.items:
            self.emit(
                event="collected",
                nodeid=item.nodeid,
                path=self._relative(item),
                markers=course_markers(item),
                all_markers=sorted({mark.name for mark in item.iter_markers()}),
            )

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Record a file or class that could not be collected."""
        if report.failed:
            self.emit(event="collect_error", nodeid=report.nodeid, message=_text(report.longrepr))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fold the setup, call and teardown reports of a test into one outcome."""
        outcome, message = self.outcomes.get(report.nodeid, ("passed", ""))
        if report.skipped and not hasattr(report, "wasxfail"):
            if outcome == "passed":
                outcome, message = "skipped", _skip_reason(report.longrepr)
        elif report.failed:
            if report.when == "call" and outcome != "error":
                outcome, message = "failed", _text(report.longrepr)
            elif outcome not in ("failed", "error"):
                outcome, message = (
                    "error",
                    f"error in test {report.when}:\n" + _text(report.longrepr),
                )
        self.outcomes[report.nodeid] = (outcome, message)
        if report.when == "teardown":
            self.emit(event="result", nodeid=report.nodeid, outcome=outcome, message=message)
            del self.outcomes[report.nodeid]

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Mark the run as complete."""
        self.emit(event="finished", exitstatus=int(exitstatus))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Close the file."""
        self.stream.close()


def _skip_reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return _text(longrepr)
