"""Page 5, Profiler: where the time of one training step goes, eager vs compiled.

One step (zero_grad, forward, cross-entropy, backward, optimizer step) runs
under `minifw.profiler.profile()`: the page shows the profiler's table, a bar
chart of time per op, and the step's time with the forward eager and wrapped in
`mf.compile` (fused elementwise kernels).
"""

from __future__ import annotations

import streamlit as st

from project.app_pages.common import backend_choices, demo_once
from project.profiling import MODELS, best_time, make_step, ops_frame, profile_step


def render() -> None:
    """Draw the Profiler page."""
    st.title("5 · Profiler")
    st.caption("Course module 3: kernels, dispatch overhead, and what fusion saves.")
    cols = st.columns(4)
    model = cols[0].selectbox("model", MODELS, key="prof-model")
    backend = cols[1].selectbox("backend", backend_choices(), index=1, key="prof-backend")
    batch = int(cols[2].number_input("batch size", 1, 512, 32, key="prof-batch"))
    hidden = int(cols[3].number_input("hidden size (MLP)", 1, 512, 100, key="prof-hidden"))
    clicked = st.button("Profile one step", type="primary")
    if not clicked and not demo_once("profiler"):
        result = st.session_state.get("profile_result")
        if result is None:
            st.info("Press the button to profile one training step (a second or two).")
            return
    else:
        with st.spinner("profiling…"):
            try:
                prof = profile_step(make_step(model, backend, batch, hidden, compiled=False))
                eager = best_time(make_step(model, backend, batch, hidden, compiled=False))
                compiled_step = make_step(model, backend, batch, hidden, compiled=True)
                fused = best_time(compiled_step)
            except (ValueError, RuntimeError, IndexError, TypeError) as error:
                st.error(f"cannot profile: {error}")
                return
        result = {
            "table": prof.table(row_limit=25),
            "frame": ops_frame(prof),
            "eager": eager,
            "compiled": fused,
            "explain": compiled_step.explain(),
            "what": f"{model}, {backend}, batch {batch}",
        }
        st.session_state["profile_result"] = result
    st.subheader(f"one step of the {result['what']}")
    times = st.columns(3)
    times[0].metric("eager step", f"{result['eager'] * 1e3:.2f} ms")
    times[1].metric("compiled step", f"{result['compiled'] * 1e3:.2f} ms")
    times[2].metric("speed-up", f"{result['eager'] / max(result['compiled'], 1e-12):.2f}x")
    frame = result["frame"]
    st.subheader("time per op (kernel + Python dispatch)")
    top = frame.set_index("op")[["kernel ms", "python ms"]].head(15)
    st.bar_chart(top, horizontal=True, sort=False, x_label="ms in one step")
    st.dataframe(frame, hide_index=True)
    st.subheader("profiler table")
    st.code(result["table"], language=None)
    with st.expander("what mf.compile captured (forward + loss; backward stays eager)"):
        st.code(result["explain"], language=None)
