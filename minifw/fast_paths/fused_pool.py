"""2-D max pooling in one kernel each way (an expert fast path).

`max_pool2d` (nn/conv.py, a course task) takes each window as dims (`unfold`: a copy),
then the max and its index along them (the index by a countdown score): six launches
forward; backward, a one-hot product and a fold. For windows that do not overlap and
have no padding (`nn/pooling.py` checks), one loop does each pass:

    forward:   for each window: the value of its max and where it is (a * W + b from
               the window's corner), the first one or the first nan (as the task's path)
    backward:  out = 0; out[the max's cell of each window] = g[that window]

The forward writes one array, [values (windows) | where (windows, as floats)], so that
`mf.compile` records each pass as one step (a launch with one output).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minifw._jit import njit

U = np.uint64  # an index type Numba does not check for negative values


@njit(cache=True)
def max_pool2d_forward(x: Any, x_strides: Any, sizes: Any, stats: Any) -> None:
    """Write [max of each window | where it is] into `stats`, windows row-major.

    `x` holds (N, C, H, W) cells at `x_strides`; sizes = (N, C, H, W, KH, KW, OH, OW,
    stride_h, stride_w). Where: a * W + b for the window's cell (a, b), the first max
    (or nan). Each window lies inside x (the caller checked).
    """
    batches, channels, _, width, kh, kw, oh, ow, sh, sw = sizes
    s_n, s_c, s_y, s_x = x_strides
    windows, cell = batches * channels * oh * ow, 0
    for n in range(batches):
        for c in range(channels):
            for oy in range(oh):
                for ox in range(ow):
                    corner = U(n * s_n + c * s_c + oy * sh * s_y + ox * sw * s_x)
                    best, where = x[corner], 0
                    for a in range(kh):
                        for b in range(kw):
                            value = x[corner + U(a * s_y + b * s_x)]
                            # without branches (the data decides them: mispredicted)
                            take = (value > best) | ((value != value) & (best == best))
                            best = value if take else best
                            where = a * width + b if take else where
                    stats[cell], stats[windows + cell] = best, where
                    cell += 1


@njit(cache=True)
def max_pool2d_backward(g: Any, g_strides: Any, stats: Any, sizes: Any, out: Any) -> None:
    """Contiguous `out` (N, C, H, W): each window's gradient at its max's cell, 0 elsewhere.

    `g` holds the (N, C, OH, OW) incoming gradient at `g_strides`; `stats` is what the
    forward wrote; windows do not overlap.
    """
    batches, channels, height, width, _, _, oh, ow, sh, sw = sizes
    s_n, s_c, s_y, s_x = g_strides
    out[:] = 0
    windows, cell = batches * channels * oh * ow, 0
    for n in range(batches):
        for c in range(channels):
            plane = (n * channels + c) * height * width
            for oy in range(oh):
                for ox in range(ow):
                    at = U(plane + oy * sh * width + ox * sw) + U(stats[windows + cell])
                    out[at] = g[U(n * s_n + c * s_c + oy * s_y + ox * s_x)]
                    cell += 1


__all__ = ["max_pool2d_backward", "max_pool2d_forward"]
