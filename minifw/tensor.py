"""The Tensor: strided data on a backend, with PyTorch's surface and autograd."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import dtypes
from . import operators as ops
from . import tensor_functions as F
from .autodiff import History, backpropagate, is_grad_enabled
from .backends import default_backend, get_backend
from .tensor_data import TensorData, normalize_dim
from .tensor_ops import TensorBackend
from .tensor_inplace import InPlaceMixin
from .tensor_reduce import ReduceMixin
from .tensor_repr import format_values
from .tensor_shape import ShapeMixin

Number = int | float


class Tensor(ShapeMixin, ReduceMixin, InPlaceMixin):
    """An n-dimensional array on a backend, recording operations for autograd."""

    __slots__ = (
        "_data", "backend", "dtype", "history", "grad", "_requires_grad",
        "_retains_grad", "_version", "_grad_fn", "_hooks", "__weakref__",
    )  # fmt: skip
    _is_minifw_tensor = True
    __array_priority__ = 1000

    def __init__(
        self, data: TensorData, backend: TensorBackend, requires_grad: bool = False
    ) -> None:
        self._data = data
        self.backend = backend
        self.dtype = dtypes.from_numpy_dtype(data.base.dtype)
        self.history: History | None = None
        self.grad: Tensor | None = None
        self._requires_grad = False
        self._retains_grad = False
        self._version = 0
        self._grad_fn: Any = None
        self._hooks: list[Any] = []
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

    ndim = property(dim, doc="The number of dims.")

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
        """"cpu" or "cuda"."""
        return self.backend.device

    @property
    def is_cuda(self) -> bool:
        """True for a tensor on the GPU."""
        return self.device == "cuda"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        return (self[i] for i in range(len(self)))

    __hash__ = object.__hash__

    # Autograd state
    @property
    def requires_grad(self) -> bool:
        """True when gradients flow to or through this tensor."""
        return self._requires_grad or self.history is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        """Set whether autograd records operations on this leaf; returns self."""
        if self.history is not None:
            if not flag:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach()."
                )
            return self
        if flag and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients (got {self.dtype})"
            )
        self._requires_grad = bool(flag)
        return self

    @property
    def is_leaf(self) -> bool:
        """True for a tensor no recorded op produced."""
        return self.history is None

    @property
    def grad_fn(self) -> Any:
        """The node that made this tensor (None for leaves)."""
        if self.history is None:
            return None
        if self._grad_fn is None:
            self._grad_fn = Node(self.history)
        return self._grad_fn

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf tensor after backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.history is not None:
            self._retains_grad = True

    def register_hook(self, hook: Any) -> Any:
        """Call `hook(grad)` when this tensor's gradient is computed; it may return a new one."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        self._hooks.append(hook)
        return _RemovableHook(self._hooks, hook)

    def detach(self) -> Tensor:
        """The same storage, with no history and no grad."""
        return self._new(self._data)

    def detach_(self) -> Tensor:
        """Cut this tensor from its history, in place."""
        self.history = None
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """A detached view of the values (writes do not reach autograd)."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data
        self._version += 1

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Compute the gradients of this tensor with respect to every leaf requiring grad."""
        if not self.requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn"
            )
        if gradient is None:
            if self.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (got shape "
                    f"{self.shape})"
                )
            gradient = self._full(self.shape, 1.0)
        gradient = self._operand(gradient).to(self.dtype)
        if gradient.shape != self.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[0] has a shape of {gradient.shape} and "
                f"output[0] has a shape of {self.shape}."
            )
        backpropagate(self, gradient.detach(), retain_graph=retain_graph)

    # The Variable protocol of autodiff
    @property
    def unique_id(self) -> int:
        """An id no other live tensor has."""
        return id(self)

    def is_constant(self) -> bool:
        """True when no gradient is needed."""
        return not self.requires_grad

    @property
    def parents(self) -> list[Tensor]:
        """The tensor inputs of the op that made this tensor."""
        assert self.history is not None
        return [x for x in self.history.inputs if F.is_tensor(x)]

    def chain_rule(self, d_output: Tensor) -> list[tuple[Tensor, Tensor]]:
        """Each input paired with its gradient."""
        d_output = self._run_hooks(d_output)
        if self._retains_grad:
            self._accumulate(d_output)
        h = self.history
        assert h is not None and h.ctx is not None
        return h.last_fn.chain_rule(h.ctx, h.inputs, d_output)  # type: ignore[no-any-return]

    def accumulate_derivative(self, x: Tensor) -> None:
        """Add `x` to `.grad` (leaves only)."""
        self._accumulate(self._run_hooks(x))

    def _accumulate(self, x: Tensor) -> None:
        x = x.detach()
        self.grad = x._copy() if self.grad is None else self.grad._zip(ops.ADD, x)

    def _run_hooks(self, grad: Tensor) -> Tensor:
        for hook in list(self._hooks):
            result = hook(grad)
            if result is not None:
                grad = result
        return grad

    def _attach(self, history: History) -> None:
        self.history = history

    # Low-level building blocks used by tensor_functions (no autograd)
    def _new(self, data: TensorData) -> Tensor:
        return Tensor(data, self.backend)

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

    def _convert(self, dtype: dtypes.DType, backend: TensorBackend) -> Tensor:
        if backend.device != self.device:
            host = self.backend.to_numpy(self._data).astype(dtype.numpy)
            return Tensor(backend.from_numpy(host), backend)
        if dtype is self.dtype:
            return Tensor(self._data, backend)
        if backend.device == "cpu":
            host = self.backend.to_numpy(self._data).astype(dtype.numpy)
            return Tensor(backend.from_numpy(host, share=True), backend)
        host = self.backend.to_numpy(self._data).astype(dtype.numpy)
        return Tensor(backend.from_numpy(host), backend)

    def _operand(self, other: Any) -> Tensor:
        """`other` as a tensor on this device, with dtypes promoted like PyTorch."""
        if F.is_tensor(other):
            if other.device != self.device:
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two "
                    f"devices, {self.device} and {other.device}! (shapes {self.shape} and "
                    f"{other.shape})"
                )
            return other  # type: ignore[no-any-return]
        if isinstance(other, bool | int | float | np.number):
            if isinstance(other, float | np.floating) and not self.dtype.is_floating_point:
                dtype = dtypes.get_default_dtype()
            else:
                dtype = self.dtype
            return Tensor(self.backend.full((), other, dtype.numpy), self.backend)
        return tensor(other, dtype=self.dtype, backend=self.backend)

    def _pair(self, other: Any) -> tuple[Tensor, Tensor]:
        b = self._operand(other)
        dtype = dtypes.promote(self.dtype, b.dtype)
        return self.to(dtype), b.to(dtype)

    # Arithmetic
    def __add__(self, other: Any) -> Tensor:
        return F.Add.apply(*self._pair(other))

    def __radd__(self, other: Any) -> Tensor:
        return F.Add.apply(*reversed(self._pair(other)))

    def __sub__(self, other: Any) -> Tensor:
        return F.Sub.apply(*self._pair(other))

    def __rsub__(self, other: Any) -> Tensor:
        return F.Sub.apply(*reversed(self._pair(other)))

    def __mul__(self, other: Any) -> Tensor:
        return F.Mul.apply(*self._pair(other))

    def __rmul__(self, other: Any) -> Tensor:
        return F.Mul.apply(*reversed(self._pair(other)))

    def __truediv__(self, other: Any) -> Tensor:
        a, b = self._float_pair(other)
        return F.Div.apply(a, b)

    def __rtruediv__(self, other: Any) -> Tensor:
        a, b = self._float_pair(other)
        return F.Div.apply(b, a)

    def _float_pair(self, other: Any) -> tuple[Tensor, Tensor]:
        a, b = self._pair(other)
        if not a.dtype.is_floating_point:
            a, b = a.to(dtypes.get_default_dtype()), b.to(dtypes.get_default_dtype())
        return a, b

    def __neg__(self) -> Tensor:
        return F.Neg.apply(self)

    def __pos__(self) -> Tensor:
        return self

    def __pow__(self, exponent: Any) -> Tensor:
        if F.is_tensor(exponent):
            if exponent.numel() != 1:
                raise TypeError("pow: only a number (or one-element tensor) exponent is supported")
            exponent = exponent.item()
        base = self
        if isinstance(exponent, float) and not self.dtype.is_floating_point:
            base = self.to(dtypes.get_default_dtype())
        return F.Pow.apply(base, exponent)

    def __matmul__(self, other: Any) -> Tensor:
        return F.MatMul.apply(*self._pair(other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return F.MatMul.apply(*reversed(self._pair(other)))

    def _compare(self, op: int, other: Any) -> Tensor:
        a, b = self._pair(other)
        out = a.dtype if a.dtype.is_floating_point else dtypes.get_default_dtype()
        return a.detach()._zip(op, b.detach(), out.numpy)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(ops.LT, other)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(ops.GT, other)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(ops.LE, other)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(ops.GE, other)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(ops.EQ, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(ops.NE, other)

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with more than one value is ambiguous (shape "
                f"{self.shape})"
            )
        return bool(self.item())

    # Elementwise functions
    def exp(self) -> Tensor:
        """e^x cell by cell."""
        return F.Exp.apply(self._floating())

    def log(self) -> Tensor:
        """Natural log cell by cell."""
        return F.Log.apply(self._floating())

    def sigmoid(self) -> Tensor:
        """1 / (1 + e^-x) cell by cell."""
        return F.Sigmoid.apply(self._floating())

    def relu(self) -> Tensor:
        """max(x, 0) cell by cell."""
        return F.ReLU.apply(self)

    def tanh(self) -> Tensor:
        """tanh x cell by cell."""
        return F.Tanh.apply(self._floating())

    def sqrt(self) -> Tensor:
        """Square root cell by cell."""
        return F.Sqrt.apply(self._floating())

    def abs(self) -> Tensor:
        """|x| cell by cell."""
        return F.Abs.apply(self)

    def reciprocal(self) -> Tensor:
        """1 / x cell by cell."""
        return F.Reciprocal.apply(self._floating())

    def _floating(self) -> Tensor:
        return self if self.dtype.is_floating_point else self.to(dtypes.get_default_dtype())

    # Conversion
    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """This tensor with another dtype and/or device ("cpu", "cuda"); self if unchanged."""
        dtype, device = self.dtype, self.device
        for arg in list(args) + list(kwargs.values()):
            if isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda"):
                device = arg.split(":")[0]
            elif F.is_tensor(arg):
                dtype, device = arg.dtype, arg.device
            elif arg is not None:
                dtype = dtypes.as_dtype(arg)
        if dtype is self.dtype and device == self.device:
            return self
        backend = self.backend if device == self.device else default_backend(device)
        if self.requires_grad and not dtype.is_floating_point:
            return self.detach()._convert(dtype, backend)
        return F.Cast.apply(self, dtype, backend)  # type: ignore[no-any-return]

    def double(self) -> Tensor:
        """As float64."""
        return self.to(dtypes.float64)

    def float(self) -> Tensor:
        """As float32."""
        return self.to(dtypes.float32)

    def long(self) -> Tensor:
        """As int64."""
        return self.to(dtypes.int64)

    def cuda(self) -> Tensor:
        """A copy on the GPU."""
        return self.to("cuda")

    def cpu(self) -> Tensor:
        """A copy on the CPU (self if already there)."""
        return self.to("cpu")

    def numpy(self) -> np.ndarray:
        """The values as a numpy array (sharing memory for CPU tensors)."""
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self.device != "cpu":
            return self.backend.to_numpy(self._data)
        data = self._data
        item = data.base.itemsize
        return np.lib.stride_tricks.as_strided(
            data.storage, data.shape, tuple(s * item for s in data.strides)
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self.detach().numpy()
        return values.astype(dtype) if dtype is not None else values

    def tolist(self) -> Any:
        """The values as (nested) Python lists."""
        return self.detach().numpy().tolist()

    def item(self) -> Number:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(
                f"a Tensor with {self.numel()} elements cannot be converted to Scalar"
            )
        return self.detach().numpy().reshape(-1)[0].item()  # type: ignore[no-any-return]

    def __float__(self) -> builtins.float:
        return builtins.float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype is not dtypes.int64 or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __repr__(self) -> str:
        body = format_values(self.detach().numpy(), len("tensor("))
        extras = []
        if self.device != "cpu":
            extras.append(f"device='{self.device}:0'")
        if self.dtype not in (dtypes.get_default_dtype(), dtypes.int64) or (
            self.numel() == 0 and self.dtype is dtypes.int64
        ):
            extras.append(f"dtype={self.dtype}")
        if self.history is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body, *extras]) + ")"


class Node:
    """A step of the backward graph (what `grad_fn` returns)."""

    __slots__ = ("_history",)

    def __init__(self, history: History) -> None:
        self._history = history

    def name(self) -> str:
        """The op's name, like "MulBackward"."""
        fn = self._history.last_fn
        return f"{getattr(fn, 'node_name', fn.__name__)}Backward"

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """The nodes of this op's inputs: grad_fns, AccumulateGrad for leaves, else None."""
        nodes: list[tuple[Any, int]] = []
        for value in self._history.inputs:
            if not F.is_tensor(value):
                continue
            if value.history is not None:
                nodes.append((value.grad_fn, 0))
            elif value.requires_grad:
                nodes.append((AccumulateGrad(value), 0))
            else:
                nodes.append((None, 0))
        return tuple(nodes)

    def __repr__(self) -> str:
        return f"<{self.name()}>"


class AccumulateGrad:
    """The node that writes a leaf's `.grad`."""

    __slots__ = ("variable",)

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    def name(self) -> str:
        """Always "AccumulateGrad"."""
        return "AccumulateGrad"

    next_functions: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


class _RemovableHook:
    """A handle whose `remove()` unregisters a hook."""

    def __init__(self, hooks: list[Any], hook: Any) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        """Unregister the hook (again is fine)."""
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def tensor(
    data: Any,
    *,
    requires_grad: bool = False,
    dtype: Any = None,
    device: str | None = None,
    backend: Any = None,
) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested lists or a numpy array)."""
    if F.is_tensor(data):
        values = data.detach().cpu().numpy()
    else:
        values = np.asarray(data)
    if values.dtype == object:
        raise TypeError(f"can't build a tensor from {type(data).__name__} of mixed contents")
    kind = dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data, values)
    chosen = _backend_for(device, backend)
    made = Tensor(chosen.from_numpy(values.astype(kind.numpy)), chosen)
    return made.requires_grad_(requires_grad) if requires_grad else made


def _infer_dtype(data: Any, values: np.ndarray) -> dtypes.DType:
    """PyTorch's rule: ints -> int64, a numpy array keeps its float dtype, else the default."""
    if values.dtype.kind in "iu":
        return dtypes.int64
    if isinstance(data, np.ndarray) and values.dtype.kind == "f":
        return dtypes.from_numpy_dtype(values.dtype)
    if values.dtype.kind in "fb":
        return dtypes.get_default_dtype()
    return dtypes.from_numpy_dtype(values.dtype)


def _backend_for(device: str | None, backend: Any) -> TensorBackend:
    if backend is not None:
        chosen = get_backend(backend)
        if device is not None and device.split(":")[0] != chosen.device:
            raise ValueError(f"backend {chosen.name} runs on {chosen.device}, not {device}")
        return chosen
    return default_backend((device or "cpu").split(":")[0])


def wrap(data: TensorData, backend: TensorBackend) -> Tensor:
    """A tensor over existing TensorData (no copy)."""
    return Tensor(data, backend)


__all__ = ["Tensor", "tensor", "wrap"]
