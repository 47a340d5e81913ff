"""Shape functions of PyTorch's surface: views first, copies where PyTorch copies.

Each function takes the tensor first, as `mf.X(t, ...)`; the Tensor methods of the same
names delegate here. They compose differentiable operations (view, permute, expand,
slicing, `cat`, `where`) or use the Functions below (`Flip`, `Diagonal`, `DiagEmbed`),
so gradients flow on every backend. Host numpy only does index bookkeeping (masks of
`tril`/`triu`, the counts of `repeat_interleave`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from minifw.core.autodiff import is_grad_enabled
from minifw.core.tensor_data import Size, TensorData, normalize_dim, shape_broadcast
from minifw.tensor.functions import Cat, FunctionCtx, Where
from minifw.tensor.functions import Function as _Function

if TYPE_CHECKING:
    from minifw.tensor.tensor import Tensor

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."


def _dims(dims: Any, ndim: int, name: str) -> tuple[int, ...]:
    """`dims` (an int or a sequence) as non-negative dims, refusing repeats as PyTorch."""
    given = tuple(dims) if isinstance(dims, Sequence) else (dims,)
    out = tuple(normalize_dim(int(d), ndim) for d in given)
    for d in out:
        if out.count(d) > 1:
            raise RuntimeError(f"{name}: dim {d} appears multiple times in the list of dims")
    return out


def _varargs(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """f(1, 2) and f((1, 2)) alike."""
    if len(args) == 1 and isinstance(args[0], Sequence | np.ndarray):
        return tuple(args[0])
    return args


def _ints(values: Sequence[Any], name: str) -> tuple[int, ...]:
    for v in values:
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise TypeError(f"{name}(): expected ints, got {type(v).__name__} in {tuple(values)}")
    return tuple(v.__index__() for v in values)


# ---- Views: flatten, unflatten, movedim, narrow, select, broadcast ---------------------------


def flatten(t: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """The dims from start_dim to end_dim merged into one (a view when possible)."""
    return t.flatten(start_dim, end_dim)


def unflatten(t: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Dim `dim` split into `sizes` (one may be -1)."""
    d = normalize_dim(dim, t.dim())
    sizes = _ints(tuple(sizes), "unflatten")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    known = math.prod(s for s in sizes if s != -1)
    if sizes.count(-1) == 1 and known and t.shape[d] % known == 0:
        sizes = tuple(t.shape[d] // known if s == -1 else s for s in sizes)
    if math.prod(sizes) != t.shape[d] or -1 in sizes:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
            f"({t.shape[d]}) in the input tensor"
        )
    return t.reshape(*t.shape[:d], *sizes, *t.shape[d + 1 :])


def movedim(t: Tensor, source: Any, destination: Any) -> Tensor:
    """A view with the dims `source` moved to positions `destination`, the rest in order."""
    src = tuple(source) if isinstance(source, Sequence) else (source,)
    dst = tuple(destination) if isinstance(destination, Sequence) else (destination,)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    n = t.dim()
    src_n = [normalize_dim(int(d), n) for d in src]
    dst_n = [normalize_dim(int(d), n) for d in dst]
    for name, given, dims in (("source", src, src_n), ("destination", dst, dst_n)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(given)})")
    order: list[int | None] = [None] * n
    for s, d in zip(src_n, dst_n, strict=True):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src_n)
    return t.permute(*(next(rest) if o is None else o for o in order))


def swapaxes(t: Tensor, axis0: int, axis1: int) -> Tensor:
    """A view with two dims swapped (PyTorch's alias of transpose)."""
    return t.transpose(axis0, axis1)


def narrow(t: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The view of `length` positions from `start` along `dim`."""
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return t[(slice(None),) * d + (slice(start, start + length),)]


def select(t: Tensor, dim: int, index: int) -> Tensor:
    """The view at `index` along `dim`, without that dim."""
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(t.shape)} at "
            f"dimension {d}"
        )
    return t[(slice(None),) * d + (index,)]


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape every one of `shapes` (ints or tuples) broadcasts to."""
    out: tuple[int, ...] = ()
    for i, shape in enumerate(shapes):
        given = (shape,) if isinstance(shape, int) else tuple(shape)
        try:
            out = shape_broadcast(out, given)
        except RuntimeError:
            raise RuntimeError(
                f"Shape mismatch: objects cannot be broadcast to a single shape (argument "
                f"{i} has shape {given}, the ones before broadcast to {out})"
            ) from None
    return Size(out)


def broadcast_to(t: Tensor, shape: Sequence[int]) -> Tensor:
    """A broadcast view of `t` with `shape` (-1 keeps a size), as `expand`."""
    return t.expand(*shape)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded (as views) to their common broadcast shape."""
    items = _varargs(tensors)
    shape = broadcast_shapes(*(x.shape for x in items))
    return tuple(x.expand(*shape) for x in items)


# ---- Splits: split, chunk, tensor_split, unbind ---------------------------------------------


def split(t: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of `t` along `dim`: pieces of one size (the last may be smaller), or of sizes."""
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    if isinstance(split_size_or_sections, Sequence):
        sizes = _ints(tuple(split_size_or_sections), "split")
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                f"size at dimension {d}), but got split_sizes={list(sizes)}"
            )
    else:
        step = int(split_size_or_sections)
        if step < 0:
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={step}"
            )
        if step == 0 and size:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of "
                f"{size}"
            )
        sizes = tuple(min(step, size - i) for i in range(0, size, step)) if step else (0,)
    return _pieces(t, d, sizes)


