"""Pooling with PyTorch's full signatures: 1-D and 2-D, ceil_mode, dilation, adaptive sizes.

The course's `max_pool2d` / `avg_pool2d` (conv.py, Task 4.3) cover the plain case and
are what these functions call for it. The other cases take the same route, windows as
dims (`unfold`), after two adjustments: `ceil_mode` adds cells of the fill value past
the end so the last partial window exists, and a dilated window is a window of the
dilated extent with every `dilation`-th cell taken (a strided view of the kernel dims).
An average divides by a count of cells per window computed from the window bounds.
Adaptive pooling splits each dim into `out` windows [floor(i*n/out), ceil((i+1)*n/out)):
the average is then a product with a (n, out) averaging matrix along each dim, and the
max a max over each window along one dim after the other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from minifw.backends import fast_path
from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.tensor_data import TensorData
from minifw.nn import conv
from minifw.nn.conv import IntOrTuple, _tuple, unfold
from minifw.nn.padding import along, pad
from minifw.tensor import kernel_api
from minifw.tensor.creation import cat
from minifw.tensor.functions import Adjoint, Function, FunctionCtx
from minifw.tensor.tensor import Tensor, tensor

_NAMES = {1: "1d", 2: "2d"}


def _batched(name: str, x: Tensor, nd: int) -> tuple[Tensor, bool]:
    """`x` with a batch dim, and whether it had one; PyTorch's error for other ranks."""
    if x.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{name}: Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input, but got "
            f"input of shape {tuple(x.shape)}"
        )
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: not implemented for input of dtype {x.dtype}")
    return (x, True) if x.dim() == nd + 2 else (x.unsqueeze(0), False)


