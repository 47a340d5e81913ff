"""The Tensor: strided data on a backend, with PyTorch's surface and autograd.

The class is assembled from mixins, one file each: arithmetic and elementwise
functions (`tensor_math.py`), shape and indexing (`tensor_shape.py`), reductions
(`tensor_reduce.py`), in-place ops (`tensor_inplace.py`), autograd
(`tensor_autograd.py`) and conversions (`tensor_convert.py`). This file holds the
metadata, the low-level helpers the autograd Functions call, and `tensor()`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from . import dtypes
from . import operators as ops
from .autodiff import History
from .backends import default_backend, get_backend
from .tensor_autograd import AccumulateGrad, AutogradMixin, Node
from .tensor_convert import ConvertMixin
from .tensor_data import TensorData, normalize_dim
from .tensor_functions import is_tensor
from .tensor_inplace import InPlaceMixin
from .tensor_math import MathMixin
from .tensor_ops import TensorBackend
from .tensor_reduce import ReduceMixin
from .tensor_shape import ShapeMixin

Number = int | float


class Tensor(MathMixin, ShapeMixin, ReduceMixin, InPlaceMixin, AutogradMixin, ConvertMixin):
    """An n-dimensional array on a backend, recording operations for autograd.

    Differences from PyTorch, on purpose: comparisons return 0./1. tensors of the
    operands' float dtype (PyTorch returns bool), the default float dtype is
    float64, and a second backward through a freed graph always raises.
    """

    __slots__ = (
        "_data", "backend", "dtype", "history", "grad", "_requires_grad", "_retains_grad",
        "_grad_fn", "_hooks", "_base", "_replaced", "_leaf_node", "__weakref__",
    )  # fmt: skip
    _is_minifw_tensor = True
    __array_priority__ = 1000
    _data: TensorData
    backend: TensorBackend
    dtype: dtypes.DType
    history: History | None
    grad: Tensor | None
    _requires_grad: bool
    _retains_grad: bool
    _grad_fn: Node | None
    _hooks: list[Any]
    _base: Tensor | None
    _replaced: dict[int, Tensor] | None
    _leaf_node: AccumulateGrad | None

    def __init__(
        self, data: TensorData, backend: TensorBackend, requires_grad: bool = False
    ) -> None:
        self._data = data
        self.backend = backend
        self.dtype = dtypes.from_numpy_dtype(data.base.dtype)
        self.history = None
        self.grad = None
        self._requires_grad = False
        self._retains_grad = False
        self._grad_fn = None
        self._hooks = []
        self._base = None
        self._replaced = None
        self._leaf_node = None
        if requires_grad:
            self.requires_grad_(True)

    # Metadata
    @property
    def shape(self) -> tuple[int, ...]:
        """The size of every dim."""
        return self._data.shape

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the size of one dim."""
        if dim is None:
            return self._data.shape
        return self._data.shape[normalize_dim(dim, self.dim())]

    def dim(self) -> int:
        """The number of dims."""
        return len(self._data.shape)

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self._data.shape)

    def numel(self) -> int:
        """The number of cells."""
        return self._data.size

    def stride(self, dim: int | None = None) -> Any:
        """The strides (in cells), or the stride of one dim."""
        if dim is None:
            return self._data.strides
        return self._data.strides[normalize_dim(dim, self.dim())]

    def is_contiguous(self) -> bool:
        """True when the cells are laid out row-major without gaps."""
        return self._data.is_contiguous()

    @property
    def device(self) -> str:
        """The device the storage lives on: "cpu" or "cuda"."""
        return self.backend.device

    @property
    def is_cuda(self) -> bool:
        """True for a tensor on the GPU."""
        return self.device == "cuda"

    @property
    def _version(self) -> int:
        """How many in-place writes the storage has seen (shared by all its views)."""
        return self._data.version[0]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = object.__hash__

    # Low-level building blocks used by the Functions (no autograd)
    def _new(self, data: TensorData) -> Tensor:
        return Tensor(data, self.backend)

    def _wrap(self, data: TensorData, backend: TensorBackend) -> Tensor:
        return Tensor(data, backend)

    def _alias(self) -> Tensor:
        """A new tensor object over the same cells (no history)."""
        out = self._new(self._data)
        out._base = self._base
        return out

    def _view_of(self, data: TensorData) -> Tensor:
        """A tensor over `data`, a view of self's storage."""
        out = self._new(data)
        out._base = self if self._base is None else self._base
        return out

    def _accumulator(self) -> AccumulateGrad:
        if self._leaf_node is None:
            self._leaf_node = AccumulateGrad(self)
        return self._leaf_node

    def _bump_version(self) -> None:
        self._data.version[0] += 1

    def _map(self, op: int) -> Tensor:
        return self._new(self.backend.map(op, self._data))

    def _zip(self, op: int, other: Tensor, out_dtype: Any = None) -> Tensor:
        return self._new(self.backend.zip(op, self._data, other._data, out_dtype))

    def _reduce(self, op: int, dim: int) -> Tensor:
        return self._new(self.backend.reduce(op, self._data, dim))

    def _copy(self) -> Tensor:
        return self._new(self.backend.contiguous(self._data))

    def _flat(self) -> Tensor:
        flat = self._data.view((self.numel(),))
        assert flat is not None, "_flat needs a contiguous tensor"
        return self._new(flat)

    def _empty(self, shape: tuple[int, ...]) -> Tensor:
        return self._new(self.backend.empty(shape, self.dtype.numpy))

    def _full(self, shape: tuple[int, ...], value: Number) -> Tensor:
        return self._new(self.backend.full(shape, value, self.dtype.numpy))

    def _zeros(self, shape: tuple[int, ...]) -> Tensor:
        return self._full(shape, 0)

    def _scalar_like(self, value: Number) -> Tensor:
        return self._full((), value)

    def _select_where(self, mask: Tensor, other: Tensor) -> Tensor:
        """Self's cell where mask is nonzero, else other's (all broadcast together)."""
        mask = mask.to(self.dtype)
        keep = mask._zip(ops.SELECT, self)
        other_mask = mask._zip(ops.EQ, mask._scalar_like(0))
        return keep._zip(ops.ADD, other_mask._zip(ops.SELECT, other))

    def _one_hot_along(self, dim: int, indices: Tensor) -> Tensor:
        """1. where the position along `dim` equals `indices` (keepdim-shaped), else 0."""
        shape = [1] * self.dim()
        shape[dim] = self.shape[dim]
        positions = self._arange(self.shape[dim]).view(*shape)
        return positions._zip(ops.EQ, indices.to(self.dtype))

    def _arange(self, n: int) -> Tensor:
        host = np.arange(n, dtype=self.dtype.numpy)
        return Tensor(self.backend.from_numpy(host), self.backend)

    def _operand(self, other: Any) -> Tensor:
        """`other` as a tensor on this device; Python numbers take self's dtype kind."""
        if is_tensor(other):
            if other.device != self.device:
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two "
                    f"devices, {self.device} and {other.device}! (shapes {self.shape} and "
                    f"{other.shape})"
                )
            return other  # type: ignore[no-any-return]
        if isinstance(other, bool | int | float | np.number):
            is_float = isinstance(other, float | np.floating)
            dtype = self.dtype
            if is_float and not self.dtype.is_floating_point:
                dtype = dtypes.get_default_dtype()
            return Tensor(self.backend.full((), other, dtype.numpy), self.backend)  # type: ignore[arg-type]
        return tensor(other, backend=self.backend)

    def _pair(self, other: Any) -> tuple[Tensor, Tensor]:
        b = self._operand(other)
        dtype = dtypes.promote(self.dtype, b.dtype)
        return self.to(dtype), b.to(dtype)

    def _float_pair(self, other: Any) -> tuple[Tensor, Tensor]:
        a, b = self._pair(other)
        if not a.dtype.is_floating_point:
            a, b = a.to(dtypes.get_default_dtype()), b.to(dtypes.get_default_dtype())
        return a, b

    def _floating(self) -> Tensor:
        return self if self.dtype.is_floating_point else self.to(dtypes.get_default_dtype())

    def _as_parameter(self, requires_grad: bool = True) -> TensorParameter:
        """What `nn.Parameter(self)` returns: a parameter sharing self's storage."""
        return TensorParameter(self.detach(), requires_grad)


