"""Fold (col2im), the backward of a 2-D unfold, in one kernel (an expert fast path).

`Unfold.backward` in `nn/conv.py` (a course task) adds each kernel offset's slice of the
gradient into the strided cells of the input it came from: one in-place add per offset
(nine for a 3x3 convolution), into a padded buffer, then a copy without the padding.
Here one loop does the same adds in the same order (kernel offsets row by row, each
into zeros first), so the sums are the same, skipping the padding's cells:

    out[n, c] = 0
    for each kernel offset (a, b), each window (oy, ox):
        out[n, c, oy * stride_h + a - pad_h, ox * stride_w + b - pad_w] += g[n, c, a, b, oy, ox]

Serial: `nn/conv.py` calls it for gradients under PARALLEL_FROM cells whose windows
overlap (with no overlap the task's fold is already one copy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minifw._jit import njit

U = np.uint64  # an index type Numba does not check for negative values


@njit(cache=True)
def fold2d(g: Any, g_strides: Any, out: Any, sizes: Any) -> None:
    """Fill contiguous `out` (N, C, H, W) from the windows' gradient `g` (any strides).

    `g` holds (N, C, KH, KW, OH, OW) cells at `g_strides`; sizes = (N, C, H, W, KH, KW,
    OH, OW, stride_h, stride_w, pad_h, pad_w).
    """
    batches, channels, height, width, kh, kw, oh, ow, sh, sw, ph, pw = sizes
    s_n, s_c, s_a, s_b, s_y, s_x = g_strides
    for plane in range(batches * channels):
        first = plane * height * width
        for cell in range(U(first), U(first + height * width)):
            out[cell] = 0
        source = (plane // channels) * s_n + (plane % channels) * s_c
        for a in range(kh):
            for b in range(kw):
                # the windows whose cell (a, b) lies inside the input, not in its padding
                x_from, x_to = _inside(b - pw, sw, width, ow)
                for oy in range(*_inside(a - ph, sh, height, oh)):
                    row = U(first + (oy * sh + a - ph) * width + b - pw)
                    at = U(source + a * s_a + b * s_b + oy * s_y)
                    for ox in range(U(x_from), U(x_to)):
                        out[row + ox * U(sw)] += g[at + ox * U(s_x)]


@njit(inline="always")
def _inside(start: int, stride: int, size: int, windows: int) -> Any:
    """(first, stop) of the windows o < `windows` with 0 <= start + o * stride < size."""
    first = 0 if start >= 0 else (-start + stride - 1) // stride
    stop = min(windows, (size - start + stride - 1) // stride) if size > start else 0
    return first, max(first, stop)


__all__ = ["fold2d"]
