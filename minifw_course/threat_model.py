"""The grader's threat model, as docs/README.md shows it (docs.py renders the page).

What is defended has a regression test in tests/course/test_grader_attacks.py; what is
not is listed with the reason.
"""

from __future__ import annotations

THREAT_MODEL = [
    "### The grader's threat model",
    "",
    "A submission is hostile code that the grader runs. When `grade` runs as root (as "
    "Gradescope's autograder does) the tests run as a fresh user id that no account or "
    "process has (or the dedicated account given with `--user`): the copy they run in is "
    "root's and read-only, `results.json` and the grader's files cannot be written, and "
    "the grader's memory cannot be read. That needs an interpreter other users can run; "
    "when it is not (a virtual environment under /root) and no `--user` was given, `grade` "
    "runs the tests as its own user and prints one line saying so and what that loses. "
    "The Gradescope bundle passes `--user fresh`, which never falls back. After each task "
    "every process of the run is killed (every process of that user id, and every process "
    "whose environment carries the run's random token), and only then is `results.json` "
    "rewritten, atomically.",
    "",
    "Defended, each by a regression test in `tests/course/test_grader_attacks.py`:",
    "",
    "- stubs that call `pytest.skip` or `pytest.xfail` (only a pass scores; the denominator "
    "is the staff's list);",
    "- a submission that drops, edits or adds tests, conftest or tooling files (only task "
    "files are taken; the copy is read-only and hashed, and a changed file voids the run); "
    "every other submission file that differs from the staff copy is ignored and listed "
    "for staff in `results.json` (`extra_data.ignored_files`);",
    "- code that patches the recorder or pytest's report and runner functions (the recorder "
    "captured what it uses before any submission code was imported, decides outcomes from "
    "the exceptions its hook wrappers see, and checks pytest's internals after every test);",
    "- an import hook that swaps the staff's tests (a `sys.meta_path` finder that replaces "
    "every `test_*` with a no-op): the staff's run, a pytest process of its own before any "
    "submission file is laid in, records a digest of the code each test runs (its function "
    "and what that wraps, its fixtures' functions, its parameters); every task run must "
    "show the same digests after collection and around each test's call, and "
    "`sys.meta_path`, `sys.path_hooks`, the path importer cache and `builtins.__import__` "
    "may hold only what Python, pytest and the grader installed;",
    "- a plugin registered with pytest at run time (a task file that finds pytest's `Config` "
    "through `gc` or through the stack and registers a `tryfirst` `pytest_pyfunc_call` that "
    "returns True): every hook implementation pytest holds, after collection, after each "
    "test and at the end, must be one the staff's run held (same plugin, function and "
    "code). An audit hook, which cannot be removed, also refuses `gc` walks and writes to a "
    "function's `__code__` from the repository's files (a stub that swaps another test's "
    "code), and opening any process's memory (where the record key is);",
    "- replaced oracles (`math.isclose = lambda *a, **k: True`): the functions and classes of "
    "builtins, math, cmath, operator, numpy, numpy.testing, hypothesis, "
    "hypothesis.strategies, pytest's `approx` and the import machinery must keep, after "
    "collection, after each test and at the end, the values they had before any conftest "
    "was loaded;",
    '- forged results on the recorder\'s pipe (a `dup2` over it that writes "passed" at '
    "exit): every record is numbered and carries an "
    "HMAC-SHA256 under a per-run key that reaches the recorder on a pipe of its own, read "
    "and closed when the recorder is imported (never in the environment, a file or the "
    "command line); a forged, missing or reordered record voids the task, and a run "
    "without its final record scores 0;",
    "- submission files that are symbolic links (to `/dev/zero`, to another student's "
    "work), FIFOs, devices or huge: the root grader never follows a link, opens only "
    "regular files with `O_NOFOLLOW | O_NONBLOCK`, reads at most 4 MiB of one and walks "
    "at most 20000 entries; `results.json` lists every task whatever happens;",
    "- processes left behind (setsid, double fork) to rewrite `results.json`;",
    "- a submission that claims another module in its own `assignment.json`.",
    "",
    "A detected attack voids the task: 0 points, the output says `tampered:` and why, and "
    "`extra_data.tampered` in `results.json` lists the reasons for staff.",
    "",
    "Not defended:",
    "",
    "- code inside the test process that goes after the recorder itself: it shares the "
    "process with the tests and the recorder, so by walking the recorder's closures or "
    "the stack (`__closure__`, frames, neither audited by Python) it can reach the record "
    "key and forge records, or change a test's outcome before it is recorded. Only a judge "
    "outside the process the submission runs in would stop that, at the cost of a process "
    "per test. The checks above close the known shortcuts and name what they caught; "
    "review scores that look too good;",
    "- in-memory changes to objects the checks do not watch: the package's own given code "
    "that tests use as an oracle, a test module's globals, objects held in a test's "
    "closure (hypothesis strategies), and an oracle replaced and put back within one test "
    "(the namespaces are compared between tests, so that a staff test may monkeypatch "
    "them). The audit hook judges a caller by its code's file name, which code compiled "
    "at run time can choose;",
    "- when the tests run as the grader's own user (not root, `--user same`, or the "
    "fallback above): they can reach everything the grader can (its files, "
    "`results.json`, its memory, so the record key), and a process that execs with a new "
    "environment escapes the kill sweep;",
    "- the code under test can read whatever its user can read: keep reference solutions "
    "and other students' work off the grading machine;",
    "- resource exhaustion beyond the per-task timeout and a limit on processes.",
    "",
]
