"""PyTorch-style printing of tensor values: `tensor([[1., 2.]], requires_grad=True)`."""

from __future__ import annotations

from typing import Any

import numpy as np

_EDGE_ITEMS = 3
_SUMMARIZE_OVER = 1000


def format_values(values: np.ndarray, indent: int) -> str:
    """The nested-bracket text of `values`, laid out the way PyTorch prints them."""
    cell = _cell_formatter(values)
    summarize = values.size > _SUMMARIZE_OVER
    if values.ndim == 0:
        return cell(values.item())
    return _nested(values, cell, indent, summarize)


def _cell_formatter(values: np.ndarray) -> Any:
    if values.dtype.kind in "iub":
        width = max((len(str(int(v))) for v in values.reshape(-1)), default=1)
        return lambda v: str(int(v)).rjust(width)
    finite = values[np.isfinite(values)] if values.size else values
    integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
    magnitude = float(np.max(np.abs(finite))) if finite.size else 0.0
    smallest = float(np.min(np.abs(finite[finite != 0]))) if np.any(finite != 0) else 1.0
    if integral and magnitude < 1e8:
        texts = [_integral_text(v) for v in values.reshape(-1)]
    elif magnitude >= 1e8 or smallest < 1e-4:
        texts = [f"{v:.4e}" for v in values.reshape(-1)]
    else:
        texts = [f"{v:.4f}" for v in values.reshape(-1)]
    width = max((len(t) for t in texts), default=1)
    if integral and magnitude < 1e8:
        return lambda v: _integral_text(v).rjust(width)
    spec = ".4e" if (magnitude >= 1e8 or smallest < 1e-4) else ".4f"
    return lambda v: _float_text(v, spec).rjust(width)


def _integral_text(value: float) -> str:
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.0f}."


def _float_text(value: float, spec: str) -> str:
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return format(value, spec)


def _nested(values: np.ndarray, cell: Any, indent: int, summarize: bool) -> str:
    cut = summarize and len(values) > 2 * _EDGE_ITEMS
    keep = [*range(_EDGE_ITEMS), -1, *range(len(values) - _EDGE_ITEMS, len(values))]
    positions = keep if cut else list(range(len(values)))
    if values.ndim == 1:
        items = ["..." if i < 0 else cell(values[i].item()) for i in positions]
        return "[" + ", ".join(items) + "]"
    rows = [
        "..." if i < 0 else _nested(values[i], cell, indent + 1, summarize) for i in positions
    ]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rows) + "]"
