"""`mf.cuda`: whether the CUDA backend can run here."""

from __future__ import annotations

from minifw.backends import cuda_available


def is_available() -> bool:
    """True when a CUDA GPU (or Numba's CUDA simulator) is usable."""
    return cuda_available()
