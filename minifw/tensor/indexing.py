"""Advanced indexing and the gather family, as PyTorch does them.

`t[idx]` with int64 tensors, lists or numpy arrays, bool masks, mixed with ints, slices,
None and `...`; `t[idx] = v`; `gather`, `scatter`, `scatter_add`, `index_select`,
`index_add`, `index_copy`, `index_fill`, `masked_fill`, `masked_select`, `take`,
`take_along_dim`, `index_put`.

Every one of them becomes a `Key`: a basic part (ints, slices, None: a view) followed by
a numpy advanced part (int arrays, 0-dim bools, full slices). The key is checked on the
host before any kernel runs, so a bad index is PyTorch's exception naming it. Values move
through the host: `Take` reads the cells a key names (a copy), `AddAt` adds a gradient
into them (np.add.at, so repeated indices accumulate), `IndexPut` writes values into a
copy. Each is the other's backward, so gradients of gradients work too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from minifw.core import dtypes, hooks
from minifw.core.autodiff import is_grad_enabled
from minifw.core.hooks import anyone_listening
from minifw.core.tensor_data import index_view, normalize_dim, shape_broadcast
from minifw.tensor.functions import Function, FunctionCtx, Index, Where, is_tensor

if TYPE_CHECKING:
    from minifw.tensor.tensor import Tensor

BAD_ITEM = (
    "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
    "valid indices (got {})"
)
BAD_INDEX_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"


class Key:
    """Where an index reads: a basic numpy key (a view) then an advanced one (a copy)."""

    __slots__ = ("basic", "advanced")

    def __init__(self, basic: tuple[Any, ...], advanced: tuple[Any, ...]) -> None:
        self.basic = basic
        self.advanced = advanced

    def target(self, host: np.ndarray) -> np.ndarray:
        """The view of `host` the basic part selects (always an array, never a scalar)."""
        return host[(*self.basic, Ellipsis)] if self.basic else host

    def take(self, host: np.ndarray) -> np.ndarray:
        """A new array of the cells of `host` this key names."""
        view = self.target(host)
        return view[self.advanced] if self.advanced else view.copy()

    def result_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of the cells this key names in a tensor of `shape`."""
        cells = np.broadcast_to(np.empty((), dtype=np.bool_), shape)
        return tuple(self.target(cells)[self.advanced].shape)


# ---- Reading index keys ----------------------------------------------------------------


def is_bool_dtype(dtype: Any) -> bool:
    """True for minifw's bool dtype (if this build has one)."""
    boolean = getattr(dtypes, "bool", None)
    return boolean is not None and dtype is boolean


def host_values(t: Tensor, why: str) -> np.ndarray:
    """The cells of `t` as a host array (the storage itself for contiguous CPU tensors)."""
    if anyone_listening[0]:  # values read on the host: tell the tools (mf.compile)
        hooks.host_read(f"{why} of a tensor of shape {tuple(t.shape)}")
    return t.backend.to_numpy(t._data)


def index_array(item: Any) -> np.ndarray | None:
    """An index item as a numpy int64 or bool array; None for a plain int, slice, None or ...

    Raises PyTorch's IndexError for floats and other unusable items.
    """
    if is_tensor(item):
        if is_bool_dtype(item.dtype):
            return np.asarray(host_values(item, "a bool mask index"), dtype=np.bool_)
        if item.dtype.is_floating_point:
            raise IndexError(
                f"{BAD_INDEX_DTYPE} (got a {item.dtype} tensor of shape {tuple(item.shape)})"
            )
        if item.dim() == 0:
            return None
        return np.asarray(host_values(item, "an index tensor"), dtype=np.int64)
    if isinstance(item, bool | np.bool_):
        return np.asarray(item, dtype=np.bool_)
    if isinstance(item, int | np.integer) or item is None or item is Ellipsis:
        return None
    if isinstance(item, slice):
        return None
    if isinstance(item, list | tuple | np.ndarray):
        return _sequence_index(item)
    raise IndexError(BAD_ITEM.format(type(item).__name__))


def _sequence_index(item: Any) -> np.ndarray:
    try:
        values = np.asarray(item)
    except ValueError:
        raise IndexError(f"an index list must not be ragged (got {item!r})") from None
    if values.dtype == np.bool_:
        return values
    if values.size == 0 or values.dtype.kind in "iu":
        return values.astype(np.int64)
    raise IndexError(f"{BAD_INDEX_DTYPE} (got an index of {values.dtype} values)")


