"""The SGD update `p -= g * lr` as one kernel over dense CPU cells (an expert fast path).

Unfused, the update is two launches: `s = g * lr` into a new buffer, then `p - s`
written into p. `sub_scaled` reads each cell of g and p once and writes p once,
rounding exactly as those two launches do (the product to p's dtype, then the
difference), which is the loop `mf.compile` generates when it fuses them. The
optimizers call it (through `update_in_place`) for contiguous CPU parameters.
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


__all__ = ["sub_scaled", "sub_scaled_serial", "update_in_place"]
