"""`F.pad`: constant, reflect, replicate and circular padding, built from slices and `cat`.

Each padded dim is one `cat` of the input with the cells added before and after it, so
gradients come from `cat` and the slices' own backward: the padding modes differ only in
which cells they take (a constant block, mirrored cells, the edge cell repeated, or the
cells from the other end).
"""

from __future__ import annotations

from collections.abc import Sequence

from minifw.tensor.creation import cat
from minifw.tensor.kernel_api import full
from minifw.tensor.tensor import Tensor

MODES = ("constant", "reflect", "replicate", "circular")


def along(t: Tensor, dim: int, start: int, stop: int, step: int = 1) -> Tensor:
    """The view of `t` holding cells start:stop:step of `dim`."""
    key = (slice(None),) * dim + (slice(start, stop, step),)
    return t[key]


def _block(t: Tensor, dim: int, size: int, value: float) -> Tensor:
    """A tensor like `t` with `size` cells along `dim`, every cell `value`."""
    shape = list(t.shape)
    shape[dim] = size
    return full(t, tuple(shape), value)


def _mirrored(t: Tensor, dim: int, cells: Sequence[int]) -> list[Tensor]:
    """The one-cell slices of `t` along `dim` at `cells`, in that order."""
    return [along(t, dim, i, i + 1) for i in cells]


def _pad_dim(t: Tensor, dim: int, before: int, after: int, mode: str, value: float) -> Tensor:
    """`t` padded along `dim` with `before` and `after` cells in `mode`."""
    n = t.shape[dim]
    if mode == "constant":
        t = along(t, dim, max(-before, 0), n - max(-after, 0))  # negative pads crop
        before, after = max(before, 0), max(after, 0)
        if not before and not after:
            return t
        parts = [_block(t, dim, before, value)] if before else []
        parts.append(t)
        return cat(parts + ([_block(t, dim, after, value)] if after else []), dim)
    if mode == "reflect":
        left = _mirrored(t, dim, range(before, 0, -1))
        right = _mirrored(t, dim, range(n - 2, n - 2 - after, -1))
    elif mode == "replicate":
        left = _mirrored(t, dim, [0] * before)
        right = _mirrored(t, dim, [n - 1] * after)
    else:  # circular
        left = [along(t, dim, n - before, n)] if before else []
        right = [along(t, dim, 0, after)] if after else []
    return cat([*left, t, *right], dim) if left or right else t


def _check(t: Tensor, pad: Sequence[int], mode: str) -> list[tuple[int, int, int]]:
    """(dim, before, after) for each padded dim; PyTorch's errors for bad arguments."""
    if mode not in MODES:
        raise NotImplementedError(
            f"pad: mode {mode!r} is not supported (supported: {', '.join(MODES)})"
        )
    if len(pad) % 2 or len(pad) // 2 > t.dim():
        raise RuntimeError(
            f"Padding length must be divisible by 2 and at most twice the number of dims; "
            f"got pad {tuple(pad)} for an input of shape {tuple(t.shape)}"
        )
    pairs = [(t.dim() - 1 - i, int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)]
    if mode == "constant":
        for dim, before, after in pairs:
            left = t.shape[dim] + min(before, 0) + min(after, 0)
            if left < 0:
                raise RuntimeError(
                    f"narrow(): length must be non-negative. (pad: cropping ({before}, {after}) "
                    f"from dim {dim} of an input of shape {tuple(t.shape)} leaves {left} cells)"
                )
        return pairs
    if not len(pairs) + 1 <= t.dim() <= len(pairs) + 2:
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {t.dim()}D input tensor: {mode} "
            f"padding of {len(pairs)} dims needs a {len(pairs) + 1}-D or {len(pairs) + 2}-D "
            f"input, got shape {tuple(t.shape)}"
        )
    for dim, before, after in pairs:
        size = t.shape[dim]
        limit = size - 1 if mode == "reflect" else size
        if min(before, after) < 0 or max(before, after) > limit:
            raise RuntimeError(
                f"pad: {mode} padding ({before}, {after}) of dim {dim} must be between 0 and "
                f"{limit} for an input of shape {tuple(t.shape)}"
            )
    return pairs


def pad(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    pad: Sequence[int],
    mode: str = "constant",
    value: float | None = None,
) -> Tensor:
    """`input` padded: `pad` lists (before, after) cell counts from the last dim backwards.

    Modes as PyTorch's: "constant" (cells of `value`, default 0; negative counts crop),
    "reflect" (mirrored, the edge cell not repeated), "replicate" (the edge cell
    repeated) and "circular" (the cells from the other end).
    """
    out = input
    for dim, before, after in _check(input, pad, mode):
        out = _pad_dim(out, dim, before, after, mode, 0.0 if value is None else value)
    return out


__all__ = ["MODES", "along", "pad"]
