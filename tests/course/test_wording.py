"""The project speaks only of itself: no issue numbers or periods of work in what it ships.

Users know neither the tracker nor the periods of work the code was written in, so code,
tests, docs and the README describe what minifw does; a figure names the machine and the day
it was measured on. History, if kept, belongs in CHANGELOG.md, by version.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.staff

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("minifw", "minifw_course", "project", "tests", "docs", "bench", "scripts", "README.md")

# Spelled in pieces so that this file does not match itself.
_ISSUE = "iss" + "ue"
_SESSION = "sess" + "ion"
FORBIDDEN = re.compile(
    rf"\b{_ISSUE}\s*#?\s*\d+"  # a tracker number
    rf"|\b{_SESSION}s?\s+\d+"  # a numbered period of work
    rf"|\b(?:this|previous|earlier|last|next|that)\s+{_SESSION}\b"
    rf"|\b{_SESSION}s?\s+ago\b",
    re.IGNORECASE,
)


def shipped_text_files() -> list[Path]:
    """The tracked files under the shipped folders that read as text."""
    listed = subprocess.run(
        ["git", "ls-files", "--", *SHIPPED], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if not name.endswith((".png", ".jpg", ".zip"))]


def forbidden_lines(path: Path) -> list[str]:
    """`path:line: text` for each line of `path` that names an issue or a period of work."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError):
        return []
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for number, line in enumerate(text.splitlines(), 1)
        if FORBIDDEN.search(line)
    ]


@pytest.mark.parametrize(
    "line",
    [
        f"see {_ISSUE} 17 for the reason",
        f"# ---- SHAPE ({_ISSUE} 17) ----",
        f"measured in {_SESSION} 16",
        f"before this {_SESSION}'s changes",
        f"the previous {_SESSION} measured 1.2x",
    ],
)
def test_the_pattern_catches_history(line: str) -> None:
    assert FORBIDDEN.search(line)


@pytest.mark.parametrize(
    "line",
    [
        "st.session_state keeps the page's values",
        "measured on Intel Xeon AVX-512, 2026-12-03",
        "an issue with broadcasting raises a clear error",
    ],
)
def test_the_pattern_lets_ordinary_text_through(line: str) -> None:
    assert not FORBIDDEN.search(line)


def test_nothing_shipped_speaks_of_issues_or_periods_of_work() -> None:
    files = shipped_text_files()
    assert len(files) > 100, "git ls-files found too few files to check"
    found = [hit for path in files for hit in forbidden_lines(path)]
    assert not found, "say what the code does, not when it was written:\n" + "\n".join(found)
