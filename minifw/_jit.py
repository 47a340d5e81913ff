"""Typed wrappers around Numba's decorators, recompiling plain functions, and the disk cache.

`scalar_math.py` and `tensor_data.py` are plain Python. A backend recompiles the very
same functions for its target with `compile_functions`: each function is rebuilt
with its global names pointing at the compiled versions of its siblings, so a
compiled `unary` calls the compiled `exp`, never the Python one.

Kernels compiled with `cache=True` are saved on disk (`__pycache__` beside their file,
or NUMBA_CACHE_DIR). Numba keys that cache on the kernel's own file only, but the
kernels inline code from other files (`scalar_math.py`, `tensor_data.py`, ...). Importing
this module registers cache locators that key kernels of the minifw package also on
the contents of every file in KERNEL_SOURCES: editing any of them recompiles, instead
of loading machine code built from the old source.
"""

from __future__ import annotations

import functools
import hashlib
import os
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, overload

import numba
from llvmlite import binding as llvm
from numba.core import caching, registry

F = TypeVar("F", bound=Callable[..., Any])

# Below this much work (cells, or multiply-adds / 8 for matmul) a CPU kernel runs its
# serial twin: waking the thread pool costs more than it saves, and far more on a busy
# machine. FastOps and the fast paths share it (`minifw.fast_ops.PARALLEL_FROM` too).
PARALLEL_FROM = 32768
PACKAGE_DIR = Path(__file__).resolve().parent
# The files (relative to PACKAGE_DIR, glob patterns) whose code cached kernels inline.
KERNEL_SOURCES = (
    "_jit.py",
    "core/operators.py",
    "core/scalar_math.py",
    "core/tensor_data.py",
    "fast_ops.py",
    "fast_paths/*.py",
)


def prefer_512_bit_vectors() -> bool:
    """Let LLVM vectorise with 512-bit registers on AVX-512 CPUs; True if it now will.

    LLVM prefers 256-bit vectors on Intel's AVX-512 parts (early ones slowed their clock
    for 512-bit work); for minifw's elementwise kernels the wide ones are up to twice as
    fast. Numba reads the CPU features once, when it first compiles, for every function
    of the process: so this acts only before that, and never overrides a user's
    NUMBA_CPU_NAME / NUMBA_CPU_FEATURES. MINIFW_VECTOR_WIDTH=256 keeps LLVM's choice.
    """
    config: Any = numba.config
    if (
        os.environ.get("MINIFW_VECTOR_WIDTH") == "256"
        or config.CPU_NAME is not None
        or config.CPU_FEATURES is not None
        or "_toplevel_target_context" in vars(registry.cpu_target)
    ):
        return False
    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" not in features.split(","):
        return False
    config.CPU_FEATURES = features + ",-prefer-256-bit"
    return True


prefer_512_bit_vectors()


@overload
def njit(fn: F, /, **options: Any) -> F: ...


@overload
def njit(fn: None = None, /, **options: Any) -> Callable[[F], F]: ...


def njit(fn: F | None = None, /, **options: Any) -> Any:
    """`numba.njit` with a type mypy can follow, and numpy's division rules.

    `error_model="numpy"` makes x / 0 give inf or nan (as numpy and PyTorch do)
    instead of raising ZeroDivisionError inside a kernel.
    """
    options.setdefault("error_model", "numpy")
    if fn is None:
        return numba.njit(**options)
    return numba.njit(**options)(fn)


def inlined(fn: Callable[..., Any]) -> Any:
    """`fn` compiled to be inlined by Numba into the kernels that call it."""
    return njit(fn, inline="always")


# Options for a function that only compiled code calls: Numba builds no wrappers to call
# it from Python or C (it would otherwise build, optimise and emit both, for nothing).
KERNELS_ONLY = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def called(fn: Callable[..., Any]) -> Any:
    """`fn` compiled to be called by kernels only, cached on disk where its source is a file.

    A function made from generated source (no file to key its cache on) is compiled
    in each process that calls it.
    """
    return njit(fn, cache=Path(fn.__code__.co_filename).is_file(), **KERNELS_ONLY)


