"""The one place that names concrete backends; each is built on first use.

`import minifw` never imports `numba.cuda`: the CUDA backend is constructed only
when something asks for it.
"""

from __future__ import annotations

import types
from typing import Any

from minifw.tensor_ops import TensorBackend

BACKEND_NAMES = ("simple", "fast", "readable", "cuda")
_built: dict[str, TensorBackend] = {}
_defaults: dict[str, str] = {"cpu": "fast", "cuda": "cuda"}


def _build(name: str) -> TensorBackend:
    if name == "simple":
        from minifw.tensor_ops import SimpleOps

        return TensorBackend(SimpleOps, "simple")
    if name == "fast":
        from minifw.fast_ops import FastOps

        return TensorBackend(FastOps, "fast")
    if name == "readable":  # the course's own FastOps kernels, even where fast_paths/ exists
        from minifw.fast_ops import ReadableFastOps

        return TensorBackend(ReadableFastOps, "readable")
    if name == "cuda":
        if not cuda_available():
            raise RuntimeError(
                "the 'cuda' backend needs an NVIDIA GPU with a CUDA driver, or Numba's "
                "simulator (set NUMBA_ENABLE_CUDASIM=1 before starting Python)"
            )
        from minifw.cuda_ops import CudaOps

        return TensorBackend(CudaOps, "cuda")
    raise ValueError(f"unknown backend {name!r}: expected one of {', '.join(BACKEND_NAMES)}")


def get_backend(backend: str | TensorBackend) -> TensorBackend:
    """The backend called `backend` ("simple", "fast", "readable" or "cuda"), built once.

    "readable" runs the readable FastOps kernels of the course (task 3.1 and 3.2) on
    the CPU, also where the expert kernels of `minifw/fast_paths/` make "fast" faster.
    """
    if isinstance(backend, TensorBackend):
        return backend
    if backend not in _built:
        _built[backend] = _build(backend)
    return _built[backend]


def set_default_backend(name: str) -> None:
    """Make `name` the backend that new tensors on its device use."""
    backend = get_backend(name)
    _defaults[backend.device] = name


def default_backend(device: str = "cpu") -> TensorBackend:
    """The backend new tensors on `device` use."""
    if device not in _defaults:
        raise RuntimeError(
            f"Expected one of cpu, cuda device type at start of device string: {device}"
        )
    return get_backend(_defaults[device])


def fast_path(name: str) -> types.ModuleType | None:
    """The expert kernel module `minifw.fast_paths.<name>`, or None: `fast_ops.fast_path`.

    nn, optim and the compiler ask here, so that `import minifw` loads neither fast_ops (a
    course task's file) nor the expert kernels: fast_ops, which decides whether they exist,
    loads on first use, as the backends do.
    """
    from minifw import fast_ops

    return fast_ops.fast_path(name)


def cuda_available() -> bool:
    """True when a CUDA GPU (or Numba's CUDA simulator) can run the 'cuda' backend."""
    from numba import config

    if getattr(config, "ENABLE_CUDASIM", False):
        return True
    try:
        from numba import cuda

        is_available: Any = cuda.is_available
        return bool(is_available())
    except Exception:  # noqa: BLE001 - no driver, no toolkit: no CUDA here
        return False
