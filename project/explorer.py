"""The tensor explorer's logic: views of one storage, and how indices map into it.

A tensor is a flat storage plus a shape, strides and an offset (minifw's
`TensorData`). Cell `index` lives at `offset + sum(index[i] * strides[i])`.
`apply_step` makes a new view (permute, transpose, view, slice, expand,
unsqueeze) over the *same* storage; `html_storage` and `html_view` draw the
storage with the cells a view uses highlighted. The user's text is read with
small parsers (`parse_ints`, `parse_index`), never `eval`.
"""

from __future__ import annotations

import ast
import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from minifw.core.tensor_data import TensorData, index_view

MAX_CELLS = 120
CELL = "border:1px solid #d1d5db;padding:2px 6px;min-width:30px;"
MAX_DIMS = 4
STEPS = ("permute", "transpose", "view", "slice", "expand", "unsqueeze")
STEP_HINTS = {
    "permute": "new order of the dims, e.g. 2, 0, 1",
    "transpose": "two dims to swap, e.g. 0, 1",
    "view": "a new shape with the same number of cells, e.g. 6, 4 (-1 infers one size)",
    "slice": "an index like 0, 1:3 or ::2, None, ...",
    "expand": "a shape to broadcast to, e.g. 3, 2, 4 (size-1 dims stretch)",
    "unsqueeze": "where to insert a dim of size 1, e.g. 0",
}


class ExplorerError(ValueError):
    """The user's shape, dims or index cannot be used; says why."""


def parse_ints(text: str, what: str) -> tuple[int, ...]:
    """Comma-separated integers, like "2, 3, 4"."""
    parts = [p.strip() for p in text.replace("(", "").replace(")", "").split(",")]
    parts = [p for p in parts if p]
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise ExplorerError(f"{what} must be integers separated by commas, got {text!r}") from None


def new_storage(shape: Sequence[int]) -> TensorData:
    """A contiguous tensor of `shape` whose storage holds 0, 1, 2, ... (its positions)."""
    if not 1 <= len(shape) <= MAX_DIMS or min(shape) < 1:
        raise ExplorerError(f"pick 1 to {MAX_DIMS} positive sizes, got {tuple(shape)}")
    size = int(np.prod(shape))
    if size > MAX_CELLS:
        raise ExplorerError(f"shape {tuple(shape)} has {size} cells; at most {MAX_CELLS} here")
    return TensorData(np.arange(size, dtype=np.float64), shape)


def parse_index(text: str) -> tuple[Any, ...]:
    """An index of ints, slices (`a:b:c`), None and `...`, read from the text of `t[...]`."""
    try:
        tree = ast.parse(f"t[{text}]", mode="eval")
    except SyntaxError:
        raise ExplorerError(f"not an index: {text!r} (try 0, 1:3 or ::2)") from None
    node = tree.body
    assert isinstance(node, ast.Subscript)
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return tuple(_index_item(item) for item in items)


def _index_item(node: ast.AST) -> Any:
    if isinstance(node, ast.Slice):
        bounds = [
            None if part is None else _int(part) for part in (node.lower, node.upper, node.step)
        ]
        return slice(*bounds)
    if isinstance(node, ast.Constant) and (node.value is None or node.value is Ellipsis):
        return node.value
    return _int(node)


def _int(node: ast.AST) -> int:
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return sign * node.value
    raise ExplorerError("an index may hold only integers, slices like 1:3, None and ...")


def apply_step(data: TensorData, step: str, argument: str) -> TensorData:
    """The view that `step` (one of STEPS) with its typed `argument` makes of `data`."""
    try:
        if step == "slice":
            return index_view(data, parse_index(argument))
        values = parse_ints(argument, step)
        if step == "permute":
            return data.permute(*values)
        if step == "transpose":
            if len(values) != 2:
                raise ExplorerError(f"transpose takes two dims, got {values}")
            order = list(range(data.dims))
            a, b = (v % data.dims for v in values)
            order[a], order[b] = order[b], order[a]
            return data.permute(*order)
        if step == "view":
            return _view(data, values)
        if step == "expand":
            return _expand(data, values)
        if step == "unsqueeze":
            if len(values) != 1 or not -data.dims - 1 <= values[0] <= data.dims:
                raise ExplorerError(f"unsqueeze takes one dim in [{-data.dims - 1}, {data.dims}]")
            return data.insert_dim(values[0] % (data.dims + 1))
    except (RuntimeError, IndexError, TypeError) as error:
        raise ExplorerError(str(error)) from None
    raise ExplorerError(f"unknown step {step!r}: expected one of {', '.join(STEPS)}")


