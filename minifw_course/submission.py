"""Read a submission's files the safe way: no symbolic link followed, every read bounded.

The grader runs as root on files a student wrote. A submitted file may be a symbolic
link (to /dev/zero, to a solution elsewhere on the machine), a FIFO that blocks whoever
opens it, a device, or simply huge; a folder may hold a million files or a link loop.
Everything here reads a file only if it is a regular file reached without a symbolic link,
opens it with O_NOFOLLOW | O_NONBLOCK and checks it again once open, reads at most
FILE_LIMIT bytes, and walks at most WALK_LIMIT entries of a folder.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

FILE_LIMIT = 4 * 2**20  # bytes of one submitted file
WALK_LIMIT = 20000  # entries looked at in one submission
LISTED_LIMIT = 200  # ignored files named in results.json
READ_LIMIT = 64 * 2**20  # bytes read in all to list the ignored files
# Never looked into: version control, environments, caches, build output.
SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", ".venv", ".venv-ci", "venv", "env",
                             "node_modules", "build", "dist", "__pycache__", ".mypy_cache",
                             ".ruff_cache", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints",
                             ".eggs"})  # fmt: skip


def read_bounded(path: Path, limit: int = FILE_LIMIT) -> tuple[bytes, os.stat_result] | None:
    """The bytes and status of `path`; None unless it is a regular file of at most `limit`.

    Its last component must not be a symbolic link; the caller checks the folders on the
    way (see `regular`).
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None  # a symbolic link (ELOOP), gone, or not ours to read
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit:
            return None
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return (data, status) if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def regular(root: Path, name: str, directory: bool = False) -> Path | None:
    """`root/name` if it is a regular file (or a folder) with no symbolic link on the way."""
    path = root
    for part in PurePosixPath(name).parts:
        path = path / part
        if part in ("..", ".") or path.is_symlink():
            return None
    ok = path.is_dir() if directory else path.is_file()
    return path if ok else None


def walk(root: Path, limit: int = WALK_LIMIT) -> list[tuple[str, str]]:
    """(relative POSIX name, kind) of the entries under `root`, sorted, never through a link.

    Kind is "file", "link" or "other"; a folder is entered unless SKIPPED_FOLDERS names
    it. At most `limit` entries are looked at.
    """
    found: list[tuple[str, str]] = []
    stack, seen = [""], 0
    while stack and seen < limit:
        folder = stack.pop()
        try:
            with os.scandir(root / folder) as scan:
                entries = list(itertools.islice(scan, limit - seen))
        except OSError:
            continue
        seen += len(entries)
        for entry in entries:
            name = f"{folder}/{entry.name}" if folder else entry.name
            if entry.is_symlink():
                found.append((name, "link"))
            elif entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_FOLDERS and not entry.name.endswith(".egg-info"):
                    stack.append(name)
            elif entry.is_file(follow_symlinks=False):
                if not entry.name.endswith((".pyc", ".pyo")):
                    found.append((name, "file"))
            else:
                found.append((name, "other"))
    return sorted(found)


def ignored_files(submission: Path, staff: Path, taken: Sequence[str]) -> list[str]:
    """The submission's files outside the task files that differ from the staff copy's.

    `taken` are the task paths (a folder ends with "/"). Each entry names the file and,
    where it was not compared, why: a symbolic link is never followed, a file over
    FILE_LIMIT or that is not a regular file is never read. At most LISTED_LIMIT entries.
    """
    exact = set(taken)
    folders = tuple(name for name in taken if name.endswith("/"))
    found: list[str] = []
    budget = [READ_LIMIT]
    for name, kind in walk(submission):
        if len(found) >= LISTED_LIMIT:
            found.append("... (more not listed)")
            break
        if kind == "link":
            found.append(f"{name} (a symbolic link: not followed)")
        elif kind == "other":
            found.append(f"{name} (not a regular file: not read)")
        elif name not in exact and not name.startswith(folders):
            why = _differs(submission, staff, name, budget)
            if why is not None:
                found.append(name + why)
    return found


def _differs(submission: Path, staff: Path, name: str, budget: list[int]) -> str | None:
    """None when `name` is the same in both; else "" or why it could not be compared.

    Files of different sizes differ unread; `budget` (bytes left to read) bounds the rest.
    """
    original = regular(staff, name)
    try:
        size = (submission / name).lstat().st_size
        if original is None or original.lstat().st_size != size:
            return ""
    except OSError:
        return " (unreadable: not read)"
    if size > FILE_LIMIT or 2 * size > budget[0]:
        return " (not compared: too much to read)"
    budget[0] -= 2 * size
    mine, theirs = read_bounded(submission / name), read_bounded(original)
    if mine is None:
        return " (not a regular file: not read)"
    return None if theirs is not None and theirs[0] == mine[0] else ""
