"""Functions that make tensors, and the tensor functions of the `mf.` namespace."""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from minifw.core import dtypes, hooks
from minifw.core.hooks import anyone_listening
from minifw.core.random import generator
from minifw.core.tensor_data import as_shape, normalize_dim
from minifw.tensor.functions import Cat, Where
from minifw.tensor.tensor import Tensor, backend_for, tensor


def _make(
    values: np.ndarray, requires_grad: bool, dtype: Any, device: Any, backend: Any
) -> Tensor:
    kind = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if kind is dtypes.int64:
        _refuse_beyond_int64(values)
    chosen = backend_for(device, backend)
    out = Tensor(chosen.from_numpy(values.astype(kind.numpy, copy=False)), chosen)
    return out.requires_grad_(True) if requires_grad else out


def _refuse_beyond_int64(values: np.ndarray) -> None:
    """PyTorch's error for values an int64 tensor cannot hold (instead of wrapping them)."""
    flat = values.reshape(-1)
    if flat.dtype.kind == "f":
        bad = flat[~((flat >= -(2.0**63)) & (flat < 2.0**63))]  # nan and inf too
    elif flat.dtype.kind == "u":
        bad = flat[flat > np.iinfo(np.int64).max]
    elif flat.dtype == object:
        top = np.iinfo(np.int64).max
        bad = np.array([v for v in flat if not -top - 1 <= v <= top], dtype=object)
    else:
        return
    if bad.size:
        value = bad[0].item() if isinstance(bad[0], np.generic) else bad[0]
        raise RuntimeError(
            f"value cannot be converted to type int64_t without overflow (got {value!r})"
        )


def full(
    shape: Any, fill_value: float, *, requires_grad: bool = False, dtype: Any = None,
    device: Any = None, backend: Any = None,
) -> Tensor:  # fmt: skip
    """A tensor of `shape` filled with `fill_value` (an int gives int64, a bool bool)."""
    if dtype is None and isinstance(fill_value, bool | np.bool_):
        dtype = dtypes.bool
    elif dtype is None and isinstance(fill_value, int):
        dtype = dtypes.int64
    size = as_shape(shape if isinstance(shape, list | tuple) else (shape,))
    made = _make(np.full(size, fill_value), requires_grad, dtype, device, backend)
    if anyone_listening[0]:  # made without a launch: tell mf.compile's capture
        hooks.fresh(made._data, made.backend, fill_value)
    return made


def zeros(*shape: Any, **options: Any) -> Tensor:
    """A tensor of zeros; shape as ints or one tuple."""
    return full(as_shape(shape), 0.0, **options)


def ones(*shape: Any, **options: Any) -> Tensor:
    """A tensor of ones; shape as ints or one tuple."""
    return full(as_shape(shape), 1.0, **options)


def empty(*shape: Any, **options: Any) -> Tensor:
    """A tensor whose values are not set (here: zeros)."""
    return zeros(*shape, **options)


def _like(t: Tensor, options: dict[str, Any]) -> dict[str, Any]:
    """Options defaulting to t's dtype and device (and its backend, unless moved)."""
    options.setdefault("dtype", t.dtype)
    if options.get("device") is None and options.get("backend") is None:
        options["backend"] = t.backend
    return options


def zeros_like(t: Tensor, **options: Any) -> Tensor:
    """Zeros with t's shape, dtype and device."""
    return zeros(t.shape, **_like(t, options))


def ones_like(t: Tensor, **options: Any) -> Tensor:
    """Ones with t's shape, dtype and device."""
    return ones(t.shape, **_like(t, options))


def full_like(t: Tensor, fill_value: float, **options: Any) -> Tensor:
    """`fill_value` everywhere, with t's shape, dtype and device."""
    return full(t.shape, fill_value, **_like(t, options))


def rand(*shape: Any, **options: Any) -> Tensor:
    """Uniform samples from [0, 1) (reproducible with `manual_seed` or `generator=`)."""
    values = generator(options.pop("generator", None)).random(as_shape(shape))
    return _make(values, **_options(options))


def randn(*shape: Any, **options: Any) -> Tensor:
    """Standard normal samples (reproducible with `manual_seed` or `generator=`)."""
    values = generator(options.pop("generator", None)).standard_normal(as_shape(shape))
    return _make(values, **_options(options))


def randint(*args: Any, **options: Any) -> Tensor:
    """Integers drawn uniformly from [low, high) as int64.

    Called as `randint(high, size)` or `randint(low, high, size)`, like PyTorch.
    """
    if "size" in options:
        args = (*args, options.pop("size"))
    if len(args) == 2:
        args = (0, *args)
    if len(args) != 3:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    low, high, size = args
    if int(high) <= int(low):
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    rng = generator(options.pop("generator", None))
    values = rng.integers(int(low), int(high), size=as_shape(size))
    options.setdefault("dtype", dtypes.int64)
    return _make(values, **_options(options))


