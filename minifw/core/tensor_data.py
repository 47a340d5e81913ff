"""Strided storage: a flat array, a shape, strides and an offset, and the index math.

The index functions at the top take and fill numpy int arrays and use only the
subset of Python that Numba compiles, so the CPU and CUDA backends recompile these
very functions instead of writing their own.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, SupportsIndex, overload

import numpy as np
import numpy.typing as npt

Index = npt.NDArray[np.int64]
Shape = tuple[int, ...]
Strides = tuple[int, ...]

# BEGIN TASK 2.1


def index_to_position(index: Index, strides: Index) -> int:
    """Return the storage position of a multi-index: sum(index[i] * strides[i])."""
    position = 0
    for i in range(len(index)):
        position += index[i] * strides[i]
    return position


def to_index(ordinal: int, shape: Index, out_index: Index) -> None:
    """Write into `out_index` the multi-index of the `ordinal`-th cell in row-major order."""
    rest = ordinal
    for i in range(len(shape) - 1, -1, -1):
        out_index[i] = rest % shape[i]
        rest = rest // shape[i]


def strides_from_shape(shape: Sequence[int]) -> Strides:
    """Return the row-major (contiguous) strides of `shape`."""
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


# END TASK 2.1

# BEGIN TASK 2.2


def broadcast_index(big_index: Index, big_shape: Index, shape: Index, out_index: Index) -> None:
    """Map an index of the broadcast shape `big_shape` to an index of `shape`.

    Dims of size 1 in `shape` read position 0; missing leading dims are dropped.
    """
    extra = len(big_shape) - len(shape)
    for i in range(len(shape)):
        out_index[i] = big_index[i + extra] if shape[i] > 1 else 0


def shape_broadcast(shape1: Sequence[int], shape2: Sequence[int]) -> Shape:
    """Return the shape that both shapes broadcast to (numpy/PyTorch rules)."""
    n = max(len(shape1), len(shape2))
    a = (1,) * (n - len(shape1)) + tuple(shape1)
    b = (1,) * (n - len(shape2)) + tuple(shape2)
    out = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"shapes {tuple(shape1)} and {tuple(shape2)} cannot be broadcast: the size of "
                f"tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                f"dimension {i}"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


# END TASK 2.2

# The functions above that kernels call; backends recompile exactly these.
KERNEL_FUNCTIONS = ["index_to_position", "to_index", "broadcast_index"]


def normalize_dim(dim: int, ndim: int) -> int:
    """Turn a possibly negative dim into 0..ndim-1; PyTorch's IndexError if out of range."""
    low, high = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not low <= dim <= high:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})"
        )
    return dim % max(ndim, 1)


INT64_MAX = 2**63 - 1


def as_shape(args: Sequence[Any]) -> Shape:
    """Accept a shape given as ints or as one tuple/list: f(2, 3) or f((2, 3)).

    Sizes must be integers (a float is PyTorch's TypeError), not negative, and hold at
    most 2**63 - 1 cells (PyTorch's RuntimeError), so that no size computed later wraps.
    """
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = args[0]
    for i, s in enumerate(args):
        if isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(
                f"size must be a tuple of ints, but found element of type {type(s).__name__} "
                f"at pos {i} (size {tuple(args)})"
            )
    shape = tuple(operator.index(s) for s in args)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"negative dimension in shape {shape}")
    if cells_overflow(shape):
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={list(shape)}: more than "
            f"2**63 - 1 cells"
        )
    return shape


def cells_overflow(shape: Sequence[int]) -> bool:
    """True if the product of the nonzero sizes of `shape` exceeds int64 (as PyTorch checks).

    Zero sizes are skipped: a (0, 2**40, 2**40) tensor holds no cell, but its row-major
    strides and any later size computed from its dims would still wrap.
    """
    n = 1
    for s in shape:
        if s:
            n *= s
    return n > INT64_MAX


def numel_of(shape: Sequence[int]) -> int:
    """The number of cells in a tensor of `shape`."""
    n = 1
    for s in shape:
        n *= s
    return n


