"""Draw an autograd graph as Graphviz DOT text (render it with `dot -Tsvg`, or in the app).

`to_dot` reads only the Variable protocol (`history.last_fn`, `history.inputs`,
`unique_id`, `data`, `grad`), so it draws Scalar graphs and Tensor graphs alike:
each value is a box with its data (or its shape, for a value that has one) and its
grad; each op is an ellipse named after its Function class ("Mul") with arrows
from its inputs and to its output. Leaves (values with no history that backward
fills: a Scalar leaf, a Tensor with `requires_grad=True`) are filled, constants are
dashed. Plain non-Variable arguments of an op (Sum's dims and keepdim, a power's
exponent) are not graph inputs: they are written in the op's label, by parameter name
where the Function's `forward` names them (Sum: "dims=(0,), keepdim=False" on a second line).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

_RECORD_SPECIAL = str.maketrans({c: "\\" + c for c in '{}|<>"\\'})


def to_dot(value: Any, labels: Mapping[Any, str] | None = None, rankdir: str = "LR") -> str:
    """Return the DOT text of the graph that computed `value`.

    Args:
        value: the output (a Scalar or a Tensor) whose history is drawn.
        labels: optional names for some values, e.g. {a: "a", b: "b"}; values are
            matched by identity.
        rankdir: Graphviz layout direction, "LR" (inputs on the left) or "TB".

    Returns:
        A `digraph` with one record node per value (`v0` is `value`), one ellipse per
        op (`op0`, ...), edges input -> op -> output. Leaves are filled, constants
        dashed; non-Variable inputs (a plain number or dim) are shown in the op's
        label, not as nodes.
    """
    if rankdir not in ("LR", "TB", "RL", "BT"):
        raise ValueError(f"rankdir must be LR, TB, RL or BT, got {rankdir!r}")
    names = {id(obj): name for obj, name in (labels or {}).items()}
    node_of: dict[tuple[str, int], str] = {}
    values: list[Any] = []
    stack = [value]
    while stack:
        current = stack.pop()
        key = _key(current)
        if key in node_of:
            continue
        node_of[key] = f"v{len(values)}"
        values.append(current)
        op, inputs = _op_and_inputs(current)
        if op is not None:
            stack.extend(reversed([x for x in inputs if _is_variable(x)]))

    lines = [
        "digraph autograd {",
        f"  rankdir={rankdir};",
        '  node [fontname="Helvetica", fontsize=14];',
    ]
    n_ops = 0
    for current in values:
        name = node_of[_key(current)]
        label, style = _value_label(current, names.get(id(current)))
        lines.append(f'  {name} [shape=record, label="{label}"{style}];')
        op, inputs = _op_and_inputs(current)
        if op is None:
            continue
        op_name = f"op{n_ops}"
        n_ops += 1
        lines.append(f'  {op_name} [shape=ellipse, label="{_quote(_op_label(op, inputs))}"];')
        for parent in inputs:
            if _is_variable(parent):
                lines.append(f"  {node_of[_key(parent)]} -> {op_name};")
        lines.append(f"  {op_name} -> {name};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _key(obj: Any) -> tuple[str, int]:
    """Identify a value by its unique_id, or a plain input by its Python id."""
    unique_id = getattr(obj, "unique_id", None)
    return ("u", unique_id) if isinstance(unique_id, int) else ("o", id(obj))


def _op_and_inputs(obj: Any) -> tuple[Any, list[Any]]:
    """The Function that made `obj` and its inputs, or (None, []) for leaves and others."""
    history = getattr(obj, "history", None)
    if history is None or getattr(history, "last_fn", None) is None:
        return None, []
    return history.last_fn, list(history.inputs)


def _is_variable(obj: Any) -> bool:
    """True for values of the graph (Scalars, Tensors); False for plain arguments."""
    return hasattr(obj, "unique_id") and hasattr(obj, "history")


def _op_label(op: Any, inputs: list[Any]) -> str:
    """The op's class name, then its plain arguments (named when `forward` names them)."""
    name = op.__name__ if isinstance(op, type) else type(op).__name__
    plain = [(i, x) for i, x in enumerate(inputs) if not _is_variable(x)]
    if not plain:
        return name
    names = _parameter_names(op, len(inputs))
    parts = [f"{names[i]}={x!r}" if names else repr(x) for i, x in plain]
    return name + "\n" + ", ".join(parts)


def _parameter_names(op: Any, count: int) -> list[str] | None:
    """The names of `op.forward`'s inputs after its context, if there are `count` of them."""
    try:
        parameters = list(inspect.signature(op.forward).parameters.values())[1:]
    except (AttributeError, TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p.name for p in parameters if p.kind in kinds]
    return positional if len(positional) == count else None


def _value_label(obj: Any, name: str | None) -> tuple[str, str]:
    """The record label of a value and its extra DOT attributes."""
    fields = [] if name is None else [_escape(name)]
    shape = getattr(obj, "shape", None)
    if shape is not None:
        fields.append(_escape(f"shape {tuple(shape)}"))
    else:
        fields.append(_escape(f"data {_number(obj.data)}"))
    grad = getattr(obj, "grad", None)
    if grad is None:
        fields.append("grad None")
    elif getattr(grad, "shape", None) is not None:
        fields.append(_escape(f"grad {tuple(grad.shape)}"))
    else:
        fields.append(_escape(f"grad {_number(grad)}"))
    history = obj.history
    leaf = history is not None and history.last_fn is None
    if history is None and getattr(obj, "requires_grad", False):
        leaf = True  # a Tensor leaf: no history, but backward fills its grad
    style = ', style=filled, fillcolor="#dbeafe"' if leaf else ""
    if history is None and not leaf:
        style = ", style=dashed"
    return "{" + " | ".join(fields) + "}", style


def _number(x: Any) -> str:
    try:
        v = float(x) + 0.0  # + 0.0 turns -0.0 into 0.0
    except (TypeError, ValueError):
        return str(x)
    if v == 0.0 or 1e-3 <= abs(v) < 1e6:
        return f"{v:.4f}"
    return f"{v:.3e}"


def _quote(text: str) -> str:
    """Escape a plain (non-record) DOT label."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape(text: str) -> str:
    """Escape the characters that DOT record labels treat as structure."""
    return text.translate(_RECORD_SPECIAL).replace("\n", "\\n")