def _pieces(t: Tensor, d: int, sizes: Sequence[int]) -> tuple[Tensor, ...]:
    out, start = [], 0
    for s in sizes:
        out.append(t[(slice(None),) * d + (slice(start, start + s),)])
        start += s
    return tuple(out)


def chunk(t: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """At most `chunks` views of equal size along `dim` (the last may be smaller)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    step = -(-size // chunks)
    if step == 0:
        return _pieces(t, d, [0] * chunks)
    return split(t, step, d)


def tensor_split(t: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views along `dim`: `n` nearly equal sections, or cut before each of the indices."""
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    if isinstance(indices_or_sections, Sequence):
        inner = [_clamp_index(int(i), size) for i in indices_or_sections]
        cuts = [0, *inner, size]
        return tuple(
            t[(slice(None),) * d + (slice(a, max(a, b)),)]
            for a, b in zip(cuts, cuts[1:], strict=False)
        )
    sections = int(indices_or_sections)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    small, extra = divmod(size, sections)
    return _pieces(t, d, [small + 1 if i < extra else small for i in range(sections)])


def _clamp_index(i: int, size: int) -> int:
    """A cut position as Python slicing reads it: negatives from the end, clamped."""
    return min(max(i + size if i < 0 else i, 0), size)


def unbind(t: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Every slice along `dim`, without that dim (views)."""
    d = normalize_dim(dim, t.dim())
    return tuple(t[(slice(None),) * d + (i,)] for i in range(t.shape[d]))


# ---- Copies: flip, roll, repeat, tile, repeat_interleave --------------------------------------


class Flip(_Function):
    """The cells in reverse order along some dims (a copy; PyTorch has no negative strides)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dims: tuple[int, ...]) -> Tensor:
        """One copy launch per position along each flipped dim."""
        ctx.dims = dims
        data = a._data
        for d in dims:
            out = a.backend.empty(data.shape, a.dtype.numpy)
            n = data.shape[d]
            for i in range(n):
                a.backend.copy_into(
                    out.narrow(d, slice(i, i + 1)), data.narrow(d, slice(n - 1 - i, n - i))
                )
            data = out
        return a._new(a.backend.contiguous(data) if not dims else data)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """The gradient flipped back."""
        return Flip.apply(grad, ctx.dims), None


def flip(t: Tensor, *dims: Any) -> Tensor:
    """A copy with the order of the cells reversed along `dims`."""
    return Flip.apply(t, _dims(_varargs(dims), t.dim(), "flip"))


def fliplr(t: Tensor) -> Tensor:
    """Flipped left-right (along dim 1)."""
    if t.dim() < 2:
        raise RuntimeError(f"Input must be >= 2-d. (got shape {tuple(t.shape)})")
    return flip(t, 1)


def flipud(t: Tensor) -> Tensor:
    """Flipped up-down (along dim 0)."""
    if t.dim() < 1:
        raise RuntimeError("Input must be >= 1-d. (got a 0-d tensor)")
    return flip(t, 0)


def roll(t: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """A copy with the cells shifted along `dims`, wrapping around (flattened if dims is None)."""
    shift_list = tuple(shifts) if isinstance(shifts, Sequence) else (shifts,)
    dim_list = () if dims is None else tuple(dims) if isinstance(dims, Sequence) else (dims,)
    if dims is None and len(shift_list) == 1:
        return roll(t.flatten(), shift_list[0], 0).view(*t.shape)
    if len(shift_list) != len(dim_list):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shift_list)}, dims:{len(dim_list)}"
        )
    out = t
    for s, dim in zip(shift_list, dim_list, strict=True):
        d = normalize_dim(int(dim), t.dim())
        n = t.shape[d]
        k = int(s) % n if n else 0
        if k:
            keep = (slice(None),) * d
            out = Cat.apply(d, out[keep + (slice(n - k, n),)], out[keep + (slice(0, n - k),)])
    return out.clone() if out is t else out


