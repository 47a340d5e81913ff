"""`F.interpolate`: nearest and (bi/tri)linear resizing, one matrix product per spatial dim.

Both modes are separable: each output cell along a dim reads one input cell (nearest)
or a weighted pair of neighbours (linear), so resizing a dim of n cells to m cells is a
product with an (n, m) matrix that has one or two non-zeros per column. Gradients are
then those of a matmul; the matrices follow PyTorch's coordinate rules (half-pixel
centres unless `align_corners`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from minifw.tensor.kernel_api import wrap
from minifw.tensor.tensor import Tensor

LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _scale(n: int, m: int, factor: float | None, align_corners: bool) -> float:
    """Input cells per output cell, as PyTorch maps output coordinates to the input."""
    if align_corners:
        return (n - 1) / (m - 1) if m > 1 else 0.0
    return 1.0 / factor if factor is not None else n / m


def nearest_matrix(n: int, m: int, factor: float | None) -> np.ndarray:
    """(n, m) 0/1 matrix: output cell j copies input cell floor(j * scale)."""
    scale = _scale(n, m, factor, False)
    source = np.minimum(np.floor(np.arange(m) * scale).astype(np.int64), n - 1)
    matrix = np.zeros((n, m))
    matrix[source, np.arange(m)] = 1.0
    return matrix


def linear_matrix(n: int, m: int, factor: float | None, align_corners: bool) -> np.ndarray:
    """(n, m) matrix: output cell j mixes the two input cells around its source coordinate."""
    scale = _scale(n, m, factor, align_corners)
    j = np.arange(m)
    source = j * scale if align_corners else np.maximum((j + 0.5) * scale - 0.5, 0.0)
    low = np.minimum(np.floor(source).astype(np.int64), n - 1)
    high = np.minimum(low + 1, n - 1)
    upper = source - low
    matrix = np.zeros((n, m))
    np.add.at(matrix, (low, j), 1.0 - upper)
    np.add.at(matrix, (high, j), upper)
    return matrix


def _output_sizes(
    x: Tensor, size: Any, scale_factor: Any, nd: int
) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    """The output size per spatial dim and the scale factors to map coordinates with."""
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = (size,) * nd if isinstance(size, int) else tuple(int(s) for s in size)
        if len(sizes) != nd:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {list(x.shape[2:])} and output size of {size}"
            )
        return sizes, (None,) * nd
    factors = (scale_factor,) * nd if isinstance(scale_factor, int | float) else scale_factor
    if len(factors) != nd:
        raise ValueError(f"scale_factor must be a number or {nd} numbers, got {scale_factor!r}")
    factors = tuple(float(f) for f in factors)
    sizes = tuple(math.floor(n * f) for n, f in zip(x.shape[2:], factors, strict=True))
    return sizes, factors


def interpolate(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """`input` (N, C, *spatial) resized to `size` or by `scale_factor`, as PyTorch's.

    Modes: "nearest", and "linear" / "bilinear" / "trilinear" for 1, 2, 3 spatial dims.
    """
    nd = input.dim() - 2
    if mode not in ("nearest", *LINEAR_MODES):
        raise NotImplementedError(
            f"interpolate: mode {mode!r} is not supported (nearest, linear, bilinear, trilinear)"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode != "nearest" and LINEAR_MODES[mode] != nd:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {LINEAR_MODES[mode] + 2}D input"
        )
    if mode == "nearest" and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    if nd < 1:
        raise ValueError(
            f"interpolate: expected a 3-D to 5-D input, got shape {tuple(input.shape)}"
        )
    sizes, factors = _output_sizes(input, size, scale_factor, nd)
    if recompute_scale_factor:
        factors = (None,) * nd
    out = input
    for i, (m, factor) in enumerate(zip(sizes, factors, strict=True)):
        dim, n = 2 + i, input.shape[2 + i]
        if m == n and (factor in (None, 1.0)):
            continue
        if mode == "nearest":
            weights = nearest_matrix(n, m, factor)
        else:
            weights = linear_matrix(n, m, factor, bool(align_corners))
        matrix = wrap(out.backend.from_numpy(weights.astype(out.dtype.numpy)), out)
        out = (out.transpose(dim, -1) @ matrix).transpose(dim, -1)
    return out


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, **kw: Any) -> Tensor:  # noqa: A002
    """The older name of `interpolate`."""
    return interpolate(input, size, scale_factor, **kw)


__all__ = ["interpolate", "linear_matrix", "nearest_matrix", "upsample"]
