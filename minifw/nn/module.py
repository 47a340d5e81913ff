"""`Module` and `Parameter`: the tree that networks are built from, as in PyTorch.

Assigning a Parameter or a Module to an attribute of a Module registers it, in
assignment order, so `parameters()` and `modules()` can walk the whole tree with
dotted names like "layer1.weight". The class has three sections: the tree itself,
its state (buffers, gradients, `state_dict()` with PyTorch's key names and reports,
dtype and device moves) and its hooks (forward-pre, forward and full-backward).
A module's state works on any value with a tensor's methods (`detach`, `to`,
`copy_`, `shape`), so this file imports no tensor code.

Calling a module runs `_call_with_hooks`: pre-hooks (may replace the inputs),
`forward`, forward hooks (may replace the output). Full-backward hooks see the
gradients of the module's tensor inputs and outputs: those pass through identity
views whose tensor hooks (`Tensor.register_hook`) collect the gradients, so the
module's own share of each input gradient is reported, as in PyTorch.
"""

from __future__ import annotations

import itertools
from abc import ABCMeta
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from minifw.core.autodiff import no_grad
from minifw.core.device import as_device, is_device_like
from minifw.tensor.functions import is_tensor

_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by `register_*_hook`; `remove()` unregisters the hook (again is harmless)."""

    def __init__(self, registry: dict[int, Any]) -> None:
        self._registry = registry
        self.id = next(_handle_ids)

    def remove(self) -> None:
        """Unregister the hook."""
        self._registry.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _add(registry: dict[int, Any], hook: Callable[..., Any]) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"a hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(registry)
    registry[handle.id] = hook
    return handle


def _needs_grad(value: Any) -> bool:
    return bool(getattr(value, "requires_grad", False)) and hasattr(value, "register_hook")


def _alias(value: Any) -> Any:
    """An identity view of a tensor: a graph node of its own to hang a hook on."""
    return value.view(*value.shape)


class _BackwardCall:
    """Collects one call's gradients and runs the module's backward hooks once."""

    def __init__(self, module: Module, n_inputs: int, waiting: int) -> None:
        self.module, self.waiting, self.tapped = module, waiting, waiting
        self.grad_input: list[Any] = [None] * n_inputs
        self.grad_output: list[Any] = []

    def output_hook(self, index: int) -> Callable[[Any], None]:
        def hook(grad: Any) -> None:
            self.grad_output[index] = grad
            if self.tapped == 0 and index == len(self.grad_output) - 1:
                self.fire()

        return hook

    def input_hook(self, index: int) -> Callable[[Any], Any]:
        def hook(grad: Any) -> Any:
            self.grad_input[index] = grad
            self.waiting -= 1
            return self.fire()[index] if self.waiting == 0 else None

        return hook

    def fire(self) -> tuple[Any, ...]:
        """Call each backward hook; a hook may return a replacement grad_input tuple."""
        grad_input = tuple(self.grad_input)
        for hook in list(self.module._backward_hooks.values()):
            result = hook(self.module, grad_input, tuple(self.grad_output))
            if result is None:
                continue
            result = tuple(result)
            if len(result) != len(grad_input):
                raise RuntimeError(
                    f"backward hook returned {len(result)} gradients for {len(grad_input)} inputs"
                )
            if self.tapped > 1:
                raise RuntimeError(
                    "a full backward hook may replace grad_input only for a module with at "
                    f"most one input that requires grad ({type(self.module).__name__} has "
                    f"{self.tapped})"
                )
            grad_input = result
        return grad_input


class IncompatibleKeys(NamedTuple):
    """The keys `load_state_dict` did not find, and the keys it did not expect."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _is_device(arg: Any) -> bool:
    """True for a device string ("cpu", "cuda:0") or an `mf.device`."""
    return is_device_like(arg)


