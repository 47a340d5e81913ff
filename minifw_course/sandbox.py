"""Run the grader's test processes apart from the grader: another user, a pipe, no leftovers.

`run_child` starts one command (a pytest child) and returns how it ended and the bytes it
wrote to its results pipe. The command's process:

- runs as the `RunUser` chosen by `choose_user`: when the grader runs as root (as
  Gradescope's does), a fresh user id that no account and no process has (or the dedicated
  account named with `--user`), so it can neither write the grader's files nor signal the
  grader; otherwise as the grader's own user, which isolates nothing;
- gets the write end of a pipe (an inherited descriptor, not a path it could reopen) for
  its results, and a scratch folder of its own for HOME, TMPDIR and the caches;
- carries a random token in its environment, inherited by everything it starts;
- gets the run's record key (32 random bytes) on a second pipe, whose descriptor
  MINIFW_RECORD_KEY_FD names: the recorder reads it and closes it when it is imported,
  before any test code runs, so the key is never in the environment, a file or argv;
- runs without the user's site-packages (PYTHONNOUSERSITE), so nothing an earlier run
  wrote under its HOME runs at the next one's start.

When the command ends or overruns, every process of the run is killed, not just its
process group: every process of the run's user id when privileges were dropped, and every
process whose environment carries the run's token (read through /proc on Linux). A process
that runs as the grader's own user and sheds its environment (exec with a new one) escapes
that sweep: only a separate user id contains the run for certain.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import resource
import secrets
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

TOKEN_VARIABLE = "MINIFW_GRADER_RUN"
KEY_VARIABLE = "MINIFW_RECORD_KEY_FD"  # read by pytest_plugin.py (which imports nothing of ours)
KEY_BYTES = 32
SAME_USER = "same"
FRESH_USER = "fresh"  # a fresh user id, never the grader's own user (the autograder bundle)
# Fresh user ids are drawn from this range (inside the 65536 ids a container maps).
FRESH_IDS = range(52000, 60000)
EVENTS_LIMIT = 64 * 2**20  # bytes of results kept from one run
OUTPUT_TAIL = 64 * 2**10  # bytes of stdout/stderr kept from one run
# Processes and threads of a run whose privileges were dropped: Numba's CUDA simulator
# runs a block's threads as Python threads (a 32 x 32 matmul tile is 1024 of them).
PROCESS_LIMIT = 4096
_SWEEP_ROUNDS = 200
# Where a test process may write: variable -> folder under its scratch folder.
SCRATCH_FOLDERS = {
    "HOME": "home",
    "TMPDIR": "tmp",
    "XDG_CACHE_HOME": "cache",
    "XDG_CONFIG_HOME": "config",
    "NUMBA_CACHE_DIR": "cache/numba",
    "MPLCONFIGDIR": "cache/matplotlib",
    "HYPOTHESIS_STORAGE_DIRECTORY": "cache/hypothesis",
}


class SandboxError(RuntimeError):
    """The test process cannot be started the way the grader was asked to start it."""


@dataclass(frozen=True)
class RunUser:
    """Who the test process runs as: `uid`/`gid`, or None for the grader's own user."""

    uid: int | None = None
    gid: int | None = None
    name: str = ""

    @property
    def dropped(self) -> bool:
        """True when the test process runs as a user other than the grader's."""
        return self.uid is not None

    def describe(self) -> str:
        """A few words for messages."""
        if self.uid is None:
            return "the grader's own user (no isolation)"
        return f"user {self.name or 'id'} (uid {self.uid}, gid {self.gid})"


def choose_user(spec: str | None) -> RunUser:
    """The user the test process runs as.

    `spec` None: a fresh user id when the grader runs as root, else the grader's own
    user. `"same"`: the grader's own user. `"fresh"`: a fresh user id (root only). A
    name or a number: that account (root only; every process of that user is killed
    after each run, so give it a dedicated one).
    """
    if spec is None:
        return fresh_user() if os.geteuid() == 0 else RunUser()
    if spec == SAME_USER:
        return RunUser()
    if spec == FRESH_USER and os.geteuid() == 0:
        return fresh_user()
    if os.geteuid() != 0:
        raise SandboxError(f"only root can run the tests as another user (--user {spec})")
    try:
        entry = pwd.getpwuid(int(spec)) if spec.isdigit() else pwd.getpwnam(spec)
    except KeyError:
        if spec.isdigit():
            return RunUser(int(spec), int(spec), spec)
        raise SandboxError(f"--user {spec}: no such user") from None
    if entry.pw_uid == 0:
        raise SandboxError(f"--user {spec} is root: the tests must run as another user")
    return RunUser(entry.pw_uid, entry.pw_gid, entry.pw_name)


