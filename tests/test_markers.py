"""Every test of the suite carries exactly one task marker from the course map.

Tooling tests (tests/course/ and this file) carry `staff` instead. The suite is
collected in a child process with minifw's recording plugin; see
minifw_course/markers.py for the rules. Any other marker is pytest's own or `slow`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minifw_course.markers import check_markers, collect
from minifw_course.tasks import TASKS

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[1]
COURSE_MARKERS = {task.marker for task in TASKS} | {"extra", "staff", "slow"}
# pytest's own markers, and those its plugins add (hypothesis marks every @given test)
PLUGIN_MARKERS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings",
                  "timeout", "hypothesis"}  # fmt: skip


def test_every_test_has_exactly_one_known_task_marker() -> None:
    run = collect(ROOT)
    problems = check_markers(run)
    assert not problems, f"{len(problems)} marker problems:\n" + "\n".join(problems)
    assert any(event["markers"] != ["staff"] for event in run.collected.values())
    strays: dict[str, str] = {}
    for nodeid, event in run.collected.items():
        for marker in set(event["all_markers"]) - COURSE_MARKERS - PLUGIN_MARKERS:
            strays.setdefault(marker, nodeid)
    assert strays == {}, f"markers that are no course task, extra, staff or slow: {strays}"
