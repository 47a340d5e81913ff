"""Containers: Sequential (a chain of modules) and ModuleList (a list of modules)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from minifw.nn.module import Module


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
