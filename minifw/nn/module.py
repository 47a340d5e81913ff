"""`Module` and `Parameter`: the tree that networks are built from, as in PyTorch.

Assigning a Parameter or a Module to an attribute of a Module registers it, in
assignment order, so `parameters()` and `modules()` can walk the whole tree with
dotted names like "layer1.weight".
"""

from __future__ import annotations

from abc import ABCMeta
from collections.abc import Callable, Iterator
from typing import Any

from .module_hooks import ModuleHooksMixin, RemovableHandle
from .module_state import IncompatibleKeys, ModuleStateMixin


class Parameter(metaclass=ABCMeta):  # noqa: B024 - ABCMeta for register(), no abstracts
    """A value that a Module trains.

    `Parameter(tensor)` returns a Tensor that shares `tensor`'s storage and requires
    grad (a `minifw.tensor.TensorParameter`), so `x @ self.weight` and `p.grad` work as
    in PyTorch. Any other value (a Scalar) is wrapped: `.value` holds it and
    `update(x)` swaps in a new one. Both kinds pass `isinstance(p, Parameter)`, and
    both have `.value` and `update`.

    Attributes:
        value: the wrapped value (for a tensor parameter, the parameter itself).
    """

    __slots__ = ("value",)

    def __new__(cls, value: Any = None, requires_grad: bool = True) -> Any:
        """A TensorParameter for a tensor `value`, else a wrapper around `value`."""
        as_parameter = getattr(value, "_as_parameter", None)
        if as_parameter is not None:
            return as_parameter(requires_grad)
        return super().__new__(cls)

    def __init__(self, value: Any = None, requires_grad: bool = True) -> None:
        self.value = value
        self._require_grad()

    def update(self, x: Any) -> None:
        """Replace the wrapped value with `x` (it requires grad too)."""
        self.value = x
        self._require_grad()

    def _require_grad(self) -> None:
        requires_grad_ = getattr(self.value, "requires_grad_", None)
        if requires_grad_ is not None:
            requires_grad_(True)

    def __repr__(self) -> str:
        return f"Parameter({self.value!r})"


class Module(ModuleStateMixin, ModuleHooksMixin):
    """Base class of networks: assign Parameters and Modules as attributes.

    Subclasses call `super().__init__()` first, then assign their parts, and define
    `forward`; calling the module calls `forward`.

    Attributes:
        training: True in training mode (`train()`), False after `eval()`.
    """

    training: bool
    _parameters: dict[str, Parameter | None]
    _modules: dict[str, Module | None]
    _buffers: dict[str, Any]
    _non_persistent_buffers: set[str]
    _forward_pre_hooks: dict[int, Callable[..., Any]]
    _forward_hooks: dict[int, Callable[..., Any]]
    _backward_hooks: dict[int, Callable[..., Any]]

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)
        for name in ("_buffers", "_forward_pre_hooks", "_forward_hooks", "_backward_hooks"):
            object.__setattr__(self, name, {})
        object.__setattr__(self, "_non_persistent_buffers", set())

    # BEGIN TASK 0.4
    def __setattr__(self, name: str, value: Any) -> None:
        """Register Parameters and Modules by name; set anything else as usual."""
        registries = self.__dict__.get("_parameters"), self.__dict__.get("_modules")
        params, modules = registries
        if params is None or modules is None:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() call "
                f"(call super().__init__() first in {type(self).__name__}.__init__)"
            )
        if isinstance(value, Parameter):
            self._forget(name)
            params[name] = value
        elif isinstance(value, Module):
            self._forget(name)
            modules[name] = value
        elif name in self.__dict__.get("_buffers", ()):
            self._buffers[name] = value
        elif name in params or name in modules:
            kind = "parameter" if name in params else "child module"
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as {kind} {name!r} of "
                    f"{type(self).__name__} (a {'Parameter' if name in params else 'Module'} "
                    "or None expected)"
                )
            (params if name in params else modules)[name] = None
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        """Drop `name` from every registry and from the plain attributes."""
        self.__dict__.pop(name, None)
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self.__dict__.get("_buffers", {}).pop(name, None)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` under `name`, for names built at run time ("weight_0_1")."""
        self._check_new_name(name)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot register {type(param).__name__} as parameter {name!r}")
        self._forget(name)
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Register `module` as a child under `name`, for names built at run time."""
        self._check_new_name(name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"cannot register {type(module).__name__} as module {name!r}")
        self._forget(name)
        self._modules[name] = module

    def _check_new_name(self, name: str) -> None:
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"name must be a non-empty string without '.', got {name!r}")
        if hasattr(type(self), name):
            raise KeyError(f"attribute {name!r} of {type(self).__name__} already exists")

    def __getattr__(self, name: str) -> Any:
        """Find a registered Parameter or Module; anything else is an AttributeError."""
        registered = self.__dict__
        for registry in ("_parameters", "_modules", "_buffers"):
            if name in registered.get(registry, ()):
                return registered[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        """Remove a registered Parameter or Module, or a plain attribute."""
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._modules:
            del self._modules[name]
        elif name in self._buffers:
            del self._buffers[name]
        else:
            object.__delattr__(self, name)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Yield (name, module) for each direct submodule, in assignment order."""
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """Yield each direct submodule, in assignment order."""
        for _, module in self.named_children():
            yield module

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """Yield (dotted name, module) for this module ("") and every descendant, once each."""
        seen: set[int] = set()
        stack: list[tuple[str, Module]] = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [
                (f"{name}.{child_name}" if name else child_name, child)
                for child_name, child in module._modules.items()
                if child is not None
            ]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        """Yield this module and every descendant, once each, depth first."""
        for _, module in self.named_modules():
            yield module

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[
        tuple[str, Parameter]
    ]:  # fmt: skip
        """Yield (dotted name, parameter) for the parameters of this module and below.

        A parameter shared by several modules is listed once, under its first name.
        With `recurse=False` only this module's own parameters are listed.
        """
        seen: set[int] = set()
        owners = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for owner_name, owner in owners:
            for name, param in owner._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{owner_name}.{name}" if owner_name else name), param

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Yield every parameter of this module and below, once each."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and every descendant; return self."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (training=False) on this module and below; return self."""
        return self.train(False)

    # END TASK 0.4

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Compute the module's output; subclasses define it."""
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run `forward` with the same arguments, with the registered hooks around it."""
        return self._call_with_hooks(*args, **kwargs)

    def extra_repr(self) -> str:
        """The module's own settings for `repr` (override to show, e.g., sizes)."""
        return ""

    def __repr__(self) -> str:
        """Show the module as PyTorch does: its extra_repr, then each child indented."""
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, module in self._modules.items():
            child = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        if not lines:
            return f"{type(self).__name__}()"
        if len(lines) == 1 and not self._modules:
            return f"{type(self).__name__}({lines[0]})"
        body = "\n  ".join(lines)
        return f"{type(self).__name__}(\n  {body}\n)"


__all__ = ["IncompatibleKeys", "Module", "Parameter", "RemovableHandle"]