def _view(data: TensorData, shape: tuple[int, ...]) -> TensorData:
    if shape.count(-1) > 1:
        raise ExplorerError("only one size may be -1")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        if known == 0 or data.size % known:
            raise ExplorerError(f"shape {shape} is invalid for input of size {data.size}")
        shape = tuple(data.size // known if s == -1 else s for s in shape)
    if int(np.prod(shape)) != data.size or min(shape, default=1) < 1:
        raise ExplorerError(f"shape {shape} is invalid for input of size {data.size}")
    view = data.view(shape)
    if view is None:
        raise ExplorerError(
            f"view size is not compatible with input tensor's size and stride (shape "
            f"{data.shape}, strides {data.strides}): at least one dimension spans across two "
            "contiguous subspaces. Use .reshape(...) instead (it copies)."
        )
    return view


def _expand(data: TensorData, shape: tuple[int, ...]) -> TensorData:
    if len(shape) > MAX_DIMS or int(np.prod([abs(s) for s in shape])) > 4 * MAX_CELLS:
        raise ExplorerError(f"expand to at most {MAX_DIMS} dims and {4 * MAX_CELLS} cells")
    return data.expand(shape)


def position(data: TensorData, index: Sequence[int]) -> int:
    """The storage position of `index` (bounds checked)."""
    try:
        return data.index(list(index))
    except IndexError as error:
        raise ExplorerError(str(error)) from None


def formula(data: TensorData, index: Sequence[int]) -> str:
    """The sum that gives the position of `index`, e.g. "0 + 1*12 + 2*1 = 14"."""
    terms = " + ".join(f"{i}*{s}" for i, s in zip(index, data.strides, strict=True))
    return f"{data.offset} + {terms} = {position(data, index)}"


def positions_used(data: TensorData) -> dict[int, list[tuple[int, ...]]]:
    """Each storage position the view reads, with the indices that read it."""
    used: dict[int, list[tuple[int, ...]]] = {}
    for index in data.indices():
        used.setdefault(data.index(list(index)), []).append(tuple(int(i) for i in index))
    return used


def html_storage(data: TensorData, selected: int | None = None) -> str:
    """The storage as one row of cells: used ones shaded, the selected one outlined."""
    used = positions_used(data)
    cells = []
    for pos, value in enumerate(np.asarray(data.base)):
        style = "background:#bfdbfe;" if pos in used else "background:#f3f4f6;color:#9ca3af;"
        if pos == selected:
            style += "outline:3px solid #dc2626;outline-offset:-3px;"
        title = html.escape(", ".join(str(ix) for ix in used.get(pos, [])) or "not used")
        cells.append(
            f'<td style="{CELL}{style}" title="{title}"><div style="font-size:10px;color:#6b7280">'
            f"{pos}</div><b>{value:g}</b></td>"
        )
    return _table("storage (position above, value below)", ["".join(cells)])


def html_view(data: TensorData, selected: Sequence[int] | None = None) -> str:
    """The view's cells as 2-D tables (last two dims), each showing its storage position."""
    shape = data.shape
    rows_dim = shape[-2] if len(shape) >= 2 else 1
    cols_dim = shape[-1]
    outer = list(np.ndindex(*shape[:-2])) if len(shape) > 2 else [()]
    blocks = []
    for prefix in outer:
        rows = []
        for r in range(rows_dim):
            cells = []
            for c in range(cols_dim):
                index = (*prefix, r, c) if len(shape) >= 2 else (c,)
                pos = data.index(list(index))
                mark = tuple(selected or ()) == index
                style = "outline:3px solid #dc2626;outline-offset:-3px;" if mark else ""
                cells.append(
                    f'<td style="{CELL}background:#eff6ff;{style}"><b>{data.base[pos]:g}</b>'
                    f'<div style="font-size:10px;color:#6b7280">@{pos}</div></td>'
                )
            rows.append("".join(cells))
        title = f"[{', '.join(map(str, prefix))}, :, :]" if prefix else "the view"
        blocks.append(_table(title, rows))
    return "".join(blocks)


def _table(title: str, rows: list[str]) -> str:
    body = "".join(f"<tr>{row}</tr>" for row in rows)
    return (
        f'<div style="display:inline-block;margin:4px 12px 8px 0;vertical-align:top">'
        f'<div style="font-size:12px;color:#374151">{html.escape(title)}</div>'
        '<table style="border-collapse:collapse;text-align:center;font-family:monospace">'
        f"{body}</table></div>"
    )
