"""Page 2, Autograd graph: type an expression in x, y, z and see its graph.

The text is parsed by project/expression.py (a whitelist over Python's `ast`,
never `eval`), evaluated with minifw Scalars or Tensors, differentiated with
`backward()`, and drawn by `minifw.viz.to_dot` with data and gradients. Tensors
are offered from course module 2 on.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import minifw as mf
from minifw.tools.viz import to_dot
from project.app_pages.common import (
    escape_markdown,
    page_header,
    reached,
    shows_stubs,
    stub_notice,
    unwritten_task,
)
from project.expression import (
    MAX_LENGTH,
    NAMES,
    ExpressionError,
    evaluate,
    parse,
    parse_value,
    variables,
)

EXAMPLES = {
    "Scalars": ("(x * y + z.exp()).relu() + x ** 2 / y", {"x": "2.0", "y": "1.5", "z": "0.5"}),
    "Tensors": (
        "(x * y + z).sigmoid().sum()",
        {"x": "[1, 2, 3]", "y": "[0.5, -1, 2]", "z": "1.0"},
    ),
}


def build(engine: str, text: str, raw_values: dict[str, str]) -> tuple[Any, dict[str, Any]]:
    """Parse and evaluate `text`, run backward; returns (output, leaves by name).

    Raises:
        ExpressionError: the text or a value is refused, or evaluation fails.
    """
    tree = parse(text)
    leaves: dict[str, Any] = {}
    for name in variables(tree):  # exp in exp(x) is a function, not a value to read
        value = parse_value(raw_values[name])
        if engine == "Scalars":
            if isinstance(value, list):
                raise ExpressionError(f"{name} must be one number for Scalars (got a list)")
            leaves[name] = mf.Scalar(value)
        else:
            leaves[name] = mf.tensor(value, requires_grad=True)
    if engine == "Scalars":
        out = evaluate(tree, leaves, lambda v: mf.Scalar(v, requires_grad=False))
    else:
        out = evaluate(tree, leaves, lambda v: mf.tensor(v))
    if not leaves or not hasattr(out, "backward"):
        raise ExpressionError("the expression must use x, y or z")
    if engine == "Tensors" and out.numel() != 1:
        raise ExpressionError(
            f"the result has shape {tuple(out.shape)}; backward needs one number: "
            "wrap the expression in sum(...) or mean(...)"
        )
    out.backward()
    return out, leaves


def engines() -> list[str]:
    """The kinds of values the student has built: Scalars, then (module 2) Tensors."""
    return [engine for engine in EXAMPLES if engine == "Scalars" or reached(2)]


def _numbers(value: Any) -> str:
    """A short text of a Scalar's or Tensor's numbers."""
    if value is None:
        return "None"
    data = value.data if isinstance(value, mf.Scalar) else value
    if isinstance(data, float | int):
        return f"{data:.4f}"
    return np.array2string(np.asarray(data.detach().numpy()), precision=4)


@shows_stubs
def render() -> None:
    """Draw the Autograd graph page."""
    page_header("autograd")
    st.caption("The graph that backward walks, with data and gradients.")
    engine = st.radio("values", engines(), horizontal=True)
    example, defaults = EXAMPLES[engine]
    text = st.text_input(
        "expression in x, y, z", example, key=f"expr-{engine}", max_chars=MAX_LENGTH
    )
    cols = st.columns(3)
    raw = {
        name: col.text_input(name, defaults[name], key=f"{name}-{engine}")
        for name, col in zip(NAMES, cols, strict=True)
    }
    st.caption(
        "Allowed: numbers, x, y, z, + - * / **, and exp log relu sigmoid tanh sqrt abs "
        "sum mean as f(x) or x.f(). Anything else is refused."
    )
    try:
        out, leaves = build(engine, text, raw)
    except ExpressionError as error:
        stub = unwritten_task(str(error))
        if stub:
            stub_notice(stub)
        else:
            st.error(f"refused: {escape_markdown(str(error))}")
        return
    left, right = st.columns([1, 3])
    left.metric("out", _numbers(out))
    right.dataframe(
        pd.DataFrame(
            {
                "value": [_numbers(v) for v in leaves.values()],
                "d out / d value": [_numbers(v.grad) for v in leaves.values()],
            },
            index=list(leaves),
        )
    )
    labels = {value: name for name, value in leaves.items()}
    labels[out] = "out"
    # Top to bottom, at its natural size: a left-to-right graph scaled to fit the page's
    # width shrinks its text to a few pixels.
    st.graphviz_chart(to_dot(out, labels=labels, rankdir="TB"), width="content")
    st.caption(
        "Boxes are values (filled: the leaves x, y, z; dashed: constants), ellipses the ops "
        "that made them, with their plain arguments (like sum's dims) inside. backward() "
        "fills grad on the leaves only, as in PyTorch."
    )


if __name__ == "__main__":  # streamlit runs this file as one page of project/app.py
    render()
