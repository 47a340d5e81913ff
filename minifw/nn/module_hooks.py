"""Module hooks: forward-pre, forward and full-backward, with removable handles.

`ModuleHooksMixin._call_with_hooks` is what calling a module runs:
pre-hooks (may replace the inputs), `forward`, forward hooks (may replace the
output). Full-backward hooks see the gradients of the module's tensor inputs and
outputs: the inputs and outputs are passed through identity views whose tensor
hooks (`Tensor.register_hook`) collect those gradients, so the module's own share of
each input gradient is reported, as in PyTorch. This file imports no tensor code.
"""

# Mixin methods take `self: Module`; mypy cannot see that Module subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .module import Module

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


class ModuleHooksMixin:
    """register_forward_pre_hook, register_forward_hook, register_full_backward_hook."""

    __slots__ = ()

    def register_forward_pre_hook(self: Module, hook: Callable[..., Any]) -> RemovableHandle:
        """Run `hook(module, args)` before forward; a non-None result replaces args."""
        return _add(self._forward_pre_hooks, hook)

    def register_forward_hook(self: Module, hook: Callable[..., Any]) -> RemovableHandle:
        """Run `hook(module, args, output)` after forward; a non-None result replaces output."""
        return _add(self._forward_hooks, hook)

    def register_full_backward_hook(self: Module, hook: Callable[..., Any]) -> RemovableHandle:
        """Run `hook(module, grad_input, grad_output)` once the inputs' gradients are known.

        grad_input holds the gradient of each positional input (None for inputs that
        need none); a non-None result replaces it.
        """
        return _add(self._backward_hooks, hook)

    def _call_with_hooks(self: Module, *args: Any, **kwargs: Any) -> Any:
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

    def _tap_outputs(self: Module, output: Any, call: _BackwardCall) -> Any:
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
