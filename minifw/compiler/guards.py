"""What a compiled function reads besides its arguments, checked before each replay.

At capture, `find` walks what the function can reach without being passed it: the
globals its code names, its closure cells, its defaults, the `self` of a bound method,
the parts of a `functools.partial`, and the arguments that are objects (a Module passed
as `self`). It goes into dicts, lists, tuples, Modules and other objects' attributes, a
few levels deep, and notes:

- every Module, whose training mode is guarded (a model captured in eval mode captures
  again after `.train()`: BatchNorm and dropout behave differently);
- every tensor whose storage the capture read by reference (a constant or a parameter),
  as a path from a container that stays put (`d["w"]`, a closure cell, a global): a
  replay runs only while each path still leads to the same tensor object, so rebinding
  `d["w"] = other` captures again instead of replaying the old tensor.

Tensors reached some other way (through a class attribute, or a function the walk
does not follow) are not guarded.
"""

from __future__ import annotations

import functools
import itertools
import operator
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from minifw.nn.module import Module
from minifw.tensor.functions import is_tensor
from minifw.tensor.kernel_api import cells

MAX_DEPTH = 6  # steps from a root container
MAX_VISITS = 5000  # objects looked at per capture
MAX_ITEMS = 1000  # items looked at per container
_GONE: Any = object()  # a path that leads nowhere now

Step = tuple[str, Any]  # ("item", key): obj[key]; ("attr", name): vars(obj)[name]; ...


class Path:
    """Where a tensor was found: a root container, the steps from it, and a readable name."""

    __slots__ = ("root", "steps", "name", "_getters")

    def __init__(self, root: Any, steps: tuple[Step, ...], name: str) -> None:
        self.root, self.steps, self.name = root, steps, name
        self._getters = tuple(_getter(kind, key) for kind, key in steps)

    def follow(self) -> Any:
        """The object this path leads to now (`_GONE` if it leads nowhere)."""
        obj = self.root
        try:
            for get in self._getters:
                obj = get(obj)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            return _GONE
        return obj


def _getter(kind: str, key: Any) -> Callable[[Any], Any]:
    """One step of a path: an item, an attribute from `vars`, any attribute, a cell."""
    if kind == "item":
        return operator.itemgetter(key)
    if kind == "attr":
        return lambda obj: obj.__dict__[key]
    if kind == "get":
        return operator.attrgetter(key)
    return operator.attrgetter("cell_contents")


@dataclass(frozen=True, slots=True)
class Guards:
    """The training modes and tensor identities a capture depends on."""

    modes: tuple[tuple[Module, bool], ...] = ()
    tensors: tuple[tuple[Path, Any], ...] = ()

    def failed(self) -> tuple[str, str] | None:
        """(kind, what changed) for the first guard that no longer holds; None if all hold."""
        for module, mode in self.modes:
            if module.training is not mode:
                now, was = ("training", "eval") if module.training else ("eval", "training")
                return "mode", (
                    f"a {type(module).__name__} it reads is in {now} mode now, it was captured "
                    f"in {was} mode"
                )
        for path, tensor in self.tensors:
            if path.follow() is not tensor:
                return "tensor", f"the tensor at {path.name} is another object"
        return None

    def modes_only(self) -> Guards:
        """These guards without the tensor identities (for a function that runs eagerly)."""
        return Guards(self.modes)


def find(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], read: set[int]) -> Guards:
    """The guards of a capture of `fn(*args, **kwargs)` that read the storages `read` (ids)."""
    walk = _Walk(read)
    for root, steps, name in _roots_of_callable(fn, _name(fn)):
        walk.visit(root, steps, name)
    for i, value in enumerate((*args, *kwargs.values())):
        if not is_tensor(value) and not isinstance(value, int | float | str | bool | type(None)):
            walk.visit(value, (), f"argument {i}")
    walk.run()
    return Guards(tuple(walk.modes.values()), tuple(walk.tensors))


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)


