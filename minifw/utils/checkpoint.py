"""Activation checkpointing: trade compute for memory, as `torch.utils.checkpoint`.

`checkpoint(fn, *args)` runs `fn` without recording a graph, so none of its
intermediate values are kept. In backward it runs `fn` again, this time recording,
on detached copies of the inputs, backpropagates the incoming gradient through
that fresh graph and hands the inputs' gradients on. Parameters used inside `fn`
receive their gradients from that inner backward. The random generator's state is
restored for the second run, so dropout draws the same mask twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minifw.core.autodiff import enable_grad
from minifw.core.random import generator
from minifw.nn.module import Module
from minifw.tensor.functions import Function, FunctionCtx
from minifw.tensor.tensor import Tensor


class CheckpointFunction(Function):
    """Forward without a graph; backward recomputes `fn` with one and backpropagates."""

    once_differentiable = True  # its backward runs a backward pass of its own

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, fn: Callable[..., Tensor], n_args: int, *args: Any
    ) -> Tensor:
        """fn(*args) under no_grad, remembering the inputs and the random state."""
        ctx.fn, ctx.rng_state = fn, generator().bit_generator.state
        ctx.save_for_backward(*args[:n_args])
        out = fn(*args[:n_args])
        if not isinstance(out, Tensor):
            raise TypeError(f"checkpoint: fn must return one Tensor, got {type(out).__name__}")
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Any, ...]:
        """Recompute fn(*inputs) with a graph and backpropagate `grad` through it."""
        saved = ctx.saved_tensors
        inputs = [
            x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x
            for x in saved
        ]
        state_now = generator().bit_generator.state
        generator().bit_generator.state = ctx.rng_state
        try:
            with enable_grad():
                out = ctx.fn(*inputs)
                if out.requires_grad:
                    out.backward(grad)
        finally:
            generator().bit_generator.state = state_now
        grads = [x.grad if isinstance(x, Tensor) else None for x in inputs]
        extra = len(ctx.needs_input_grad) - 2 - len(inputs)
        return (None, None, *grads, *([None] * extra))


def checkpoint(function: Callable[..., Tensor], *args: Any) -> Tensor:
    """`function(*args)`, with its activations recomputed in backward instead of stored.

    Gradients equal those of the plain call. When `function` is a Module, its
    parameters count as inputs, so the result needs a gradient even if no argument does.
    """
    params: list[Tensor] = []
    if isinstance(function, Module):
        params = [p.value for p in function.parameters() if isinstance(p.value, Tensor)]
    out: Tensor = CheckpointFunction.apply(function, len(args), *args, *params)
    return out


__all__ = ["checkpoint"]
