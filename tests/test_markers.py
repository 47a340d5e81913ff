"""Every test of the suite carries exactly one task marker from the course map.

Tooling tests (tests/course/ and this file) carry `staff` instead. The suite is
collected in a child process with minifw's recording plugin; see
minifw_course/markers.py for the rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minifw_course.markers import check_markers, collect

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_has_exactly_one_known_task_marker() -> None:
    run = collect(ROOT)
    problems = check_markers(run)
    assert not problems, f"{len(problems)} marker problems:\n" + "\n".join(problems)
    assert any(event["markers"] != ["staff"] for event in run.collected.values())