def randperm(n: int, **options: Any) -> Tensor:
    """A random permutation of 0..n-1 as int64."""
    options.setdefault("dtype", dtypes.int64)
    rng = generator(options.pop("generator", None))
    return _make(rng.permutation(n), **_options(options))


def _options(options: dict[str, Any]) -> dict[str, Any]:
    return {
        "requires_grad": options.pop("requires_grad", False),
        "dtype": options.pop("dtype", None),
        "device": options.pop("device", None),
        "backend": options.pop("backend", None),
        **_no_more(options),
    }


def _no_more(options: dict[str, Any]) -> dict[str, Any]:
    if options:
        raise TypeError(f"unexpected keyword arguments: {', '.join(options)}")
    return {}


def arange(start: Any, end: Any = None, step: Any = 1, **options: Any) -> Tensor:
    """Values from start (0 if only one number is given) up to end (excluded), by step.

    int64 when every bound is an int, else the default float dtype (or `dtype=`).
    """
    if end is None:
        start, end = 0, start
    bounds = [_number(v, "arange") for v in (start, end, step)]
    start, end, step = bounds
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(v) for v in bounds):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"upper bound and lower bound inconsistent with step sign (start {start}, end "
            f"{end}, step {step})"
        )
    if options.get("dtype") is None and all(isinstance(v, int) for v in bounds):
        options["dtype"] = dtypes.int64
    exact = all(isinstance(v, int) for v in bounds)
    count = builtins.max(0, -((start - end) // step) if exact else math.ceil((end - start) / step))
    if exact and dtypes.as_dtype(options["dtype"]) is dtypes.int64:  # no trip through float64
        _refuse_beyond_int64(np.array([start, end, step], dtype=object))  # PyTorch checks all
        values = start + np.arange(count, dtype=np.int64) * step
    else:
        values = start + np.arange(count, dtype=np.float64 if count else np.int64) * step
    return _make(values, **_options(options))


def _number(value: Any, name: str) -> int | float:
    """A Python number from a number or a one-element tensor."""
    if getattr(value, "_is_minifw_tensor", False):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise TypeError(f"{name}(): expected a number, got {type(value).__name__}")
    return value.item() if isinstance(value, np.number) else value  # type: ignore[return-value]


def linspace(start: Any, end: Any, steps: int, **options: Any) -> Tensor:
    """`steps` values evenly spaced from start to end inclusive."""
    count = _steps(steps, "linspace")
    values = np.linspace(_number(start, "linspace"), _number(end, "linspace"), count)
    return _make(values, **_options(options))


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, **options: Any) -> Tensor:
    """`steps` powers of `base`, with exponents evenly spaced from start to end inclusive."""
    exponents = np.linspace(
        _number(start, "logspace"), _number(end, "logspace"), _steps(steps, "logspace")
    )
    return _make(np.power(float(base), exponents), **_options(options))


def _steps(steps: Any, name: str) -> int:
    if isinstance(steps, bool) or not hasattr(steps, "__index__"):
        raise TypeError(f"{name}(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps.__index__() < 0:
        raise RuntimeError(f"number of steps must be non-negative (got {steps})")
    return steps.__index__()  # type: ignore[no-any-return]


def eye(n: int, m: int | None = None, **options: Any) -> Tensor:
    """The identity matrix (n x m, square when m is None)."""
    for name, value in (("n", n), ("m", m)):
        if value is not None and value < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {value}")
    return _make(np.eye(n, m), **_options(options))


def empty_like(t: Tensor, **options: Any) -> Tensor:
    """A tensor with t's shape, dtype and device (its values unset: zeros here)."""
    return zeros_like(t, **options)


def rand_like(t: Tensor, **options: Any) -> Tensor:
    """Uniform samples in [0, 1) with t's shape, dtype and device."""
    return rand(t.shape, **_like(t, options))


def randn_like(t: Tensor, **options: Any) -> Tensor:
    """Standard normal samples with t's shape, dtype and device."""
    return randn(t.shape, **_like(t, options))


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """`data` as a tensor: a tensor itself when it already has that dtype and device."""
    if isinstance(data, Tensor):
        return data.to(*(a for a in (device, dtype) if a is not None))
    return tensor(data, dtype=dtype, device=device)


def clone(t: Tensor) -> Tensor:
    """A copy with its own storage (gradients flow back to t)."""
    return t.clone()


def numel(t: Tensor) -> int:
    """The number of cells of t."""
    return t.numel()


def tril_indices(row: int, col: int, offset: int = 0, **options: Any) -> Tensor:
    """The (row, col) indices of the lower triangle of a row x col matrix, as 2 x N int64."""
    options.setdefault("dtype", dtypes.int64)
    return _make(np.stack(np.tril_indices(row, offset, col)), **_options(options))


def triu_indices(row: int, col: int, offset: int = 0, **options: Any) -> Tensor:
    """The (row, col) indices of the upper triangle of a row x col matrix, as 2 x N int64."""
    options.setdefault("dtype", dtypes.int64)
    return _make(np.stack(np.triu_indices(row, offset, col)), **_options(options))


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with `array` (writes are visible both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dtype = dtypes.from_numpy_dtype(array.dtype)
    if array.dtype != dtype.numpy:
        raise TypeError(
            f"can't convert np.ndarray of type {array.dtype}: minifw supports float64, "
            f"float32 and int64"
        )
    backend = backend_for("cpu", None)
    return Tensor(backend.from_numpy(array, share=True), backend)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along `dim` (their other dims must match)."""
    items = list(tensors)
    if not items:
        raise RuntimeError("cat(): expected a non-empty list of Tensors")
    first = items[0]
    if first.dim() == 0:
        raise RuntimeError(
            "zero-dimensional tensor (at position 0) cannot be concatenated; use mf.stack"
        )
    d = normalize_dim(dim, first.dim())
    for i, t in enumerate(items):
        if t.dim() != first.dim():
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {first.dim()} and {t.dim()} "
                f"(shapes {tuple(first.shape)} and {tuple(t.shape)} at positions 0 and {i})"
            )
        for k, (a, b) in enumerate(zip(first.shape, t.shape, strict=True)):
            if k != d and a != b:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {a} "
                    f"but got size {b} for tensor number {i} in the list (shapes "
                    f"{tuple(first.shape)} and {tuple(t.shape)})."
                )
    dtype = first.dtype
    for t in items[1:]:
        dtype = dtypes.promote(dtype, t.dtype)
    items = [first._operand(t).to(dtype) for t in items]
    return Cat.apply(d, *items)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors (all of one shape) stacked along a new dim."""
    items = list(tensors)
    if not items:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(items):
        if t.shape != items[0].shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(items[0].shape)} "
                f"at entry 0 and {list(t.shape)} at entry {i}"
            )
    d = normalize_dim(dim, items[0].dim() + 1)
    return cat([t.unsqueeze(d) for t in items], d)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """`input` where the bool `condition` is True, else `other` (all broadcast together).

    `input` and `other` may be tensors or Python numbers; the result dtype follows
    PyTorch's promotion, and gradients flow to both. With `condition` alone, the tuple of
    index tensors of its nonzero cells (`nonzero(as_tuple=True)`), as PyTorch's.
    """
    if input is None and other is None:
        from minifw.tensor.sorting import where_nonzero

        return where_nonzero(condition)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): condition must be a Tensor, got {type(condition).__name__}")
    if condition.dtype is not dtypes.bool:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype} (shape {tuple(condition.shape)}); compare it, e.g. cond != 0"
        )
    if isinstance(input, Tensor):
        a = condition._operand(input)
    elif isinstance(other, Tensor):
        a = other._operand(input)
    else:
        a = tensor(input, backend=condition.backend)
    b = a._operand(other)
    dtype = dtypes.result_type(a.dtype, not a.shape, b.dtype, not b.shape)
    return Where.apply(condition.detach(), a.to(dtype), b.to(dtype))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Return a @ b."""
    return a @ b


def sum(t: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum over dims (of `t` converted to `dtype` first, if given)."""
    return (t if dtype is None else t.to(dtype)).sum(dim, keepdim)


def mean(t: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over dims (of `t` converted to `dtype` first, if given)."""
    return (t if dtype is None else t.to(dtype)).mean(dim, keepdim)


def max(t: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Max (with dim: values and indices); `max(a, b)` of two tensors is `maximum(a, b)`."""
    if isinstance(dim, Tensor):
        return t.maximum(dim)
    return t.max(dim, keepdim)


def min(t: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Min (with dim: values and indices); `min(a, b)` of two tensors is `minimum(a, b)`."""
    if isinstance(dim, Tensor):
        return t.minimum(dim)
    return t.min(dim, keepdim)


def argmax(t: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the max."""
    return t.argmax(dim, keepdim)


__all__ = ["tensor"]
