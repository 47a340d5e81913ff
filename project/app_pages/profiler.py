"""Page 5, Profiler: where the time of one training step goes, eager vs compiled.

One step (zero_grad, forward, cross-entropy, backward, optimizer step) runs
under `minifw.profiler.profile()`: the page shows the profiler's table, a bar
chart of time per op, and the step's time with the forward eager and wrapped in
`mf.compile` (fused elementwise kernels). When `mf.compile` falls back to eager
for the step, the page says so with the reason and claims no speed-up. The
digits conv net is offered from course module 4 on.
"""

from __future__ import annotations

import streamlit as st

from project.app_pages.common import (
    backend_choices,
    demo_once,
    escape_markdown,
    kernel_notice,
    page_header,
    reached,
    shows_stubs,
)
from project.kernels import CPU_WORKLOADS, is_warm, mark_warm
from project.profiling import MODEL_MODULE, MODELS, best_time, make_step, ops_frame, profile_step

NUMBER_FORMATS = {
    "kernel ms": "%.3f",
    "python ms": "%.3f",
    "MFLOP": "%.3f",
    "KB moved": "%.1f",
}


@shows_stubs
def render() -> None:
    """Draw the Profiler page."""
    page_header("profiler")
    st.caption("Kernels, dispatch overhead, and what fusion saves.")
    cols = st.columns(4)
    models = [name for name in MODELS if reached(MODEL_MODULE[name])]
    model = cols[0].selectbox("model", models, key="prof-model")
    backend = cols[1].selectbox("backend", backend_choices(), index=1, key="prof-backend")
    batch = int(cols[2].number_input("batch size", 1, 512, 32, key="prof-batch"))
    hidden = int(cols[3].number_input("hidden size (MLP)", 1, 512, 100, key="prof-hidden"))
    kernel_notice(CPU_WORKLOADS[2] if backend == "fast" else None)
    clicked = st.button("Profile one step", type="primary", key="prof-run")
    if not clicked and not demo_once("profiler"):
        result = st.session_state.get("profile_result")
        if result is None:
            st.info("Press the button to profile one training step (a second or two).")
            return
    else:
        cold = backend == "fast" and not is_warm(CPU_WORKLOADS[2])
        note = " (compiling the kernels first: once per machine, 20-40 s)"
        with st.spinner("profiling…" + (note if cold else "")):
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
            "fallback": compiled_step.fallback,
            "explain": compiled_step.explain(),
            "what": f"{model}, {backend}, batch {batch}",
        }
        st.session_state["profile_result"] = result
        if backend == "fast":
            mark_warm(CPU_WORKLOADS[2])
    show_result(result)


def show_result(result: dict[str, object]) -> None:
    """The step's times (or the compile fallback), the per-op chart and table, the report."""
    st.subheader(f"one step of the {result['what']}")
    eager, compiled = float(result["eager"]), float(result["compiled"])  # type: ignore[arg-type]
    times = st.columns(3)
    times[0].metric("eager step", f"{eager * 1e3:.2f} ms")
    if result["fallback"]:
        times[1].metric("compiled step", "fell back to eager")
        times[2].metric("speed-up", "none")
        st.warning(
            "mf.compile fell back to eager for this step, so both timings ran the same eager "
            f"code and no speed-up is claimed (a second timing: {compiled * 1e3:.2f} ms). "
            f"Why: {escape_markdown(str(result['fallback']))}"
        )
    else:
        times[1].metric("compiled step", f"{compiled * 1e3:.2f} ms")
        times[2].metric("speed-up", f"{eager / max(compiled, 1e-12):.2f}x")
    frame = result["frame"]
    st.subheader("time per op (kernel + Python dispatch)")
    top = frame.set_index("op")[["kernel ms", "python ms"]].head(15)  # type: ignore[attr-defined]
    # horizontal: x_label names the category axis (the ops), y_label the values axis
    st.bar_chart(top, horizontal=True, sort=False, x_label="op", y_label="ms in one step")
    config = {name: st.column_config.NumberColumn(format=f) for name, f in NUMBER_FORMATS.items()}
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config)
    st.subheader("profiler table")
    st.code(result["table"], language=None)
    with st.expander("what mf.compile captured (forward + loss; backward stays eager)"):
        st.code(result["explain"], language=None)


if __name__ == "__main__":  # streamlit runs this file as one page of project/app.py
    render()
