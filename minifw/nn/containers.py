"""Containers: Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from minifw.nn.module import Module, Parameter

Pairs = Iterable[tuple[str, Any]]


def _position(index: int, length: int, kind: str) -> int:
    """`index` (negative counts from the end) checked against `length`."""
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range for a {kind} of length {length}")
    return index % length


class Sequential(Module):
    """Modules applied one after the other; indexable, sliceable, iterable, sized.

    Built from modules (named "0", "1", ...) or from one OrderedDict of name -> module.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, index: int | slice) -> Any:
        items = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(items[index]))
        return items[_position(index, len(items), "Sequential")][1]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(m for m in self._modules.values() if m is not None)

    def append(self, module: Module) -> Sequential:
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input: Any) -> Any:  # noqa: A002 - PyTorch's argument name
        """Feed `input` through every module in order."""
        for module in self:
            input = module(input)  # noqa: A001
        return input


class ModuleList(Module):
    """A list of modules whose parameters the parent module sees ("0.weight", ...)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice) -> Any:
        items = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(m for m in items[index] if m is not None)
        return items[_position(index, len(items), "ModuleList")]

    def __setitem__(self, index: int, module: Module) -> None:
        names = list(self._modules)
        name = names[_position(index, len(names), "ModuleList")]
        self._modules[name] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(m for m in self._modules.values() if m is not None)

    def append(self, module: Module) -> ModuleList:
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append each module; returns self."""
        for module in modules:
            self.append(module)
        return self


class ModuleDict(Module):
    """An ordered dict of modules (name -> module) whose parameters the parent module sees."""

    def __init__(
        self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None
    ) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Any:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        """The names, in insertion order."""
        return self._modules.keys()

    def values(self) -> Iterable[Any]:
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Any]]:
        """(name, module) pairs, in insertion order."""
        return self._modules.items()

    def pop(self, key: str) -> Any:
        """Remove the module named `key` and return it."""
        return self._modules.pop(key)

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Pairs) -> None:
        """Add (or replace) modules from a mapping or from (name, module) pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for name, module in pairs:
            self[name] = module


def _as_parameter(value: Any) -> Parameter:
    """A Parameter for `value` (a tensor becomes one; a Parameter stays itself)."""
    return value if isinstance(value, Parameter) else Parameter(value)


class ParameterList(Module):
    """A list of parameters registered as "0", "1", ... (tensors become Parameters)."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, index: int | slice) -> Any:
        items = list(self._parameters.values())
        if isinstance(index, slice):
            return ParameterList(items[index])
        return items[_position(index, len(items), "ParameterList")]

    def __setitem__(self, index: int, value: Any) -> None:
        names = list(self._parameters)
        name = names[_position(index, len(names), "ParameterList")]
        self._parameters[name] = _as_parameter(value)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._parameters.values())

    def append(self, value: Any) -> ParameterList:
        """Add a parameter at the end; returns self."""
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append each value; returns self."""
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        """One line per parameter: its shape."""
        return "\n".join(
            f"({i}): Parameter containing: [shape {tuple(getattr(p, 'shape', ()))}]"
            for i, p in enumerate(self)
        )


class ParameterDict(Module):
    """An ordered dict of parameters (name -> Parameter; tensors become Parameters)."""

    def __init__(
        self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None
    ) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return self._parameters[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: object) -> bool:
        return key in self._parameters

    def keys(self) -> Iterable[str]:
        """The names, in insertion order."""
        return self._parameters.keys()

    def values(self) -> Iterable[Any]:
        """The parameters, in insertion order."""
        return self._parameters.values()

    def items(self) -> Iterable[tuple[str, Any]]:
        """(name, parameter) pairs, in insertion order."""
        return self._parameters.items()

    def update(self, parameters: Mapping[str, Any] | Pairs) -> None:
        """Add (or replace) parameters from a mapping or from (name, value) pairs."""
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for name, value in pairs:
            self[name] = value
