"""Sorting and searching as PyTorch does them.

sort, argsort, topk, kthvalue, unique, nonzero/argwhere, searchsorted/bucketize.

Which cell goes where is index bookkeeping, so it runs on the host with numpy (a
stable argsort; nan sorts last, as the largest value). The values that sort, topk
and kthvalue return are gathered with `TakeAlong`, whose backward puts the gradient
back at the cells it came from (`PutAlong`, and the other way round), so gradients
flow through the values as in PyTorch.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from minifw.core.tensor_data import normalize_dim
from minifw.tensor.functions import Function, FunctionCtx, is_tensor
from minifw.tensor.tensor import Tensor, tensor


class ValuesIndices(NamedTuple):
    """(values, indices), as PyTorch's `return_types.sort`, `topk` and `kthvalue`."""

    values: Tensor
    indices: Tensor


def _host(t: Tensor) -> np.ndarray:
    """The values of `t` as a numpy array (a copy off the GPU)."""
    return np.asarray(t.detach().numpy())


def _upload(like: Tensor, values: np.ndarray) -> Tensor:
    """A tensor on `like`'s backend holding `values`."""
    return Tensor(like.backend.from_numpy(np.ascontiguousarray(values)), like.backend)


class TakeAlong(Function):
    """a's cells at `index` (a numpy int array) along `dim`: out[..i..] = a[..index[..i..]..]."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dim: int, index: np.ndarray) -> Tensor:
        """Gather on the host; remember a's shape for the backward."""
        ctx.dim, ctx.index, ctx.shape = dim, index, a.shape
        return _upload(a, np.take_along_axis(_host(a), index, dim))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Each gradient cell put back where its value came from (zeros elsewhere)."""
        return PutAlong.apply(grad, ctx.dim, ctx.index, ctx.shape), None, None


class PutAlong(Function):
    """Zeros of `shape` with a's cells written at `index` along `dim` (distinct indices)."""

    @staticmethod
    def forward(
        ctx: FunctionCtx, a: Tensor, dim: int, index: np.ndarray, shape: tuple[int, ...]
    ) -> Tensor:
        """Scatter on the host."""
        ctx.dim, ctx.index = dim, index
        out = np.zeros(shape, dtype=a.dtype.numpy)
        np.put_along_axis(out, index, _host(a), dim)
        return _upload(a, out)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None]:
        """The gradient read back at the written cells."""
        return TakeAlong.apply(grad, ctx.dim, ctx.index), None, None, None


