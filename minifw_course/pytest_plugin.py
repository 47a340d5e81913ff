"""A pytest plugin that records what a test run collected and how each test ended.

The grader loads it with `-p` from its own copy (under another module name) and hands it
the write end of a pipe: `pytest -p _minifw_course_recorder --minifw-record-fd=N`. It
writes one record per line to that descriptor, one `os.write` per event as it happens, so
a run killed half way still delivers every event before. A record is
`MAC JSON`: the JSON object carries `seq` (0, 1, 2, ... in order) and the MAC is the
HMAC-SHA256 of the JSON text under the run's key, which the grader hands over on another
pipe (named by MINIFW_RECORD_KEY_FD) that this module reads and closes when it is imported,
before any conftest or test module, and so before any submission code, runs. The events:

- `collected` for each selected test: `nodeid`, `path`, its task markers (`task2_3`) and
  `staff` or `extra` (`markers`), all its marker names, and `code`: a digest of the code
  the test runs (the function, its wrappers, its fixtures' functions, its parameters);
- `collect_error` (`nodeid`, `message`) for a file that cannot be collected;
- `result` once per test: `nodeid`, `outcome` (passed, failed, error, skipped, xfailed,
  xpassed), `why` (the first line of the reason) and `message`;
- `hooks`: the hook implementations registered with pytest, one string each (hook,
  plugin, function and a digest of its code), after collection, whenever they change,
  and at the end;
- `tamper` (`names`) when something the tests rely on changed (below);
- `finished` (`exitstatus`) when the session ends normally.

Defence in depth against the code under test, which runs in this same process: every
function and class the recorder uses is captured when this module is imported; its hooks
are closures, so patching this module changes nothing; a test's outcome comes from the
exceptions its setup, call and teardown raised, seen by outermost hook wrappers, never
from pytest's report objects. After collection, around every test call and at the end,
it compares with what it captured: pytest's runner and report functions, the import
machinery (`sys.meta_path`, `sys.path_hooks`, the path importer cache, `__import__` and
the loaders' methods), the functions of builtins, math, numpy, numpy.testing, hypothesis
and pytest that tests call, and each test's own code. An audit hook (which cannot be
removed) refuses, and reports, `gc` walks and writes to a function's code from files of
the repository under test, and opening any process's memory. Code in the process can
still defeat this by walking frames into the recorder's closures (see docs/README.md).

This file imports nothing from minifw or minifw_course: the grader copies it next to a
submission under another name, so a broken submission cannot break it.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import hmac
import importlib
import importlib.machinery
import itertools
import json
import os
import re
import sys
import traceback
import types
import zipimport
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

import _pytest.assertion.rewrite
import _pytest.outcomes
import _pytest.python
import _pytest.reports
import _pytest.runner
import pytest

OPTION = "--minifw-record-fd"
KEY_VARIABLE = "MINIFW_RECORD_KEY_FD"
KEY_BYTES = 32
TASK_MARKER = re.compile(r"^task\d+_\d+$")
STAFF_MARKER = "staff"
EXTRA_MARKER = "extra"
_MESSAGE_LIMIT = 4000
_WHY_LIMIT = 300
# Modules whose functions the tests call as oracles: none may change during a run.
WATCHED_MODULES = ("builtins", "math", "cmath", "operator", "numpy", "numpy.testing",
                   "hypothesis", "hypothesis.strategies", "pytest",
                   "importlib._bootstrap", "importlib._bootstrap_external")  # fmt: skip
# gc walks reach every object of the process (pytest's Config, the recorder's state).
AUDITED_CALLS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
CODE_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
Hook = Callable[..., Any]
Digest = Callable[[object], str]
_MISSING = object()


def course_markers(item: pytest.Item) -> list[str]:
    """The distinct task markers (and `staff`, `extra`) that apply to a test, sorted."""
    names = {mark.name for mark in item.iter_markers()}
    return sorted(n for n in names if TASK_MARKER.match(n) or n in (STAFF_MARKER, EXTRA_MARKER))


def _take_key() -> bytes:
    """The run's record key, read from the descriptor the grader named, which is closed."""
    named = os.environ.pop(KEY_VARIABLE, None)
    if named is None or not named.isdigit():
        return b""
    key = b""
    try:
        while len(key) < KEY_BYTES and (chunk := os.read(int(named), KEY_BYTES - len(key))):
            key += chunk
    except OSError:
        return b""
    finally:
        with contextlib.suppress(OSError):
            os.close(int(named))
    return key


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