def repeat(t: Tensor, *sizes: Any) -> Tensor:
    """A copy of `t` tiled `sizes[i]` times along each dim (leading sizes add dims)."""
    reps = _ints(_varargs(sizes), "repeat")
    if len(reps) < t.dim():
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            f"of tensor (repeats {list(reps)}, tensor shape {list(t.shape)})"
        )
    shape = (1,) * (len(reps) - t.dim()) + tuple(t.shape)
    target = [r * s for r, s in zip(reps, shape, strict=True)]
    if any(r < 0 for r in reps):
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {min(target)}: {target}"
        )
    spread = t.reshape(*(v for s in shape for v in (1, s)))
    wide = spread.expand(*(v for r, s in zip(reps, shape, strict=True) for v in (r, s)))
    return _fresh(wide, target)


def _fresh(t: Tensor, shape: Sequence[int]) -> Tensor:
    """A row-major copy of `t` in `shape`, sharing no cells with `t` (as PyTorch's copies)."""
    out = t.clone().view(*shape)
    out._base = None  # its own storage: writes touch no one else's cells
    return out


def tile(t: Tensor, *dims: Any) -> Tensor:
    """`repeat`, with too few `dims` padded by leading 1s."""
    reps = _ints(_varargs(dims), "tile")
    return repeat(t, *((1,) * (t.dim() - len(reps)) + reps))


def repeat_interleave(
    t: Tensor, repeats: Any, dim: int | None = None, *, output_size: int | None = None
) -> Tensor:
    """Each cell (or slice along `dim`) repeated `repeats` times in place (flattened if no dim)."""
    if dim is None:
        t, dim = t.flatten(), 0
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    counts = _repeat_counts(repeats, size, d)
    if output_size is not None and output_size != sum(counts):
        raise RuntimeError(
            f"repeat_interleave: output_size {output_size} does not match the {sum(counts)} "
            "repeated cells"
        )
    if len(set(counts)) == 1:
        r = counts[0]
        spread = t.unsqueeze(d + 1).expand(*t.shape[: d + 1], r, *t.shape[d + 1 :])
        return _fresh(spread, (*t.shape[:d], size * r, *t.shape[d + 1 :]))
    keep = (slice(None),) * d
    pieces = [
        t[keep + (slice(i, i + 1),)].expand(*t.shape[:d], c, *t.shape[d + 1 :])
        for i, c in enumerate(counts)
        if c
    ]
    if not pieces:
        return t[keep + (slice(0, 0),)].clone()
    return Cat.apply(d, *pieces)


def _repeat_counts(repeats: Any, size: int, d: int) -> list[int]:
    """The repeat count of each position along the dim (index bookkeeping on the host)."""
    if getattr(repeats, "_is_minifw_tensor", False):
        if repeats.dtype.is_floating_point or repeats.dim() > 1:
            raise RuntimeError(
                f"repeat_interleave: repeats must be a 0-dim or 1-dim int64 tensor (got "
                f"{repeats.dtype} of shape {tuple(repeats.shape)})"
            )
        values = [int(v) for v in repeats.backend.to_numpy(repeats._data).reshape(-1)]
        if repeats.dim() == 1 and len(values) != 1 and len(values) != size:
            raise RuntimeError(
                f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                f"{len(values)} and input.size({d}) = {size}"
            )
    else:
        values = [int(repeats)]
    if any(v < 0 for v in values):
        raise RuntimeError(f"repeats can not be negative (got {values})")
    return values * size if len(values) == 1 else values


# ---- Diagonals and triangles ------------------------------------------------------------------


def _diagonal_view(data: TensorData, offset: int, d1: int, d2: int) -> TensorData:
    """The view of the `offset` diagonal of dims d1, d2, appended as the last dim."""
    n1, n2 = data.shape[d1], data.shape[d2]
    s1, s2 = data.strides[d1], data.strides[d2]
    row, col = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(n1 - row, n2 - col))
    keep = [i for i in range(len(data.shape)) if i not in (d1, d2)]
    start = data.offset + (row * s1 + col * s2 if length else 0)
    return TensorData(
        data.base,  # the whole buffer: `start` counts from its first cell
        tuple(data.shape[i] for i in keep) + (length,),
        tuple(data.strides[i] for i in keep) + (s1 + s2 if length > 1 else 1,),
        start,
        data.version,
    )