# Shapes and strides recur op after op: each tuple maps, once, to its int tuple and
# the int64 array kernels read (never written by a kernel), so views build no arrays.
_CACHE_LIMIT = 4096
_SHAPES: dict[Any, tuple[Shape, Index, Strides, Index, int]] = {}
_STRIDES: dict[Any, tuple[Strides, Index]] = {}
_ARRAYS: dict[tuple[int, ...], Index] = {}


def index_array(values: tuple[int, ...]) -> Index:
    """The shared int64 array of `values` (an int tuple): kernels read it, none writes it."""
    found = _ARRAYS.get(values)
    if found is None:
        if len(_ARRAYS) >= _CACHE_LIMIT:
            _ARRAYS.clear()
        found = _ARRAYS[values] = np.array(values, dtype=np.int64)
    return found


def _cached(cache: dict[Any, Any], values: Sequence[int], build: Callable[[Any], Any]) -> Any:
    """`cache`'s entry for `values` as an int tuple, made by `build(ints)` on a miss."""
    key = values if type(values) is tuple else tuple(values)
    try:
        found = cache.get(key)
    except TypeError:  # an unhashable entry: let int() say what is wrong with it
        found = None
    if found is None:
        ints = tuple(int(s) for s in key)
        found = build(ints)
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[ints] = found
    return found


def _shape_entry(shape: Sequence[int]) -> tuple[Shape, Index, Strides, Index, int]:
    """(shape as ints, its int64 array, its row-major strides and their array, its size)."""
    return _cached(_SHAPES, shape, _new_shape_entry)  # type: ignore[no-any-return]


def shape_and_size(shape: Sequence[int]) -> tuple[Shape, int]:
    """(`shape` as a tuple of ints, its number of cells); refuses one that overflows int64."""
    entry = _SHAPES.get(shape) if type(shape) is tuple else None
    if entry is None:
        entry = _shape_entry(shape)
    return entry[0], entry[4]


def _new_shape_entry(ints: Shape) -> tuple[Shape, Index, Strides, Index, int]:
    """The `_shape_entry` of a shape not seen before; refuses one whose cells overflow int64."""
    if cells_overflow(ints):
        raise RuntimeError(
            f"numel: integer multiplication overflow (shape {ints} holds more than "
            f"2**63 - 1 cells)"
        )
    rows = strides_from_shape(ints)
    return (ints, index_array(ints), rows, index_array(rows), numel_of(ints))


def _strides_entry(strides: Sequence[int]) -> tuple[Strides, Index]:
    """(strides as ints, their int64 array)."""
    return _cached(_STRIDES, strides, _new_strides_entry)  # type: ignore[no-any-return]


def _new_strides_entry(ints: Strides) -> tuple[Strides, Index]:
    """The `_strides_entry` of strides not seen before; refuses negative or huge strides.

    Kernels and the bounds check assume strides >= 0 (as PyTorch's as_strided does).
    """
    if any(st < 0 for st in ints):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(ints)} (minifw views never step backwards; copy the cells instead)"
        )
    if any(st > INT64_MAX for st in ints):
        raise RuntimeError(f"strides {list(ints)} overflow int64")
    return ints, index_array(ints)


