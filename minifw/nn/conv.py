"""Convolution and pooling as unfold + matmul / reduce (im2col), for any backend.

`Unfold` turns the sliding windows of an (N, C, *spatial) input into new dims:
(N, C, *kernel, *out). It is one strided *view* of the (padded) input, with
strides `(sN, sC, *s_spatial, *(s_spatial * stride))`, followed by one contiguous
copy. Convolution is then one batched matmul of the weight (OC, C * prod(kernel))
with the windows (N, C * prod(kernel), prod(out)); pooling is a max or mean over
the kernel dims. The backward of Unfold is "fold": each kernel offset's slice of
the gradient is added back into the strided slice of the input it came from.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from minifw._jit import PARALLEL_FROM
from minifw.backends import fast_path
from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.hooks import anyone_listening
from minifw.core.tensor_data import TensorData
from minifw.tensor.functions import Adjoint, Function, FunctionCtx
from minifw.tensor.kernel_api import cells, wrap, zeros
from minifw.tensor.tensor import Tensor
from minifw.tensor_ops import TensorBackend

IntOrTuple = int | Sequence[int]


def _tuple(value: IntOrTuple, n: int, name: str) -> tuple[int, ...]:
    """`value` repeated to n ints (or checked to have n entries)."""
    items = (value,) * n if isinstance(value, int) else tuple(int(v) for v in value)
    if len(items) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value!r}")
    return items


def _inner(padded: TensorData, shape: tuple[int, ...], padding: tuple[int, ...]) -> TensorData:
    """The view of `padded` without its padding: the cells of the original `shape`."""
    for d, p in enumerate(padding):
        padded = padded.narrow(2 + d, slice(p, p + shape[2 + d]))
    return padded


def _padded(
    x: TensorData, backend: TensorBackend, padding: tuple[int, ...], fill: float
) -> TensorData:
    """Return x with `padding` cells of `fill` around each spatial dim (x itself if none)."""
    if not any(padding):
        return x
    shape = x.shape[:2] + tuple(s + 2 * p for s, p in zip(x.shape[2:], padding, strict=True))
    out = backend.full(shape, fill, x.base.dtype)
    if anyone_listening[0]:  # made without a launch: tell mf.compile's capture
        hooks.fresh(out, backend, fill)
    backend.copy_into(_inner(out, x.shape, padding), x)
    return out


def _out_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Number of window positions along one spatial dim."""
    return (size + 2 * padding - kernel) // stride + 1


# BEGIN TASK 4.1


def _windows(
    x: TensorData, kernel: tuple[int, ...], stride: tuple[int, ...], out: tuple[int, ...]
) -> TensorData:
    """The strided view (N, C, *kernel, *out) of x: cell (n, c, *k, *o) is x[n, c, *(o*s + k)].

    Write: no copy, only new strides over x's storage. Moving one step along a kernel dim
    moves one cell of x along that spatial dim; one step along an output dim moves
    `stride` cells.
    """
    spatial = x.strides[2:]
    strides = (
        x.strides[:2] + spatial + tuple(st * s for st, s in zip(spatial, stride, strict=True))
    )
    return TensorData(x.base, x.shape[:2] + kernel + out, strides, x.offset)