class Diagonal(_Function):
    """The view of a diagonal (of dims d1 and d2) as the last dim."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, offset: int, d1: int, d2: int) -> Tensor:
        """The diagonal view."""
        ctx.shape, ctx.where = a.shape, (offset, d1, d2)
        return a._view_of(_diagonal_view(a._data, offset, d1, d2))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Any, ...]:
        """Grad written onto the diagonal of zeros."""
        return DiagEmbedInto.apply(grad, ctx.shape, *ctx.where), None, None, None


class DiagEmbedInto(_Function):
    """Zeros of `shape` with `a` written onto the diagonal (offset, d1, d2)."""

    @staticmethod
    def forward(
        ctx: FunctionCtx, a: Tensor, shape: tuple[int, ...], offset: int, d1: int, d2: int
    ) -> Tensor:
        """The diagonal matrix (or batch of them)."""
        ctx.where = (offset, d1, d2)
        out = a._zeros(shape)
        out.backend.copy_into(_diagonal_view(out._data, offset, d1, d2), a._data)
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Any, ...]:
        """The diagonal of the gradient."""
        return Diagonal.apply(grad, *ctx.where), None, None, None, None


def diagonal(t: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The view of the `offset` diagonal of dims dim1 and dim2, as the last dim."""
    d1, d2 = normalize_dim(dim1, t.dim()), normalize_dim(dim2, t.dim())
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(t, int(offset), d1, d2)


def diag_embed(t: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (dims dim1, dim2 of the result) with the last dim of `t` on a diagonal."""
    n = t.dim() + 1
    d1, d2 = normalize_dim(dim1, n), normalize_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    side = t.shape[-1] + abs(int(offset)) if t.dim() else 1 + abs(int(offset))
    batch = iter(t.shape[:-1])
    shape = tuple(side if i in (d1, d2) else next(batch) for i in range(n))
    return DiagEmbedInto.apply(t if t.dim() else t.reshape(1), shape, int(offset), d1, d2)


def diag(t: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-D tensor as a diagonal matrix, or the diagonal (a copy) of a matrix."""
    if t.dim() == 1:
        return diag_embed(t, diagonal, 0, 1)
    if t.dim() == 2:
        return Diagonal.apply(t, int(diagonal), 0, 1).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {t.dim()}D")


def _triangle(t: Tensor, diagonal: int, lower: bool, name: str) -> Tensor:
    if t.dim() < 2:
        raise RuntimeError(
            f"{name}: input tensor must have at least 2 dimensions (got shape {tuple(t.shape)})"
        )
    rows, cols = t.shape[-2], t.shape[-1]
    keep = np.tri(rows, cols, diagonal, dtype=bool)
    if not lower:
        keep = ~np.tri(rows, cols, diagonal - 1, dtype=bool)
    mask = t._new(t.backend.from_numpy(keep.astype(t.dtype.numpy)))
    return Where.apply(mask, t, t._scalar_like(0))


def tril(t: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (on and below the `diagonal`) of the last two dims; zeros above."""
    return _triangle(t, diagonal, True, "tril")


def triu(t: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (on and above the `diagonal`) of the last two dims; zeros below."""
    return _triangle(t, diagonal, False, "triu")


# ---- Joining: hstack, vstack, dstack, atleast_nd -----------------------------------------------


def atleast_1d(t: Tensor) -> Tensor:
    """`t` with at least 1 dim (a 0-d tensor becomes shape (1,))."""
    return t.reshape(1) if t.dim() == 0 else t


def atleast_2d(t: Tensor) -> Tensor:
    """`t` with at least 2 dims (new leading dims of size 1)."""
    return t.reshape(*(1,) * (2 - t.dim()), *t.shape) if t.dim() < 2 else t


def atleast_3d(t: Tensor) -> Tensor:
    """`t` with at least 3 dims: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)."""
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.reshape(1, t.shape[0], 1)
    return t.unsqueeze(-1) if t.dim() == 2 else t


def _cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
    from minifw.tensor.creation import cat

    return cat(tensors, dim)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Tensors joined column-wise (along dim 0 for 1-D tensors, else dim 1)."""
    items = [atleast_1d(t) for t in tensors]
    return _cat(items, 0 if items and items[0].dim() == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Tensors joined row-wise (1-D tensors become rows)."""
    return _cat([atleast_2d(t) for t in tensors], 0)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Tensors joined depth-wise (along dim 2, after `atleast_3d`)."""
    return _cat([atleast_3d(t) for t in tensors], 2)


# ---- In place on the view metadata: unsqueeze_, squeeze_, t_, transpose_ ----------------------


def reshape_inplace(t: Tensor, change: Any) -> Tensor:
    """Give `t` the shape and strides of `change(t)` (a view), recording it for autograd."""
    recording = is_grad_enabled() and t.requires_grad
    if recording and t.is_leaf:
        raise RuntimeError(LEAF_INPLACE)
    if not recording:
        t._data = change(t.detach())._data
        return t
    old = t._retire_history()
    result = change(old)
    t._data = result._data
    t._attach(result.history)
    return t