def compile_functions(
    modules: Iterable[Any],
    names: Iterable[str],
    compiler: Callable[[Callable[..., Any]], Any],
    replacements: dict[str, Any] | None = None,
    suffix: str = "",
) -> types.SimpleNamespace:
    """Recompile the named functions of `modules` with `compiler`, linked to each other.

    Returns a namespace holding the compiled functions. Globals that are not
    among `names` (math, op codes, numpy) resolve as in the original module.
    `replacements` maps names to already compiled functions used instead of the
    module's own (a backend's faster equivalent of one function). `suffix` ends each
    copy's qualified name: copies cached on disk need names of their own, since Numba
    keys its cache on a function's file, name and bytecode, not on the globals it calls.
    """
    replaced = dict(replacements or {})
    wanted = [name for name in names if name not in replaced]
    namespace: dict[str, Any] = {}
    compiled: dict[str, Any] = dict(replaced)
    for module in modules:
        namespace.update(vars(module))
    for name in wanted:
        original = namespace[name]
        clone = types.FunctionType(
            original.__code__,
            namespace,
            original.__name__,
            original.__defaults__,
            original.__closure__,
        )
        clone.__module__ = original.__module__
        clone.__qualname__ = original.__qualname__ + suffix
        compiled[name] = compiler(clone)
    namespace.update(compiled)
    return types.SimpleNamespace(**compiled)


def recompile_with(
    compiled: types.SimpleNamespace,
    functions: dict[str, Callable[..., Any]],
    modules: Iterable[Any],
    compiler: Callable[[Callable[..., Any]], Any],
) -> types.SimpleNamespace:
    """New versions of some of `compiled`'s functions, compiled, calling the rest of them.

    `functions` maps names to plain functions (written for the globals of `modules`);
    returns them compiled by `compiler`, their calls to other names of `compiled` linked
    to those compiled functions (a `unary` knowing one op, calling the compiled `exp`).
    """
    others = {name: fn for name, fn in vars(compiled).items() if name not in functions}
    namespace = types.SimpleNamespace(**functions)
    return compile_functions([*modules, namespace], list(functions), compiler, others)


def respecialise(
    kernel: Any, suffix: str, replacements: dict[str, Any] | None = None, **options: Any
) -> Any:
    """`kernel` compiled again as a function of its own, named `kernel.__name__ + suffix`.

    `replacements` swaps global names the code looks up (a helper that knows one op
    only); `options` override the kernel's Numba options (None drops one). The copy
    has its own qualified name, so with `cache=True` it has its own cache file.
    """
    fn = getattr(kernel, "py_func", kernel)  # NUMBA_DISABLE_JIT: a plain function
    namespace = {**fn.__globals__, **replacements} if replacements else fn.__globals__
    copy = types.FunctionType(
        fn.__code__, namespace, fn.__name__ + suffix, fn.__defaults__, fn.__closure__
    )
    copy.__qualname__ = fn.__qualname__ + suffix
    copy.__module__ = fn.__module__
    merged = {**getattr(kernel, "targetoptions", {}), **options}
    return njit(copy, **{k: v for k, v in merged.items() if k != "nopython" and v is not None})


def serial_twin(kernel: Any) -> Any:
    """`kernel` compiled again without `parallel` (prange runs as range), cached apart."""
    if getattr(kernel, "py_func", None) is None:  # NUMBA_DISABLE_JIT: plain Python already
        return kernel
    return respecialise(kernel, "_serial", parallel=None, cache=True)