def _consumed(array: np.ndarray | None, item: Any) -> int:
    """How many dims of the tensor an index item uses up."""
    if array is not None:
        return array.ndim if array.dtype == np.bool_ else 1
    return 0 if item is None or item is Ellipsis else 1


def parse_key(t: Tensor, key: Any) -> Key:
    """Check an index key against `t`'s shape and split it into a basic and advanced part."""
    items = list(key) if isinstance(key, tuple) else [key]
    arrays = [index_array(item) for item in items]
    used = sum(_consumed(a, item) for a, item in zip(arrays, items, strict=True))
    if used > t.dim():
        raise IndexError(
            f"too many indices for tensor of dimension {t.dim()} (got {used} for shape "
            f"{tuple(t.shape)})"
        )
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    basic: list[Any] = []
    advanced: list[Any] = []
    for item, array in zip(items, arrays, strict=True):
        if item is Ellipsis:
            basic.extend([slice(None)] * (t.dim() - used))
            advanced.extend([slice(None)] * (t.dim() - used))
        elif array is None:
            basic.append(_plain(item))
            if item is None or isinstance(item, slice):
                advanced.append(slice(None))
        else:
            basic.extend([slice(None)] * _consumed(array, item))
            advanced.append(array)
    view_shape = index_view(t._data, tuple(basic)).shape  # checks ints and slices
    return Key(tuple(basic), _check_advanced(advanced, view_shape, t.shape))


def _plain(item: Any) -> Any:
    """An int (from a 0-dim int tensor too), a slice or None."""
    if item is None or isinstance(item, slice):
        return item
    return int(item)


def _check_advanced(
    items: list[Any], shape: tuple[int, ...], original: tuple[int, ...]
) -> tuple[Any, ...]:
    """The advanced part with masks turned into positions and negative indices wrapped."""
    out: list[Any] = []
    dim = 0
    for item in items:
        if isinstance(item, slice):
            out.append(item)
            dim += 1
        elif item.dtype == np.bool_ and item.ndim == 0:
            out.append(np.bool_(item))
        elif item.dtype == np.bool_:
            sizes = shape[dim : dim + item.ndim]
            if item.shape != sizes:
                raise IndexError(
                    f"The shape of the mask {list(item.shape)} at index {dim} does not match "
                    f"the shape of the indexed tensor {list(original)} at index {dim}"
                )
            out.extend(item.nonzero())
            dim += item.ndim
        else:
            out.append(wrap_indices(item, dim, shape[dim], IndexError))
            dim += 1
    shapes = [(int(a),) if a.ndim == 0 else a.shape for a in out if not isinstance(a, slice)]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes "
            f"{', '.join(str(list(s)) for s in shapes)}"
        ) from None
    return tuple(out)


def wrap_indices(
    index: np.ndarray, dim: int, size: int, error: type[Exception], negative: bool = True,
    name: str = "",
) -> np.ndarray:  # fmt: skip
    """`index` with negative entries counted from the end (when `negative`), or `error`."""
    low = -size if negative else 0
    bad = (index < low) | (index >= size)
    if bad.any():
        raise error(
            f"{name}index {int(index[bad].flat[0])} is out of bounds for dimension {dim} with "
            f"size {size}"
        )
    return np.where(index < 0, index + size, index) if negative else index


# ---- The three Functions: read cells, add into cells, write cells -----------------------


def _from_host(like: Tensor, values: np.ndarray) -> Tensor:
    """A tensor on `like`'s backend over the new host array `values`."""
    return like._new(like.backend.from_numpy(values, share=True))