def tensor(
    data: Any,
    *,
    requires_grad: bool = False,
    dtype: Any = None,
    device: str | None = None,
    backend: Any = None,
) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested lists or a numpy array).

    Python floats give the default float dtype and Python ints int64, as in PyTorch;
    a numpy array keeps its float dtype. `backend` ("simple", "fast", "cuda" or a
    TensorBackend) picks the kernels; by default, the default backend of `device`.
    """
    try:
        values = data.detach().cpu().numpy() if is_tensor(data) else np.asarray(data)
    except ValueError as error:
        raise ValueError(f"can't build a tensor from ragged nested lists ({error})") from None
    if values.dtype == object or values.dtype.kind not in "biuf":
        raise TypeError(
            f"can't build a tensor from {type(data).__name__} holding {values.dtype} values; "
            f"expected numbers"
        )
    kind = dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data, values)
    chosen = backend_for(device, backend)
    made = Tensor(chosen.from_numpy(values.astype(kind.numpy)), chosen)
    return made.requires_grad_(requires_grad) if requires_grad else made


def _infer_dtype(data: Any, values: np.ndarray) -> dtypes.DType:
    """PyTorch's rule: ints -> int64, a numpy array keeps its float dtype, else the default."""
    if values.dtype.kind in "iu":
        return dtypes.int64
    if isinstance(data, np.ndarray) and values.dtype.kind == "f" or is_tensor(data):
        return dtypes.from_numpy_dtype(values.dtype)
    if values.dtype.kind in "fb":
        return dtypes.get_default_dtype()
    return dtypes.from_numpy_dtype(values.dtype)


