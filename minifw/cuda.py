"""`mf.cuda`: whether the CUDA backend can run here, and how many GPUs it sees."""

from __future__ import annotations

from minifw.backends import cuda_available


def is_available() -> bool:
    """True when a CUDA GPU (or Numba's CUDA simulator) is usable."""
    return cuda_available()


def device_count() -> int:
    """The number of GPUs minifw can use: 1 when CUDA is available (no multi-GPU), else 0."""
    return 1 if cuda_available() else 0


def current_device() -> int:
    """The index of the GPU in use: always 0 (minifw uses one GPU)."""
    return 0


def manual_seed(seed: int) -> None:
    """Accepted for PyTorch programs; minifw draws every random number on the host."""
    del seed


def manual_seed_all(seed: int) -> None:
    """Accepted for PyTorch programs; minifw draws every random number on the host."""
    del seed
