"""Typed wrappers around Numba's decorators, and recompiling plain functions unchanged.

`operators.py` and `tensor_data.py` are plain Python. A backend recompiles the very
same functions for its target with `compile_functions`: each function is rebuilt
with its global names pointing at the compiled versions of its siblings, so a
compiled `unary` calls the compiled `exp`, never the Python one.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

import numba
from llvmlite import binding as llvm
from numba.core import registry

F = TypeVar("F", bound=Callable[..., Any])


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
def njit(fn: F, **options: Any) -> F: ...


@overload
def njit(fn: None = None, **options: Any) -> Callable[[F], F]: ...


def njit(fn: F | None = None, **options: Any) -> Any:
    """`numba.njit` with a type mypy can follow, and numpy's division rules.

    `error_model="numpy"` makes x / 0 give inf or nan (as numpy and PyTorch do)
    instead of raising ZeroDivisionError inside a kernel.
    """
    options.setdefault("error_model", "numpy")
    if fn is None:
        return numba.njit(**options)
    return numba.njit(**options)(fn)


def compile_functions(
    modules: Iterable[types.ModuleType],
    names: Iterable[str],
    compiler: Callable[[Callable[..., Any]], Any],
    replacements: dict[str, Any] | None = None,
) -> types.SimpleNamespace:
    """Recompile the named functions of `modules` with `compiler`, linked to each other.

    Returns a namespace holding the compiled functions. Globals that are not
    among `names` (math, op codes, numpy) resolve as in the original module.
    `replacements` maps names to already compiled functions used instead of the
    module's own (a backend's faster equivalent of one function).
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
        clone.__qualname__ = original.__qualname__
        compiled[name] = compiler(clone)
    namespace.update(compiled)
    return types.SimpleNamespace(**compiled)


def serial_twin(kernel: Any) -> Any:
    """`kernel` compiled again without `parallel` (prange runs as range), cached apart."""
    fn = getattr(kernel, "py_func", None)
    if fn is None:  # NUMBA_DISABLE_JIT: kernels are plain Python already
        return kernel
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial")
    twin.__qualname__ = fn.__qualname__ + "_serial"  # its own cache file
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "nopython")}
    return njit(twin, cache=True, **options)
