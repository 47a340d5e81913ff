"""`F.conv1d` / `F.conv2d` with PyTorch's full signature: dilation, groups, "same" padding.

The course's convolutions (conv.py, Tasks 4.1-4.2) are what these call in the plain
case (dilation 1, one group, symmetric padding). The other cases use the same windows
(`unfold`) with two changes: a dilated kernel reads every `dilation`-th cell of a
window of the dilated extent (a strided view of the kernel dims), and with `groups` the
channels split into independent convolutions, one batched matmul over the group dim:
weight (G, OC/G, C/G * K) @ windows (N, G, C/G * K, L).
"""

from __future__ import annotations

import math
from typing import Any

from minifw.nn import conv
from minifw.nn.conv import _tuple, unfold
from minifw.nn.padding import along, pad
from minifw.tensor.tensor import Tensor


def _same_padding(
    x: Tensor, kernel: tuple[int, ...], dilation: tuple[int, ...], stride: tuple[int, ...]
) -> tuple[Tensor, tuple[int, ...]]:
    """`x` padded so the output keeps the input's size (stride 1), and the padding left."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pads: list[int] = []
    for k, d in zip(reversed(kernel), reversed(dilation), strict=True):
        total = d * (k - 1)
        pads += [total // 2, total - total // 2]
    if pads[::2] != pads[1::2]:  # an odd total: PyTorch pads the far side one cell more
        return pad(x, pads), (0,) * len(kernel)
    return x, tuple(reversed(pads[::2]))


def _check_groups(name: str, x: Tensor, weight: Tensor, groups: int) -> None:
    if groups < 1:
        raise RuntimeError(f"{name}: non-positive groups is not supported (got {groups})")
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"{name}: Given groups={groups}, expected weight to be divisible by {groups} at "
            f"dimension 0, but got weight of size {list(weight.shape)} instead"
        )
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"{name}: Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead"
        )


def conv_nd(
    nd: int, input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
    stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
) -> Tensor:  # fmt: skip
    """An nd-D convolution (nd = 1 or 2) with PyTorch's arguments."""
    name = f"conv{nd}d"
    dilations = _tuple(dilation, nd, "dilation")
    plain = groups == 1 and all(d == 1 for d in dilations) and not isinstance(padding, str)
    course_conv = conv.conv1d if nd == 1 else conv.conv2d
    if plain:
        return course_conv(input, weight, bias, stride, padding)
    if input.dim() not in (nd + 1, nd + 2) or weight.dim() != nd + 2:
        raise RuntimeError(
            f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input and a "
            f"{nd + 2}-D weight, got input {tuple(input.shape)} and weight {tuple(weight.shape)}"
        )
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    _check_groups(name, x, weight, groups)
    kernel, strides = tuple(weight.shape[2:]), _tuple(stride, nd, "stride")
    if padding == "same":
        x, pads = _same_padding(x, kernel, dilations, strides)
    elif padding == "valid":
        pads = (0,) * nd
    elif isinstance(padding, str):
        raise RuntimeError(f"Invalid padding string: {padding!r} (expected 'valid' or 'same')")
    else:
        pads = _tuple(padding, nd, "padding")
    out = _grouped(x, weight, kernel, strides, pads, dilations, groups)
    if bias is not None:
        out = out + bias.view(-1, *([1] * nd))
    return out if batched else out.squeeze(0)


def _grouped(
    x: Tensor, weight: Tensor, kernel: tuple[int, ...], strides: tuple[int, ...],
    pads: tuple[int, ...], dilations: tuple[int, ...], groups: int,
) -> Tensor:  # fmt: skip
    """The convolution as one matmul per group (batched over the group dim)."""
    nd = len(kernel)
    extents = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True))
    cols = unfold(x, extents, strides, pads)  # (N, C, *extent, *out)
    for i, d in enumerate(dilations):
        if d > 1:
            cols = along(cols, 2 + i, 0, extents[i], d)
    n, c = x.shape[:2]
    out_shape = cols.shape[2 + nd :]
    per_group = c // groups * math.prod(kernel)
    windows = cols.reshape(n, groups, per_group, math.prod(out_shape))
    oc = weight.shape[0]
    w = weight.reshape(groups, oc // groups, per_group)
    return (w @ windows).reshape(n, oc, *out_shape)


def conv1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
    padding: Any = 0, dilation: Any = 1, groups: int = 1,
) -> Tensor:  # fmt: skip
    """1-D convolution of (N, C, L) or (C, L) with weight (OC, C / groups, K)."""
    return conv_nd(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
    padding: Any = 0, dilation: Any = 1, groups: int = 1,
) -> Tensor:  # fmt: skip
    """2-D convolution of (N, C, H, W) or (C, H, W) with weight (OC, C / groups, KH, KW)."""
    return conv_nd(2, input, weight, bias, stride, padding, dilation, groups)


__all__ = ["conv1d", "conv2d", "conv_nd"]
