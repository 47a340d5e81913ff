"""Tensor conversions: dtype and device moves, numpy, Python numbers, and repr."""

# Mixin methods take `self: Tensor`; mypy cannot see that Tensor subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from .backends import default_backend
from .tensor_data import TensorData
from .tensor_functions import is_tensor
from .tensor_repr import add_suffixes, format_values
from .tensor_views import Cast

if TYPE_CHECKING:
    from .tensor import Tensor
    from .tensor_ops import TensorBackend

Number = int | float
_IGNORED_TO_OPTIONS = ("non_blocking", "copy", "memory_format")


class ConvertMixin:
    """to / double / float / long / cuda / cpu, numpy(), tolist(), item() and repr."""

    __slots__ = ()

    def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """This tensor with another dtype and/or device ("cpu", "cuda"); self if unchanged.

        Accepts `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other_tensor)` and
        the keywords `dtype=` and `device=`, as PyTorch does.
        """
        if not kwargs and len(args) == 1 and args[0] is self.dtype:
            return self  # the common no-op: already of that dtype
        dtype, device = self.dtype, self.device
        options = {k: v for k, v in kwargs.items() if k not in _IGNORED_TO_OPTIONS}
        for arg in list(args) + list(options.values()):
            if isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda"):
                device = arg.split(":")[0]
            elif is_tensor(arg):
                dtype, device = arg.dtype, arg.device
            elif arg is not None:
                dtype = dtypes.as_dtype(arg)
        if dtype is self.dtype and device == self.device:
            return self
        backend = self.backend if device == self.device else default_backend(device)
        if self.requires_grad and not dtype.is_floating_point:
            return self.detach()._convert(dtype, backend)
        return Cast.apply(self, dtype, backend)

    def double(self: Tensor) -> Tensor:
        """As float64."""
        return self.to(dtypes.float64)

    def float(self: Tensor) -> Tensor:
        """As float32 (PyTorch's `float`; note minifw's default float dtype is float64)."""
        return self.to(dtypes.float32)

    def long(self: Tensor) -> Tensor:
        """As int64 (floats are truncated toward zero)."""
        return self.to(dtypes.int64)

    def type_as(self: Tensor, other: Tensor) -> Tensor:
        """As other's dtype."""
        return self.to(other.dtype)

    def is_floating_point(self: Tensor) -> bool:
        """True for float64 and float32 tensors."""
        return self.dtype.is_floating_point

    def cuda(self: Tensor) -> Tensor:
        """A copy on the GPU (self if already there)."""
        return self.to("cuda")

    def cpu(self: Tensor) -> Tensor:
        """A copy on the CPU (self if already there)."""
        return self.to("cpu")

    def _convert(self: Tensor, dtype: dtypes.DType, backend: TensorBackend) -> Tensor:
        """A copy with `dtype` on `backend` (the same storage if nothing changes)."""
        if backend.device == self.device and dtype is self.dtype:
            return self._wrap(self._data, backend)
        host = self.backend.to_numpy(self._data).astype(dtype.numpy)
        return self._wrap(backend.from_numpy(host), backend)

    def numpy(self: Tensor) -> np.ndarray:
        """The values as a numpy array: sharing memory for CPU tensors, a copy otherwise."""
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self.device != "cpu":
            return self.backend.to_numpy(self._data)
        return host_view(self._data)

    def __array__(self: Tensor, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self.detach().numpy()
        if dtype is not None:
            values = values.astype(dtype)
        return values.copy() if copy else values

    def tolist(self: Tensor) -> Any:
        """The values as (nested) Python lists; a number for a 0-dim tensor."""
        return self.detach().numpy().tolist()

    def item(self: Tensor) -> Number:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(
                f"a Tensor with {self.numel()} elements cannot be converted to Scalar"
            )
        return self.detach().numpy().reshape(-1)[0].item()  # type: ignore[no-any-return]

    def __float__(self: Tensor) -> builtins.float:
        return builtins.float(self.item())

    def __int__(self: Tensor) -> int:
        return int(self.item())

    def __index__(self: Tensor) -> int:
        if self.dtype is not dtypes.int64 or self.numel() != 1:
            raise TypeError(
                "only integer tensors of a single element can be converted to an index"
            )
        return int(self.item())

    def __bool__(self: Tensor) -> bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous (shape "
                f"{self.shape})"
            )
        return bool(self.item())

    def __format__(self: Tensor, spec: str) -> str:
        if self.dim() == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __repr__(self: Tensor) -> str:
        body = format_values(self.detach().cpu().numpy(), len("tensor("))
        extras = []
        if self.device != "cpu":
            extras.append(f"device='{self.device}:0'")
        if self.numel() == 0 and self.dim() != 1:
            extras.append(f"size={self.shape}")
        if self.dtype not in (dtypes.get_default_dtype(), dtypes.int64) or (
            self.numel() == 0 and self.dtype is dtypes.int64
        ):
            extras.append(f"dtype={self.dtype}")
        node = self.grad_fn
        if node is not None:
            extras.append(f"grad_fn=<{node.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + add_suffixes(body, extras, len("tensor(")) + ")"


def host_view(data: TensorData) -> np.ndarray:
    """A numpy array over the cells of CPU `data`, with its strides (no copy)."""
    item = data.base.itemsize
    return np.lib.stride_tricks.as_strided(
        data.storage, data.shape, tuple(s * item for s in data.strides)
    )
