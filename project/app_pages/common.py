"""Pieces shared by the app's pages: backend choices, record tables, live views."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

from project.jobs import JobSnapshot, TrainingJob
from project.training import EpochRecord

REFRESH_SECONDS = 1.0


@st.cache_resource
def cuda_available() -> bool:
    """Whether the "cuda" backend can run here (checked once per server)."""
    from minifw.backends import cuda_available as check

    return check()


def backend_choices() -> list[str]:
    """The tensor backends to offer: simple, fast, and cuda when a GPU is present."""
    return ["simple", "fast"] + (["cuda"] if cuda_available() else [])


def demo_once(key: str) -> bool:
    """True the first time a page opened as `...?demo=1` asks (for screenshots and links).

    A demo page starts its default action (training, profiling) without a click.
    """
    if st.query_params.get("demo") != "1" or st.session_state.get(f"demo-{key}"):
        return False
    st.session_state[f"demo-{key}"] = True
    return True


def records_frame(records: Sequence[EpochRecord]) -> pd.DataFrame:
    """A table of epochs: loss, accuracy and milliseconds, indexed by epoch."""
    return pd.DataFrame(
        {
            "loss": [r.loss for r in records],
            "accuracy": [r.accuracy for r in records],
            "ms/epoch": [r.seconds * 1e3 for r in records],
        },
        index=pd.Index([r.epoch for r in records], name="epoch"),
    )


def show_progress(snapshot: JobSnapshot, epochs: int) -> None:
    """Metrics of the latest epoch and the job's status."""
    records = snapshot.records
    last = records[-1] if records else None
    warm = [r.seconds for r in records[1:]] or [r.seconds for r in records]
    cols = st.columns(4)
    cols[0].metric("epoch", f"{last.epoch if last else 0} / {epochs}")
    cols[1].metric("loss", f"{last.loss:.4f}" if last else "-")
    cols[2].metric("accuracy", f"{last.accuracy:.1%}" if last else "-")
    cols[3].metric(
        "time per epoch", f"{1e3 * sorted(warm)[len(warm) // 2]:.1f} ms" if warm else "-"
    )
    if snapshot.status == "failed":
        st.error("training failed")
        st.code(snapshot.error)
    elif snapshot.status == "running":
        st.info("training… (the page updates by itself; Stop ends it after this epoch)")
    elif snapshot.status in ("stopped", "finished"):
        st.success(f"training {snapshot.status} after {len(records)} epochs")


def curves(records: Sequence[EpochRecord]) -> None:
    """The live loss / accuracy line chart."""
    frame = records_frame(records)
    st.line_chart(frame[["loss", "accuracy"]], x_label="epoch")


def live(job: TrainingJob | None, draw: Callable[[JobSnapshot], None]) -> None:
    """Draw `job`'s snapshot now, and again every second while it runs.

    The redraw is a fragment: only this part of the page reruns, and the page's
    script never waits for training. When the job ends the whole page reruns once
    so the final state (and the buttons) are current.
    """
    if job is None:
        return
    interval = REFRESH_SECONDS if job.running else None

    @st.fragment(run_every=interval)
    def view() -> None:
        draw(job.snapshot())
        if interval is not None and not job.running:
            st.rerun()

    view()
