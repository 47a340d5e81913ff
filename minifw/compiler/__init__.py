"""Layer 5: `mf.compile` (capture a step, fuse elementwise kernels, replay); loaded lazily."""

from minifw.compiler.compile import compile

__all__ = ["compile"]
