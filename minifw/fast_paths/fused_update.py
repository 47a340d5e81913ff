"""Optimizer updates as one kernel each over dense CPU cells (an expert fast path).

Unfused, SGD's update `p -= g * lr` is two launches: `s = g * lr` into a new buffer,
then `p - s` written into p. `sub_scaled` reads each cell of g and p once and writes p
once, rounding exactly as those two launches do (the product to p's dtype, then the
difference), which is the loop `mf.compile` generates when it fuses them. Adam's
update is thirteen launches per parameter; `adam_step` runs them as one loop, each
operation rounded to the parameter's dtype as its launch would be. The optimizers
call them (through `update_in_place`, `adam_in_place`) for contiguous CPU parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from minifw._jit import PARALLEL_FROM, njit, serial_twin
from minifw._threads import parallel_pays


@njit(parallel=True, cache=True)
def sub_scaled(p: Any, g: Any, rate: Any) -> None:
    """Subtract g * rate[0] from p, cell by cell, over flat arrays of one float dtype.

    for i in prange(cells):
        p[i] = p[i] - g[i] * lr      # product, then difference, each in p's dtype

    Invariants: p, g and rate share a dtype (float32 * float32 stays float32, so each
    step rounds as its unfused launch does); g has p's size and never shares p's cells
    other than cell i at step i, so every cell is read before it is written.
    """
    lr = rate[0]
    for i in prange(p.shape[0]):
        scaled = g[i] * lr
        p[i] = p[i] - scaled


sub_scaled_serial = serial_twin(sub_scaled)  # for small parameters: no thread pool


def update_in_place(p: np.ndarray, g: np.ndarray, rate: np.ndarray) -> None:
    """Run `sub_scaled` on flat `p` and `g`, in parallel from PARALLEL_FROM cells.

    Serially while other processes leave this one no more than a core (`_threads.py`).
    """
    if parallel_pays(p.shape[0], PARALLEL_FROM):
        sub_scaled(p, g, rate)
    else:
        sub_scaled_serial(p, g, rate)


# The scalars of one Adam step, in this order in `adam_step`'s `hyper`.
ADAM_HYPER = ("1 - beta1", "beta2", "1 - beta2", "sqrt(1 - beta2^t)", "eps", "lr / (1 - beta1^t)")


@njit(parallel=True, cache=True)
def adam_step(p: Any, g: Any, m: Any, v: Any, hyper: Any) -> None:
    """One Adam step over flat arrays of one float dtype (`hyper`: ADAM_HYPER's values).

    for i in prange(cells):
        m[i] = m[i] + (g[i] - m[i]) * (1 - beta1)
        v[i] = v[i] * beta2 + g[i] * g[i] * (1 - beta2)
        p[i] = p[i] - m[i] / (sqrt(v[i]) / root + eps) * step_size

    Each operation rounds to the dtype, as the unfused launches of `optim.Adam` do (no
    fastmath: nothing is contracted or reordered). Invariants: all arrays and `hyper`
    share a dtype; g, m and v have p's size and share no cells with p or each other.
    """
    one_minus_beta1, beta2, one_minus_beta2 = hyper[0], hyper[1], hyper[2]
    root, eps, step_size = hyper[3], hyper[4], hyper[5]
    for i in prange(p.shape[0]):
        grad = g[i]
        m[i] = m[i] + (grad - m[i]) * one_minus_beta1
        v[i] = v[i] * beta2 + grad * grad * one_minus_beta2
        p[i] = p[i] - m[i] / (np.sqrt(v[i]) / root + eps) * step_size


adam_step_serial = serial_twin(adam_step)


def adam_in_place(p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray,
                  hyper: np.ndarray) -> None:  # fmt: skip
    """Run `adam_step` on flat arrays, in parallel from PARALLEL_FROM cells (as above)."""
    if parallel_pays(p.shape[0], PARALLEL_FROM):
        adam_step(p, g, m, v, hyper)
    else:
        adam_step_serial(p, g, m, v, hyper)


__all__ = [
    "ADAM_HYPER",
    "adam_in_place",
    "adam_step",
    "adam_step_serial",
    "sub_scaled",
    "sub_scaled_serial",
    "update_in_place",
]
