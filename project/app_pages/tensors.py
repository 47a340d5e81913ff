"""Page 3, Tensor explorer: storage, strides, and views that share one storage.

Pick a shape, then apply permute / transpose / view / slice / expand / unsqueeze
steps. Each step makes a new `TensorData` view over the *same* storage: the page
shows the strides and offset changing, the storage cells each view reads, and how
an index maps to a storage position.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from minifw.core.tensor_data import TensorData
from project.app_pages.common import demo_once, page_header, shows_stubs
from project.explorer import (
    STEP_HINTS,
    STEPS,
    ExplorerError,
    apply_step,
    formula,
    html_storage,
    html_view,
    new_storage,
    parse_ints,
)

STATE = "explorer_steps"


def chain(base: TensorData, steps: list[tuple[str, str]]) -> list[TensorData]:
    """The views made by applying `steps` in turn to `base` (base first)."""
    views = [base]
    for step, argument in steps:
        views.append(apply_step(views[-1], step, argument))
    return views


def add_step_form() -> None:
    """Widgets to append a step to the chain, or to reset it."""
    cols = st.columns([2, 4, 1, 1])
    step = cols[0].selectbox("operation", STEPS)
    argument = cols[1].text_input("argument", placeholder=STEP_HINTS[step], key=f"arg-{step}")
    cols[2].write("")
    if cols[2].button("Apply", type="primary"):
        st.session_state[STATE] = [*st.session_state.get(STATE, []), (step, argument)]
    cols[3].write("")
    if cols[3].button("Reset"):
        st.session_state[STATE] = []


def steps_table(views: list[TensorData], steps: list[tuple[str, str]]) -> pd.DataFrame:
    """One row per view: how it was made, its shape, strides, offset and contiguity."""
    made = ["new tensor"] + [f"{step}({argument})" for step, argument in steps]
    return pd.DataFrame(
        {
            "made by": made,
            "shape": [str(v.shape) for v in views],
            "strides": [str(v.strides) for v in views],
            "offset": [v.offset for v in views],
            "contiguous": [v.is_contiguous() for v in views],
            "same storage": [v.base is views[0].base for v in views],
        }
    )


def pick_index(view: TensorData) -> tuple[int, ...] | None:
    """Number inputs for one index of `view` (None if the view has no cells)."""
    if view.size == 0:
        st.info("this view has no cells")
        return None
    cols = st.columns(max(view.dims, 1))
    return tuple(
        int(col.number_input(f"index {d}", 0, view.shape[d] - 1, 0, key=f"ix-{d}-{view.shape}"))
        for d, col in enumerate(cols[: view.dims])
    )


@shows_stubs
def render() -> None:
    """Draw the Tensor explorer page."""
    page_header("tensors")
    st.caption("A tensor is a storage plus shape, strides and an offset.")
    shape_text = st.text_input("shape of a new tensor (values = storage positions)", "2, 3, 4")
    try:
        base = new_storage(parse_ints(shape_text, "the shape"))
    except ExplorerError as error:
        st.error(str(error))
        return
    if demo_once("tensors"):
        st.session_state[STATE] = [("permute", "2, 0, 1"), ("slice", "1:3, 0")]
    add_step_form()
    steps = list(st.session_state.get(STATE, []))
    try:
        views = chain(base, steps)
    except ExplorerError as error:
        st.error(f"{steps[-1][0]}({steps[-1][1]}) refused: {error}")
        steps = steps[:-1]
        st.session_state[STATE] = steps
        views = chain(base, steps)
    st.dataframe(steps_table(views, steps), hide_index=True)
    view = views[-1]
    cols = st.columns(4)
    cols[0].metric("shape", str(view.shape))
    cols[1].metric("strides", str(view.strides))
    cols[2].metric("offset", view.offset)
    cols[3].metric("contiguous", "yes" if view.is_contiguous() else "no")
    index = pick_index(view)
    selected = view.offset if view.dims == 0 else None
    if index is not None and view.dims:
        selected = view.index(list(index))
        st.markdown(
            f"position of index `{index}` = offset + Σ index·stride = `{formula(view, index)}`"
        )
    st.html(html_storage(view, selected))
    if view.dims:
        st.html(html_view(view, index))
    st.caption(
        "Shaded storage cells are the ones this view reads; every view above shares the one "
        "storage (no copy). Hover a storage cell to see which indices read it."
    )


if __name__ == "__main__":  # streamlit runs this file as one page of project/app.py
    render()