def _namespaces() -> dict[str, Any]:
    """The live namespaces (module and class dicts) whose entries must keep their values."""
    spaces: dict[str, Any] = {}
    for name in WATCHED_MODULES:
        try:
            spaces[name] = vars(importlib.import_module(name))
        except ImportError:
            continue  # not installed here: nothing of it to protect
    loaders = importlib.import_module("importlib._bootstrap_external")
    classes = [
        getattr(loaders, name)
        for name in ("SourceFileLoader", "FileLoader", "SourceLoader", "FileFinder", "PathFinder")
    ]
    classes.append(_pytest.assertion.rewrite.AssertionRewritingHook)
    api = importlib.import_module(pytest.approx.__module__)  # _pytest.approx or python_api
    spaces[api.__name__] = vars(api)
    classes += [
        c for c in vars(api).values() if isinstance(c, type) and c.__module__ == api.__name__
    ]
    for cls in classes:
        spaces[f"{cls.__module__}.{cls.__qualname__}"] = vars(cls)
    return spaces


def _code_digest() -> Digest:
    """A function giving a stable digest of a code object (constants and nested code too).

    Stable across processes: no addresses, sets in sorted order, the file name included.
    """
    sha256 = hashlib.sha256
    cache: dict[int, tuple[types.CodeType, str]] = {}
    fields = ("co_name", "co_qualname", "co_filename", "co_firstlineno", "co_argcount",
              "co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_names",
              "co_varnames", "co_freevars", "co_cellvars")  # fmt: skip

    def constant(value: object) -> str:
        if isinstance(value, types.CodeType):
            return "code:" + digest(value)
        if isinstance(value, tuple):
            return "(" + ",".join(constant(v) for v in value) + ")"
        if isinstance(value, frozenset):
            return "{" + ",".join(sorted(constant(v) for v in value)) + "}"
        return f"{type(value).__name__}:{value!r}"

    def digest(code: object) -> str:
        if not isinstance(code, types.CodeType):
            return "-"
        known = cache.get(id(code))
        if known is not None and known[0] is code:
            return known[1]
        text = repr([getattr(code, name, None) for name in fields])
        text += code.co_code.hex() + constant(code.co_consts)
        value = sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        cache[id(code)] = (code, value)
        return value

    return digest


def _function_code(function: object, digest: Digest) -> list[str]:
    """Digests of a callable's code, and of what it wraps (hypothesis, functools.wraps)."""
    found: list[str] = []
    seen: set[int] = set()
    while function is not None and id(function) not in seen and len(found) < 8:
        seen.add(id(function))
        function = getattr(function, "__func__", function)
        found.append(digest(getattr(function, "__code__", None)))
        inner = getattr(getattr(function, "hypothesis", None), "inner_test", None)
        function = inner if inner is not None else getattr(function, "__wrapped__", None)
    return found


def _plain(value: object) -> str:
    """A value's repr when it is plain data (the same in every process), else its type."""
    if value is None or isinstance(value, bool | int | float | complex | str | bytes):
        return repr(value)[:200]
    if isinstance(value, tuple | list):
        return "[" + ",".join(_plain(v) for v in value[:50]) + "]"
    return type(value).__qualname__