def _shape(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else None


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


class Module:
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

    # ---- The tree: Task 0.4 walks it ------------------------------------------------------
    # __setattr__ above files each Parameter in `_parameters` and each Module in `_modules`
    # (dicts keep assignment order). The walks below read only those dicts.

    # BEGIN TASK 0.4
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Yield (name, module) for each direct submodule, in assignment order, once each.

        Skip entries set to None; a module assigned under two names is listed under
        its first name only.
        """
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """Yield (dotted name, module) for this module and every descendant, once each.

        Depth first, parents before children, children in assignment order: a tree
        net(a, b(c)) gives ("", net), ("a", a), ("b", b), ("b.c", c). Names start with
        `prefix` (this module's own name is `prefix` itself).
        """
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

    def _named_members(
        self, registry: str, prefix: str = "", recurse: bool = True
    ) -> Iterator[tuple[str, Any]]:
        """Yield (dotted name, value) for the entries of one registry dict in the tree.

        `registry` names the dict attribute each module keeps ("_parameters" or
        "_buffers"). Visit the modules of `named_modules(prefix)` in order (only this
        module when `recurse` is False); name an entry "owner.name" ("name" when the
        owner's name is ""); skip None values and values already yielded.
        """
        seen: set[int] = set()
        owners = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for owner_name, owner in owners:
            for name, value in getattr(owner, registry).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{owner_name}.{name}" if owner_name else name), value

    def train(self, mode: bool = True) -> Module:
        """Set `training` to `mode` on this module and every descendant; return self.

        A `mode` that is not a bool is a ValueError.
        """
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    # END TASK 0.4

    def children(self) -> Iterator[Module]:
        """Yield each direct submodule, in assignment order."""
        for _, module in self.named_children():
            yield module

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
        yield from self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Yield every parameter of this module and below, once each."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def eval(self) -> Module:
        """Set evaluation mode (training=False) on this module and below; return self."""
        return self.train(False)

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

    # ---- State: state_dict, load_state_dict, buffers, to() ----------------------------------

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
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

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[
        tuple[str, Any]
    ]:  # fmt: skip
        """Yield (dotted name, buffer) for the buffers of this module (and below), once each."""
        yield from self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        """Yield every buffer of this module (and below)."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (None, or zeros with `set_to_none=False`)."""
        for param in self.parameters():
            value = param.value
            if set_to_none or getattr(value, "grad", None) is None:
                if hasattr(value, "grad"):
                    value.grad = None
            else:
                with no_grad():
                    value.grad.zero_()

    def _state_items(self, prefix: str) -> Iterator[tuple[str, Any, Any]]:
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

    def state_dict(self, prefix: str = "", keep_vars: bool = False) -> dict[str, Any]:
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
            if is_tensor(current) and not is_tensor(new):
                errors.append(
                    f'While copying the parameter named "{key}", expected a Tensor from '
                    f"checkpoint but received {type(new).__name__}."
                )
            elif _shape(new) != _shape(current):
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

    def to(self, *args: Any, **kwargs: Any) -> Module:
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

    def _apply_to_values(self, convert: Callable[[Any], Any]) -> Module:
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

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64."""
        return self.to("float64")

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self.to("float32")

    def cpu(self) -> Module:
        """Move parameters and buffers to the CPU."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        """Move parameters and buffers to the GPU (`device`: an optional GPU index)."""
        if device is not None and as_device(device).type != "cuda":
            raise RuntimeError(f"Invalid device, must be cuda device (got {device})")
        return self.to("cuda")

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every submodule (children first) and then on self; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ---- Hooks: forward, forward-pre and full-backward hooks --------------------------------

    def register_forward_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Run `hook(module, args)` before forward; a non-None result replaces args."""
        return _add(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Run `hook(module, args, output)` after forward; a non-None result replaces output."""
        return _add(self._forward_hooks, hook)

    def register_full_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Run `hook(module, grad_input, grad_output)` once the inputs' gradients are known.

        grad_input holds the gradient of each positional input (None for inputs that
        need none); a non-None result replaces it.
        """
        return _add(self._backward_hooks, hook)

    def _call_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        """Pre-hooks, forward (with backward-hook taps if any), then forward hooks."""
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        call = None
        if self._backward_hooks:
            waiting = sum(1 for a in args if _needs_grad(a))
            call = _BackwardCall(self, len(args), waiting)
            args = tuple(_alias(a) if _needs_grad(a) else a for a in args)
            for i, a in enumerate(args):
                if _needs_grad(a):
                    a.register_hook(call.input_hook(i))
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        if call is not None:
            output = self._tap_outputs(output, call)
        return output

    def _tap_outputs(self, output: Any, call: _BackwardCall) -> Any:
        """Output tensors replaced by identity views whose hooks record grad_output."""
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        call.grad_output = [None] * len(outputs)
        tapped = []
        for i, out in enumerate(outputs):
            if _needs_grad(out):
                out = _alias(out)
                out.register_hook(call.output_hook(i))
            tapped.append(out)
        return tapped[0] if single else tuple(tapped)


__all__ = ["IncompatibleKeys", "Module", "Parameter", "RemovableHandle"]


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