class Take(Function):
    """The cells of `a` that a `Key` names, as a new tensor (advanced indexing)."""

    node_name = "Index"

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, key: Key) -> Tensor:
        """Copy the named cells through the host."""
        ctx.shape, ctx.key = a.shape, key
        return _from_host(a, key.take(host_values(a, "advanced indexing")))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Grad added into zeros at the cells read (repeated cells accumulate)."""
        return AddAt.apply(grad, ctx.key, ctx.shape), None


class AddAt(Function):
    """Zeros of `shape` with `g` added at the cells a `Key` names (a scatter-add)."""

    @staticmethod
    def forward(ctx: FunctionCtx, g: Tensor, key: Key, shape: tuple[int, ...]) -> Tensor:
        """np.add.at into a new array."""
        ctx.key = key
        out = np.zeros(shape, dtype=g.dtype.numpy)
        values = host_values(g, "a scatter-add")
        if key.advanced:
            np.add.at(key.target(out), key.advanced, values)
        else:
            key.target(out)[...] += values
        return _from_host(g, out)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """The cells the forward added to."""
        return Take.apply(grad, ctx.key), None, None


class IndexPut(Function):
    """A copy of `a` with `v` written (or added, `accumulate`) at the cells of a `Key`."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, key: Key, v: Tensor, accumulate: bool) -> Tensor:
        """Write on a host copy; `v` broadcasts to the indexed shape."""
        ctx.key, ctx.accumulate = key, accumulate
        out = np.array(host_values(a, "index assignment"), copy=True)
        write_host(out, key, host_values(v, "index assignment"), accumulate)
        return _from_host(a, out)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, Tensor, None]:
        """Grad with zeros where values were overwritten; the written cells' grad for v."""
        key = ctx.key
        kept = grad if ctx.accumulate else IndexPut.apply(grad, key, grad._zeros(()), False)
        return kept, None, Take.apply(grad, key), None


def write_host(out: np.ndarray, key: Key, values: np.ndarray, accumulate: bool) -> None:
    """Write (or add) `values` into the cells of `out` that `key` names, in place."""
    target = key.target(out)
    if accumulate:
        shape = key.result_shape(out.shape)
        np.add.at(target, key.advanced, np.broadcast_to(values, shape))
    elif key.advanced:
        target[key.advanced] = values
    else:
        target[...] = values


# ---- Indexing: t[key] and t[key] = v ----------------------------------------------------


def getitem(t: Tensor, key: Any) -> Tensor:
    """`t[key]` for a key holding an advanced index (else a view, as before)."""
    parsed = parse_key(t, key)
    selects = any(item != slice(None) for item in parsed.basic)
    view = Index.apply(t, parsed.basic) if selects else t
    if not parsed.advanced:
        return view
    return Take.apply(view, Key((), parsed.advanced))


def setitem(t: Tensor, key: Any, value: Any) -> None:
    """`t[key] = value` for a key holding an advanced index."""
    index_put_(t, key, value, False)


def index_put_(t: Tensor, key: Any, values: Any, accumulate: bool = False) -> Tensor:
    """Write (or add) `values` at the cells of `t` that `key` names, in place."""
    parsed = parse_key(t, key)
    v = _put_values(t, parsed, values, _is_single_mask(key))
    return _write(t, lambda old: IndexPut.apply(old, parsed, v, accumulate), parsed, v, accumulate)


def index_put(t: Tensor, key: Any, values: Any, accumulate: bool = False) -> Tensor:
    """A copy of `t` with `values` written (or added) at the cells `key` names."""
    parsed = parse_key(t, key)
    v = _put_values(t, parsed, values, False)
    return IndexPut.apply(t, parsed, v, accumulate)


def indices_tuple(indices: Any, name: str) -> tuple[Any, ...]:
    """The `indices` of index_put as a tuple key, or PyTorch's TypeError."""
    if not isinstance(indices, tuple | list):
        raise TypeError(
            f"{name}(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}"
        )
    return tuple(indices)


def _is_single_mask(key: Any) -> bool:
    return is_tensor(key) and is_bool_dtype(key.dtype)


def _put_values(t: Tensor, key: Key, values: Any, single_mask: bool) -> Tensor:
    """`values` as a tensor of t's dtype that broadcasts to the indexed shape, or raise."""
    if not is_tensor(values):
        return (
            t._operand(values).detach().to(t.dtype) if _number(values) else _as_tensor(t, values)
        )
    v = t._operand(values)
    if v.dtype is not t.dtype:
        if not (single_mask and v.numel() == 1):
            raise RuntimeError(
                f"Index put requires the source and destination dtypes match, got {t.dtype} "
                f"for the destination and {v.dtype} for the source."
            )
        v = v.detach().to(t.dtype) if not v.dtype.is_floating_point else v.to(t.dtype)
    shape = key.result_shape(t.shape)
    while v.dim() > len(shape) and v.shape[0] == 1:
        v = v.squeeze(0)
    if shape_broadcast_or_none(v.shape, shape) != shape:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to "
            f"indexing result of shape {list(shape)}"
        )
    return v


def _number(value: Any) -> bool:
    return isinstance(value, bool | int | float | np.number)


def _as_tensor(t: Tensor, values: Any) -> Tensor:
    from minifw.tensor.tensor import tensor

    return tensor(values, dtype=t.dtype, backend=t.backend)


