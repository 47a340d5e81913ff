"""Page 1, Train: fit a classifier to a toy 2-D set and watch it learn.

Pick an engine (the Scalar engine of module 1 or a tensor backend), a dataset
and settings; Train starts a background job (project/jobs.py), Stop ends it. A
live chart, the decision boundary and a table of epochs redraw as it learns.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from minifw.datasets import DATASETS
from project.app_pages.common import (
    backend_choices,
    curves,
    demo_once,
    live,
    records_frame,
    show_progress,
)
from project.jobs import JobSnapshot, TrainingJob
from project.plots import boundary_axes, grid
from project.points import DEFAULTS, SCALAR_DEFAULTS, PointsTrainer, ScalarTrainer
from project.training import Trainer

ENGINES = {
    "scalar": "Scalar engine (module 1)",
    "simple": "Tensor · simple backend",
    "fast": "Tensor · fast backend",
    "cuda": "Tensor · cuda backend",
}


@st.cache_data
def boundary_grid(resolution: int) -> np.ndarray:
    """The points where the boundary is evaluated."""
    return grid(resolution)


@st.cache_data
def dataset_arrays(name: str, points: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The points and labels of a toy set (cached across reruns)."""
    data = DATASETS[name](points, seed)
    return np.asarray(data.X), np.asarray(data.y)


def settings() -> tuple[Trainer | None, int]:
    """The settings widgets; returns a new trainer when Train is clicked, and the epochs."""
    left, middle, right = st.columns(3)
    engines = ["scalar", *backend_choices()]
    engine = str(left.selectbox("engine", engines, index=2, format_func=lambda e: ENGINES[e]))
    dataset = str(left.selectbox("dataset", list(DATASETS), index=list(DATASETS).index("xor")))
    base = SCALAR_DEFAULTS[dataset] if engine == "scalar" else DEFAULTS[dataset]
    key = f"{engine}-{dataset}"  # a new engine or dataset brings its own defaults
    points = left.number_input("points", 4, 500, base.points, key=f"points-{key}")
    hidden = middle.number_input("hidden size", 1, 256, base.hidden, key=f"hidden-{key}")
    lr = middle.number_input("learning rate", 1e-4, 10.0, base.lr, format="%.4f", key=f"lr-{key}")
    epochs = right.number_input("epochs", 1, 5000, base.epochs, key=f"epochs-{key}")
    batch = 0
    if engine != "scalar":
        batch = right.number_input(
            "batch size", 1, 500, DEFAULTS[dataset].batch, key=f"batch-{key}"
        )
    seed = right.number_input("seed", 0, 10_000, 0, key="seed")
    buttons = st.columns([1, 1, 6])
    train = buttons[0].button("Train", type="primary")
    if buttons[1].button("Stop"):
        job = st.session_state.get("train_job")
        if job is not None:
            job.stop()
    if not train:
        return None, int(epochs)
    if engine == "scalar":
        return ScalarTrainer(dataset, int(points), int(hidden), float(lr), int(seed)), int(epochs)
    trainer = PointsTrainer(
        dataset, int(points), int(hidden), float(lr), int(batch), backend=engine, seed=int(seed)
    )
    return trainer, int(epochs)


def start(trainer: Trainer, epochs: int) -> TrainingJob:
    """Start a job that snapshots the decision boundary about 40 times per run."""
    resolution = 25 if trainer.kind == "scalar" else 50
    points = boundary_grid(resolution)

    def observe(t: Trainer) -> np.ndarray:
        return t.predict_proba(points)  # type: ignore[attr-defined, no-any-return]

    return TrainingJob(trainer, epochs, observe, every=max(1, epochs // 40)).start()


def draw(snapshot: JobSnapshot, trainer: Trainer, epochs: int) -> None:
    """Metrics, chart, boundary and table of one snapshot."""
    from matplotlib.figure import Figure

    show_progress(snapshot, epochs)
    left, right = st.columns(2)
    with left:
        st.subheader("loss and accuracy")
        if snapshot.records:
            curves(snapshot.records)
    with right:
        st.subheader("decision boundary")
        fig = Figure(figsize=(4.5, 4.2), layout="constrained")
        X, y = trainer.X, trainer.y  # type: ignore[attr-defined]
        boundary_axes(fig.subplots(), snapshot.observation, X, y, title=" ")
        st.pyplot(fig, width="content")
    st.subheader("epochs")
    st.dataframe(records_frame(snapshot.records).iloc[::-1], height=240)


def render() -> None:
    """Draw the Train page."""
    st.title("1 · Train")
    st.caption("Course modules 1–3: the Scalar engine, then tensors on each backend.")
    try:
        trainer, epochs = settings()
    except (ValueError, RuntimeError) as error:
        st.error(f"cannot build the model: {error}")
        trainer, epochs = None, 0
    if trainer is None and demo_once("train"):
        backend = "fast" if "fast" in backend_choices() else "simple"
        trainer, epochs = PointsTrainer("xor", backend=backend), DEFAULTS["xor"].epochs
    if trainer is not None:
        previous = st.session_state.get("train_job")
        if previous is not None:
            previous.stop()
        st.session_state["train_job"] = start(trainer, epochs)
        st.session_state["train_epochs"] = epochs
    job = st.session_state.get("train_job")
    if job is None:
        st.info("Choose the settings and press Train.")
        return
    epochs = st.session_state["train_epochs"]
    live(job, lambda snapshot: draw(snapshot, job.trainer, epochs))