def _stable_argsort(values: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort along `axis`: equal values keep their order; nan is the largest."""
    moved = np.moveaxis(values, axis, -1)
    if descending:
        n = moved.shape[-1]
        order = (n - 1 - np.argsort(moved[..., ::-1], axis=-1, kind="stable"))[..., ::-1]
    else:
        order = np.argsort(moved, axis=-1, kind="stable")
    return np.ascontiguousarray(np.moveaxis(order, -1, axis)).astype(np.int64)


def _sort_dim(t: Tensor, dim: Any, name: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return normalize_dim(dim, t.dim())


def _order(t: Tensor, dim: int, descending: bool) -> np.ndarray:
    """Where each position's value comes from once sorted (shape of t, at least 1-D)."""
    host = _host(t).reshape(t.shape or (1,))
    return _stable_argsort(host, dim, descending)


def _pick(t: Tensor, dim: int, index: np.ndarray) -> ValuesIndices:
    """Values (with gradient) and int64 indices of `t` at `index` along `dim`."""
    source = t.reshape(1) if t.dim() == 0 else t
    values = TakeAlong.apply(source, dim, index)
    indices = _upload(t, index)
    if t.dim() == 0:
        return ValuesIndices(values.reshape(()), indices.reshape(()))
    return ValuesIndices(values, indices)


def sort(
    t: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
) -> ValuesIndices:
    """(values, indices) sorted along `dim`; equal values keep their order (always stable)."""
    d = _sort_dim(t, dim, "sort")
    return _pick(t, d, _order(t, d, descending))


def argsort(t: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort `t` along `dim` (stable)."""
    d = _sort_dim(t, dim, "argsort")
    return _upload(t, _order(t, d, descending).reshape(t.shape))


def msort(t: Tensor) -> Tensor:
    """`t` sorted along dim 0."""
    return sort(t, 0).values


def topk(
    t: Tensor,
    k: int,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,  # noqa: A002 - PyTorch's name
) -> ValuesIndices:
    """The k largest (or smallest) values along `dim` and their indices, best first."""
    d = _sort_dim(t, dim, "topk")
    size = t.shape[d] if t.dim() else 1
    if not 0 <= int(k) <= size:
        raise RuntimeError(
            f"selected index k out of range (k = {k} for dim {d} of size {size}, input shape "
            f"{tuple(t.shape)})"
        )
    order = np.take(_order(t, d, largest), np.arange(int(k)), axis=d)
    return _pick(t, d, order)


def kthvalue(t: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The k-th smallest value along `dim` (k counts from 1) and its index."""
    d = _sort_dim(t, dim, "kthvalue")
    size = t.shape[d] if t.dim() else 1
    if not 1 <= int(k) <= size:
        raise RuntimeError(
            f"kthvalue(): selected number k out of range for dimension {d} (k = {k}, size "
            f"{size}, input shape {tuple(t.shape)})"
        )
    order = np.take(_order(t, d, False), [int(k) - 1], axis=d)
    values, indices = _pick(t, d, order)
    if t.dim() and not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return ValuesIndices(values, indices)


def unique(
    t: Tensor, sorted: bool = True,  # noqa: A002 - PyTorch's name
    return_inverse: bool = False,
    return_counts: bool = False, dim: int | None = None,
) -> Any:  # fmt: skip
    """The distinct values (or distinct slices along `dim`), sorted.

    Optionally also where each cell went (`return_inverse`) and how often each value
    occurs (`return_counts`).
    """
    host = _host(t)
    axis = None if dim is None else normalize_dim(dim, t.dim())
    if axis is None:
        host = host.reshape(-1)
    values, inverse, counts = np.unique(
        host, return_inverse=True, return_counts=True, axis=axis, equal_nan=False
    )
    inverse = inverse.reshape(t.shape if axis is None else (-1,))
    out = [_upload(t, values)]
    if return_inverse:
        out.append(_upload(t, inverse.astype(np.int64)))
    if return_counts:
        out.append(_upload(t, counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def nonzero(t: Tensor, *, as_tuple: bool = False) -> Any:
    """The coordinates of the nonzero cells: an (n, ndim) int64 tensor.

    With `as_tuple`, one 1-D int64 tensor per dim (a 0-d input counts as 1-D).
    """
    coords = np.argwhere(_host(t)).astype(np.int64)
    if not as_tuple:
        return _upload(t, coords)
    if t.dim() == 0:
        return (_upload(t, np.zeros(coords.shape[0], dtype=np.int64)),)
    return tuple(_upload(t, coords[:, i]) for i in range(t.dim()))


def argwhere(t: Tensor) -> Tensor:
    """The coordinates of the nonzero cells, an (n, ndim) int64 tensor."""
    return nonzero(t)  # type: ignore[no-any-return]


def where_nonzero(condition: Tensor) -> tuple[Tensor, ...]:
    """`torch.where(condition)` with one argument: `nonzero(condition, as_tuple=True)`."""
    return nonzero(condition, as_tuple=True)  # type: ignore[no-any-return]


def _as_values(values: Any, like: Tensor) -> Tensor:
    return values if is_tensor(values) else tensor(values, backend=like.backend)


def _side(right: bool, side: str | None) -> str:
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(
            f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
        )
    if right and side == "left":
        raise RuntimeError(
            "torch.searchsorted(): side and right can't be set to opposites, got side of left "
            "while right was True"
        )
    return side


def _no_int32(out_int32: bool) -> None:
    if out_int32:
        raise NotImplementedError("out_int32=True: minifw has no int32 dtype (results are int64)")


def searchsorted(
    sorted_sequence: Tensor, values: Any, *, out_int32: bool = False, right: bool = False,
    side: str | None = None, sorter: Tensor | None = None,
) -> Tensor:  # fmt: skip
    """Where each value would go in the sorted innermost rows of `sorted_sequence`, as int64.

    A 1-D sequence serves every value; otherwise its leading dims match the values'.
    """
    _no_int32(out_int32)
    chosen = _side(right, side)
    query = _as_values(values, sorted_sequence)
    bounds = _host(sorted_sequence)
    if sorter is not None:
        bounds = np.take_along_axis(bounds, _host(sorter), -1)
    wanted = _host(query)
    if bounds.ndim == 1:
        found = np.searchsorted(bounds, wanted, side=chosen)  # type: ignore[call-overload]
        return _upload(query, np.asarray(found, dtype=np.int64))
    if bounds.shape[:-1] != wanted.shape[:-1]:
        raise RuntimeError(
            f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            f"dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(bounds.shape)} and input value tensor "
            f"{list(wanted.shape)}"
        )
    rows_b = bounds.reshape(-1, bounds.shape[-1])
    rows_v = wanted.reshape(-1, wanted.shape[-1])
    found = [np.searchsorted(b, v, side=chosen) for b, v in zip(rows_b, rows_v, strict=True)]  # type: ignore[call-overload]
    result = np.asarray(found, dtype=np.int64).reshape(wanted.shape)
    return _upload(query, result)


def bucketize(
    input: Any,  # noqa: A002 - PyTorch's name
    boundaries: Tensor, *, out_int32: bool = False, right: bool = False,
) -> Tensor:  # fmt: skip
    """The bucket of each value among 1-D sorted `boundaries` (searchsorted, side by `right`)."""
    if boundaries.dim() != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})"
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


__all__ = [
    "PutAlong", "TakeAlong", "ValuesIndices", "argsort", "argwhere", "bucketize", "kthvalue",
    "msort", "nonzero", "searchsorted", "sort", "topk", "unique", "where_nonzero",
]  # fmt: skip