def backend_for(device: str | None, backend: Any) -> TensorBackend:
    """The backend named by `backend`, else the default one of `device` (cpu if None)."""
    if backend is not None:
        chosen = get_backend(backend)
        if device is not None and device.split(":")[0] != chosen.device:
            raise ValueError(f"backend {chosen.name} runs on {chosen.device}, not {device}")
        return chosen
    return default_backend((device or "cpu").split(":")[0])


def wrap(data: TensorData, backend: TensorBackend) -> Tensor:
    """A tensor over existing TensorData (no copy)."""
    return Tensor(data, backend)


__all__ = ["Tensor", "backend_for", "tensor", "wrap"]


class TensorParameter(Tensor):
    """A tensor that a Module trains: what `nn.Parameter(tensor)` returns.

    It shares the source tensor's storage, is a leaf, and requires grad. `.value`
    is the parameter itself (so code written for wrapped parameters works); setting
    `.value` re-seats it on another tensor's storage, as `Module.to()` does.
    """

    __slots__ = ()

    def __init__(self, source: Tensor, requires_grad: bool = True) -> None:
        super().__init__(source._data, source.backend)
        if requires_grad:
            self.requires_grad_(True)

    @property
    def value(self) -> TensorParameter:
        """The parameter itself."""
        return self

    @value.setter
    def value(self, new: Tensor) -> None:
        self._data, self.backend, self.dtype = new._data, new.backend, new.dtype
        self._requires_grad = new.requires_grad or self._requires_grad

    def update(self, x: Tensor) -> None:
        """Re-seat this parameter on `x`'s storage."""
        self.value = x

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