class Unfold(Function):
    """Sliding windows as dims: (N, C, *S) -> (N, C, *kernel, *out), a contiguous copy."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx,
        x: Tensor,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        fill: float,
    ) -> Tensor:
        """Pad with `fill`, view the windows with strides, copy them contiguously.

        Write: the output size along each spatial dim is `_out_size(...)`; `_padded`
        gives the padded input and `_windows` its window view; return a contiguous copy.
        Keep in `ctx` what backward needs (input shape, kernel, stride, padding).
        """
        out = tuple(
            _out_size(s, k, st, p)
            for s, k, st, p in zip(x.shape[2:], kernel, stride, padding, strict=True)
        )
        ctx.shape, ctx.kernel, ctx.stride, ctx.padding = x.shape, kernel, stride, padding
        padded = _padded(cells(x), x.backend, padding, fill)
        return wrap(x.backend.contiguous(_windows(padded, kernel, stride, out)), x)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None, None]:
        """Fold: add each kernel offset's gradient slice into the input cells it read.

        for each kernel offset k (prod(kernel) strided launches):
            grad_x_padded[:, :, k + stride * o] += grad[:, :, k, o]   for every window o
        Windows overlap only when stride < kernel; otherwise no two windows share a cell,
        and one copy of grad into the window view of grad_x_padded (`_windows`) does it.
        """
        kernel, stride, padding = ctx.kernel, ctx.stride, ctx.padding
        nd = len(kernel)
        out = grad.shape[2 + nd :]
        padded_shape = ctx.shape[:2] + tuple(
            s + 2 * p for s, p in zip(ctx.shape[2:], padding, strict=True)
        )
        total = zeros(grad, padded_shape)
        backend = grad.backend
        if all(s >= k for s, k in zip(stride, kernel, strict=True)):
            # No two windows share a cell: one copy into the window view of total.
            backend.copy_into(_windows(cells(total), kernel, stride, out), cells(grad))
        else:
            for offset in itertools.product(*(range(k) for k in kernel)):
                target = cells(total)
                part = cells(grad)
                for d in range(nd):
                    stop = offset[d] + stride[d] * (out[d] - 1) + 1
                    target = target.narrow(2 + d, slice(offset[d], stop, stride[d]))
                    part = part.select(2, offset[d])
                backend.zip(ops.ADD, target, part, out=target)  # in place
        if any(padding):
            total = wrap(backend.contiguous(_inner(cells(total), ctx.shape, padding)), total)
        return total, None, None, None, None


# END TASK 4.1


# The fold in one kernel (fast_paths/fused_fold.py) is an expert fast path outside the
# task, reached through `fast_path("fused_fold")`: student repositories have no
# minifw/fast_paths/, and there the task's fold runs.

_task_fold = Unfold.backward


def _fold(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None, None]:
    """Unfold's backward: one kernel where `_fused_fold_fits`, else the task's fold."""
    if not _fused_fold_fits(ctx, grad):
        return _task_fold(ctx, grad)  # type: ignore[no-any-return]
    sizes = np.array(
        [*ctx.shape, *ctx.kernel, *grad.shape[4:], *ctx.stride, *ctx.padding], np.int64
    )
    out = TensorData(np.empty(math.prod(ctx.shape), grad.dtype.numpy), ctx.shape)

    kernels = fast_path("fused_fold")
    assert kernels is not None

    def run(out: TensorData, g: TensorData) -> None:
        kernels.fold2d(g.storage, g._strides, out.storage, sizes)

    hooks.launch_fused(grad.backend, "fused[fold]", (out,), (cells(grad),), run, ())
    return wrap(out, grad), None, None, None, None


def _fused_fold_fits(ctx: FunctionCtx, grad: Tensor) -> bool:
    """True for a 2-D fold on the fast backend whose windows overlap, under PARALLEL_FROM."""
    return (
        fast_path("fused_fold") is not None
        and len(ctx.kernel) == 2
        and grad.backend.name == "fast"
        and grad.dtype.is_floating_point
        and any(s < k for s, k in zip(ctx.stride, ctx.kernel, strict=True))
        and 0 < math.prod(ctx.shape) < PARALLEL_FROM
    )


def _unfold_backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None, None]:
    """Unfold's backward: the fold, as a node (`Adjoint`) whose own backward unfolds again.

    The fold is linear in grad; recorded under create_graph, its gradient is the unfold.
    """

    def fold(g: Tensor) -> Tensor:
        return _fold(ctx, g)[0]

    def again(g: Tensor) -> Tensor:
        return Unfold.apply(g, ctx.kernel, ctx.stride, ctx.padding, 0.0)

    return Adjoint.apply(grad, fold, again), None, None, None, None


Unfold.backward = staticmethod(_unfold_backward)  # type: ignore[method-assign]


def unfold(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    fill: float = 0.0,
) -> Tensor:
    """The windows of `input` (N, C, *S) as a tensor (N, C, *kernel_size, *out)."""
    nd = len(kernel_size)
    if input.dim() != 2 + nd or len(stride) != nd or len(padding) != nd:
        raise RuntimeError(
            f"unfold: expected a {2 + nd}-D input (N, C, ...) and {nd} strides and paddings, "
            f"got input {tuple(input.shape)}, stride {stride}, padding {padding}"
        )
    for s, k, st, p in zip(input.shape[2:], kernel_size, stride, padding, strict=True):
        if st < 1 or p < 0 or k < 1:
            raise RuntimeError(
                f"non-positive stride {stride}, negative padding {padding} or empty kernel "
                f"{kernel_size} is not supported"
            )
        if _out_size(s, k, st, p) < 1:
            raise RuntimeError(
                f"Calculated padded input size per channel: {s + 2 * p}. Kernel size: {k}. "
                f"Kernel size can't be greater than actual input size (input shape "
                f"{tuple(input.shape)}, kernel {kernel_size}, padding {padding})"
            )
    return Unfold.apply(input, kernel_size, stride, padding, fill)  # type: ignore[no-any-return]


def _conv_args(
    name: str,
    source: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: IntOrTuple,
    padding: IntOrTuple,
    nd: int,
) -> tuple[Tensor, bool, tuple[int, ...], tuple[int, ...]]:
    """Checked conv arguments: the input with a batch dim, whether it had one, strides, pads."""
    if weight.dim() != nd + 2 or source.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input and a "
            f"{nd + 2}-D weight, got input {tuple(source.shape)} and weight {tuple(weight.shape)}"
        )
    batched = source.dim() == nd + 2
    x = source if batched else source.unsqueeze(0)
    oc, c = weight.shape[:2]
    if x.shape[1] != c:
        raise RuntimeError(
            f"{name}: Given groups=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {c} channels, but got {x.shape[1]} channels instead"
        )
    if x.dtype is not weight.dtype or (bias is not None and bias.dtype is not weight.dtype):
        raise RuntimeError(
            f"{name}: Input type ({x.dtype}), weight type ({weight.dtype}) and bias type "
            f"({None if bias is None else bias.dtype}) should be the same"
        )
    if bias is not None and bias.shape != (oc,):
        raise RuntimeError(f"{name}: expected bias of shape ({oc},), got {tuple(bias.shape)}")
    return x, batched, _tuple(stride, nd, "stride"), _tuple(padding, nd, "padding")


# BEGIN TASK 4.1


def conv1d(
    input: Tensor,  # noqa: A002
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
) -> Tensor:
    """1-D convolution (cross-correlation) of (N, C, L) with weight (OC, C, K) -> (N, OC, L').

    out[n, o, l] = bias[o] + sum_{c, k} weight[o, c, k] * x_padded[n, c, l * stride + k],
    computed as one batched matmul of weight (OC, C*K) with the windows (N, C*K, L').

    Write: check the arguments with `_conv_args` (it also adds a batch dim to an
    unbatched (C, L) input), take the windows with `unfold`, multiply, add the bias
    per output channel, and drop the batch dim again for an unbatched input. Gradients
    come from autograd (matmul, view and Unfold's backward).
    """
    x, batched, strides, pads = _conv_args("conv1d", input, weight, bias, stride, padding, 1)
    n, c = x.shape[:2]
    oc, _, k = weight.shape
    cols = unfold(x, (k,), strides, pads)  # (N, C, K, L')
    length = cols.shape[3]
    out = weight.reshape(oc, c * k) @ cols.view(n, c * k, length)  # (N, OC, L')
    if bias is not None:
        out = out + bias.view(oc, 1)
    return out if batched else out.squeeze(0)


# END TASK 4.1

# BEGIN TASK 4.2


def conv2d(
    input: Tensor,  # noqa: A002
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
) -> Tensor:
    """2-D convolution of (N, C, H, W) with weight (OC, C, KH, KW) -> (N, OC, H', W').

    out[n, o, i, j] = bias[o] + sum_{c, a, b} weight[o, c, a, b] * x_padded[n, c, i*sh + a,
    j*sw + b], computed as one batched matmul of weight (OC, C*KH*KW) with the windows
    (N, C*KH*KW, H'*W').

    Write: as conv1d with two spatial dims: `_conv_args`, `unfold` with a (KH, KW)
    kernel, one matmul, the bias per output channel; accept an unbatched (C, H, W) input.
    """
    x, batched, strides, pads = _conv_args("conv2d", input, weight, bias, stride, padding, 2)
    n, c = x.shape[:2]
    oc, _, kh, kw = weight.shape
    cols = unfold(x, (kh, kw), strides, pads)  # (N, C, KH, KW, H', W')
    oh, ow = cols.shape[4:]
    flat = weight.reshape(oc, c * kh * kw) @ cols.view(n, c * kh * kw, oh * ow)
    out = flat.view(n, oc, oh, ow)
    if bias is not None:
        out = out + bias.view(oc, 1, 1)
    return out if batched else out.squeeze(0)


# END TASK 4.2

# BEGIN TASK 4.3


def _pool_windows(
    name: str, source: Tensor, kernel_size: Any, stride: Any, padding: Any, fill: float
) -> tuple[Tensor, bool]:
    """The 2-D windows of `source` with the kernel dims merged: (N, C, KH*KW, OH, OW).

    Write: accept a 3-D (unbatched) or 4-D floating-point input; ints become pairs;
    the stride defaults to the kernel; padding cells hold `fill`. Return the windows
    and whether the input had a batch dim.
    """
    if source.dim() not in (3, 4) or not source.dtype.is_floating_point:
        raise RuntimeError(
            f"{name}: expected a 3-D or 4-D floating-point input, got shape {tuple(source.shape)} "
            f"of dtype {source.dtype}"
        )
    batched = source.dim() == 4
    x = source if batched else source.unsqueeze(0)
    kernel = _tuple(kernel_size, 2, "kernel_size")
    strides = kernel if stride is None else _tuple(stride, 2, "stride")
    pads = _tuple(padding, 2, "padding")
    if any(2 * p > k for p, k in zip(pads, kernel, strict=True)):
        raise RuntimeError(
            f"{name}: pad should be at most half of effective kernel size, but got pad={pads}, "
            f"kernel_size={kernel}"
        )
    cols = unfold(x, kernel, strides, pads, fill)
    n, c, _, _, oh, ow = cols.shape
    return cols.view(n, c, kernel[0] * kernel[1], oh, ow), batched


def max_pool2d(
    input: Tensor,  # noqa: A002
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> Tensor:
    """The max of each window (stride defaults to the kernel); grads go to the argmax.

    Write: padding must never win, so pad with -inf; a nan in a window makes its max nan.
    """
    cols, batched = _pool_windows("max_pool2d", input, kernel_size, stride, padding, -math.inf)
    # With no gradient to route to each window's max, the values alone (no argmax).
    out: Tensor = cols.max(2).values if cols.requires_grad else cols.amax(2)
    return out if batched else out.squeeze(0)


def avg_pool2d(
    input: Tensor,  # noqa: A002
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> Tensor:
    """The mean of each window (padding counts as zeros, as PyTorch's default).

    Write: divide by the full kernel area even where the window overlaps the padding.
    """
    cols, batched = _pool_windows("avg_pool2d", input, kernel_size, stride, padding, 0.0)
    out = cols.mean(2)
    return out if batched else out.squeeze(0)


# END TASK 4.3