def fresh_user() -> RunUser:
    """A user id that no account has and no process runs as (root only)."""
    busy = {uid for pid in _pids() for uid in _uids(pid)}
    for _ in range(100):
        uid = FRESH_IDS[secrets.randbelow(len(FRESH_IDS))]
        try:
            pwd.getpwuid(uid)
        except KeyError:
            if uid not in busy:
                return RunUser(uid, uid, f"fresh-{uid}")
    raise SandboxError(f"found no unused user id in {FRESH_IDS}: pass --user")


def give_to(path: Path, user: RunUser) -> None:
    """Make `path` (a folder the test process may write) belong to `user`."""
    if user.dropped:
        os.chown(path, user.uid, user.gid)  # type: ignore[arg-type]


@dataclass
class ChildRun:
    """How a child ended, what it wrote to its results pipe, and the tail of its output."""

    returncode: int | None = None
    timed_out: bool = False
    duration: float = 0.0
    events: bytes = b""
    output: str = ""
    leftovers: int = 0  # processes of the run still alive when it ended, then killed
    key: bytes = b""  # the record key the child was given


def child_environment(scratch: Path, token: str, extra: dict[str, str]) -> dict[str, str]:
    """The grader's environment, with scratch folders, the run's token and `extra`."""
    env = dict(os.environ)
    for variable, name in SCRATCH_FOLDERS.items():
        env[variable] = str(scratch / name)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env[TOKEN_VARIABLE] = token
    env.update(extra)
    return env


def make_scratch(scratch: Path, user: RunUser) -> None:
    """Create the scratch folders of `child_environment`, owned by `user`."""
    for name in ("", *SCRATCH_FOLDERS.values()):
        folder = scratch / name
        folder.mkdir(mode=0o700, exist_ok=True)
        give_to(folder, user)


def run_child(
    command: Callable[[int], Sequence[str]],
    cwd: Path,
    scratch: Path,
    timeout: float,
    user: RunUser,
    extra_env: dict[str, str] | None = None,
) -> ChildRun:
    """Run `command(fd)`, where fd is the results pipe, in `cwd`; kill the whole run after.

    Never raises for what the child does; raises SandboxError when it cannot start.
    """
    make_scratch(scratch, user)
    token = secrets.token_hex(16)
    result = ChildRun(key=secrets.token_bytes(KEY_BYTES))
    key_fd = _key_pipe(result.key)
    env = child_environment(scratch, token, {**(extra_env or {}), KEY_VARIABLE: str(key_fd)})
    read_fd, write_fd = os.pipe()
    log = scratch.parent / f"output-{token[:8]}.txt"
    try:
        with log.open("wb") as sink:
            proc = _start(list(command(write_fd)), cwd, env, user, (write_fd, key_fd), sink)
            for fd in (write_fd, key_fd):
                os.close(fd)
            write_fd = key_fd = -1
            started = time.monotonic()
            events = _Drain(read_fd)
            result.timed_out = not events.until(lambda: proc.poll() is not None, started + timeout)
            result.leftovers = kill_run(proc, token, user)
            result.returncode = proc.wait()
            result.duration = time.monotonic() - started
            events.until(lambda: False, time.monotonic() + 2.0, stop_at_eof=True)
            result.events = bytes(events.data)
        result.output = _tail(log)
    finally:
        for fd in (read_fd, write_fd, key_fd):
            if fd >= 0:
                os.close(fd)
        log.unlink(missing_ok=True)
    return result