def _code_names(code: types.CodeType) -> set[str]:
    """The names a code object (and those nested in it) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _roots_of_callable(fn: Any, name: str) -> Iterator[tuple[Any, tuple[Step, ...], str]]:
    """(root, steps, name) of what a callable reads without being passed it."""
    if isinstance(fn, types.FunctionType):
        for var in sorted(_code_names(fn.__code__) & fn.__globals__.keys()):
            yield fn.__globals__, (("item", var),), var
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
            yield cell, (("cell", None),), var
        if fn.__defaults__:
            yield fn, (("get", "__defaults__"),), f"the defaults of {name}"
        if fn.__kwdefaults__:
            yield fn.__kwdefaults__, (), f"the keyword defaults of {name}"
    elif isinstance(fn, types.MethodType):
        yield fn, (("get", "__self__"),), "self"
        yield from _roots_of_callable(fn.__func__, name)
    elif isinstance(fn, functools.partial):
        yield fn, (("get", "args"),), f"the arguments bound to {name}"
        yield fn, (("get", "keywords"),), f"the keywords bound to {name}"
        yield from _roots_of_callable(fn.func, name)
    elif not isinstance(fn, type | types.BuiltinFunctionType | types.ModuleType):
        yield fn, (), name  # a callable object (a Module): its attributes


class _Walk:
    """A breadth-first walk from the roots, noting Modules and the tensors read."""

    def __init__(self, read: set[int]) -> None:
        self.read = read
        self.queue: list[tuple[Any, Any, tuple[Step, ...], str]] = []
        self.seen: set[int] = set()
        self.modes: dict[int, tuple[Module, bool]] = {}
        self.tensors: list[tuple[Path, Any]] = []

    def visit(self, root: Any, steps: tuple[Step, ...], name: str) -> None:
        """Queue the object at `steps` from `root`."""
        obj = Path(root, steps, name).follow()
        if obj is not _GONE:
            self.queue.append((obj, root, steps, name))

    def run(self) -> None:
        at = 0
        while at < len(self.queue) and at < MAX_VISITS:
            obj, root, steps, name = self.queue[at]
            at += 1
            if is_tensor(obj):
                if id(cells(obj).base) in self.read:
                    self.tensors.append((Path(root, steps, name), obj))
                continue
            if id(obj) in self.seen or len(steps) > MAX_DEPTH:
                continue
            self.seen.add(id(obj))
            self._children(obj, root, steps, name)

    def _children(self, obj: Any, root: Any, steps: tuple[Step, ...], name: str) -> None:
        """Queue what `obj` holds (a container's items, an object's attributes)."""
        items: Any = ()
        kind = "item"
        if isinstance(obj, dict):
            items = [(k, v) for k, v in itertools.islice(obj.items(), MAX_ITEMS)
                     if isinstance(k, str | int)]  # fmt: skip
        elif isinstance(obj, list | tuple):
            items = enumerate(itertools.islice(obj, MAX_ITEMS))
        elif isinstance(obj, types.FunctionType | types.MethodType | functools.partial):
            for child_root, child_steps, child in _roots_of_callable(obj, name):
                self.visit(child_root, child_steps, f"{child} (read by {name})")
            return
        elif isinstance(obj, Module) or _plain_object(obj):
            if isinstance(obj, Module):
                self.modes[id(obj)] = (obj, obj.training)
            items, kind = vars(obj).items(), "attr"
        for key, value in items:
            if not isinstance(value, _LEAVES):
                label = f"{name}[{key!r}]" if kind == "item" else f"{name}.{key}"
                self.queue.append((value, root, (*steps, (kind, key)), label))


_LEAVES = (str, bytes, int, float, bool, type(None), type, types.ModuleType)


def _plain_object(obj: Any) -> bool:
    """An instance of a user class with attributes (an optimizer, a config object)."""
    return hasattr(obj, "__dict__") and not isinstance(
        obj, type | types.ModuleType | types.BuiltinFunctionType | types.CodeType
    )


__all__ = ["Guards", "Path", "find"]
