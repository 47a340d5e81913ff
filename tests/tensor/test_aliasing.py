"""Which results share cells with their source: views alias, copies do not, as in PyTorch.

Every shape op of the Tensor surface runs on the same source in minifw and in PyTorch;
then the same cells are written, in the source and in the results, in both. A write shows
through to another tensor exactly when PyTorch's does, so after every write all tensors
hold PyTorch's values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.extra

Op = Callable[[Any, Any], Any]


def _half(n: int) -> int:
    return max(1, n // 2)


# (name, op(t, lib)): `lib` is `mf` or `torch`, for the few functions with no method form.
OPS: list[tuple[str, Op]] = [
    ("view", lambda t, lib: t.view(-1) if t.is_contiguous() else t.view(t.shape)),
    ("view_as", lambda t, lib: t.view_as(t)),
    ("reshape", lambda t, lib: t.reshape(-1)),
    ("reshape_as", lambda t, lib: t.reshape_as(t)),
    ("permute", lambda t, lib: t.permute(*reversed(range(t.dim())))),
    ("transpose", lambda t, lib: t.transpose(0, -1)),
    ("swapaxes", lambda t, lib: t.swapaxes(0, 1)),
    ("t", lambda t, lib: t.t() if t.dim() <= 2 else t.transpose(0, 1)),
    ("T", lambda t, lib: t.mT),
    ("expand", lambda t, lib: t.unsqueeze(0).expand(2, *t.shape)),
    ("expand_as", lambda t, lib: t[:1].expand_as(t)),
    ("broadcast_to", lambda t, lib: lib.broadcast_to(t, (3, *t.shape))),
    ("squeeze", lambda t, lib: t.squeeze()),
    ("squeeze_dim", lambda t, lib: t.unsqueeze(1).squeeze(1)),
    ("unsqueeze", lambda t, lib: t.unsqueeze(-1)),
    ("none_index", lambda t, lib: t[None, ..., None]),
    ("narrow", lambda t, lib: t.narrow(-1, t.shape[-1] // 2, _half(t.shape[-1]))),
    ("slice", lambda t, lib: t[1:, ::2]),
    ("slice_step", lambda t, lib: t[..., ::3]),
    ("select", lambda t, lib: t.select(1, -1)),
    ("int_index", lambda t, lib: t[0]),
    ("index_list", lambda t, lib: t[[0, 0]]),
    ("index_mask", lambda t, lib: t[t > 3]),
    ("flatten", lambda t, lib: t.flatten()),
    ("flatten_tail", lambda t, lib: t.flatten(1)),
    ("unflatten", lambda t, lib: t.unflatten(0, (1, t.shape[0]))),
    ("unbind", lambda t, lib: t.unbind(1)),
    ("split", lambda t, lib: t.split(_half(t.shape[0]))),
    ("split_sizes", lambda t, lib: t.split([1, t.shape[-1] - 1], dim=-1)),
    ("chunk", lambda t, lib: t.chunk(2, dim=-1)),
    ("tensor_split", lambda t, lib: t.tensor_split(2, dim=1)),
    ("diagonal", lambda t, lib: t.diagonal()),
    ("diagonal_offset", lambda t, lib: t.diagonal(1, 0, -1)),
    ("movedim", lambda t, lib: t.movedim(0, -1)),
    ("moveaxis", lambda t, lib: t.moveaxis(-1, 0)),
    ("repeat", lambda t, lib: t.repeat(2, *([1] * t.dim()))),
    ("repeat_ones", lambda t, lib: t.repeat(*([1] * t.dim()))),
    ("tile", lambda t, lib: t.tile((2,))),
    ("repeat_interleave", lambda t, lib: t.repeat_interleave(2)),
    ("repeat_interleave_dim", lambda t, lib: t.repeat_interleave(3, dim=1)),
    ("repeat_interleave_once", lambda t, lib: t.repeat_interleave(1, dim=0)),
    ("flip", lambda t, lib: t.flip(0)),
    ("fliplr", lambda t, lib: t.fliplr()),
    ("roll", lambda t, lib: t.roll(1, 0)),
    ("roll_zero", lambda t, lib: t.roll(0, 0)),
    ("contiguous", lambda t, lib: t.contiguous()),
    ("clone", lambda t, lib: t.clone()),
    ("detach", lambda t, lib: t.detach()),
    ("tril", lambda t, lib: t.tril()),
    ("atleast_2d", lambda t, lib: lib.atleast_2d(t)),
    ("index_select", lambda t, lib: t.index_select(0, lib.tensor([0]))),
    ("view_rows", lambda t, lib: t.reshape(-1, t.shape[-1]).view(-1, t.shape[-1])),
    ("swapdims", lambda t, lib: t.swapdims(0, -1)),
    ("T_2d", lambda t, lib: t[0].T if t.dim() == 3 else t.T),
    ("expand_minus_one", lambda t, lib: t[:, :1].expand(-1, 3, *t.shape[2:])),
    ("ellipsis_index", lambda t, lib: t[..., None, 1:]),
    ("negative_index", lambda t, lib: t[-1]),
    ("narrow_rows", lambda t, lib: t.narrow(0, 0, 1)),
    ("split_dim1", lambda t, lib: t.split([1, t.shape[1] - 1], dim=1)),
    ("tensor_split_indices", lambda t, lib: t.tensor_split([1, 2], dim=0)),
    ("diag", lambda t, lib: lib.diag(t[0] if t.dim() == 3 else t)),
    ("diag_embed", lambda t, lib: lib.diag_embed(t)),
    ("triu", lambda t, lib: t.triu(1)),
    ("flipud", lambda t, lib: t.flipud()),
    ("roll_flat", lambda t, lib: t.roll(2)),
    ("take", lambda t, lib: t.take(lib.tensor([0, 0, -1]))),
    ("masked_select", lambda t, lib: t.masked_select(t > 2)),
    ("gather", lambda t, lib: t.gather(0, lib.zeros_like(t, dtype=lib.int64))),
    ("cat", lambda t, lib: lib.cat([t, t])),
    ("stack", lambda t, lib: lib.stack([t])),
    ("hstack", lambda t, lib: lib.hstack([t])),
    ("broadcast_tensors", lambda t, lib: lib.broadcast_tensors(t, t[:1])),
    ("atleast_1d", lambda t, lib: lib.atleast_1d(t)),
    ("atleast_3d", lambda t, lib: lib.atleast_3d(t)),
    ("data", lambda t, lib: t.data),
    ("type_as", lambda t, lib: t.type_as(t)),
    ("cpu", lambda t, lib: t.cpu()),
]

# How the source is laid out over its base: the base itself, or a view of it.
LAYOUTS: dict[str, Callable[[Any], Any]] = {
    "contiguous": lambda b: b,
    "transposed": lambda b: b.transpose(0, -1),
    "sliced": lambda b: b[:, 1:],
}


def _results(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple | list) else [out]


def _values(t: Any) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=np.float64)


@st.composite
def cases(draw: st.DrawFn) -> tuple[tuple[int, ...], str, str, list[tuple[int, int]]]:
    """A base shape, a layout, an op and a few writes (target, flat cell index)."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=2, max_size=3)))
    if draw(st.booleans()):
        shape = (shape[0], shape[1] + 1, *shape[2:])  # room for the "sliced" layout
    layout = draw(st.sampled_from(sorted(LAYOUTS)))
    op = draw(st.sampled_from([name for name, _ in OPS]))
    writes = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 10**6)), max_size=4))
    return shape, layout, op, writes