def _item_code(digest: Digest) -> Callable[[pytest.Item], str]:
    """A function giving the digest of the code a test runs: its function, fixtures, params."""
    sha256 = hashlib.sha256

    def of(item: pytest.Item) -> str:
        parts: list[str] = []
        try:
            parts += _function_code(getattr(item, "obj", None), digest)
        except Exception:  # noqa: BLE001 - an item without a plain function
            parts.append("?")
        info = getattr(item, "_fixtureinfo", None)
        for name, defs in sorted(getattr(info, "name2fixturedefs", {}).items()):
            for fixture in defs:
                parts += [name, *_function_code(getattr(fixture, "func", None), digest)]
        params = getattr(getattr(item, "callspec", None), "params", {})
        parts += [f"{k}={_plain(v)}" for k, v in sorted(params.items())]
        return sha256("|".join(parts).encode()).hexdigest()[:24]

    return of


def _hooks_of(digest: Digest) -> Callable[[Any], set[str]]:
    """A function listing the hook implementations a plugin manager holds, one string each.

    The strings are made again only when an implementation, its function or its flags
    changed since the last call (checked by identity, which is cheap).
    """
    flag_names = ("tryfirst", "trylast", "wrapper", "hookwrapper")
    last: list[Any] = [None, set()]

    def describe(hook: str, impl: Any) -> str:
        plugin = str(impl.plugin_name)
        if plugin.isdigit():  # registered without a name: its id, not stable
            plugin = "#" + type(impl.plugin).__qualname__
        function = getattr(impl.function, "__func__", impl.function)
        flags = "".join(str(int(bool(getattr(impl, f, False)))) for f in flag_names)
        code = digest(getattr(function, "__code__", None))
        return f"{hook} {plugin} {_what(function)} {code} {flags}"

    def hooks(manager: Any) -> set[str]:
        impls = []
        for hook, caller in list(vars(manager.hook).items()):
            get = getattr(caller, "get_hookimpls", None)
            impls += [(hook, impl) for impl in (get() if get is not None else ())]
        key = [(h, id(i), id(i.function), i.plugin_name, *(getattr(i, f, 0) for f in flag_names))
               for h, i in impls]  # fmt: skip
        if key != last[0]:
            last[:] = [key, {describe(hook, impl) for hook, impl in impls}]
        return set(last[1])

    return hooks


def _watchers(
    spaces: dict[str, Any], internals: Callable[[], dict[str, object]]
) -> tuple[Callable[[], None], Callable[[bool], list[str]]]:
    """`rebase` (take the baselines again) and `changed` (what differs from them now).

    `changed(False)` leaves out the watched namespaces: a test may monkeypatch them for
    its own duration (its teardown restores them), so they are compared between tests.
    """
    finder_types = (
        type(None),
        importlib.machinery.FileFinder,
        zipimport.zipimporter,
        *([type(v) for v in sys.path_importer_cache.values()]),
    )
    state: dict[str, Any] = {}

    def rebase() -> None:
        state["internals"] = internals()
        state["spaces"] = {name: dict(space) for name, space in spaces.items()}
        state["imports"] = {"sys.meta_path": list(sys.meta_path),
                            "sys.path_hooks": list(sys.path_hooks)}  # fmt: skip
        state["import"] = builtins.__import__

    def changed(between_tests: bool) -> list[str]:
        now = internals()
        names = [name for name, value in state["internals"].items() if now[name] is not value]
        for space, entries in state["spaces"].items() if between_tests else ():
            live = spaces[space]
            names += [f"{space}.{key}" for key, value in entries.items()
                      if key != "_" and live.get(key, _MISSING) is not value]  # fmt: skip
        for where, before in state["imports"].items():
            current = sys.meta_path if where == "sys.meta_path" else sys.path_hooks
            names += [f"{where} holds {_what(entry)}" for entry in current
                      if not any(entry is old for old in before)]  # fmt: skip
        names += [f"sys.path_importer_cache holds {_what(finder)} for {path}"
                  for path, finder in list(sys.path_importer_cache.items())
                  if not isinstance(finder, finder_types)]  # fmt: skip
        if builtins.__import__ is not state["import"]:
            names.append("builtins.__import__")
        return names

    rebase()
    return rebase, changed


