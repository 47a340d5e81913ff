"""Softmax cross-entropy over class indices, one kernel each way (an expert fast path).

`F.cross_entropy(logits, labels)` on a small (N, C) batch is otherwise fourteen launches
(log_softmax's six forward and four backward, nll_loss's three and one), each costing
more than its few hundred cells. Here each pass is one loop over the rows:

    forward:   m = max_j x[i, j]
               lse[i] = m + log(sum_j e^(x[i, j] - m))          # log of softmax's divisor
               loss[i] = lse[i] - x[i, label[i]]                 # 0 where ignored
               result = sum_i loss[i] (/ rows kept, for a mean)
    backward:  grad[i, j] = (e^(x[i, j] - lse[i]) - [j == label[i]]) * g[i] * scale

Everything either pass reads or writes lies in tensor storage (the labels too, never
read on the host), so `mf.compile` records each pass as one step and replays it: the
forward writes one `stats` array, [lse (N) | losses (N) | result | scale], and the
backward reads lse and scale from it. Serial: `nn/losses.py` calls them for inputs under
PARALLEL_FROM cells, where a parallel launch would cost more than the loop; bigger
inputs take the composed kernels, which run in parallel. Sums are carried in float64
and rounded to x's dtype once per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minifw._jit import njit


@njit(cache=True)
def cross_entropy_forward(
    x: Any, cols: int, labels: Any, labels_at: int, labels_step: int, ignore: int, mean: bool,
    stats: Any,
) -> None:  # fmt: skip
    """Fill `stats` for the rows of flat `x` (rows of `cols` cells, one per label).

    stats = [lse (rows) | losses (rows) | result | scale]: result is the losses' sum,
    or their mean over the rows whose label is not `ignore` (nan if there are none),
    and scale what the backward multiplies by (1, 1 / rows kept, or 0 with none).
    Label i is labels[labels_at + i * labels_step], in range (the caller checked) or
    `ignore`. A nan in a row makes its lse nan (it is taken as the row's maximum).
    """
    rows = (stats.shape[0] - 2) // 2
    total, kept = 0.0, 0
    for i in range(rows):
        row, label = i * cols, labels[labels_at + i * labels_step]
        top = x[row]
        for j in range(row + 1, row + cols):
            if not x[j] <= top:  # also takes a nan
                top = x[j]
        divisor = 0.0
        for j in range(row, row + cols):
            divisor += np.exp(x[j] - top)
        stats[i] = top + np.log(divisor)
        stats[rows + i] = 0.0 if label == ignore else stats[i] - x[row + label]
        total += stats[rows + i]
        kept += label != ignore
    stats[2 * rows], stats[2 * rows + 1] = total, 1.0
    if mean:
        stats[2 * rows] = total / kept if kept else np.nan
        stats[2 * rows + 1] = 1.0 / kept if kept else 0.0


@njit(cache=True)
def cross_entropy_backward(
    x: Any, cols: int, labels: Any, labels_at: int, labels_step: int, ignore: int,
    stats: Any, g: Any, g_at: int, g_step: int, grad: Any,
) -> None:  # fmt: skip
    """grad[i, j] = (softmax(x)[i, j] - [j == label i]) * g[g_at + i * g_step] * scale.

    lse and scale come from the forward's `stats`. Rows whose label is `ignore` get
    zeros. `g_step` is 0 when one incoming gradient (a "mean" or "sum" loss) scales
    every row.
    """
    rows = (stats.shape[0] - 2) // 2
    scale = stats[2 * rows + 1]
    for i in range(rows):
        row, label = i * cols, labels[labels_at + i * labels_step]
        if label == ignore:
            for j in range(row, row + cols):
                grad[j] = 0.0
            continue
        factor = g[g_at + i * g_step] * scale
        for j in range(row, row + cols):
            grad[j] = np.exp(x[j] - stats[i]) * factor
        grad[row + label] -= factor


__all__ = ["cross_entropy_backward", "cross_entropy_forward"]