def _universe(lib: Any, shape: tuple[int, ...], layout: str, op: str) -> list[Any]:
    """[base, source, results...] built the same way in `lib`."""
    if layout == "sliced" and shape[1] < 2:
        layout = "contiguous"
    base = lib.arange(float(np.prod(shape))).reshape(*shape)
    src = LAYOUTS[layout](base)
    return [base, src, *_results(dict(OPS)[op](src, lib))]


def _write(t: Any, cell: int, value: float) -> None:
    index = tuple(int(i) for i in np.unravel_index(cell % t.numel(), tuple(t.shape)))
    t[index] = value


@given(cases())
def test_writes_show_through_exactly_where_pytorch_s_do(
    case: tuple[tuple[int, ...], str, str, list[tuple[int, int]]],
) -> None:
    shape, layout, op, writes = case
    ours, theirs = _universe(mf, shape, layout, op), _universe(torch, shape, layout, op)
    assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs]
    for step, (target, cell) in enumerate(writes):
        k = target % len(ours)
        if theirs[k].numel() == 0:
            continue
        _write(theirs[k], cell, -100.0 - step)
        _write(ours[k], cell, -100.0 - step)
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            np.testing.assert_array_equal(
                _values(a), _values(b), err_msg=f"{op} on a {layout} source: tensor {i}"
            )


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.repeat(4),
        lambda t: t.tile((4,)),
        lambda t: t.repeat_interleave(4),
        lambda t: t.reshape(1, 1).repeat_interleave(4, dim=1).reshape(4),
        lambda t: t.repeat(1),
    ],
    ids=["repeat", "tile", "repeat_interleave", "repeat_interleave_dim", "repeat_once"],
)
def test_repeat_copies_so_a_write_touches_one_cell(op: Callable[[Any], Any]) -> None:
    src = mf.ones(1)
    out = op(src)
    out[-1] = 9.0
    src[0] = 7.0
    expected = op(torch.ones(1))
    expected[-1] = 9.0
    assert out.tolist() == expected.tolist()
    assert src.tolist() == [7.0]


def test_repeat_of_a_tensor_that_requires_grad_keeps_its_gradient() -> None:
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    (x.repeat(3) * mf.arange(6.0)).sum().backward()
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    (tx.repeat(3) * torch.arange(6.0)).sum().backward()
    assert x.grad is not None and tx.grad is not None
    assert x.grad.tolist() == tx.grad.tolist()