def _what(thing: object) -> str:
    kind = thing if isinstance(thing, type | types.FunctionType) else type(thing)
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}"


def _audit(flags: list[str], root: str) -> None:
    """Refuse, and add to `flags`, gc walks and code swaps by code under `root`.

    Opening a process's memory is refused to everyone. Audit hooks cannot be removed.
    """
    getframe, audited, attributes = sys._getframe, AUDITED_CALLS, CODE_ATTRIBUTES
    prefix = root.rstrip(os.sep) + os.sep
    # A virtual environment may lie inside the repository (CI makes one there): its
    # packages are not graded code.
    installed = tuple({p.rstrip(os.sep) + os.sep for p in (sys.prefix, sys.exec_prefix)})

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path = args[0]
            if isinstance(path, str | bytes) and os.fsdecode(path).rstrip("/").endswith("mem"):
                name = os.fsdecode(path).rstrip("/").rsplit("/", 1)[-1]
                if name == "mem":
                    flags.append(f"opened {os.fsdecode(path)}")
                    raise PermissionError(f"the grader forbids opening {os.fsdecode(path)}")
            return
        swap = event == "object.__setattr__" and len(args) > 1 and args[1] in attributes
        if event not in audited and not swap:
            return
        caller = getframe(1)
        filename = caller.f_code.co_filename
        if not filename.startswith(prefix) or filename.startswith(installed):
            return  # pytest, hypothesis, numba: not the code under test
        where = f"{filename[len(prefix) :]}:{caller.f_lineno}"
        what = f"set {args[1]}" if swap else event
        flags.append(f"{what} from {where}")
        raise PermissionError(f"the grader forbids {what} in graded code ({where})")

    sys.addaudithook(hook)


def _writer(
    key: bytes,
    write: Callable[[int, bytes], int] = os.write,
    dumps: Callable[..., str] = json.dumps,
    sign: Callable[..., Any] = hmac.new,
    numbers: Callable[[], Iterable[int]] = itertools.count,
) -> Callable[..., None]:
    """`emit(fd, **event)`: one numbered record, MAC'd under `key`, in one write."""
    counter = iter(numbers())

    def emit(fd: int, **event: Any) -> None:
        event["seq"] = next(counter)
        body = dumps(event)
        mac = sign(key, body.encode("utf-8"), "sha256").hexdigest() if key else "-"
        data = f"{mac} {body}\n".encode()
        try:
            while data:
                data = data[write(fd, data) :]
        except OSError:
            pass  # the grader is gone: nothing to report to

    return emit


# First of all: the key is read, and its descriptor closed, before any test code runs. It is
# kept only in the writer's closure.
_EMIT = _writer(_take_key())
_FLAGS: list[str] = []
_audit(_FLAGS, os.getcwd())
_DIGEST = _code_digest()
_WATCH = _watchers(_namespaces(), _guard())
_ITEM_CODE = _item_code(_DIGEST)
_HOOKS_OF = _hooks_of(_DIGEST)