def _key_pipe(key: bytes) -> int:
    """The read end of a pipe that holds `key` and nothing more (its write end is closed)."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, key)  # far below a pipe's buffer: never blocks
    finally:
        os.close(write_fd)
    return read_fd


def _start(
    command: list[str],
    cwd: Path,
    env: dict[str, str],
    user: RunUser,
    fds: tuple[int, ...],
    sink: BinaryIO,
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            pass_fds=fds,
            start_new_session=True,
            user=user.uid,
            group=user.gid,
            extra_groups=[] if user.dropped else None,
            umask=0o077,
            preexec_fn=_limit_processes if user.dropped else None,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise SandboxError(f"cannot start {command[0]} as {user.describe()}: {error}") from error


def _limit_processes() -> None:
    """In the child, before exec: bound the processes a dropped user may start."""
    for limit, most in ((resource.RLIMIT_NPROC, PROCESS_LIMIT), (resource.RLIMIT_CORE, 0)):
        _soft, hard = resource.getrlimit(limit)
        value = most if hard == resource.RLIM_INFINITY else min(most, hard)
        resource.setrlimit(limit, (value, value))


class _Drain:
    """Reads a pipe into memory (at most EVENTS_LIMIT bytes) while waiting for something."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.data = bytearray()
        self.eof = False

    def until(self, done: Callable[[], bool], deadline: float, stop_at_eof: bool = False) -> bool:
        """Read until `done()` (True) or the deadline (False); also stop at EOF if asked."""
        while not done():
            left = deadline - time.monotonic()
            if left <= 0 or (self.eof and stop_at_eof):
                return False
            if self.eof:
                time.sleep(min(left, 0.05))
                continue
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.1))
            if ready:
                chunk = os.read(self.fd, 1 << 16)
                self.eof = not chunk
                if len(self.data) < EVENTS_LIMIT:
                    self.data += chunk
        return True


def _tail(path: Path) -> str:
    with path.open("rb") as stream:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - OUTPUT_TAIL))
        return stream.read().decode("utf-8", errors="replace")


def kill_run(proc: subprocess.Popen[bytes], token: str, user: RunUser) -> int:
    """SIGKILL every process of a run; return how many were alive besides `proc`.

    The run's processes: its process group, every process of its user id when it was
    dropped, and every process whose environment carries `token`. Repeats until a scan
    finds none, so that processes forked while it kills are caught too.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    killed: set[int] = set()
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    for _ in range(_SWEEP_ROUNDS):
        victims = [pid for pid in _pids() if _belongs(pid, needle, user)]
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.add(pid)
        time.sleep(0.01)
    killed.discard(proc.pid)
    return len(killed)


def _pids() -> list[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []  # no /proc (macOS): only the process group is killed
    me = os.getpid()
    return [int(name) for name in names if name.isdigit() and int(name) != me]


def _belongs(pid: int, needle: bytes, user: RunUser) -> bool:
    """True for a live (not zombie) process of the run."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        if stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] in (b"Z", b"X"):
            return False
        if user.dropped and user.uid in _uids(pid):
            return True
        return needle in Path(f"/proc/{pid}/environ").read_bytes()
    except (OSError, ValueError):
        return False  # gone, or not ours to read


def _uids(pid: int) -> set[int]:
    """The real, effective, saved and file-system user ids of a process (empty if gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return {int(value) for value in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()


def check_interpreter(python: str, cwd: Path, scratch: Path, user: RunUser) -> None:
    """Raise SandboxError unless `python` can import pytest when run as `user`."""
    if not user.dropped:
        return
    run = run_child(lambda _fd: [python, "-c", "import pytest"], cwd, scratch, 60.0, user)
    if run.returncode != 0:
        raise SandboxError(
            f"the tests cannot run as {user.describe()}: `{python} -c 'import pytest'` "
            f"failed (exit {run.returncode}):\n{run.output[-2000:]}\nMake the interpreter "
            "and its packages readable and executable by other users (a virtual "
            "environment outside /root), name a dedicated account with --user, or pass "
            "--user same to run the tests as the grader's user, without isolation."
        )


def usable_user(spec: str | None, python: str, cwd: Path, scratch: Path) -> tuple[RunUser, str]:
    """Who the tests run as (see choose_user), and a line to print when that is a fallback.

    With no `spec`, a grader running as root whose interpreter a fresh user id cannot
    run (a virtual environment under a private home such as /root) falls back to its own
    user, and the line says so and what isolation that loses. A `spec` that was asked
    for (an account, "fresh") never falls back: SandboxError says what is wrong.
    """
    user = choose_user(spec)
    try:
        check_interpreter(python, cwd, scratch, user)
        return user, ""
    except SandboxError:
        if spec is not None:
            raise
    run = run_child(lambda _fd: [python, "-c", "import pytest"], cwd, scratch, 60.0, RunUser())
    if run.returncode != 0:
        raise SandboxError(f"`{python} -c 'import pytest'` failed (exit {run.returncode}):\n"
                           f"{run.output[-2000:]}")  # fmt: skip
    name = pwd.getpwuid(os.geteuid()).pw_name
    return RunUser(), (
        f"note: a fresh user id cannot run {python} (it or its packages are not readable "
        f"and executable by other users, as in a virtual environment under /root), so the "
        f"tests run as {name}, this grader's own user: they are not kept from its files, "
        f"results.json or its processes (for that isolation, use an interpreter outside "
        f"/root or --user ACCOUNT)"
    )