class PerOp:
    """A kernel compiled once per op code, on that code's first launch: `kernels[op]`.

    A kernel that calls `unary(op, x)` compiles a branch for every row of the op table,
    for every combination of argument types, before its first launch: minutes, cold.
    `kernels[op]` is a copy of the kernel whose helpers (`unary`, `binary`, a line
    loop, ...) are the ones `helpers(op)` returns, which know that op only: it compiles
    in seconds, and a program compiles only the ops it runs. Each copy is cached on disk
    under its own name (`_map__op2`). A copy must be launched with its own op code.
    """

    tables: list[PerOp] = []  # every one made, to list what compiled (tests, bench)

    def __init__(self, kernel: Any, helpers: Callable[[int], dict[str, Any]]) -> None:
        self.kernel = kernel
        self.helpers = helpers
        self.copies: dict[int, Any] = {}
        PerOp.tables.append(self)

    def __getitem__(self, op: int) -> Any:
        """The copy of the kernel for op code `op` (made, not yet compiled, on first use)."""
        copy = self.copies.get(op)
        if copy is None:
            copy = self.copies[op] = respecialise(
                self.kernel, f"__op{op}", self.helpers(op), cache=True
            )
        return copy


def kernel_sources() -> list[Path]:
    """The files of KERNEL_SOURCES that exist, in a fixed order."""
    found = {path for pattern in KERNEL_SOURCES for path in PACKAGE_DIR.glob(pattern)}
    return sorted(found)


def kernel_sources_hash() -> str:
    """A hash of the names and contents of every file that cached kernels inline."""
    files = tuple(
        (str(path), stat.st_mtime_ns, stat.st_size)
        for path in kernel_sources()
        for stat in (path.stat(),)
    )
    return _hash_files(files)


@functools.lru_cache(maxsize=8)
def _hash_files(files: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 over (name, contents) of `files`; cached by (path, mtime, size), as Numba does."""
    digest = hashlib.sha256()
    for name, _, _ in files:
        digest.update(Path(name).relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
        digest.update(Path(name).read_bytes() + b"\0")
    return digest.hexdigest()


class _KeyedOnKernelSources:
    """Locator mixin: kernels of the minifw package are also keyed on KERNEL_SOURCES.

    Numba stores the source stamp in each cache index and ignores an index whose stamp
    differs from the current one, so a change to any kernel source recompiles.
    """

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        """This locator for a function defined in the minifw package, else None."""
        if not Path(py_file).resolve().is_relative_to(PACKAGE_DIR):
            return None
        return super().from_function(py_func, py_file)  # type: ignore[misc]

    def get_source_stamp(self) -> Any:
        """Numba's stamp of the kernel's own file, and the hash of the kernel sources."""
        return super().get_source_stamp(), kernel_sources_hash()  # type: ignore[misc]


class _UserProvidedLocator(_KeyedOnKernelSources, caching.UserProvidedCacheLocator):  # type: ignore[misc]
    """NUMBA_CACHE_DIR, when set, keyed on the kernel sources.

    Numba names the folder after the file's absolute path; this one names it after the
    file's place in the package, so every copy of minifw (a grader's fresh copy per run, a
    second checkout) shares one cache. Numba's stamps hash file contents, so a copy whose
    kernels differ recompiles instead of loading another copy's machine code.
    """

    @classmethod
    def get_suitable_cache_subpath(cls, py_file: str) -> str:
        """`minifw_fast_paths` for minifw/fast_paths/x.py, wherever minifw lies."""
        folder = Path(py_file).resolve().parent
        return "_".join(folder.relative_to(PACKAGE_DIR.parent).parts)


class _InTreeLocator(_KeyedOnKernelSources, caching.InTreeCacheLocator):  # type: ignore[misc]
    """`__pycache__` beside the kernel's file, keyed on the kernel sources."""


class _UserWideLocator(_KeyedOnKernelSources, caching.UserWideCacheLocator):  # type: ignore[misc]
    """The user's cache directory (when `__pycache__` is not writable), keyed likewise."""


def register_cache_locators() -> None:
    """Put minifw's locators first in Numba's list (once; Numba's own stay after them)."""
    classes: list[Any] = caching.CacheImpl._locator_classes
    ours = [_UserProvidedLocator, _InTreeLocator, _UserWideLocator]
    if classes[: len(ours)] != ours:
        classes[:0] = ours


register_cache_locators()