def _out_size(name: str, n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """PyTorch's pooling output size along one dim."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= n + p:  # the last window must start inside the input
        out -= 1
    if out < 1:
        raise RuntimeError(
            f"{name}: Given input size {n} (kernel {k}, stride {s}, padding {p}, dilation "
            f"{d}), the calculated output size {out} is too small"
        )
    return out


class _Windows:
    """The checked settings of one pooling call and its (N, C, *kernel, *out) windows."""

    def __init__(
        self, name: str, x: Tensor, nd: int, kernel: Any, stride: Any, padding: Any,
        dilation: Any, ceil_mode: bool,
    ) -> None:  # fmt: skip
        self.kernel = _tuple(kernel, nd, "kernel_size")
        self.stride = (
            self.kernel if stride is None or stride == [] else _tuple(stride, nd, "stride")
        )
        self.padding = _tuple(padding, nd, "padding")
        self.dilation = _tuple(dilation, nd, "dilation")
        settings = zip(self.kernel, self.stride, self.padding, self.dilation, strict=True)
        for k, s, p, d in settings:
            if min(k, s, d) < 1:
                raise RuntimeError(f"{name}: kernel, stride and dilation must be positive")
            if 2 * p > d * (k - 1) + 1:
                raise RuntimeError(
                    f"{name}: pad should be at most half of effective kernel size, but got "
                    f"pad={self.padding}, kernel_size={self.kernel} and dilation={self.dilation}"
                )
        self.sizes = x.shape[2:]
        self.out = tuple(
            _out_size(name, n, k, s, p, d, ceil_mode)
            for n, (k, s, p, d) in zip(self.sizes, self._per_dim(), strict=True)
        )

    def _per_dim(self) -> list[tuple[int, int, int, int]]:
        """(kernel, stride, padding, dilation) of each spatial dim."""
        return list(zip(self.kernel, self.stride, self.padding, self.dilation, strict=True))

    def of(self, x: Tensor, fill: float) -> Tensor:
        """The windows of `x`, padded with `fill`, kernel dims first: (N, C, *k, *out)."""
        nd = len(self.kernel)
        extents = [d * (k - 1) + 1 for k, d in zip(self.kernel, self.dilation, strict=True)]
        settings = zip(self.sizes, self.out, self.stride, self.padding, extents, strict=True)
        extra = [max(0, (o - 1) * s + e - (n + 2 * p)) for n, o, s, p, e in settings]
        pads: list[int] = []
        for p, more in zip(reversed(self.padding), reversed(extra), strict=True):
            pads += [p, p + more]
        padded = pad(x, pads, value=fill) if any(pads) else x
        cols = unfold(padded, tuple(extents), self.stride, (0,) * nd, fill)
        for i, d in enumerate(self.dilation):
            if d > 1:
                cols = along(cols, 2 + i, 0, extents[i], d)
        return cols

    def counts(self, include_pad: bool) -> np.ndarray:
        """Cells each window averages over: inside the padded input or the input alone."""
        total = np.ones(self.out)
        for i, (n, o, k, s, p) in enumerate(
            zip(self.sizes, self.out, self.kernel, self.stride, self.padding, strict=True)
        ):
            start = np.arange(o) * s - p
            stop = np.minimum(start + k, n + p)
            if not include_pad:
                start, stop = np.maximum(start, 0), np.minimum(stop, n)
            shape = [1] * len(self.out)
            shape[i] = o
            total = total * (stop - start).reshape(shape)
        return total


def _flat_kernel(cols: Tensor, nd: int) -> Tensor:
    """(N, C, *k, *out) windows with the kernel dims merged into one: (N, C, K, *out)."""
    shape = cols.shape
    return cols.reshape(shape[0], shape[1], -1, *shape[2 + nd :])


def _plain(kernel: Any, stride: Any, dilation: Any, ceil_mode: bool) -> bool:
    return dilation in (1, (1, 1), [1, 1]) and not ceil_mode and stride != []


def max_pool(
    nd: int, input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,  # noqa: A002
    padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:  # fmt: skip
    """The max of each window of an (N, C, *spatial) or (C, *spatial) input, nd = 1 or 2."""
    name = f"max_pool{_NAMES[nd]}"
    if return_indices:
        raise NotImplementedError(f"{name}: return_indices=True (for MaxUnpool) is not supported")
    if nd == 2 and _plain(kernel_size, stride, dilation, ceil_mode):
        fused = _fused_max_pool_args(input, kernel_size, stride, padding)
        if fused is not None:
            return FusedMaxPool2d.apply(input, *fused)  # type: ignore[no-any-return]
        return conv.max_pool2d(input, kernel_size, stride, padding)
    x, batched = _batched(name, input, nd)
    windows = _Windows(name, x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    cols = _flat_kernel(windows.of(x, -math.inf), nd)
    out: Tensor = cols.max(2).values if cols.requires_grad else cols.amax(2)  # as max_pool2d
    return out if batched else out.squeeze(0)


# 2-D max pooling in one kernel each way (fast_paths/fused_pool.py) is an expert fast
# path, reached through `fast_path("fused_pool")`: student repositories have no
# minifw/fast_paths/, and there conv.max_pool2d runs.

# Inputs up to this many cells take the serial fused kernels (the digits net's first
# pooling, 32768 cells: 57 us forward, against about 180 us for the six launches of the
# task's path in a compiled step); bigger ones the task's parallel launches.
FUSED_POOL_CELLS = 1 << 19


def _fused_max_pool_args(
    x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None, padding: IntOrTuple
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(kernel, stride) when `FusedMaxPool2d` computes this max_pool2d, else None.

    That is a batched float input on the fast backend, windows that do not overlap and
    no padding (the task's path raises for bad arguments).
    """
    if fast_path("fused_pool") is None or x.dim() != 4 or x.backend.name != "fast":
        return None
    if not x.dtype.is_floating_point or not 0 < kernel_api.cells(x).size <= FUSED_POOL_CELLS:
        return None
    kernel = _tuple(kernel_size, 2, "kernel_size")
    strides = kernel if stride is None else _tuple(stride, 2, "stride")
    if any(_tuple(padding, 2, "padding")) or any(
        s < k for s, k in zip(strides, kernel, strict=True)
    ):
        return None
    if any(k < 1 or k > size for k, size in zip(kernel, x.shape[2:], strict=True)):
        return None
    return kernel, strides  # type: ignore[return-value]


class FusedMaxPool2d(Function):
    """max_pool2d over windows that neither overlap nor cross padding, one kernel each way.

    The forward writes [values | where each window's max is] in one array (`stats`),
    which the backward reads; both are fused launches `mf.compile` records as steps.
    """

    node_name = "MaxPool2DWithIndices"
    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, x: Tensor, kernel: tuple[int, int], stride: tuple[int, int]
    ) -> Tensor:
        """The max of each window, (N, C, OH, OW)."""
        n, c, h, w = x.shape
        oh, ow = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
        sizes = np.array([n, c, h, w, *kernel, oh, ow, *stride], np.int64)
        windows = n * c * oh * ow
        stats = TensorData(np.empty(2 * windows, x.dtype.numpy), (2 * windows,))

        kernels = fast_path("fused_pool")
        assert kernels is not None

        def run(stats: TensorData, x: TensorData) -> None:
            kernels.max_pool2d_forward(x.storage, x._strides, sizes, stats.storage)

        hooks.launch_fused(
            x.backend, "fused[max_pool2d]", (stats,), (kernel_api.cells(x),), run, (ops.MAX,)
        )
        ctx.stats, ctx.sizes, ctx.shape = kernel_api.wrap(stats, x), sizes, x.shape
        ctx.kernel, ctx.stride = kernel, stride
        return kernel_api.wrap(TensorData(stats.base, (n, c, oh, ow)), x)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Each window's gradient at its max's cell, zeros elsewhere: one fused kernel.

        Linear in grad; as a node (`Adjoint`), its own backward picks each max again.
        """
        cells = Adjoint.apply(grad, partial(_scatter_to_max, ctx), partial(_pick_max, ctx))
        return cells, None, None


def _scatter_to_max(ctx: FunctionCtx, grad: Tensor) -> Tensor:
    """The fused kernel: each window's gradient written at its max's cell, zeros elsewhere."""
    sizes = ctx.sizes
    out = TensorData(np.empty(math.prod(ctx.shape), grad.dtype.numpy), ctx.shape)

    kernels = fast_path("fused_pool")
    assert kernels is not None

    def run(out: TensorData, g: TensorData, stats: TensorData) -> None:
        kernels.max_pool2d_backward(g.storage, g._strides, stats.storage, sizes, out.storage)

    inputs = (kernel_api.cells(grad), kernel_api.cells(ctx.stats))
    hooks.launch_fused(grad.backend, "fused[max_pool2d_backward]", (out,), inputs, run, ())
    return kernel_api.wrap(out, grad)


def _pick_max(ctx: FunctionCtx, g: Tensor) -> Tensor:
    """The cell of `g` at each window's max (the forward's pick, on any tensor like x)."""
    n, c, h, w = ctx.shape
    (kh, kw), (sh, sw) = ctx.kernel, ctx.stride
    oh, ow, cells = (h - kh) // sh + 1, (w - kw) // sw + 1, kh * kw
    where = ctx.stats.detach()[n * c * oh * ow :].view(n, c, 1, oh, ow)
    offsets = [a * w + b for a in range(kh) for b in range(kw)]  # window cell order
    each = tensor(offsets, dtype=where.dtype, device=where.device).view(1, 1, cells, 1, 1)
    picked = (where == each).to(g.dtype)
    windows = unfold(g, ctx.kernel, ctx.stride, (0, 0)).reshape(n, c, cells, oh, ow)
    gathered: Tensor = (windows * picked).sum(2)
    return gathered


def avg_pool(
    nd: int, input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,  # noqa: A002
    padding: IntOrTuple = 0, ceil_mode: bool = False, count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:  # fmt: skip
    """The mean of each window, divided as PyTorch does (padding counted by default)."""
    name = f"avg_pool{_NAMES[nd]}"
    plain = _plain(kernel_size, stride, 1, ceil_mode)
    if nd == 2 and plain and count_include_pad and divisor_override is None:
        return conv.avg_pool2d(input, kernel_size, stride, padding)
    x, batched = _batched(name, input, nd)
    windows = _Windows(name, x, nd, kernel_size, stride, padding, 1, ceil_mode)
    sums = _flat_kernel(windows.of(x, 0.0), nd).sum(2)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError(f"{name}: divisor must be not zero")
        out = sums / divisor_override
    else:
        counts = windows.counts(count_include_pad).astype(x.dtype.numpy)
        out = sums / kernel_api.wrap(x.backend.from_numpy(counts), x)
    return out if batched else out.squeeze(0)


def _adaptive_sizes(name: str, x: Tensor, nd: int, output_size: Any) -> tuple[int, ...]:
    """The output size per spatial dim (None keeps the input's)."""
    sizes = (output_size,) * nd if isinstance(output_size, int | None) else tuple(output_size)
    if len(sizes) != nd:
        raise ValueError(f"{name}: output_size must be an int or {nd} ints, got {output_size!r}")
    out = tuple(n if o is None else int(o) for n, o in zip(x.shape[2:], sizes, strict=True))
    if min(out) < 0 or min(x.shape[2:]) < 1:
        raise RuntimeError(
            f"{name}: output size {out} and input of shape {tuple(x.shape)} need non-empty dims"
        )
    return out


def _bounds(n: int, out: int) -> list[tuple[int, int]]:
    """The [start, stop) of each adaptive window along a dim of n cells."""
    return [((i * n) // out, -((-(i + 1) * n) // out)) for i in range(out)]


def adaptive_avg_pool(nd: int, input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """The mean of each adaptive window (PyTorch's split of each dim into `output_size`)."""
    name = f"adaptive_avg_pool{_NAMES[nd]}"
    x, batched = _batched(name, input, nd)
    for i, o in enumerate(_adaptive_sizes(name, x, nd, output_size)):
        dim = 2 + i
        n = x.shape[dim]
        weights = np.zeros((n, o), dtype=x.dtype.numpy)
        for j, (start, stop) in enumerate(_bounds(n, o)):
            weights[start:stop, j] = 1.0 / (stop - start)
        matrix = kernel_api.wrap(x.backend.from_numpy(weights), x)
        x = (x.transpose(dim, -1) @ matrix).transpose(dim, -1)
    return x if batched else x.squeeze(0)


def adaptive_max_pool(
    nd: int,
    input: Tensor,  # noqa: A002
    output_size: Any,
    return_indices: bool = False,
) -> Tensor:
    """The max of each adaptive window, one dim after the other."""
    name = f"adaptive_max_pool{_NAMES[nd]}"
    if return_indices:
        raise NotImplementedError(f"{name}: return_indices=True is not supported")
    x, batched = _batched(name, input, nd)
    for i, o in enumerate(_adaptive_sizes(name, x, nd, output_size)):
        dim = 2 + i
        parts = [
            along(x, dim, start, stop).max(dim, keepdim=True).values
            for start, stop in _bounds(x.shape[dim], o)
        ]
        x = cat(parts, dim)
    return x if batched else x.squeeze(0)


# The functional names, as torch.nn.functional spells them.
def max_pool1d(input: Tensor, kernel_size: IntOrTuple, *args: Any, **kw: Any) -> Tensor:  # noqa: A002
    """Max pooling over (N, C, L) or (C, L); PyTorch's arguments."""
    return max_pool(1, input, kernel_size, *args, **kw)


def max_pool2d(input: Tensor, kernel_size: IntOrTuple, *args: Any, **kw: Any) -> Tensor:  # noqa: A002
    """Max pooling over (N, C, H, W) or (C, H, W); PyTorch's arguments."""
    return max_pool(2, input, kernel_size, *args, **kw)


def avg_pool1d(input: Tensor, kernel_size: IntOrTuple, *args: Any, **kw: Any) -> Tensor:  # noqa: A002
    """Average pooling over (N, C, L) or (C, L); PyTorch's arguments."""
    return avg_pool(1, input, kernel_size, *args, **kw)


def avg_pool2d(input: Tensor, kernel_size: IntOrTuple, *args: Any, **kw: Any) -> Tensor:  # noqa: A002
    """Average pooling over (N, C, H, W) or (C, H, W); PyTorch's arguments."""
    return avg_pool(2, input, kernel_size, *args, **kw)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """Average pooling to a fixed output length."""
    return adaptive_avg_pool(1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """Average pooling to a fixed (H, W) output (an int means square; None keeps a dim)."""
    return adaptive_avg_pool(2, input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Tensor:  # noqa: A002
    """Max pooling to a fixed output length."""
    return adaptive_max_pool(1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Tensor:  # noqa: A002
    """Max pooling to a fixed (H, W) output."""
    return adaptive_max_pool(2, input, output_size, return_indices)


POOLS: Sequence[str] = (
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d",
)  # fmt: skip
__all__ = [*POOLS, "adaptive_avg_pool", "adaptive_max_pool", "avg_pool", "max_pool"]
