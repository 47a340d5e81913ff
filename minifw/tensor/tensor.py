"""The Tensor: strided data on a backend, with PyTorch's surface and autograd.

One class, in sections read in this order: metadata; autograd; arithmetic and
comparisons; the elementwise functions (one per row of the op table); logic; shape;
indexing; reductions, linear algebra and sorting; in-place operations; new tensors;
conversions; and the building blocks that the autograd Functions of `functions.py`
call. Every method is thin: the math lives in the Functions (forward beside backward)
and in the modules of this package that each section names, the kernels in the backends.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from minifw.backends import cuda_available, default_backend, get_backend
from minifw.core import dtypes, hooks, unsupported
from minifw.core import operators as ops
from minifw.core.autodiff import History, is_grad_enabled, no_grad
from minifw.core.device import DEVICES, Device, as_device, device_type, is_device_like
from minifw.core.hooks import anyone_listening
from minifw.core.tensor_data import (
    Size,
    TensorData,
    as_size,
    index_view,
    normalize_dim,
    normalize_key,
    numel_of,
)
from minifw.tensor import indexing, logic, math_ops, shaping
from minifw.tensor.autograd import (
    _NOT_LEAF,
    AccumulateGrad,
    Node,
    RemovableHook,
    check_assigned_grad,
    check_hook_result,
    recorded_inputs,
)
from minifw.tensor.autograd import backward as run_backward
from minifw.tensor.functions import (
    Add,
    Cast,
    Copy,
    Div,
    Expand,
    Index,
    MatMul,
    MaxAll,
    MaxAlong,
    Mul,
    Neg,
    Permute,
    Pow,
    Sub,
    Sum,
    View,
    is_tensor,
)
from minifw.tensor.math_ops import number_power, tensor_power
from minifw.tensor.repr import add_suffixes, format_values
from minifw.tensor_ops import TensorBackend, unsafe_overlap

Number = int | float
_BOOL = dtypes.bool
# `t.shape` as an mf.Size, made once per shape: `.shape` is read on hot paths.
_SIZES: dict[tuple[int, ...], Size] = {}


def _new_size(shape: tuple[int, ...]) -> Size:
    """The Size of `shape`, remembered for the next `.shape` read."""
    if len(_SIZES) > 4096:
        _SIZES.clear()
    size = _SIZES[shape] = as_size(shape)
    return size


_IGNORED_TO_OPTIONS = ("non_blocking", "copy", "memory_format")
LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_ERROR = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
VIEW_ERROR = (
    "in-place operations on a view of a tensor that requires grad (or that would make the "
    "view require grad) are not supported by minifw: its base tensor's graph would miss "
    "the change. Use an out-of-place operation instead (for example y = y + x)."
)


class Tensor:
    """An n-dimensional array on a backend, recording operations for autograd.

    Differences from PyTorch, on purpose: the default float dtype is float64, there
    is no int32 (`.int()` gives int64), and a second backward through a freed graph
    always raises.
    """

    __slots__ = (
        "_data", "backend", "dtype", "history", "_grad", "_requires_grad", "_retains_grad",
        "_grad_fn", "_hooks", "_base", "_replaced", "_leaf_node", "__weakref__",
    )  # fmt: skip
    _is_minifw_tensor = True
    __array_priority__ = 1000
    _data: TensorData
    backend: TensorBackend
    dtype: dtypes.DType
    history: History | None
    _grad: Tensor | None
    _requires_grad: bool
    _retains_grad: bool
    _grad_fn: Node | None
    _hooks: list[Any]
    _base: Tensor | None
    _replaced: dict[int, Tensor] | None
    _leaf_node: AccumulateGrad | None

    def __init__(
        self, data: Any = None, backend: Any = None, *sizes: int, requires_grad: bool = False
    ) -> None:
        if data.__class__ is not TensorData:  # PyTorch's legacy mf.Tensor([1., 2.]) / (2, 3)
            given = (data, backend, *sizes) if sizes else (data, backend)
            data, backend = logic.legacy_data(tuple(x for x in given if x is not None))
        self._data = data
        self.backend = backend
        storage_dtype = data.base.dtype
        self.dtype = dtypes.BY_NUMPY.get(storage_dtype) or dtypes.from_numpy_dtype(storage_dtype)
        self.history = None
        self._grad = None
        self._requires_grad = False
        self._retains_grad = False
        self._grad_fn = None
        self._hooks = []
        self._base = None
        self._replaced = None
        self._leaf_node = None
        if requires_grad:
            self.requires_grad_(True)

    # ---- Metadata: shape, dims, strides, device ------------------------------------------

    @property
    def shape(self) -> Size:
        """The size of every dim, as an `mf.Size` (a tuple)."""
        shape = self._data.shape
        return _SIZES.get(shape) or _new_size(shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape (an `mf.Size`), or the size of one dim."""
        if dim is None:
            return self.shape
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
    def device(self) -> Device:
        """Where the storage lives: `device(type='cpu')` or `device(type='cuda', index=0)`."""
        return DEVICES[self.backend.device]

    @property
    def is_cuda(self) -> bool:
        """True for a tensor on the GPU."""
        return self.backend.device == "cuda"

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

    # ---- Autograd: requires_grad, backward, grad_fn, hooks, detach -----------------------

    @property
    def requires_grad(self) -> bool:
        """True when gradients flow to or through this tensor."""
        return self._requires_grad or self.history is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether autograd records operations on this leaf; returns self."""
        if self.history is not None:
            if not requires_grad:
                raise RuntimeError(_NOT_LEAF)
            return self
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients (got {self.dtype})"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        """True for a tensor no recorded op produced."""
        return self.history is None

    @property
    def grad_fn(self) -> Node | None:
        """The node that made this tensor (None for leaves)."""
        if self.history is None:
            return None
        if self._grad_fn is None:
            self._grad_fn = Node(self.history)
        return self._grad_fn  # type: ignore[no-any-return]

    @property
    def grad(self) -> Tensor | None:
        """The gradient backward accumulated here (None until then), as PyTorch's `.grad`."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        """Set `.grad` to None or to a tensor of this tensor's shape, dtype and device."""
        if value is not None:
            check_assigned_grad(self, value)
        self._grad = value

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf tensor after backward (a no-op on leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.history is not None:
            self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        """True for a non-leaf whose `.grad` is kept (see `retain_grad`)."""
        return self._retains_grad

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> Any:
        """Call `hook(grad)` when this tensor's gradient is computed; it may return a new one."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        self._hooks.append(hook)
        return RemovableHook(self._hooks, hook)

    def detach(self) -> Tensor:
        """The same storage, with no history and no grad."""
        return self._new(self._data)

    def detach_(self) -> Tensor:
        """Cut this tensor from its history, in place."""
        self._retire_history()
        self.history = None
        self._grad_fn = None
        self._requires_grad = False
        return self

    def _retire_history(self) -> Tensor:
        """Keep self's current value and history in a new object, for the ops that used it.

        Called before self gets a new history (in-place ops, detach_); returns that object.
        """
        old = self._alias()
        old.history, old._requires_grad = self.history, self._requires_grad
        if self.history is not None:
            replaced = {} if self._replaced is None else self._replaced
            replaced[id(self.history)] = old
            self._replaced = replaced
        return old

    @property
    def data(self) -> Tensor:
        """A detached view of the values (writes do not reach autograd)."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        """Take `value`'s cells, shape, dtype and device, as PyTorch's `p.data = t` does."""
        self._data = value._data
        self.backend = value.backend
        self.dtype = value.dtype

    def backward(
        self,
        gradient: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Accumulate into `.grad` of every leaf the gradient of this tensor.

        Without `gradient` only a one-element tensor may call it. The graph's saved
        values are freed unless `retain_graph` (default: `create_graph`), so a second
        backward raises. With `create_graph` the gradients are recorded (so they can be
        differentiated again); with `inputs` only those tensors' `.grad` change.
        """
        seed = None if gradient is None else [gradient]  # a tensor, array, list or number
        run_backward(self, seed, retain_graph, create_graph, inputs)

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
        return [x for x in recorded_inputs(self.history) if is_tensor(x)]

    def _accumulate(self, x: Tensor, owned: bool = False) -> None:
        """Add `x` to `.grad`; a first gradient is copied unless `owned` (see `Gradient`)."""
        x = x.detach()
        if self._grad is not None:
            self._grad = self._grad._zip(ops.ADD, x)
        else:
            self._grad = x if owned else x._copy()

    def _run_hooks(self, grad: Tensor) -> Tensor:
        """Pass `grad` through the hooks; each may return a replacement of its kind."""
        for hook in list(self._hooks):
            result = hook(grad)
            if result is not None:
                check_hook_result(hook, grad, result)
                grad = result
        return grad

    def _attach(self, history: History) -> None:
        self.history = history
        self._grad_fn = None

    # ---- Arithmetic: operators and their names -------------------------------------------

    def __add__(self, other: Any) -> Tensor:
        a, b = self._pair(other)
        if a.dtype is _BOOL:  # bool + bool is logical or, as in PyTorch
            return logic.logical(a, "or", b)
        return Add.apply(a, b)

    def __radd__(self, other: Any) -> Tensor:
        # `2 + x` is x + 2 (the same sum), as in PyTorch; kernels read x's cells in SIMD
        # lanes and hold the number, the broadcast operand, in a register.
        return self.__add__(other)

    def __sub__(self, other: Any) -> Tensor:
        if self.dtype is _BOOL or (isinstance(other, Tensor) and other.dtype is _BOOL):
            logic.check_sub_operands(self, other)
        return Sub.apply(*self._pair(other))

    def __rsub__(self, other: Any) -> Tensor:
        if self.dtype is _BOOL:
            logic.check_sub_operands(self, other)
        return Sub.apply(*reversed(self._pair(other)))

    def __mul__(self, other: Any) -> Tensor:
        return Mul.apply(*self._pair(other))

    def __rmul__(self, other: Any) -> Tensor:
        return Mul.apply(*self._pair(other))  # `2 * x` is x * 2, as `2 + x` above

    def __truediv__(self, other: Any) -> Tensor:
        return Div.apply(*self._float_pair(other))

    def __rtruediv__(self, other: Any) -> Tensor:
        return Div.apply(*reversed(self._float_pair(other)))

    def __neg__(self) -> Tensor:
        if self.dtype is _BOOL:
            logic.check_negatable(self)
        return Neg.apply(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self.abs()

    def __pow__(self, exponent: Any) -> Tensor:
        return self.pow(exponent)

    def __rpow__(self, base: Any) -> Tensor:
        return number_power(base, self)

    def pow(self, exponent: Any) -> Tensor:
        """Self ** exponent, for a number or a tensor exponent (broadcast, differentiable)."""
        if is_tensor(exponent):
            return tensor_power(self, exponent)
        if not isinstance(exponent, int | float | np.number):
            raise TypeError(f"pow: unsupported exponent type {type(exponent).__name__}")
        base = self
        if isinstance(exponent, float | np.floating) and not self.dtype.is_floating_point:
            base = self.to(dtypes.get_default_dtype())
        elif not self.dtype.is_floating_point and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        elif not self.dtype.is_floating_point:
            return self._int_pow(int(exponent))
        return Pow.apply(base, exponent)

    def _int_pow(self, p: Any) -> Tensor:
        """Self ** p for an int64 tensor and p an int >= 0 or an int64 tensor (broadcast).

        Exact, wrapping on overflow like PyTorch; a negative tensor exponent gives
        PyTorch's integer results (1 ** -n = 1, (-1) ** -n = +-1, else 0). Kernels
        compute through float64 (exact only up to 2**53), so numpy does it.
        """
        if anyone_listening[0]:  # values computed on the host: tell the tools (mf.compile)
            hooks.host_read(f"int64 ** {p} of a tensor of shape {tuple(self.shape)}")
        base = self.backend.to_numpy(self._data)
        exponent = p.backend.to_numpy(p._data) if is_tensor(p) else np.int64(p)
        with np.errstate(over="ignore"):
            host = np.power(base, np.maximum(exponent, 0), dtype=np.int64)
        negative = exponent < 0
        if np.any(negative):
            inverse = np.where(np.abs(base) == 1, base ** (np.abs(exponent) % 2), 0)
            host = np.where(negative, np.where(base == 1, 1, inverse), host).astype(np.int64)
        return self._new(self.backend.from_numpy(np.ascontiguousarray(host)))

    def __mod__(self, other: Any) -> Tensor:
        return math_ops.remainder(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return math_ops.reverse_remainder(self, other)

    def __floordiv__(self, other: Any) -> Tensor:
        return math_ops.divide(self, other, "floor")

    def __rfloordiv__(self, other: Any) -> Tensor:
        return math_ops.reverse_floor_divide(self, other)

    def __matmul__(self, other: Any) -> Tensor:
        return MatMul.apply(*self._pair(other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return MatMul.apply(*reversed(self._pair(other)))

    def matmul(self, other: Tensor) -> Tensor:
        """Self @ other."""
        return self @ other

    def add(self, other: Any, alpha: Any = 1) -> Tensor:
        """Self + alpha * other."""
        return math_ops.add(self, other, alpha)

    def sub(self, other: Any, alpha: Any = 1) -> Tensor:
        """Self - alpha * other."""
        return math_ops.add(self, other, alpha, subtract=True)

    subtract = sub

    def mul(self, other: Any) -> Tensor:
        """Self * other."""
        return self.__mul__(other)

    multiply = mul

    def div(self, other: Any, rounding_mode: str | None = None) -> Tensor:
        """Self / other; rounding_mode "floor" or "trunc" rounds the quotient."""
        return math_ops.divide(self, other, rounding_mode)

    divide = div

    def true_divide(self, other: Any) -> Tensor:
        """Self / other, always in a float dtype."""
        return self.__truediv__(other)

    def neg(self) -> Tensor:
        """-self."""
        return self.__neg__()

    negative = neg

    def remainder(self, other: Any) -> Tensor:
        """Self % other, with the sign of other."""
        return math_ops.remainder(self, other)

    def fmod(self, other: Any) -> Tensor:
        """The remainder of self / other with the sign of self (C's fmod)."""
        return math_ops.fmod(self, other)

    def floor_divide(self, other: Any) -> Tensor:
        """Self // other: the quotient rounded down."""
        return math_ops.divide(self, other, "floor")

    # ---- Comparisons: bool tensors, never differentiated ---------------------------------

    def _compare(self, op: int, other: Any) -> Tensor:
        """`self op other` as a bool tensor (no grad), as PyTorch's comparisons."""
        return logic.compare(self, op, other)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(ops.LT, other)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(ops.GT, other)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(ops.LE, other)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(ops.GE, other)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        if other is None:
            return NotImplemented
        return self._compare(ops.EQ, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        if other is None:
            return NotImplemented
        return self._compare(ops.NE, other)

    def eq(self, other: Any) -> Tensor:
        """Self == other cell by cell."""
        return self.__eq__(other)

    def ne(self, other: Any) -> Tensor:
        """Self != other cell by cell."""
        return self.__ne__(other)

    not_equal = ne

    def lt(self, other: Any) -> Tensor:
        """Self < other cell by cell."""
        return self.__lt__(other)

    less = lt

    def le(self, other: Any) -> Tensor:
        """Self <= other cell by cell."""
        return self.__le__(other)

    less_equal = le

    def gt(self, other: Any) -> Tensor:
        """Self > other cell by cell."""
        return self.__gt__(other)

    greater = gt

    def ge(self, other: Any) -> Tensor:
        """Self >= other cell by cell."""
        return self.__ge__(other)

    greater_equal = ge

    # ---- Elementwise functions: the op table's rows (`math_ops` picks the dtype) ---------

    def exp(self) -> Tensor:
        """e^x cell by cell."""
        return math_ops.floating_unary(self, ops.EXP)

    def log(self) -> Tensor:
        """Natural log cell by cell (-inf at 0, nan below)."""
        return math_ops.floating_unary(self, ops.LOG)

    def sigmoid(self) -> Tensor:
        """1 / (1 + e^-x) cell by cell."""
        return math_ops.floating_unary(self, ops.SIGMOID)

    def relu(self) -> Tensor:
        """max(x, 0) cell by cell."""
        return math_ops.dtype_keeping_unary(self, ops.RELU)

    def tanh(self) -> Tensor:
        """Tanh x cell by cell."""
        return math_ops.floating_unary(self, ops.TANH)

    def sqrt(self) -> Tensor:
        """Square root cell by cell (nan below 0)."""
        return math_ops.floating_unary(self, ops.SQRT)

    def abs(self) -> Tensor:
        """|x| cell by cell."""
        return math_ops.dtype_keeping_unary(self, ops.ABS)

    def reciprocal(self) -> Tensor:
        """1 / x cell by cell."""
        return math_ops.floating_unary(self, ops.INV)

    def sin(self) -> Tensor:
        """Sine cell by cell."""
        return math_ops.floating_unary(self, ops.SIN)

    def cos(self) -> Tensor:
        """Cosine cell by cell."""
        return math_ops.floating_unary(self, ops.COS)

    def tan(self) -> Tensor:
        """Tangent cell by cell."""
        return math_ops.floating_unary(self, ops.TAN)

    def asin(self) -> Tensor:
        """Arcsine cell by cell (nan outside [-1, 1])."""
        return math_ops.floating_unary(self, ops.ASIN)

    def acos(self) -> Tensor:
        """Arccosine cell by cell (nan outside [-1, 1])."""
        return math_ops.floating_unary(self, ops.ACOS)

    def atan(self) -> Tensor:
        """Arctangent cell by cell."""
        return math_ops.floating_unary(self, ops.ATAN)

    def sinh(self) -> Tensor:
        """Hyperbolic sine cell by cell."""
        return math_ops.floating_unary(self, ops.SINH)

    def cosh(self) -> Tensor:
        """Hyperbolic cosine cell by cell."""
        return math_ops.floating_unary(self, ops.COSH)

    def log1p(self) -> Tensor:
        """log(1 + x) cell by cell, accurate near 0."""
        return math_ops.floating_unary(self, ops.LOG1P)

    def expm1(self) -> Tensor:
        """e^x - 1 cell by cell, accurate near 0."""
        return math_ops.floating_unary(self, ops.EXPM1)

    def log2(self) -> Tensor:
        """Base-2 log cell by cell."""
        return math_ops.floating_unary(self, ops.LOG2)

    def log10(self) -> Tensor:
        """Base-10 log cell by cell."""
        return math_ops.floating_unary(self, ops.LOG10)

    def exp2(self) -> Tensor:
        """2^x cell by cell."""
        return math_ops.floating_unary(self, ops.EXP2)

    def rsqrt(self) -> Tensor:
        """The reciprocal square root 1 / sqrt(x) cell by cell."""
        return math_ops.floating_unary(self, ops.RSQRT)

    def erf(self) -> Tensor:
        """The error function cell by cell."""
        return math_ops.floating_unary(self, ops.ERF)

    def square(self) -> Tensor:
        """The square of x cell by cell (int64 stays int64)."""
        return math_ops.dtype_keeping_unary(self, ops.SQUARE)

    def sign(self) -> Tensor:
        """-1, 0 or 1 cell by cell, by the sign of x (int64 stays int64)."""
        return math_ops.dtype_keeping_unary(self, ops.SIGN)

    def floor(self) -> Tensor:
        """Round x down cell by cell."""
        return math_ops.rounding_unary(self, ops.FLOOR)

    def ceil(self) -> Tensor:
        """Round x up cell by cell."""
        return math_ops.rounding_unary(self, ops.CEIL)

    def round(self, *, decimals: int = 0) -> Tensor:
        """Round x to `decimals` places cell by cell, halves to even."""
        return math_ops.round_to(self, decimals)

    def trunc(self) -> Tensor:
        """Round x toward zero cell by cell."""
        return math_ops.rounding_unary(self, ops.TRUNC)

    fix = trunc

    def frac(self) -> Tensor:
        """The fractional part x - trunc(x) cell by cell."""
        return math_ops.frac(self)

    # ---- Elementwise functions of two tensors, or with bounds ----------------------------

    def atan2(self, other: Any) -> Tensor:
        """The angle of the point (other, self) cell by cell."""
        return math_ops.atan2(self, other)

    arctan2 = atan2

    def maximum(self, other: Any) -> Tensor:
        """The larger of self and other cell by cell (nan if either is nan)."""
        return math_ops.maximum(self, other)

    def minimum(self, other: Any) -> Tensor:
        """The smaller of self and other cell by cell (nan if either is nan)."""
        return math_ops.minimum(self, other)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """Self limited to [min, max] cell by cell (numbers or tensors; either may be None)."""
        return math_ops.clamp(self, min, max)

    clip = clamp

    def clamp_min(self, min: Any) -> Tensor:  # noqa: A002
        """Self limited below by min."""
        return math_ops.clamp(self, min, None)

    def clamp_max(self, max: Any) -> Tensor:  # noqa: A002
        """Self limited above by max."""
        return math_ops.clamp(self, None, max)

    def lerp(self, end: Tensor, weight: Any) -> Tensor:
        """Self + weight * (end - self)."""
        return math_ops.lerp(self, end, weight)

    # ---- Logic: bitwise and logical ops, all/any, special values, closeness --------------

    def __and__(self, other: Any) -> Tensor:
        return logic.bitwise(self, "and", other)

    __rand__ = __and__

    def __or__(self, other: Any) -> Tensor:
        return logic.bitwise(self, "or", other)

    __ror__ = __or__

    def __xor__(self, other: Any) -> Tensor:
        return logic.bitwise(self, "xor", other)

    __rxor__ = __xor__

    def __invert__(self) -> Tensor:
        return logic.invert(self)

    def bitwise_and(self, other: Any) -> Tensor:
        """`self & other` (bool or int64)."""
        return logic.bitwise(self, "and", other)

    def bitwise_or(self, other: Any) -> Tensor:
        """`self | other` (bool or int64)."""
        return logic.bitwise(self, "or", other)

    def bitwise_xor(self, other: Any) -> Tensor:
        """`self ^ other` (bool or int64)."""
        return logic.bitwise(self, "xor", other)

    def bitwise_not(self) -> Tensor:
        """`~self` (bool or int64)."""
        return logic.invert(self)

    def logical_and(self, other: Any) -> Tensor:
        """True where both self and other are nonzero."""
        return logic.logical(self, "and", other)

    def logical_or(self, other: Any) -> Tensor:
        """True where self or other is nonzero."""
        return logic.logical(self, "or", other)

    def logical_xor(self, other: Any) -> Tensor:
        """True where exactly one of self and other is nonzero."""
        return logic.logical(self, "xor", other)

    def logical_not(self) -> Tensor:
        """True where self is zero."""
        return logic.logical_not(self)

    def all(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """True where every cell along `dim` (all dims if None) is nonzero."""
        return logic.all_(self, dim, keepdim)

    def any(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """True where some cell along `dim` (all dims if None) is nonzero."""
        return logic.any_(self, dim, keepdim)

    def isnan(self) -> Tensor:
        """True where self is nan."""
        return logic.isnan(self)

    def isinf(self) -> Tensor:
        """True where self is +inf or -inf."""
        return logic.isinf(self)

    def isfinite(self) -> Tensor:
        """True where self is neither inf nor nan."""
        return logic.isfinite(self)

    def isclose(
        self, other: Any, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
        equal_nan: bool = False,
    ) -> Tensor:  # fmt: skip
        """True where |self - other| <= atol + rtol * |other|."""
        return logic.isclose(self, other, rtol, atol, equal_nan)

    def allclose(
        self, other: Any, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
        equal_nan: bool = False,
    ) -> bool:  # fmt: skip
        """True when every cell of self is close to other's (see `isclose`)."""
        return logic.allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other: Tensor) -> bool:
        """True when self and other have the same shape and values."""
        return logic.equal(self, other)

    # ---- Shape: views first, copies only when needed -------------------------------------

    def view(self, *shape: Any) -> Tensor:
        """The same cells under a new shape (one dim may be -1); never copies.

        Raises PyTorch's error, suggesting `reshape`, when the strides do not allow it.
        """
        target = infer_shape(shape_arg(shape), self.numel(), self.shape)
        return View.apply(self, target)

    def view_as(self, other: Tensor) -> Tensor:
        """View with other's shape."""
        return self.view(other.shape)

    def reshape(self, *shape: Any) -> Tensor:
        """Like view, but copies when the strides do not allow a view."""
        target = infer_shape(shape_arg(shape), self.numel(), self.shape)
        if self._data.view(target) is not None:
            return self.view(target)
        out = Copy.apply(self).view(target)
        out._base = None  # a fresh copy: in-place ops on it touch nobody else's cells
        return out

    def reshape_as(self, other: Tensor) -> Tensor:
        """Reshape to other's shape."""
        return self.reshape(other.shape)

    def contiguous(self) -> Tensor:
        """Self if row-major already, else a row-major copy."""
        return self if self.is_contiguous() else Copy.apply(self)

    def clone(self) -> Tensor:
        """A copy with its own storage (gradients flow back to self)."""
        return Copy.apply(self)

    def permute(self, *dims: Any) -> Tensor:
        """A view with dims reordered: new dim i is old dim dims[i]."""
        order = shape_arg(dims)
        self._data.permute(*order)  # validates, with PyTorch's messages
        return Permute.apply(self, tuple(normalize_dim(d, self.dim()) for d in order))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """A view with two dims swapped."""
        order = list(range(self.dim()))
        d0, d1 = normalize_dim(dim0, self.dim()), normalize_dim(dim1, self.dim())
        order[d0], order[d1] = order[d1], order[d0]
        return self.permute(*order)

    def t(self) -> Tensor:
        """The transpose of a matrix (a 0-D or 1-D tensor is returned as is)."""
        if self.dim() > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D"
            )
        return self.transpose(0, 1) if self.dim() == 2 else self.view(self.shape)

    @property
    def T(self) -> Tensor:
        """All dims reversed (the transpose of a matrix)."""
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self) -> Tensor:
        """The last two dims swapped (batched matrix transpose)."""
        return self.transpose(-2, -1)

    def unsqueeze(self, dim: int) -> Tensor:
        """A view with a new dim of size 1 at `dim` (negative dims count from the end)."""
        d = normalize_dim(dim, self.dim() + 1)
        return self.view(*self.shape[:d], 1, *self.shape[d:])

    def squeeze(self, dim: Any = None) -> Tensor:
        """A view without the size-1 dims (or without `dim`, if it has size 1)."""
        if dim is None:
            dims = {i for i, s in enumerate(self.shape) if s == 1}
        else:
            given = dim if isinstance(dim, tuple | list) else (dim,)
            dims = {normalize_dim(d, self.dim()) for d in given}
            dims = {d for d in dims if self.dim() and self.shape[d] == 1}
        return self.view(*(s for i, s in enumerate(self.shape) if i not in dims))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """The dims from start_dim to end_dim merged into one (a view when possible)."""
        if self.dim() == 0:
            return self.reshape(1)
        start, end = normalize_dim(start_dim, self.dim()), normalize_dim(end_dim, self.dim())
        if start > end:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        merged = numel_of(self.shape[start : end + 1])
        return self.reshape(*self.shape[:start], merged, *self.shape[end + 1 :])

    def unflatten(self, dim: int, sizes: Any) -> Tensor:
        """Dim `dim` split into `sizes` (one may be -1)."""
        return shaping.unflatten(self, dim, sizes)

    def expand(self, *shape: Any) -> Tensor:
        """A broadcast view with size-1 dims repeated to `shape` (-1 keeps a size)."""
        return Expand.apply(self, shape_arg(shape))

    def expand_as(self, other: Tensor) -> Tensor:
        """Expand to other's shape."""
        return self.expand(*other.shape)

    def broadcast_to(self, shape: Any) -> Tensor:
        """A broadcast view with `shape` (as `expand`)."""
        return shaping.broadcast_to(self, shape)

    def movedim(self, source: Any, destination: Any) -> Tensor:
        """A view with dims `source` moved to positions `destination`."""
        return shaping.movedim(self, source, destination)

    moveaxis = movedim

    def swapaxes(self, axis0: int, axis1: int) -> Tensor:
        """A view with two dims swapped (an alias of transpose)."""
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """The view of `length` positions from `start` along `dim`."""
        return shaping.narrow(self, dim, start, length)

    def select(self, dim: int, index: int) -> Tensor:
        """The view at `index` along `dim`, without that dim."""
        return shaping.select(self, dim, index)

    def split(self, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
        """Views along `dim` of one size each (the last may be smaller), or of given sizes."""
        return shaping.split(self, split_size, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """At most `chunks` views of equal size along `dim`."""
        return shaping.chunk(self, chunks, dim)

    def tensor_split(self, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
        """Views along `dim`: `n` nearly equal sections, or cut before each index."""
        return shaping.tensor_split(self, indices_or_sections, dim)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        """Every slice along `dim`, without that dim."""
        return shaping.unbind(self, dim)

    def flip(self, *dims: Any) -> Tensor:
        """A copy with the cells reversed along `dims`."""
        return shaping.flip(self, *dims)

    def fliplr(self) -> Tensor:
        """Flipped along dim 1."""
        return shaping.fliplr(self)

    def flipud(self) -> Tensor:
        """Flipped along dim 0."""
        return shaping.flipud(self)

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        """A copy with the cells shifted (wrapping around) along `dims`."""
        return shaping.roll(self, shifts, dims)

    def repeat(self, *sizes: Any) -> Tensor:
        """A copy tiled `sizes[i]` times along each dim."""
        return shaping.repeat(self, *sizes)

    def tile(self, *dims: Any) -> Tensor:
        """`repeat` with missing leading sizes taken as 1."""
        return shaping.tile(self, *dims)

    def repeat_interleave(
        self, repeats: Any, dim: int | None = None, *, output_size: int | None = None
    ) -> Tensor:
        """Each cell (or slice along `dim`) repeated in place."""
        return shaping.repeat_interleave(self, repeats, dim, output_size=output_size)

    def diag(self, diagonal: int = 0) -> Tensor:
        """A vector as a diagonal matrix, or a matrix's diagonal."""
        return shaping.diag(self, diagonal)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The view of a diagonal of dims dim1 and dim2, as the last dim."""
        return shaping.diagonal(self, offset, dim1, dim2)

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        """Matrices with the last dim on a diagonal."""
        return shaping.diag_embed(self, offset, dim1, dim2)

    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two dims, zeros above."""
        return shaping.tril(self, diagonal)

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two dims, zeros below."""
        return shaping.triu(self, diagonal)

    def unsqueeze_(self, dim: int) -> Tensor:
        """`unsqueeze` in place (on the shape; the cells stay)."""
        return shaping.reshape_inplace(self, lambda t: t.unsqueeze(dim))

    def squeeze_(self, dim: Any = None) -> Tensor:
        """`squeeze` in place (on the shape; the cells stay)."""
        return shaping.reshape_inplace(self, lambda t: t.squeeze(dim))

    def t_(self) -> Tensor:
        """`t` in place (on the strides; the cells stay)."""
        return shaping.reshape_inplace(self, lambda t: t.t())

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        """`transpose` in place (on the strides; the cells stay)."""
        return shaping.reshape_inplace(self, lambda t: t.transpose(dim0, dim1))

    # ---- Indexing: reading and writing cells by key, index tensor or mask ----------------

    def __getitem__(self, key: Any) -> Tensor:
        try:
            items = normalize_key(key)
        except TypeError:  # an index tensor, list or mask: a copy (tensor/indexing.py)
            return indexing.getitem(self, key)
        return Index.apply(self, tuple(items))

    def __setitem__(self, key: Any, value: Any) -> None:
        """`t[key] = value` in place, under PyTorch's in-place autograd rules.

        Keys holding index tensors, lists or masks, and assignments that autograd must
        record, go to `indexing.setitem`; the rest copy into a view.
        """
        try:
            target = index_view(self._data, key)
        except TypeError:
            indexing.setitem(self, key, value)
            return
        _check_writable_memory(self)
        value_grad = getattr(value, "_is_minifw_tensor", False) and value.requires_grad
        if is_grad_enabled() and (self.requires_grad or value_grad):
            if self.requires_grad and self.is_leaf:
                raise RuntimeError(VIEW_OF_LEAF_ERROR)
            indexing.setitem(self, key, value)  # recorded: gradients reach both sides
            return
        source = self._operand(value).detach()
        if source.dtype.is_floating_point and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"Index put requires the source and destination dtypes match, got "
                f"{self.dtype} for the destination and {source.dtype} for the source."
            )
        self.backend.copy_into(target, source.to(self.dtype)._data)
        self._bump_version()

    def gather(self, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
        """The values along `dim` at the positions `index` gives (index has self's dims)."""
        return indexing.gather(self, dim, index)

    def scatter(
        self, dim: int, index: Tensor, src: Any = None, value: Any = None, *,
        reduce: str | None = None,
    ) -> Tensor:  # fmt: skip
        """A copy with `src` (a tensor or number, or `value`) written at `index` along dim."""
        return indexing.scatter(self, dim, index, src, value, reduce)

    def scatter_(
        self, dim: int, index: Tensor, src: Any = None, value: Any = None, *,
        reduce: str | None = None,
    ) -> Tensor:  # fmt: skip
        """`scatter` into self's cells."""
        return self._inplace(lambda old: indexing.scatter(old, dim, index, src, value, reduce))

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """A copy with `src` added at `index` along dim (repeated positions accumulate)."""
        return indexing.scatter_add(self, dim, index, src)

    def scatter_add_(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """`scatter_add` into self's cells."""
        return self._inplace(lambda old: indexing.scatter_add(old, dim, index, src))

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        """The slices along `dim` at the positions of the 1-D `index` (a copy)."""
        return indexing.index_select(self, dim, index)

    def masked_fill(self, mask: Tensor, value: Any) -> Tensor:
        """A copy with `value` where the bool `mask` (broadcasting) is True."""
        return indexing.masked_fill(self, mask, value)

    def masked_fill_(self, mask: Tensor, value: Any) -> Tensor:
        """Write `value` into the cells where `mask` is True."""
        return indexing.masked_fill_(self, mask, value)

    def masked_select(self, mask: Tensor) -> Tensor:
        """The cells where the bool `mask` (broadcasting) is True, as a 1-D tensor."""
        return indexing.masked_select(self, mask)

    def take(self, index: Tensor) -> Tensor:
        """The cells of the flattened tensor at `index`, in index's shape."""
        return indexing.take(self, index)

    def take_along_dim(self, indices: Tensor, dim: int | None = None) -> Tensor:
        """`gather` along dim after broadcasting self and indices (flat if dim is None)."""
        return indexing.take_along_dim(self, indices, dim)

    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
        """A copy with `values` written (or added) at `self[indices]`."""
        key = indexing.indices_tuple(indices, "index_put")
        return indexing.index_put(self, key, values, accumulate)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
        """Write (or add, `accumulate`) `values` at `self[indices]`, in place."""
        key = indexing.indices_tuple(indices, "index_put_")
        return indexing.index_put_(self, key, values, accumulate)

    def index_add(self, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """A copy with `alpha * source` added to the slices along dim at the 1-D `index`."""
        return indexing.index_add(self, dim, index, source, alpha)

    def index_add_(self, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """`index_add` into self's cells."""
        return self._inplace(lambda old: indexing.index_add(old, dim, index, source, alpha))

    def index_copy(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """A copy with the slices along dim at `index` replaced by source's."""
        return indexing.index_copy(self, dim, index, source)

    def index_copy_(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """`index_copy` into self's cells."""
        return self._inplace(lambda old: indexing.index_copy(old, dim, index, source))

    def index_fill(self, dim: int, index: Tensor, value: Any) -> Tensor:
        """A copy with `value` in the slices along dim at `index`."""
        return indexing.index_fill(self, dim, index, value)

    def index_fill_(self, dim: int, index: Tensor, value: Any) -> Tensor:
        """`index_fill` into self's cells."""
        return self._inplace(lambda old: indexing.index_fill(old, dim, index, value))

    # ---- Reductions and scans ------------------------------------------------------------

    def sum(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Sum over `dim` (all dims if None); bools count as int64, as in PyTorch."""
        dims = reduce_dims(dim, self.dim())
        if self.dtype is _BOOL:
            return Sum.apply(self.long(), dims, keepdim)
        return Sum.apply(self, dims, keepdim)

    def mean(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Average over `dim` (all dims if None)."""
        if not self.dtype.is_floating_point:
            raise RuntimeError(
                f"mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {self.dtype}"
            )
        dims = reduce_dims(dim, self.dim())
        count = numel_of([self.shape[d] for d in dims])
        return self.sum(dims, keepdim) / float(count)

    def var(
        self, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None,
    ) -> Tensor:  # fmt: skip
        """Variance over `dim`, dividing by N - correction (1 by default), as PyTorch.

        PyTorch's argument order: `var(dim, unbiased, keepdim)`; `unbiased=False` is
        `correction=0`. With a single element and correction 1 the result is nan.
        """
        return reductions.var(self, dim, unbiased, keepdim, correction=correction)

    def std(
        self, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None,
    ) -> Tensor:  # fmt: skip
        """Standard deviation over `dim` (the square root of `var`, same arguments).

        Where the variance is 0 the gradient is 0, as in PyTorch (not 0 * inf = nan).
        """
        return reductions.std(self, dim, unbiased, keepdim, correction=correction)

    def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The largest value; with `dim`, a (values, indices) pair like PyTorch's."""
        if self.dtype is _BOOL:
            return logic.bool_extreme(self.long().max(dim, keepdim))
        if dim is None:
            _check_nonempty(self, "max")
            return MaxAll.apply(self)
        d = normalize_dim(_int_dim(dim, "max"), self.dim())
        _check_reduced_dim(self, d, "max")
        indices = self.argmax(d, keepdim=True)
        if self.dim() == 0:
            return MaxResult(self.clone(), indices)
        values = MaxAlong.apply(self, d, indices, keepdim)
        return MaxResult(values, indices if keepdim else indices.squeeze(d))

    def min(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The smallest value; with `dim`, a (values, indices) pair like PyTorch's."""
        if self.dtype is _BOOL:
            return logic.bool_extreme(self.long().min(dim, keepdim))
        if dim is None:
            _check_nonempty(self, "min")
            return -((-self).max())
        _check_reduced_dim(self, normalize_dim(_int_dim(dim, "min"), self.dim()), "min")
        values, indices = (-self).max(dim, keepdim)
        return MaxResult(-values, indices)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the (first) largest value along `dim` (of the flattened tensor if None)."""
        if dim is None:
            flat = self.detach().reshape(-1)
            out = flat.argmax(0)
            return out.view(*([1] * self.dim())) if keepdim else out
        d = normalize_dim(_int_dim(dim, "argmax"), self.dim())
        _check_reduced_dim(self, d, "argmax")
        if self.dim() == 0:
            return self._full((), 0).long()
        with no_grad():
            x = self.detach()
            best = x._reduce(ops.MAX, d)
            # int64 marks and positions: no dtype cast (a host round trip mf.compile refuses)
            hits = x._zip(ops.EQ, best, np.int64)
            if x.dtype.is_floating_point:  # a nan is the max (as in PyTorch): mark the nans
                hits = hits._zip(ops.ADD, x._zip(ops.NE, x, np.int64))
            # Position i along d scores n - i where marked, 0 elsewhere: the first mark
            # scores highest, and n minus the best score is its index.
            n, shape = x.shape[d], [1] * x.dim()
            shape[d] = n
            countdown = x._arange(n, dtypes.int64, countdown=True).view(*shape)
            best_score = hits._zip(ops.MUL, countdown)._reduce(ops.MAX, d)
            indices = best_score._scalar_like(n)._zip(ops.SUB, best_score)
        return indices if keepdim else indices.squeeze(d)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the (first) smallest value along `dim`."""
        if dim is not None:
            d = normalize_dim(_int_dim(dim, "argmin"), self.dim())
            _check_reduced_dim(self, d, "argmin")
        return (-self.detach()).argmax(dim, keepdim)

    def prod(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """The product of all cells, or along `dim`."""
        return reductions.prod(self, dim, keepdim, dtype=dtype)

    def cumsum(self, dim: int, *, dtype: Any = None) -> Tensor:
        """Running sums along `dim`."""
        return reductions.cumsum(self, dim, dtype=dtype)

    def cumprod(self, dim: int, *, dtype: Any = None) -> Tensor:
        """Running products along `dim`."""
        return reductions.cumprod(self, dim, dtype=dtype)

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Tensor:
        """log(sum(exp(self))) over `dim`, computed without overflow."""
        return reductions.logsumexp(self, dim, keepdim)

    def norm(
        self, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None
    ) -> Tensor:
        """The p-norm over `dim` (all dims if None); "fro" is the 2-norm."""
        return reductions.norm(self, p, dim, keepdim, dtype)

    def amax(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        """The largest value over `dim` (an int or a tuple; () means every dim)."""
        return reductions.amax(self, dim, keepdim)

    def amin(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        """The smallest value over `dim` (an int or a tuple; () means every dim)."""
        return reductions.amin(self, dim, keepdim)

    def count_nonzero(self, dim: Any = None) -> Tensor:
        """How many cells are not zero (over `dim`), as int64."""
        return reductions.count_nonzero(self, dim)

    # ---- Linear algebra ------------------------------------------------------------------

    def mm(self, mat2: Tensor) -> Tensor:
        """Matrix product of two 2-D tensors."""
        return linalg.mm(self, mat2)

    def bmm(self, mat2: Tensor) -> Tensor:
        """Batched matrix product of two 3-D tensors."""
        return linalg.bmm(self, mat2)

    def mv(self, vec: Tensor) -> Tensor:
        """Matrix-vector product."""
        return linalg.mv(self, vec)

    def dot(self, other: Tensor) -> Tensor:
        """Inner product of two 1-D tensors."""
        return linalg.dot(self, other)

    def outer(self, vec2: Tensor) -> Tensor:
        """Outer product of two 1-D tensors."""
        return linalg.outer(self, vec2)

    ger = outer

    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
        """Return beta * self + alpha * (mat1 @ mat2)."""
        return linalg.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    # ---- Sorting and searching -----------------------------------------------------------

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        """(values, indices) sorted along `dim`."""
        return sorting.sort(self, dim, descending, stable)

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
        """The indices that sort self along `dim`."""
        return sorting.argsort(self, dim, descending, stable)

    def msort(self) -> Tensor:
        """Sorted along dim 0."""
        return sorting.msort(self)

    def topk(
        self, k: int, dim: int = -1, largest: bool = True,
        sorted: bool = True,  # noqa: A002 - PyTorch's name
    ) -> Any:  # fmt: skip
        """(values, indices) of the k largest (or smallest) cells along `dim`."""
        return sorting.topk(self, k, dim, largest, sorted)

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> Any:
        """(value, index) of the k-th smallest cell along `dim`."""
        return sorting.kthvalue(self, k, dim, keepdim)

    def unique(
        self, sorted: bool = True,  # noqa: A002 - PyTorch's name
        return_inverse: bool = False, return_counts: bool = False, dim: int | None = None,
    ) -> Any:  # fmt: skip
        """The distinct values (sorted), with inverse indices and counts if asked."""
        return sorting.unique(self, sorted, return_inverse, return_counts, dim)

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """Coordinates of the nonzero cells ((n, ndim) int64, or a tuple per dim)."""
        return sorting.nonzero(self, as_tuple=as_tuple)

    def argwhere(self) -> Tensor:
        """Coordinates of the nonzero cells, (n, ndim) int64."""
        return sorting.argwhere(self)

    # ---- In-place operations (the elementwise functions' twins are made below the class) ----

    def _inplace(self, compute: Callable[[Tensor], Tensor], keep_old: bool = False) -> Tensor:
        """Write compute(current value) into self's cells; autograd records the new value.

        `keep_old`: the recorded op saves the current value for its backward, so it gets
        a copy of it (the write would otherwise overwrite what the backward reads).
        """
        _check_writable_memory(self)
        recording = is_grad_enabled()
        if recording:
            _check_inplace(self, self.requires_grad)
        old = self._retire_history() if recording and self.requires_grad else self.detach()
        if recording and keep_old:
            old._data, old._base = self.backend.contiguous(self._data), None
        if recording:
            result = compute(old)
        else:
            with no_grad():
                result = compute(old)
        if result.dtype.is_floating_point and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"result type Float can't be cast to the desired output type Long (in-place "
                f"op on a {self.dtype} tensor of shape {tuple(self.shape)} with a "
                f"{result.dtype} result)"
            )
        recording = recording and result.requires_grad
        if recording:
            _check_inplace(self, True)
        result = result.to(self.dtype)
        self.backend.copy_into(self._data, result.detach()._data)
        if recording:
            self._attach(result.history)  # type: ignore[arg-type]
        self._bump_version()
        return self

    def _zip_inplace(
        self: Tensor, op: int, other: Any, compute: Callable[[Tensor], Tensor],
        saves_self: bool = False,
    ) -> Tensor:  # fmt: skip
        """Self = self op other: one launch into self's cells when autograd records nothing.

        That is when neither takes part in a recorded graph and other is a float of
        self's dtype whose cells self's writes cannot reach first; otherwise `_inplace`.
        `saves_self`: the op's backward reads self's old value when other needs a
        gradient (mul, div), so `_inplace` then keeps a copy of it.
        """
        _check_writable_memory(self)
        operand = self._operand(other)
        recording = is_grad_enabled()
        if (
            (recording and (self.requires_grad or operand.requires_grad))
            or not self.dtype.is_floating_point
            or operand.dtype is not self.dtype
            or unsafe_overlap(self._data, operand._data)
        ):
            return self._inplace(compute, saves_self and recording and operand.requires_grad)
        if recording:
            _check_inplace(self, False)
        self.backend.zip(op, self._data, operand._data, out=self._data)
        self._bump_version()
        return self

    def add_(self, other: Any, alpha: float = 1.0) -> Tensor:
        """Self += alpha * other, in place."""
        if alpha != 1.0:
            return self._inplace(lambda old: old + other * alpha)
        return self._zip_inplace(ops.ADD, other, lambda old: old + other)

    def sub_(self, other: Any, alpha: float = 1.0) -> Tensor:
        """Self -= alpha * other, in place."""
        if alpha != 1.0:
            return self._inplace(lambda old: old - other * alpha)
        return self._zip_inplace(ops.SUB, other, lambda old: old - other)

    def mul_(self, other: Any) -> Tensor:
        """Self *= other, in place."""
        return self._zip_inplace(ops.MUL, other, lambda old: old * other, saves_self=True)

    def div_(self, other: Any) -> Tensor:
        """Self /= other, in place (an error on int64 tensors, as in PyTorch)."""
        return self._zip_inplace(ops.DIV, other, lambda old: old / other, saves_self=True)

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)

    def __imod__(self, other: Any) -> Tensor:
        return self._inplace(lambda old: old.remainder(other), keep_old=True)

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._inplace(lambda old: old.floor_divide(other))

    def __iand__(self, other: Any) -> Tensor:
        return logic.bitwise_inplace(self, "and", other)

    def __ior__(self, other: Any) -> Tensor:
        return logic.bitwise_inplace(self, "or", other)

    def __ixor__(self, other: Any) -> Tensor:
        return logic.bitwise_inplace(self, "xor", other)

    def pow_(self, exponent: Any) -> Tensor:
        """Self ** exponent in place."""
        return self._inplace(lambda old: old.pow(exponent), keep_old=True)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """Clamp in place."""
        return self._inplace(lambda old: old.clamp(min, max), keep_old=True)

    clip_ = clamp_

    def clamp_min_(self, min: Any) -> Tensor:  # noqa: A002
        """Clamp below in place."""
        return self._inplace(lambda old: old.clamp(min, None), keep_old=True)

    def clamp_max_(self, max: Any) -> Tensor:  # noqa: A002
        """Clamp above in place."""
        return self._inplace(lambda old: old.clamp(None, max), keep_old=True)

    def lerp_(self, end: Tensor, weight: Any) -> Tensor:
        """Self + weight * (end - self), in place."""
        return self._inplace(lambda old: old.lerp(end, weight), keep_old=True)

    def zero_(self) -> Tensor:
        """Set every cell to 0."""
        return self.fill_(0)

    def fill_(self, value: Any) -> Tensor:
        """Set every cell to `value` (a number or a 0-dim tensor)."""
        if getattr(value, "_is_minifw_tensor", False) and value.dim() != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.dim()} dimensions."
            )
        return self.copy_(value)

    def copy_(self, src: Any) -> Tensor:
        """Copy `src` (broadcast to self's shape, converted to self's dtype) into self."""

        def compute(old: Tensor) -> Tensor:
            source = old._operand(src)
            if source.dtype.is_floating_point and not old.dtype.is_floating_point:
                source = source.detach()  # floats are truncated into an int64 tensor
            return source.to(old.dtype).expand(*old.shape)

        return self._inplace(compute)

    # ---- New tensors like this one -------------------------------------------------------

    def new_tensor(self, data: Any, **options: Any) -> Tensor:
        """A new tensor of `data`, with self's dtype and device unless given."""
        return tensor(data, **_new_options(self, options))

    def new_full(self, size: Any, fill_value: Any, **options: Any) -> Tensor:
        """A tensor of `size` filled with `fill_value`, with self's dtype and device."""
        return creation.full(size, fill_value, **_new_options(self, options))

    def new_zeros(self, *size: Any, **options: Any) -> Tensor:
        """Zeros of `size`, with self's dtype and device."""
        return self.new_full(shape_arg(size), 0, **options)

    def new_ones(self, *size: Any, **options: Any) -> Tensor:
        """Ones of `size`, with self's dtype and device."""
        return self.new_full(shape_arg(size), 1, **options)

    def new_empty(self, *size: Any, **options: Any) -> Tensor:
        """A tensor of `size` (its values unset: zeros here), with self's dtype and device."""
        return self.new_zeros(*size, **options)

    # ---- Conversions: dtype, device, numpy, Python numbers, repr -------------------------

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """This tensor with another dtype and/or device ("cpu", "cuda"); self if unchanged.

        Accepts `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other_tensor)` and
        the keywords `dtype=` and `device=`, as PyTorch does.
        """
        if not kwargs and len(args) == 1 and args[0] is self.dtype:
            return self  # the common no-op: already of that dtype
        dtype, device = self.dtype, self.backend.device
        options = {k: v for k, v in kwargs.items() if k not in _IGNORED_TO_OPTIONS}
        for arg in list(args) + list(options.values()):
            if is_device_like(arg):
                device = device_type(arg)  # type: ignore[assignment]
            elif is_tensor(arg):
                dtype, device = arg.dtype, arg.backend.device
            elif arg is not None:
                dtype = dtypes.as_dtype(arg)
        if dtype is self.dtype and device == self.backend.device:
            return self
        backend = self.backend if device == self.backend.device else default_backend(device)
        if self.requires_grad and not dtype.is_floating_point:
            return self.detach()._convert(dtype, backend)
        return Cast.apply(self, dtype, backend)

    def double(self) -> Tensor:
        """As float64."""
        return self.to(dtypes.float64)

    def float(self) -> Tensor:
        """As float32 (PyTorch's `float`; note minifw's default float dtype is float64)."""
        return self.to(dtypes.float32)

    def long(self) -> Tensor:
        """As int64 (floats are truncated toward zero)."""
        return self.to(dtypes.int64)

    def type_as(self, other: Tensor) -> Tensor:
        """As other's dtype."""
        return self.to(other.dtype)

    def is_floating_point(self) -> bool:
        """True for float64 and float32 tensors."""
        return self.dtype.is_floating_point

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
        """A copy on the GPU (self if already there); `device` may name a GPU index."""
        if device is not None and as_device(device).type != "cuda":
            raise RuntimeError(f"Invalid device, must be cuda device (got {device})")
        return self.to("cuda")

    def cpu(self) -> Tensor:
        """A copy on the CPU (self if already there)."""
        return self.to("cpu")

    def pin_memory(self, device: Any = None) -> Tensor:
        """Self: minifw never pins host memory. Without a GPU, PyTorch's RuntimeError."""
        del device
        if not cuda_available():
            raise RuntimeError(
                "Cannot access accelerator device when none is available. (minifw found no "
                "GPU; pinned memory only speeds up copies to one)"
            )
        return self

    def is_pinned(self, device: Any = None) -> bool:
        """False: minifw never pins host memory."""
        del device
        return False

    def _convert(self, dtype: dtypes.DType, backend: TensorBackend) -> Tensor:
        """A copy with `dtype` on `backend` (the same storage if nothing changes)."""
        if backend.device == self.backend.device and dtype is self.dtype:
            return self._wrap(self._data, backend)
        if backend is self.backend and _BOOL in (dtype, self.dtype):
            # one kernel on the device: no round trip through the host, and mf.compile
            # can replay (and fuse) it, as it cannot a host cast
            return logic.to_bool(self) if dtype is _BOOL else logic.from_bool(self, dtype)
        host = self.backend.to_numpy(self._data).astype(dtype.numpy)
        return self._wrap(backend.from_numpy(host), backend)

    def numpy(self) -> np.ndarray:
        """The values as a numpy array: sharing memory for CPU tensors, a copy otherwise."""
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if anyone_listening[0]:  # CPU reads launch nothing: tell the tools (mf.compile)
            hooks.host_read(f"numpy() of a tensor of shape {tuple(self.shape)}")
        if self.backend.device != "cpu":
            return self.backend.to_numpy(self._data)
        return host_view(self._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self.detach().numpy()
        if dtype is not None:
            values = values.astype(dtype)
        return values.copy() if copy else values

    def tolist(self) -> Any:
        """The values as (nested) Python lists; a number for a 0-dim tensor."""
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
            raise TypeError(
                "only integer tensors of a single element can be converted to an index"
            )
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            logic.check_bool_value(self)
        return bool(self.item())

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __repr__(self) -> str:
        body = format_values(self.detach().cpu().numpy(), len("tensor("))
        extras = []
        if self.backend.device != "cpu":
            extras.append(f"device='{self.device}'")
        if self.numel() == 0 and self.dim() != 1:
            extras.append(f"size={tuple(self.shape)}")
        if self.dtype not in (dtypes.get_default_dtype(), dtypes.int64, _BOOL) or (
            self.numel() == 0 and self.dtype in (dtypes.int64, _BOOL)
        ):
            extras.append(f"dtype={self.dtype}")
        node = self.grad_fn
        if node is not None:
            extras.append(f"grad_fn=<{node.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + add_suffixes(body, extras, len("tensor(")) + ")"

    # ---- Building blocks of the Functions and kernels' callers (no autograd) -------------

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
        data = self.backend.empty(shape, self.dtype.numpy)
        if anyone_listening[0]:  # made without a launch: tell mf.compile's capture
            hooks.fresh(data, self.backend, None)
        return self._new(data)

    def _full(self, shape: tuple[int, ...], value: Number) -> Tensor:
        data = self.backend.full(shape, value, self.dtype.numpy)
        if anyone_listening[0]:  # made without a launch: tell mf.compile's capture
            hooks.fresh(data, self.backend, value)
        return self._new(data)

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
        positions = self._arange(self.shape[dim], indices.dtype).view(*shape)
        return positions._zip(ops.EQ, indices, self.dtype.numpy)  # one kernel, no cast

    def _arange(
        self, n: int, dtype: dtypes.DType | None = None, countdown: bool = False
    ) -> Tensor:
        """0, 1, ..., n - 1 on self's device (n, n - 1, ..., 1 with `countdown`)."""
        kind = (dtype or self.dtype).numpy
        host = np.arange(n, 0, -1, dtype=kind) if countdown else np.arange(n, dtype=kind)
        return Tensor(self.backend.from_numpy(host), self.backend)

    def _operand(self, other: Any) -> Tensor:
        """`other` as a tensor on this device; Python numbers take self's dtype kind."""
        if is_tensor(other):
            if other.backend.device != self.backend.device:
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two "
                    f"devices, {self.device} and {other.device}! (shapes {tuple(self.shape)} and "
                    f"{tuple(other.shape)})"
                )
            return other  # type: ignore[no-any-return]
        if isinstance(other, bool | int | float | np.number):
            dtype = dtypes.scalar_dtype(self.dtype, other)  # bool tensor + int is int64
            return Tensor(self.backend.full((), other, dtype.numpy), self.backend)  # type: ignore[arg-type]
        return tensor(other, backend=self.backend)

    def _pair(self, other: Any) -> tuple[Tensor, Tensor]:
        b = self._operand(other)
        if b.dtype is self.dtype:  # the common case: nothing to promote
            return self, b
        dtype = dtypes.result_type(self.dtype, not self.shape, b.dtype, not b.shape)
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

    def __getattr__(self, name: str) -> Any:
        """Only for missing names: one PyTorch leaves out on purpose says why."""
        refused = unsupported.refuse("torch.Tensor", name)
        if refused is not None:
            raise refused
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")

    # ---- Conversions named like builtins, last (the annotations above mean the builtins) ----

    def bool(self) -> Tensor:
        """As bool: True where nonzero (nan counts as True)."""
        return self.to(_BOOL)

    def int(self) -> Tensor:
        """As int64: minifw has no int32, so PyTorch's `.int()` gives int64 here."""
        return self.to(dtypes.int64)

    def type(self, dtype: Any = None, non_blocking: Any = False) -> Any:
        """PyTorch's type string ('torch.FloatTensor') without `dtype`, else self as `dtype`."""
        return logic.type_of(self, dtype)


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
    values = _refuse_overflow(data, values, dtype)
    if values.dtype == object or values.dtype.kind not in "biuf":
        raise TypeError(
            f"can't build a tensor from {type(data).__name__} holding {values.dtype} values; "
            f"expected numbers"
        )
    kind = dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data, values)
    chosen = backend_for(device, backend)
    made = Tensor(chosen.from_numpy(values.astype(kind.numpy)), chosen)
    return made.requires_grad_(requires_grad) if requires_grad else made


def _refuse_overflow(data: Any, values: np.ndarray, dtype: Any) -> np.ndarray:
    """`values`, refusing integers int64 cannot hold in an int tensor (PyTorch's error)."""
    wants_float = dtype is not None and dtypes.as_dtype(dtype).is_floating_point
    top = np.iinfo(np.int64).max
    if isinstance(data, np.ndarray | np.generic):
        flat = values.reshape(-1)
        big = flat[flat > top] if values.dtype.kind == "u" and not wants_float else flat[:0]
        if big.size:
            raise ValueError(
                f"can't build an int64 tensor from a {values.dtype} array holding "
                f"{big[:3].tolist()} (above int64's max {top}); minifw has no "
                f"unsigned 64-bit dtype: pass dtype=mf.float64 or convert the array first"
            )
    elif values.dtype.kind in "uO" or values.dtype.kind == "f" and np.any(abs(values) >= 2.0**63):
        stack, has_float, huge = [data], False, None
        while stack:
            item = stack.pop()
            if isinstance(item, list | tuple):
                stack.extend(item)
            has_float = has_float or isinstance(item, float)
            if type(item) is int and not -top - 1 <= item <= top:
                huge = item
        if huge is not None and not (wants_float if dtype is not None else has_float):
            raise ValueError(
                f"Overflow when unpacking long long: {huge} does not fit in int64 "
                f"(pass dtype=mf.float64 for a float tensor)"
            )
        if huge is not None and values.dtype == object:
            return np.asarray(data, dtype=np.float64)  # PyTorch's float tensor
    return values


def _infer_dtype(data: Any, values: np.ndarray) -> dtypes.DType:
    """PyTorch's rule: bools -> bool, ints -> int64, numpy arrays keep their float dtype."""
    if values.dtype.kind == "b":
        return dtypes.bool
    if values.dtype.kind in "iu":
        return dtypes.int64
    if isinstance(data, np.ndarray) and values.dtype.kind == "f" or is_tensor(data):
        return dtypes.from_numpy_dtype(values.dtype)
    if values.dtype.kind in "fb":
        return dtypes.get_default_dtype()
    return dtypes.from_numpy_dtype(values.dtype)


def backend_for(device: Any, backend: Any) -> TensorBackend:
    """The backend named by `backend`, else the default one of `device` (cpu if None).

    `device` is None, a device string ("cpu", "cuda:0") or an `mf.device`.
    """
    kind = device_type(device)
    if backend is not None:
        chosen = get_backend(backend)
        if kind is not None and kind != chosen.device:
            raise ValueError(f"backend {chosen.name} runs on {chosen.device}, not {device}")
        return chosen
    return default_backend(kind or "cpu")


def _new_options(t: Tensor, options: dict[str, Any]) -> dict[str, Any]:
    """The creation options of `t.new_*`: t's dtype and backend unless given."""
    options.setdefault("dtype", t.dtype)
    if options.get("device") is None and options.get("backend") is None:
        options["backend"] = t.backend
    return options


def wrap(data: TensorData, backend: TensorBackend) -> Tensor:
    """A tensor over existing TensorData (no copy)."""
    return Tensor(data, backend)


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


def infer_shape(shape: tuple[int, ...], numel: int, current: tuple[int, ...]) -> tuple[int, ...]:
    """Resolve one -1 in `shape` so that it holds `numel` cells, or raise PyTorch's error."""
    if list(shape).count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)} in shape {list(shape)}")
    if -1 in shape:
        known = numel_of([s for s in shape if s != -1])
        if known == 0 or numel % known:
            raise RuntimeError(
                f"shape '{list(shape)}' is invalid for input of size {numel} "
                f"(input shape {current})"
            )
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if numel_of(shape) != numel:
        raise RuntimeError(
            f"shape '{list(shape)}' is invalid for input of size {numel} (input shape {current})"
        )
    return shape


def shape_arg(args: tuple[Any, ...]) -> tuple[int, ...]:
    """A shape given as ints or as one tuple/list, f(2, 3) or f((2, 3)), as a tuple."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    for a in args:
        if isinstance(a, bool) or not hasattr(a, "__index__"):
            raise TypeError(f"a shape must hold ints, got {type(a).__name__} in {tuple(args)}")
    return tuple(a.__index__() for a in args)


def reduce_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """`dim` (None, an int or a tuple, negatives allowed) as sorted non-negative dims.

    None and an empty tuple or list mean every dim, as in PyTorch's sum and mean.
    """
    given = tuple(dim) if isinstance(dim, tuple | list) else (dim,)
    if dim is None or not given:
        return tuple(range(ndim))
    dims = tuple(sorted({normalize_dim(int(d), ndim) for d in given}))
    if len(dims) != len(given):
        raise RuntimeError(f"dim {given} appears multiple times in the list of dims")
    return dims if ndim else ()


def _int_dim(dim: Any, name: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(
            f"{name}(): dim must be an int, got {type(dim).__name__} (an elementwise max of "
            f"two tensors is mf.where(a > b, a, b))"
        )
    return dim


def _check_reduced_dim(t: Tensor, dim: int, name: str) -> None:
    """PyTorch's IndexError when `dim` (normalised) of `t` has size 0: nothing to pick from."""
    if t.dim() and t.shape[dim] == 0:
        raise IndexError(
            f"{name}(): Expected reduction dim {dim} to have non-zero size. (input shape "
            f"{tuple(t.shape)})"
        )


def _check_writable_memory(t: Tensor) -> None:
    """Refuse, before any kernel runs, to write into cells of read-only memory."""
    base = t._data.base
    if isinstance(base, np.ndarray) and not base.flags.writeable:
        raise RuntimeError(
            f"in-place operation on a tensor of shape {tuple(t.shape)} whose memory is read-only: "
            "it shares a non-writable numpy array (mf.from_numpy of a read-only or "
            "np.broadcast_to array). Write into a copy (t = t.clone()) or pass a writable "
            "array (array.copy())"
        )


def _check_nonempty(t: Tensor, name: str) -> None:
    if t.numel() == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
            f"Specify the reduction dim with the 'dim' argument. (input shape {tuple(t.shape)})"
        )


class MaxResult(tuple):  # type: ignore[type-arg]
    """(values, indices), also readable as `.values` and `.indices`."""

    def __new__(cls, values: Tensor, indices: Tensor) -> MaxResult:
        """Pair `values` with `indices`."""
        return super().__new__(cls, (values, indices))

    @property
    def values(self) -> Tensor:
        """The max (or min) values."""
        return self[0]  # type: ignore[no-any-return]

    @property
    def indices(self) -> Tensor:
        """Where they were found."""
        return self[1]  # type: ignore[no-any-return]


def _check_inplace(t: Tensor, needs_grad: bool) -> None:
    """Raise PyTorch's error when writing into `t` would break a recorded graph."""
    if t.requires_grad and t.is_leaf:
        raise RuntimeError(LEAF_ERROR)
    base = t._base
    if base is not None and base.requires_grad and base.is_leaf:
        raise RuntimeError(VIEW_OF_LEAF_ERROR)
    if base is not None and (base.requires_grad or needs_grad):
        raise RuntimeError(VIEW_ERROR)


def host_view(data: TensorData) -> np.ndarray:
    """A numpy array over the cells of CPU `data`, with its strides (no copy)."""
    item = data.base.itemsize
    return np.lib.stride_tricks.as_strided(
        data.storage, data.shape, tuple(s * item for s in data.strides)
    )


def _in_place_twin(method: str) -> Callable[..., Tensor]:
    """`t.<method>_(...)`: t.<method>(...) written into t's cells (the rules of `_inplace`)."""

    def twin(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return self._inplace(lambda old: getattr(old, method)(*args, **kwargs), keep_old=True)

    twin.__name__ = f"{method}_"
    twin.__qualname__ = f"Tensor.{method}_"
    twin.__doc__ = f"`{method}` in place: self's cells become self.{method}(...)."
    return twin


def add_in_place_twins(cls: type[Tensor]) -> None:
    """Give `cls` the in-place twin of each op table method and alias it does not define."""
    for name, value in list(vars(cls).items()):
        if getattr(value, "__name__", None) in ops.METHODS and name + "_" not in vars(cls):
            setattr(cls, name + "_", _in_place_twin(name))


add_in_place_twins(Tensor)

# These modules import Tensor from this one: imported once it is defined (a cycle).
from minifw.tensor import creation, linalg, reductions, sorting  # noqa: E402

__all__ = ["Tensor", "add_in_place_twins", "backend_for", "tensor", "wrap"]
