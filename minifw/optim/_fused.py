"""Updates in one kernel: SGD's `p -= lr * g` and one Adam step, on the CPU.

The fused update kernels are an expert fast path (`fast_paths/fused_update.py`),
reached through `fast_ops.fast_path`: student repositories have no minifw/fast_paths/,
and there an update takes one launch per operation. Each fused launch reads a cell of
every operand before writing it and rounds as the unfused launches do, so both give
the same bits. The profiler sees a fused launch as one "fused" launch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minifw.backends import fast_path
from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.hooks import Launch, anyone_listening
from minifw.core.tensor_data import TensorData
from minifw.tensor.kernel_api import bump_version, cells, scalar
from minifw.tensor.tensor import Tensor
from minifw.tensor_ops import unsafe_overlap

# What `fused_update.adam_step` evaluates per cell, in order (for the profiler's counts).
ADAM_OPS = (ops.SUB, ops.MUL, ops.ADD, ops.MUL, ops.MUL, ops.MUL, ops.ADD, ops.SQRT, ops.DIV,
            ops.ADD, ops.DIV, ops.MUL, ops.SUB)  # fmt: skip


def sub_scaled(param: Tensor, grad: Tensor, lr: float) -> None:
    """Subtract grad * lr from param in place (under no_grad), rounding as `sub_` does.

    When both are float tensors of one dtype, backend and shape, this goes straight to
    the backend (no autograd bookkeeping): on the CPU, with both contiguous and apart,
    one fused kernel reads grad and param and writes param (as `mf.compile` would fuse
    it); otherwise two launches, grad * lr, then param - that written into param. A
    capture (mf.compile) gets the two launches: it records them and fuses them itself.
    """
    if not alike(param, (grad,)):
        param.sub_(grad * lr)
        return
    p, g = cells(param), cells(grad)
    kernels = fast_path("fused_update")
    if kernels is not None and fusable(param, (grad,)) and not unsafe_overlap(p, g):
        _fused_sub_scaled(kernels.update_in_place, param, grad, lr)  # reads before writing
    else:
        backend = param.backend
        scaled = backend.zip(ops.MUL, g, cells(scalar(grad, lr)))
        backend.zip(ops.SUB, p, scaled, out=p)
    bump_version(param)


def alike(param: Tensor, others: tuple[Tensor, ...]) -> bool:
    """True when `param` is a float tensor and `others` have its dtype, backend and shape."""
    dtype = param.dtype
    return dtype.is_floating_point and all(
        t.dtype is dtype and t.backend is param.backend and t.shape == param.shape for t in others
    )


def fusable(param: Tensor, others: tuple[Tensor, ...]) -> bool:
    """True when a fused update kernel may update `param` from `others` (gradient, state).

    Eager on the CPU (a capture records one launch per operation and fuses them itself),
    with every tensor alike (`alike`) and contiguous: the kernels walk flat cells.
    """
    return (
        param.backend.device == "cpu"
        and not (anyone_listening[0] and hooks.recording())
        and alike(param, others)
        and cells(param).is_contiguous()
        and all(cells(t).is_contiguous() for t in others)
    )


def _flat(data: TensorData) -> np.ndarray:
    """The cells of a contiguous CPU tensor as a flat array (no copy)."""
    return data.storage[: data.size]  # type: ignore[no-any-return]


def _apart(datas: tuple[TensorData, ...]) -> bool:
    """True when no two of `datas` may share memory."""
    bases = [data.base for data in datas]
    return not any(
        np.may_share_memory(bases[i], bases[j])
        for i in range(len(bases))
        for j in range(i + 1, len(bases))
    )


def _fused_sub_scaled(update: Any, param: Tensor, grad: Tensor, lr: float) -> None:
    """Param -= grad * lr as one kernel on contiguous CPU cells, seen by the profiler."""
    p, g = cells(param), cells(grad)
    rate = np.full(1, lr, p.base.dtype)
    flat_p, flat_g = _flat(p), _flat(g)
    if not anyone_listening[0]:
        update(flat_p, flat_g, rate)
        return
    launch = Launch(
        param.backend, "fused", -1, (p,), (g, TensorData(rate, ()), p),
        name="fused[mul,sub]", fused_ops=(ops.MUL, ops.SUB),
        runner=lambda: update(flat_p, flat_g, rate),
    )  # fmt: skip
    hooks.launch(launch)


def adam_kernel(param: Tensor, grad: Tensor, m: Tensor, v: Tensor) -> Any:
    """The fused Adam kernel when it may update `param` and its moments, else None.

    It may on the CPU, eager, with the four tensors alike, contiguous and apart.
    """
    kernels = fast_path("fused_update")
    if kernels is None or not fusable(param, (grad, m, v)):
        return None
    if not _apart((cells(param), cells(grad), cells(m), cells(v))):
        return None
    return kernels.adam_in_place


def fused_adam_step(
    update: Any, param: Tensor, grad: Tensor, m: Tensor, v: Tensor, hyper: tuple[float, ...]
) -> None:
    """One Adam step of `param` by the kernel `update` (`adam_kernel`), seen by the profiler.

    `hyper` holds `fused_update.ADAM_HYPER`'s values, rounded to param's dtype here as
    the unfused launches round their scalars.
    """
    datas = (cells(param), cells(grad), cells(m), cells(v))
    scalars = np.array(hyper, datas[0].base.dtype)
    flat = [_flat(data) for data in datas]
    if not anyone_listening[0]:
        update(*flat, scalars)
    else:
        launch = Launch(
            param.backend, "fused", -1, (datas[0], datas[2], datas[3]),
            (*datas, TensorData(scalars, (len(hyper),))), name="fused[adam]",
            fused_ops=ADAM_OPS, runner=lambda: update(*flat, scalars),
        )  # fmt: skip
        hooks.launch(launch)
    for tensor in (param, m, v):
        bump_version(tensor)


__all__ = ["ADAM_OPS", "adam_kernel", "alike", "fusable", "fused_adam_step", "sub_scaled"]
