"""What a Module knows about its values: buffers, gradients, state dicts, dtype and device.

`ModuleStateMixin` is mixed into `Module`. It works on any value with a tensor's
methods (`detach`, `to`, `copy_`, `shape`), so this file imports no tensor code.
`state_dict()` uses PyTorch's key names ("layer1.weight", "bn.running_mean"), and
`load_state_dict` reports missing, unexpected and wrongly shaped keys as PyTorch does.
"""

# Mixin methods take `self: Module`; mypy cannot see that Module subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..autodiff import no_grad

if TYPE_CHECKING:
    from .module import Module


class IncompatibleKeys(NamedTuple):
    """The keys `load_state_dict` did not find, and the keys it did not expect."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _is_device(arg: Any) -> bool:
    return isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda")


def _shape(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else None


class ModuleStateMixin:
    """Buffers, zero_grad, state_dict / load_state_dict, to / double / float, apply."""

    __slots__ = ()

    def register_buffer(self: Module, name: str, tensor: Any, persistent: bool = True) -> None:
        """Register a tensor that is state but not a parameter (e.g. BatchNorm's running mean).

        Persistent buffers appear in `state_dict()`; `to()` moves all buffers.
        """
        self._check_new_name(name)
        self._forget(name)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def named_buffers(self: Module, prefix: str = "", recurse: bool = True) -> Iterator[
        tuple[str, Any]
    ]:  # fmt: skip
        """Yield (dotted name, buffer) for the buffers of this module (and below), once each."""
        seen: set[int] = set()
        owners = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for owner_name, owner in owners:
            for name, buffer in owner._buffers.items():
                if buffer is None or id(buffer) in seen:
                    continue
                seen.add(id(buffer))
                yield (f"{owner_name}.{name}" if owner_name else name), buffer

    def buffers(self: Module, recurse: bool = True) -> Iterator[Any]:
        """Yield every buffer of this module (and below)."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def zero_grad(self: Module, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (None, or zeros with `set_to_none=False`)."""
        for param in self.parameters():
            value = param.value
            if set_to_none or getattr(value, "grad", None) is None:
                if hasattr(value, "grad"):
                    value.grad = None
            else:
                with no_grad():
                    value.grad.zero_()

    def _state_items(self: Module, prefix: str) -> Iterator[tuple[str, Any, Any]]:
        """(key, owner registry, name) for every state entry, PyTorch's order."""
        for name, param in self._parameters.items():
            if param is not None:
                yield prefix + name, param, name
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                yield prefix + name, self._buffers, name
        for child_name, child in self._modules.items():
            if child is not None:
                yield from child._state_items(f"{prefix}{child_name}.")

    def state_dict(self: Module, prefix: str = "", keep_vars: bool = False) -> dict[str, Any]:
        """An ordered dict of every parameter and persistent buffer by dotted name.

        Values are detached from autograd (they share storage with the module's
        tensors) unless `keep_vars`.
        """
        out: dict[str, Any] = OrderedDict()
        for key, owner, name in self._state_items(prefix):
            value = owner.value if not isinstance(owner, dict) else owner[name]
            if not keep_vars and hasattr(value, "detach"):
                value = value.detach()
            out[key] = value
        return out

    def load_state_dict(
        self: Module, state_dict: Mapping[str, Any], strict: bool = True
    ) -> IncompatibleKeys:
        """Copy values from `state_dict` into this module's parameters and buffers.

        Shapes must match. With `strict`, missing or unexpected keys raise too;
        otherwise they are returned as `(missing_keys, unexpected_keys)`.
        """
        entries = {key: (owner, name) for key, owner, name in self._state_items("")}
        missing = [key for key in entries if key not in state_dict]
        unexpected = [key for key in state_dict if key not in entries]
        errors = []
        for key, (owner, name) in entries.items():
            if key not in state_dict:
                continue
            current = owner.value if not isinstance(owner, dict) else owner[name]
            new = state_dict[key]
            if _shape(new) != _shape(current):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {_shape(new)} from "
                    f"checkpoint, the shape in current model is {_shape(current)}."
                )
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + _quoted(unexpected) + ".")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + _quoted(missing) + ".")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        with no_grad():
            for key, (owner, name) in entries.items():
                if key in state_dict:
                    _copy_into(owner, name, state_dict[key])
        return IncompatibleKeys(missing, unexpected)

    def to(self: Module, *args: Any, **kwargs: Any) -> Module:
        """Move parameters and buffers to a device ("cpu", "cuda") and/or float dtype.

        Only floating-point values change dtype, as in PyTorch. Returns self.
        """
        given = list(args) + list(kwargs.values())
        devices = [a for a in given if _is_device(a)]
        dtypes = [a for a in given if a is not None and not _is_device(a)]

        def convert(value: Any) -> Any:
            dtype = getattr(value, "dtype", None)
            floating = getattr(dtype, "is_floating_point", False)
            targets = devices + (dtypes if floating else [])
            return value.to(*targets) if targets and hasattr(value, "to") else value

        return self._apply_to_values(convert)

    def _apply_to_values(self: Module, convert: Callable[[Any], Any]) -> Module:
        """Replace every parameter and buffer value by `convert(value)` (grads follow)."""
        for module in self.modules():
            for param in module._parameters.values():
                if param is None:
                    continue
                old = param.value
                new = convert(old)
                if new is old:
                    continue
                requires_grad = bool(getattr(old, "requires_grad", False))
                param.value = new.detach().requires_grad_(requires_grad)
                if getattr(old, "grad", None) is not None:
                    param.value.grad = convert(old.grad)
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    module._buffers[name] = convert(buffer)
        return self

    def double(self: Module) -> Module:
        """Cast floating-point parameters and buffers to float64."""
        return self.to("float64")

    def float(self: Module) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self.to("float32")

    def cpu(self: Module) -> Module:
        """Move parameters and buffers to the CPU."""
        return self.to("cpu")

    def cuda(self: Module) -> Module:
        """Move parameters and buffers to the GPU."""
        return self.to("cuda")

    def apply(self: Module, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every submodule (children first) and then on self; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self


def _quoted(keys: list[str]) -> str:
    return ", ".join(f'"{key}"' for key in keys)


def _copy_into(owner: Any, name: str, new: Any) -> None:
    """Write `new` into a parameter (in place) or a buffer slot."""
    current = owner.value if not isinstance(owner, dict) else owner[name]
    if hasattr(current, "copy_") and hasattr(new, "detach"):
        current.copy_(new.detach().to(current.device))
    elif isinstance(owner, dict):
        owner[name] = new
    else:
        owner.update(new)