def shape_broadcast_or_none(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The broadcast shape of `a` and `b`, or None when they do not broadcast."""
    try:
        return tuple(shape_broadcast(a, b))
    except (IndexError, ValueError, RuntimeError):
        return None


def _write(
    t: Tensor, compute: Callable[[Tensor], Tensor], key: Key, v: Tensor, accumulate: bool
) -> Tensor:
    """Run an in-place write: straight into CPU memory when autograd records nothing."""
    from minifw.tensor.tensor import _check_inplace, _check_writable_memory, host_view

    if any(s == 0 and n > 1 for s, n in zip(t._data.strides, t.shape, strict=True)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            f"single memory location (an expanded tensor of shape {list(t.shape)}). Please "
            "clone() the tensor before performing the operation."
        )
    recording = is_grad_enabled() and (t.requires_grad or v.requires_grad)
    if recording or t.device != "cpu":
        return t._inplace(compute)
    _check_writable_memory(t)
    if is_grad_enabled():
        _check_inplace(t, False)
    values = host_values(v, "index assignment")
    if v._data.base is t._data.base:
        values = values.copy()  # t[i] = t[j]: read every value before writing
    write_host(host_view(t._data), key, values, accumulate)
    t._bump_version()
    return t


# ---- The gather family -------------------------------------------------------------------


def _index_tensor(index: Any, name: str, arg: str = "index") -> Tensor:
    if not is_tensor(index):
        raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(index).__name__}")
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for {arg} (got {index.dtype})")
    return index  # type: ignore[no-any-return]


def _along_key(index: np.ndarray, dim: int) -> Key:
    """The key of `gather(dim, index)`: index along dim, each cell's own position elsewhere."""
    if index.ndim == 0:
        return Key((), (index,))
    grids: list[Any] = list(np.ogrid[tuple(slice(0, s) for s in index.shape)])
    grids[dim] = index
    return Key((), tuple(grids))


def _check_along(
    t: Tensor, dim: int, index: Tensor, name: str, src: Tensor | None = None
) -> np.ndarray:
    """Check a gather/scatter index against `t` (and `src`); return it on the host."""
    if index.dim() != t.dim() and not (index.dim() <= 1 and t.dim() <= 1):
        raise RuntimeError(
            f"{name}(): Index tensor must have the same number of dimensions as input tensor "
            f"(index shape {tuple(index.shape)}, input shape {tuple(t.shape)})"
        )
    for d in range(index.dim()):
        too_big = d != dim and index.shape[d] > t.shape[d]
        if too_big or (src is not None and index.shape[d] > src.shape[d]):
            what = "" if src is None else f" and to be no larger size than src {list(src.shape)}"
            raise RuntimeError(
                f"{name}(): Size does not match at dimension {d}: expected index "
                f"{list(index.shape)} to be no larger than self {list(t.shape)} apart from "
                f"dimension {dim}{what}"
            )
    size = t.shape[dim] if t.dim() else 1
    return wrap_indices(host_values(index, name), dim, size, RuntimeError, negative=False)


def gather(t: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """out[i][j] = t[i][index[i][j]] for dim=1 (and likewise for any dim)."""
    index = _index_tensor(index, "gather")
    d = normalize_dim(dim, t.dim())
    positions = _check_along(t, d, index, "gather")
    if t.dim() == 0:
        return Take.apply(t, Key((), ())).view(index.shape)
    return Take.apply(t, _along_key(positions, d))


def _scatter_source(t: Tensor, index: Tensor, src: Any, value: Any, name: str) -> Tensor:
    """The values a scatter writes: src cut to index's shape, or the number `value`."""
    given = value if src is None else src
    if given is None:
        raise TypeError(f"{name}(): expected a src tensor or a value")
    if not is_tensor(given):
        if name == "scatter_add":
            raise TypeError(
                f"scatter_add(): argument 'src' must be Tensor, not {type(given).__name__}"
            )
        return t._full((), given)
    if given.dtype is not t.dtype:
        raise RuntimeError(
            f"{name}(): Expected self.dtype to be equal to src.dtype (got {t.dtype} and "
            f"{given.dtype})"
        )
    if given.dim() == 0:
        return given  # type: ignore[no-any-return]
    return given[tuple(slice(0, s) for s in index.shape)]  # type: ignore[no-any-return]


def scatter(
    t: Tensor, dim: int, index: Tensor, src: Any = None, value: Any = None,
    reduce: str | None = None, accumulate: bool = False, name: str = "scatter",
) -> Tensor:  # fmt: skip
    """A copy of `t` with `src` (or `value`) written at the positions `index` gives along dim."""
    index = _index_tensor(index, name)
    if reduce not in (None, "add"):
        raise NotImplementedError(
            f"{name}(reduce={reduce!r}) is not supported by minifw (only reduce='add'); "
            f"PyTorch deprecates it in favour of scatter_reduce"
        )
    d = normalize_dim(dim, t.dim())
    source_tensor = src if is_tensor(src) else None
    positions = _check_along(t, d, index, name, source_tensor)
    values = _scatter_source(t, index, src, value, name)
    if t.dim() == 0:
        return IndexPut.apply(t, Key((), ()), values.reshape(()), accumulate or reduce == "add")
    return IndexPut.apply(t, _along_key(positions, d), values, accumulate or reduce == "add")


def scatter_add(t: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `t` with `src` added at the positions `index` gives along dim."""
    return scatter(t, dim, index, src, accumulate=True, name="scatter_add")


def _dim_index(
    t: Tensor, dim: int, index: Any, name: str, error: type[Exception], negative: bool,
    prefix: str = "",
) -> tuple[int, np.ndarray]:  # fmt: skip
    """The dim (normalised) and the checked positions of a 1-D `index` along it."""
    index = _index_tensor(index, name)
    if index.dim() > 1:
        raise IndexError(
            f"{name}(): Index is supposed to be a vector (got shape {tuple(index.shape)})"
        )
    d = normalize_dim(dim, t.dim())
    size = t.shape[d] if t.dim() else 1
    positions = host_values(index, name).reshape(-1)
    return d, wrap_indices(positions, d, size, error, negative, prefix)


def _dim_key(t: Tensor, d: int, positions: np.ndarray) -> Key:
    """The key of the slices of `t` at `positions` along dim d."""
    return Key((), ()) if t.dim() == 0 else Key((), (*[slice(None)] * d, positions))


def index_select(t: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of `t` along dim at the positions in the 1-D `index`."""
    d, positions = _dim_index(t, dim, index, "index_select", RuntimeError, False)
    if t.dim() == 0:
        if positions.size != 1:
            raise RuntimeError(
                f"index_select(): Index to scalar can have only 1 value, got {positions.size} "
                f"value(s)"
            )
        return Take.apply(t, Key((), ())).view(())
    return Take.apply(t, _dim_key(t, d, positions))


def _dim_source(t: Tensor, d: int, count: int, source: Any, name: str) -> Tensor:
    """`source` of index_add/index_copy checked: t's dtype, t's shape but `count` along d."""
    if not is_tensor(source):
        raise TypeError(f"{name}(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype is not t.dtype:
        raise RuntimeError(
            f"{name}(): self ({t.dtype}) and source ({source.dtype}) must have the same "
            f"scalar type"
        )
    want = _with(t.shape, d, count) if t.dim() else ()
    if tuple(source.shape) != want and not (t.dim() == 0 and source.numel() == 1):
        raise RuntimeError(
            f"{name}(): Number of indices ({count}) should be equal to source.size(dim) and "
            f"source should have shape {list(want)} (got {list(source.shape)}), for dim: {d}"
        )
    return source.reshape(want)  # type: ignore[no-any-return]


def index_add(t: Tensor, dim: int, index: Tensor, source: Tensor, alpha: Any = 1) -> Tensor:
    """A copy of `t` with `alpha * source` added to the slices along dim at `index`."""
    d, positions = _dim_index(t, dim, index, "index_add_", RuntimeError, False)
    values = _dim_source(t, d, positions.size, source, "index_add_")
    if alpha != 1:
        values = values * alpha
    return IndexPut.apply(t, _dim_key(t, d, positions), values, True)


def index_copy(t: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of `t` with the slices along dim at `index` replaced by `source`'s."""
    d, positions = _dim_index(t, dim, index, "index_copy_", IndexError, False, "index_copy_(): ")
    values = _dim_source(t, d, positions.size, source, "index_copy_")
    return IndexPut.apply(t, _dim_key(t, d, positions), values, False)


def index_fill(t: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of `t` with `value` (a number or 0-dim tensor) in the slices at `index`."""
    d, positions = _dim_index(t, dim, index, "index_fill_", IndexError, True)
    if is_tensor(value) and value.dim() != 0:
        raise RuntimeError(
            f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.dim()} dimension(s)."
        )
    fill = value.to(t.dtype) if is_tensor(value) else t._full((), value)
    # each cell filled once, so a value tensor's gradient counts it once (as in PyTorch)
    return IndexPut.apply(t, _dim_key(t, d, np.unique(positions)), fill, False)


def _mask(mask: Any, message: str) -> Tensor:
    """`mask` if it is a bool tensor, else PyTorch's RuntimeError (`message`)."""
    if not is_tensor(mask) or not is_bool_dtype(mask.dtype):
        got = mask.dtype if is_tensor(mask) else type(mask).__name__
        raise RuntimeError(f"{message}, but got mask with dtype {got}")
    return mask  # type: ignore[no-any-return]


def _mask_shape(t: Tensor, mask: Tensor, name: str) -> tuple[int, ...]:
    """The shape `t` and `mask` broadcast to, or a RuntimeError naming both."""
    shape = shape_broadcast_or_none(t.shape, mask.shape)
    if shape is None:
        raise RuntimeError(
            f"{name}: the mask of shape {list(mask.shape)} does not broadcast with the "
            f"tensor's shape {list(t.shape)}"
        )
    return shape


def masked_fill(t: Tensor, mask: Tensor, value: Any) -> Tensor:
    """`t` with `value` (a number or 0-dim tensor) where `mask` is True (broadcasting)."""
    mask = _mask(mask, "masked_fill_ only supports boolean masks")
    if is_tensor(value) and value.dim() != 0:
        raise RuntimeError(
            f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.dim()} dimension(s)."
        )
    shape = _mask_shape(t, mask, "masked_fill")
    fill = value.to(t.dtype) if is_tensor(value) else t._full((), value)
    if t.dtype.is_floating_point:  # kernels pick the cells (only the mask is cast on the host)
        return Where.apply(t._operand(mask).to(t.dtype), fill, t)
    base = t if shape == t.shape else t.expand(*shape)
    picked = (np.broadcast_to(host_values(mask, "masked_fill"), shape),)
    return IndexPut.apply(base, Key((), picked), fill, False)


def masked_fill_(t: Tensor, mask: Tensor, value: Any) -> Tensor:
    """Write `value` into the cells of `t` where `mask` (broadcast to t) is True."""
    mask = _mask(mask, "masked_fill_ only supports boolean masks")
    if _mask_shape(t, mask, "masked_fill_") != t.shape:
        raise RuntimeError(
            f"masked_fill_: the mask of shape {list(mask.shape)} cannot be broadcast to the "
            f"tensor's shape {list(t.shape)}"
        )
    return t._inplace(lambda old: masked_fill(old, mask, value))


def masked_select(t: Tensor, mask: Tensor) -> Tensor:
    """The cells of `t` where `mask` is True, as a 1-D tensor (both broadcast)."""
    mask = _mask(mask, "masked_select: expected BoolTensor for mask")
    shape = _mask_shape(t, mask, "masked_select")
    base = t if shape == t.shape else t.expand(*shape)
    picked = (np.broadcast_to(host_values(mask, "masked_select"), shape),)
    return Take.apply(base, Key((), picked))


def take(t: Tensor, index: Tensor) -> Tensor:
    """The cells of the flattened `t` at `index` (negative counts from the end)."""
    index = _index_tensor(index, "take")
    n = t.numel()
    positions = host_values(index, "take")
    bad = (positions < -n) | (positions >= n)
    if bad.any():
        raise IndexError(
            f"out of range: tried to access index {int(positions[bad].flat[0])} on a tensor "
            f"of {n} elements."
        )
    flat = t.reshape(-1)
    return Take.apply(flat, Key((), (np.where(positions < 0, positions + n, positions),)))


def take_along_dim(t: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Gather along dim after broadcasting t and indices (flattened both if dim is None)."""
    indices = _index_tensor(indices, "take_along_dim", "indices")
    if dim is None:
        return gather(t.reshape(-1), 0, indices.reshape(-1))
    if t.dim() != indices.dim():
        raise RuntimeError(
            f"torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {t.dim()} dimensions for input, and {indices.dim()} "
            f"dimensions for indices"
        )
    d = normalize_dim(dim, t.dim())
    shape = shape_broadcast(_with(t.shape, d, 1), _with(indices.shape, d, 1))
    base = t.expand(*_with(tuple(shape), d, t.shape[d]))
    return gather(base, d, indices.expand(*_with(tuple(shape), d, indices.shape[d])))


def _with(shape: Sequence[int], dim: int, size: int) -> tuple[int, ...]:
    return (*shape[:dim], size, *shape[dim + 1 :])