class TensorData:
    """A view of a flat storage buffer: where each cell of `shape` lives.

    Cell `index` lives at `storage[offset + sum(index[i] * strides[i])]`. Views
    (permute, slice, expand, view) make new TensorData over the same storage and
    share its `version` counter, which in-place writes bump (autograd checks it).
    """

    __slots__ = (
        "_storage", "shape", "strides", "offset", "size", "_shape", "_strides", "version", "dense",
    )  # fmt: skip

    def __init__(
        self,
        storage: Any,
        shape: Sequence[int],
        strides: Sequence[int] | None = None,
        offset: int = 0,
        version: list[int] | None = None,
    ) -> None:
        self._storage = storage
        self.shape, self._shape, contiguous, rows, self.size = _shape_entry(shape)
        if strides is None:
            self.strides, self._strides = contiguous, rows
            self.dense = True  # row-major (from `offset` on)
        else:
            self.strides, self._strides = _strides_entry(strides)
            if len(self.strides) != len(self.shape):
                raise ValueError(f"strides {self.strides} do not match shape {tuple(self.shape)}")
            self.dense = self.strides == contiguous
        self.offset = offset if type(offset) is int else int(offset)
        self.version: list[int] = [0] if version is None else version
        if self.size:
            if self.dense:
                # Row-major: the view spans cells offset .. offset + size - 1.
                if type(storage) is np.ndarray:
                    cells = storage.size
                else:
                    cells = int(getattr(storage, "size", None) or len(storage))
                if self.offset < 0 or self.offset + self.size > cells:
                    self._check_bounds()
            else:
                self._check_bounds()

    def _check_bounds(self) -> None:
        """Raise unless every cell of the view lies inside the storage (kernels never check)."""
        low = high = self.offset
        for n, st in zip(self.shape, self.strides, strict=True):
            if st > 0:
                high += (n - 1) * st
            elif st < 0:
                low += (n - 1) * st
        cells = int(getattr(self._storage, "size", None) or len(self._storage))
        if low < 0 or high >= cells:
            raise IndexError(
                f"shape {tuple(self.shape)} with strides {self.strides} and offset {self.offset} "
                f"reaches cells {low}..{high} of a storage of {cells} cells"
            )

    @property
    def storage(self) -> Any:
        """The buffer as kernels see it: starting at this view's first cell."""
        return self._storage[self.offset :] if self.offset else self._storage

    @property
    def base(self) -> Any:
        """The whole underlying buffer, shared by every view of it."""
        return self._storage

    @property
    def dims(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def tuple(self) -> tuple[Any, Index, Index]:
        """The (storage, shape, strides) triple of the kernel contract."""
        return self.storage, self._shape, self._strides

    def is_contiguous(self) -> bool:
        """True when cells are laid out in row-major order without gaps (always if empty)."""
        if self.size == 0:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def index(self, index: Sequence[int]) -> int:
        """The storage position of one cell, with bounds checked."""
        if len(index) != len(self.shape):
            raise IndexError(f"index {tuple(index)} must have {len(self.shape)} entries")
        for i, (x, s) in enumerate(zip(index, self.shape, strict=True)):
            if not 0 <= x < s:
                raise IndexError(f"index {x} is out of bounds for dimension {i} with size {s}")
        return self.offset + sum(x * st for x, st in zip(index, self.strides, strict=True))

    def indices(self) -> Iterator[Shape]:
        """Every multi-index of the shape, in row-major order."""
        return iter(np.ndindex(*self.shape)) if self.shape else iter([()])

    def get(self, index: Sequence[int]) -> Any:
        """Read one cell."""
        return self._storage[self.index(index)]

    def set(self, index: Sequence[int], value: Any) -> None:
        """Write one cell."""
        self._storage[self.index(index)] = value

    def _view(self, shape: Sequence[int], strides: Sequence[int], offset: int) -> TensorData:
        return TensorData(self._storage, shape, strides, offset, self.version)

    # BEGIN TASK 2.1
    def permute(self, *order: int) -> TensorData:
        """A view with dims reordered: new dim i is old dim order[i]."""
        n = len(self.shape)
        if len(order) != n:
            raise RuntimeError(
                f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                f"the length of the desired ordering of dimensions i.e. input.dim() = {n} is "
                f"not equal to len(dims) = {len(order)}"
            )
        dims = [normalize_dim(d, n) for d in order]
        if len(set(dims)) != n:
            raise RuntimeError(
                f"permute(): duplicate dims are not allowed (got dims {tuple(order)} for a "
                f"tensor of shape {tuple(self.shape)})"
            )
        return self._view(
            [self.shape[d] for d in dims], [self.strides[d] for d in dims], self.offset
        )

    # END TASK 2.1

    def expand(self, shape: Sequence[int]) -> TensorData:
        """A view broadcast to `shape` (stride 0 along the expanded dims); -1 keeps a size."""
        extra = len(shape) - len(self.shape)
        if extra < 0:
            raise RuntimeError(
                f"expand: the number of sizes provided ({len(shape)}) must be greater or "
                f"equal to the number of dimensions in the tensor ({len(self.shape)})"
            )
        new_shape, new_strides = [], []
        for i, size in enumerate(shape):
            if i < extra:
                if size < 0:
                    raise RuntimeError(
                        f"The expanded size of the tensor ({size}) isn't allowed in a leading, "
                        f"non-existing dimension {i}"
                    )
                new_shape.append(size)
                new_strides.append(0)
                continue
            own, stride = self.shape[i - extra], self.strides[i - extra]
            size = own if size == -1 else size
            if own == size:
                new_shape.append(size)
                new_strides.append(stride)
            elif own == 1:
                new_shape.append(size)
                new_strides.append(0)
            else:
                raise RuntimeError(
                    f"The expanded size of the tensor ({size}) must match the existing size "
                    f"({own}) at non-singleton dimension {i}.  Target sizes: {list(shape)}.  "
                    f"Tensor sizes: {list(self.shape)}"
                )
        return self._view(new_shape, new_strides, self.offset)

    def view(self, shape: Sequence[int]) -> TensorData | None:
        """A view with a new shape over the same cells, or None if strides do not allow it.

        Works whenever each group of old dims merged or split into new dims is
        itself laid out contiguously, as PyTorch's `view` requires.
        """
        if self.size == 0:
            return self._view(shape, strides_from_shape(shape), self.offset)
        entry = _shape_entry(shape)
        if entry[4] == self.size and self.strides == _shape_entry(self.shape)[2]:
            # Row-major cells: the new shape views them row-major too.
            return TensorData(self._storage, entry[0], None, self.offset, self.version)
        return self._view_split(shape)

    def _view_split(self, shape: Sequence[int]) -> TensorData | None:
        # Match groups of old dims with groups of new dims of the same total size;
        # a group of old dims can merge only if it is contiguous within itself.
        old = [(s, st) for s, st in zip(self.shape, self.strides, strict=True) if s != 1]
        new_strides = [0] * len(shape)
        oi, ni = 0, 0
        while oi < len(old) or ni < len(shape):
            if ni < len(shape) and shape[ni] == 1:
                new_strides[ni] = 0
                ni += 1
                continue
            if oi >= len(old) or ni >= len(shape):
                return None
            o_end, n_end = oi + 1, ni + 1
            o_size, n_size = old[oi][0], shape[ni]
            while o_size != n_size:
                if o_size < n_size:
                    if o_end >= len(old) or old[o_end - 1][1] != old[o_end][1] * old[o_end][0]:
                        return None
                    o_size *= old[o_end][0]
                    o_end += 1
                else:
                    if n_end >= len(shape):
                        return None
                    n_size *= shape[n_end]
                    n_end += 1
            stride = old[o_end - 1][1]
            for k in range(n_end - 1, ni - 1, -1):
                new_strides[k] = stride
                stride *= shape[k]
            oi, ni = o_end, n_end
        for k in range(len(shape) - 1, -1, -1):
            if shape[k] == 1:  # any stride works; use PyTorch's choice
                new_strides[k] = new_strides[k + 1] * shape[k + 1] if k + 1 < len(shape) else 1
        return self._view(shape, new_strides, self.offset)

    def select(self, dim: int, index: int) -> TensorData:
        """The view at `index` along `dim`, with that dim removed."""
        size = self.shape[dim]
        if not -size <= index < size:
            raise IndexError(
                f"index {index} is out of bounds for dimension {dim} with size {size}"
            )
        index %= size
        return self._view(
            self.shape[:dim] + self.shape[dim + 1 :],
            self.strides[:dim] + self.strides[dim + 1 :],
            self.offset + index * self.strides[dim],
        )

    def narrow(self, dim: int, key: slice) -> TensorData:
        """The view of `key` (a slice with a positive step) along `dim`."""
        if key.step is not None and key.step <= 0:
            raise ValueError("step must be greater than zero")
        start, stop, step = key.indices(self.shape[dim])
        length = max(0, (stop - start + step - 1) // step)
        shape = list(self.shape)
        strides = list(self.strides)
        shape[dim] = length
        strides[dim] = self.strides[dim] * step
        offset = self.offset + (start * self.strides[dim] if length else 0)
        return self._view(shape, strides, offset)

    def insert_dim(self, dim: int) -> TensorData:
        """A view with a new dim of size 1 before `dim`."""
        stride = self.strides[dim] * self.shape[dim] if dim < len(self.shape) else 1
        return self._view(
            self.shape[:dim] + (1,) + self.shape[dim:],
            self.strides[:dim] + (stride,) + self.strides[dim:],
            self.offset,
        )

    def to_string(self) -> str:
        """A short description of the layout, for debugging."""
        return (
            f"TensorData(shape={tuple(self.shape)}, strides={self.strides}, offset={self.offset})"
        )


# ---- Kernel operands: the same cells in the fewest dims ----

# (dim, then shape and strides of out and of each input) -> merged shapes and strides
_MERGED: dict[tuple[Any, ...], tuple[list[tuple[Index, Index]], int]] = {}


def kernel_operands(
    out: TensorData, inputs: Sequence[TensorData], dim: int = -1
) -> tuple[list[Any], int]:
    """The kernel contract's arguments for writing `out` from `inputs`, and the reduced dim.

    Each TensorData becomes its (storage, shape, strides), flattened in order: out, then
    the inputs. The shapes and strides describe the same cells in as few dims as they
    allow (`merge_dims`), so a kernel walks fewer, longer lines: a (64, 8, 4, 4, 4)
    tensor compared with its (64, 8, 1, 4, 4) maxima becomes (512, 4, 16) against
    (512, 1, 16). `dim` >= 0 is a reduction's dim (of the inputs), returned renumbered.
    """
    if dim < 0 and out.dense and all(x.dense and x.shape == out.shape for x in inputs):
        args = [out.storage, out._shape, out._strides]  # kernels walk these in one run
        for x in inputs:
            args += [x.storage, x._shape, x._strides]
        return args, dim
    key: tuple[Any, ...] = (dim, out.shape, out.strides)
    for x in inputs:
        key += (x.shape, x.strides)
    found = _MERGED.get(key)
    if found is None:
        if len(_MERGED) >= _CACHE_LIMIT:
            _MERGED.clear()
        found = _MERGED[key] = _merged_layouts(out, inputs, dim)
    layouts, merged_dim = found
    args = []
    for data, (shape, strides) in zip((out, *inputs), layouts, strict=True):
        args += [data.storage, shape, strides]
    return args, merged_dim


def _merged_layouts(
    out: TensorData, inputs: Sequence[TensorData], dim: int
) -> tuple[list[tuple[Index, Index]], int]:
    """(shape and strides arrays of out and of each input after `merge_dims`, new dim)."""
    shape = out.shape if dim < 0 else inputs[0].shape
    steps = [_aligned_strides(x, len(shape)) for x in (out, *inputs)]
    merged, merged_steps, merged_dim = merge_dims(shape, steps, dim)
    layouts = []
    for k, strides in enumerate(merged_steps):
        # A broadcast dim (stride 0) gets size 1; a reduction's input keeps every size.
        own = merged
        if dim < 0 or k == 0:
            own = tuple(n if st else 1 for n, st in zip(merged, strides, strict=True))
        layouts.append((index_array(own), index_array(strides)))
    return layouts, merged_dim


def _aligned_strides(data: TensorData, dims: int) -> Strides:
    """`data`'s strides over `dims` trailing-aligned dims; 0 where it broadcasts (size 1)."""
    own = tuple(st if n != 1 else 0 for n, st in zip(data.shape, data.strides, strict=True))
    return (0,) * (dims - len(own)) + own


def merge_dims(
    shape: Shape, steps: Sequence[Strides], keep: int = -1
) -> tuple[Shape, list[Strides], int]:
    """Fewest dims that visit the same cells: (shape, each operand's strides, new `keep`).

    Dims of size 1 are dropped, and dim d joins dim d - 1 when every operand steps over
    all of dim d exactly once per step of dim d - 1 (stride[d-1] == stride[d] * shape[d]),
    which includes broadcasting along both (strides 0). Dim `keep` (a reduction's, when
    >= 0) stays a dim of its own. At least one dim remains.
    """
    sizes: list[int] = []
    merged: list[list[int]] = [[] for _ in steps]
    new_keep = -1
    for d, size in enumerate(shape):
        if d != keep and size == 1:
            continue
        joins = sizes and d != keep and len(sizes) - 1 != new_keep
        if joins and all(m[-1] == st[d] * size for m, st in zip(merged, steps, strict=True)):
            sizes[-1] *= size
            for m, st in zip(merged, steps, strict=True):
                m[-1] = st[d]
            continue
        if d == keep:
            new_keep = len(sizes)
        sizes.append(size)
        for m, st in zip(merged, steps, strict=True):
            m.append(st[d])
    if not sizes:
        return (1,), [(0,) for _ in steps], new_keep
    return tuple(sizes), [tuple(m) for m in merged], new_keep


def index_view(data: TensorData, key: Any) -> TensorData:
    """The view `data[key]` for a key of ints, slices, None and at most one Ellipsis."""
    items = normalize_key(key)
    used = sum(1 for item in items if item is not None and item is not Ellipsis)
    ellipses = [i for i, item in enumerate(items) if item is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > data.dims:
        raise IndexError(
            f"too many indices for tensor of dimension {data.dims} (got {used} for shape "
            f"{tuple(data.shape)})"
        )
    if ellipses:
        at = ellipses[0]
        items[at : at + 1] = [slice(None)] * (data.dims - used)
    dim = 0
    for item in items:
        if item is None:
            data = data.insert_dim(dim)
            dim += 1
        elif isinstance(item, slice):
            data = data.narrow(dim, item)
            dim += 1
        else:
            data = data.select(dim, item)
    return data


def normalize_key(key: Any) -> list[Any]:
    """The items of an index key, each an int, a slice, None or Ellipsis (else TypeError)."""
    items = list(key) if isinstance(key, tuple) else [key]
    for i, item in enumerate(items):
        if _is_int_index(item):
            items[i] = operator.index(item)
        elif not (item is None or item is Ellipsis or isinstance(item, slice)):
            raise TypeError(
                f"only integers, slices (`:`), ellipsis (`...`) and None make a view "
                f"(got {type(item).__name__}); index lists, tensors and masks copy (Tensor "
                f"indexing handles them)"
            )
    return items


def _is_int_index(item: Any) -> bool:
    """An int, a numpy integer, or a 0-dim int64 tensor (which acts as an int)."""
    if getattr(item, "_is_minifw_tensor", False) is True:
        return item.dim() == 0 and not item.dtype.is_floating_point  # type: ignore[no-any-return]
    return isinstance(item, int | np.integer) and not isinstance(item, bool)


# ---- Size: the shape a Tensor reports (PyTorch's torch.Size) ----


class Size(tuple):  # type: ignore[type-arg]
    """A shape: a tuple of ints, printed `minifw.Size([2, 3])` (PyTorch prints torch.Size)."""

    __slots__ = ()

    def __new__(cls, sizes: Iterable[Any] = ()) -> Size:
        """The sizes of `sizes` (each an int)."""
        values = tuple(sizes)
        for i, s in enumerate(values):
            if isinstance(s, bool) or not hasattr(s, "__index__"):
                raise TypeError(
                    f"minifw.Size() takes an iterable of 'int' (item {i} is '{type(s).__name__}')"
                )
        return super().__new__(cls, (operator.index(s) for s in values))

    def numel(self) -> int:
        """The number of cells a tensor of this shape holds."""
        count = 1
        for s in self:
            count *= s
        return count

    def __repr__(self) -> str:
        return f"minifw.Size({list(self)})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """As str() in an f-string (`minifw.Size([2, 3])`), as PyTorch; a spec is refused.

        minifw's error messages show a shape as a tuple: `tuple(shape)`.
        """
        if spec:
            raise TypeError("unsupported format string passed to minifw.Size.__format__")
        return repr(self)

    @overload
    def __getitem__(self, key: SupportsIndex) -> int: ...

    @overload
    def __getitem__(self, key: slice) -> Size: ...

    def __getitem__(self, key: SupportsIndex | slice) -> int | Size:
        if isinstance(key, slice):
            return as_size(tuple.__getitem__(self, key))
        return tuple.__getitem__(self, key)  # type: ignore[no-any-return]

    def __add__(self, other: Any) -> Size:
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other: Any) -> Size:
        return Size(tuple(other) + tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Size, (tuple(self),))


def as_size(shape: tuple[int, ...]) -> Size:
    """`shape` (a tuple of ints, already checked) as a Size, without re-checking."""
    return tuple.__new__(Size, shape)
