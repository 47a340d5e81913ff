"""PyTorch-style printing of tensor values: `tensor([[1., 2.]], requires_grad=True)`.

The rules follow PyTorch's defaults: 4 decimals; integer-valued floats print as
`1.`; scientific notation when the nonzero finite magnitudes span more than 1000x,
exceed 1e8 or go below 1e-4; rows wrap at 80 columns; tensors of more than 1000
cells show only their first and last 3 entries along each dim.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

EDGE_ITEMS = 3
SUMMARIZE_OVER = 1000
LINE_WIDTH = 80
PRECISION = 4


class CellFormatter:
    """Formats every cell of one tensor to a common width, as PyTorch does."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.boolean = values.dtype.kind == "b"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        flat = values.reshape(-1)
        if self.boolean:  # PyTorch: `tensor([ True, False])`, right-aligned
            self.width = 5 if not flat.all() else 4
            return
        if not self.floating:
            self.width = max((len(str(int(v))) for v in flat), default=1)
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite).astype(np.float64)
        low, high = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
        texts = [self._text(float(v)) for v in finite]
        extra = 1 if self.int_mode and not self.sci_mode else 0
        self.width = max(len(t) for t in texts) + extra

    def _text(self, value: float) -> str:
        if self.sci_mode:
            return f"{value:.{PRECISION}e}"
        if self.int_mode:
            return f"{value:.0f}"
        return f"{value:.{PRECISION}f}"

    def format(self, value: Any) -> str:
        """One cell, right-aligned to the common width."""
        if self.boolean:
            text = str(bool(value))
        elif not self.floating:
            text = str(int(value))
        else:
            text = self._text(float(value))
            if self.int_mode and not self.sci_mode and math.isfinite(value):
                text += "."
        return text.rjust(self.width)


def format_values(values: np.ndarray, indent: int) -> str:
    """The nested-bracket text of `values`, laid out the way PyTorch prints them."""
    if values.size == 0:
        return "[]"
    summarize = values.size > SUMMARIZE_OVER
    cell = CellFormatter(_edges(values) if summarize else values)
    if values.ndim == 0:
        return cell.format(values.item())
    return _nested(values, cell, indent, summarize)


def add_suffixes(body: str, suffixes: list[str], indent: int) -> str:
    """`body` followed by `, suffix` items, wrapping to a new line past 80 columns."""
    parts = [body]
    last_line = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > LINE_WIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts)


def _edges(values: np.ndarray) -> np.ndarray:
    """Only the cells a summarized print shows (the first and last EDGE_ITEMS per dim)."""
    if values.ndim == 0:
        return values
    if len(values) > 2 * EDGE_ITEMS:
        values = np.concatenate([values[:EDGE_ITEMS], values[-EDGE_ITEMS:]])
    if values.ndim == 1:
        return values
    return np.stack([_edges(row) for row in values])


def _nested(values: np.ndarray, cell: CellFormatter, indent: int, summarize: bool) -> str:
    cut = summarize and len(values) > 2 * EDGE_ITEMS
    positions = list(range(len(values)))
    if cut:
        positions = [*range(EDGE_ITEMS), -1, *range(len(values) - EDGE_ITEMS, len(values))]
    if values.ndim == 1:
        items = [" ..." if i < 0 else cell.format(values[i].item()) for i in positions]
        per_line = max(1, (LINE_WIDTH - indent) // (cell.width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = ["..." if i < 0 else _nested(values[i], cell, indent + 1, summarize) for i in positions]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rows) + "]"
