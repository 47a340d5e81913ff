"""Softmax cross-entropy over class indices, one kernel each way (an expert fast path).

`F.cross_entropy(logits, labels)` on a small (N, C) batch is otherwise fourteen launches
(log_softmax's six forward and four backward, nll_loss's three and one), each costing
more than its few hundred cells. Here each pass is one loop over the rows:

    forward:   m = max_j x[i, j]
               lse[i] = m + log(sum_j e^(x[i, j] - m))          # log of softmax's divisor
               loss[i] = lse[i] - x[i, label[i]]                 # 0 where ignored
    backward:  grad[i, j] = (e^(x[i, j] - lse[i]) - [j == label[i]]) * g[i] * scale

Serial: `nn/losses.py` calls them for inputs under PARALLEL_FROM cells, where a parallel
launch would cost more than the loop; bigger inputs take the composed kernels, which run
in parallel. Sums are carried in float64 and rounded to x's dtype once per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minifw._jit import njit


@njit(cache=True)
def cross_entropy_forward(
    x: Any, cols: int, labels: Any, ignore: int, lse: Any, losses: Any
) -> float:
    """Fill lse[i] and losses[i] for each row i of flat `x` (rows of `cols` cells).

    Returns the sum of the losses. `labels` are in range (checked by the caller) or
    `ignore`. A nan in a row makes its lse nan (it is taken as the row's maximum).
    """
    total = 0.0
    for i in range(labels.shape[0]):
        row = i * cols
        top = x[row]
        for j in range(row + 1, row + cols):
            if not x[j] <= top:  # also takes a nan
                top = x[j]
        divisor = 0.0
        for j in range(row, row + cols):
            divisor += np.exp(x[j] - top)
        lse[i] = top + np.log(divisor)
        losses[i] = 0.0 if labels[i] == ignore else lse[i] - x[row + labels[i]]
        total += losses[i]
    return total


@njit(cache=True)
def cross_entropy_backward(
    x: Any, cols: int, labels: Any, ignore: int, lse: Any,
    g: Any, g_at: int, g_step: int, scale: float, grad: Any,
) -> None:  # fmt: skip
    """grad[i, j] = (softmax(x)[i, j] - [j == labels[i]]) * g[g_at + i * g_step] * scale.

    Rows whose label is `ignore` get zeros. `g_step` is 0 when one incoming gradient
    (a "mean" or "sum" loss) scales every row.
    """
    for i in range(labels.shape[0]):
        row = i * cols
        if labels[i] == ignore:
            for j in range(row, row + cols):
                grad[j] = 0.0
            continue
        factor = g[g_at + i * g_step] * scale
        for j in range(row, row + cols):
            grad[j] = np.exp(x[j] - lse[i]) * factor
        grad[row + labels[i]] -= factor


__all__ = ["cross_entropy_backward", "cross_entropy_forward"]