# Closures rather than methods or module globals: patching this module or the plugin object
# changes nothing the hooks use.
def _build_recorder(
    emit: Callable[..., None] = _EMIT,
    format_only: Callable[..., list[str]] = traceback.format_exception_only,
    extract: Callable[..., Any] = traceback.extract_tb,
    format_list: Callable[..., list[str]] = traceback.format_list,
    skipped: type[BaseException] = _pytest.outcomes.Skipped,
    xfailed: type[BaseException] = _pytest.outcomes.XFailed,
    watch: tuple[Callable[[], None], Callable[[bool], list[str]]] = _WATCH,
    flags: list[str] = _FLAGS,
    item_code: Callable[[pytest.Item], str] = _ITEM_CODE,
    hooks_of: Callable[[Any], set[str]] = _HOOKS_OF,
    hookimpl: Callable[..., Any] = pytest.hookimpl,
    markers_of: Callable[[pytest.Item], list[str]] = course_markers,
) -> tuple[Callable[[int, Path, bool, Any], object], Callable[[], None]]:
    """Capture everything now (at import); return the recorder's factory and `rebase`.

    `rebase` takes the baselines again: it runs once the installed pytest plugins are
    loaded and before any conftest is, so only later changes count.
    """
    rebase, changed = watch

    def make(fd: int, root: Path, setup_only: bool, manager: Any) -> object:
        seen: dict[str, dict[str, BaseException | None]] = {}
        reported: set[str] = set()
        codes: dict[str, str] = {}
        announced: set[str] = set()

        def check(item: pytest.Item | None = None, between_tests: bool = True) -> None:
            names = changed(between_tests) + list(flags)
            if item is not None and "runtest" in vars(item):
                names.append(f"{item.nodeid}: item.runtest")
            if item is not None and item.nodeid in codes and item_code(item) != codes[item.nodeid]:
                names.append(f"the code of {item.nodeid} changed while the tests ran")
            fresh = [name for name in names if name not in reported]
            if fresh:
                reported.update(fresh)
                emit(fd, event="tamper", names=fresh)
            hooks = hooks_of(manager) - announced
            if hooks:
                announced.update(hooks)
                emit(fd, event="hooks", hooks=sorted(hooks))

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
                emit(fd, event="result", nodeid=item.nodeid, outcome=result, why=error,
                     message="")  # fmt: skip
            else:
                emit(fd, event="result", nodeid=item.nodeid, outcome=result, why=why(error),
                     message=details(error))  # fmt: skip

        def observer(when: str) -> Hook:
            def hook(item: pytest.Item) -> Generator[None, Any, Any]:
                if when == "call":
                    check(item, between_tests=False)
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
                        check(item, between_tests=when == "teardown")
                    if when == "teardown":
                        report(item)

            return hookimpl(wrapper=True, tryfirst=True)(hook)  # type: ignore[no-any-return]

        def pytest_collection_finish(session: pytest.Session) -> None:
            for item in session.items:
                codes[item.nodeid] = item_code(item)
                emit(fd, event="collected", nodeid=item.nodeid, path=relative(item),
                     markers=markers_of(item), code=codes[item.nodeid],
                     all_markers=sorted({mark.name for mark in item.iter_markers()}))  # fmt: skip
            check()

        def pytest_collectreport(report: pytest.CollectReport) -> None:
            if report.failed:
                text = str(report.longrepr)
                if len(text) > _MESSAGE_LIMIT:
                    text = "...\n" + text[-_MESSAGE_LIMIT:]
                emit(fd, event="collect_error", nodeid=report.nodeid, message=text)

        def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
            check()
            emit(fd, event="finished", exitstatus=int(exitstatus))

        class Recorder:
            """The hooks, as closures over the names captured at import."""

        recorder = Recorder()
        hooks: dict[str, Hook] = {
            "pytest_runtest_setup": observer("setup"),
            "pytest_runtest_call": observer("call"),
            "pytest_runtest_teardown": observer("teardown"),
            "pytest_collection_finish": hookimpl(trylast=True)(pytest_collection_finish),
            "pytest_collectreport": pytest_collectreport,
            "pytest_sessionfinish": hookimpl(trylast=True)(pytest_sessionfinish),
        }
        for name, hook in hooks.items():
            setattr(recorder, name, hook)
        return recorder

    return make, rebase


def _build_hooks(
    make: Callable[[int, Path, bool, Any], object], rebase: Callable[[], None]
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
            help="write MAC'd JSON records of collected tests and their outcomes to this fd",
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
        rebase()

    def pytest_configure(config: pytest.Config) -> None:
        fd = config.getoption("minifw_record_fd")
        if fd is not None:
            setup_only = bool(config.getoption("setuponly", False))
            recorder = make(fd, config.rootpath, setup_only, config.pluginmanager)
            config.pluginmanager.register(recorder, "minifw-recorder")

    return pytest_addoption, pytest_load_initial_conftests, pytest_configure


pytest_addoption, pytest_load_initial_conftests, pytest_configure = _build_hooks(
    *_build_recorder()
)
