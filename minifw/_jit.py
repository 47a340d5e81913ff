"""Typed wrappers around Numba's decorators, and recompiling plain functions unchanged.

`operators.py` and `tensor_data.py` are plain Python. A backend recompiles the very
same functions for its target with `compile_functions`: each function is rebuilt
with its global names pointing at the compiled versions of its siblings, so a
compiled `unary` calls the compiled `exp`, never the Python one.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

import numba

F = TypeVar("F", bound=Callable[..., Any])


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
) -> types.SimpleNamespace:
    """Recompile the named functions of `modules` with `compiler`, linked to each other.

    Returns a namespace holding the compiled functions. Globals that are not
    among `names` (math, op codes, numpy) resolve as in the original module.
    """
    wanted = list(names)
    namespace: dict[str, Any] = {}
    compiled: dict[str, Any] = {}
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
