"""Page 1, Train: fit a classifier to a toy 2-D set and watch it learn.

Pick an engine (the Scalar engine of module 1 or a tensor backend), a dataset
and settings; Train starts a background job (project/jobs.py), Stop ends it. A
live chart, the decision boundary and a table of epochs redraw as it learns (at
most twice a second; the boundary is drawn once per new snapshot of the model).
When the run ends the page shows the final evaluation, as the command line does.
The engines offered follow the course: the Scalar engine from module 1, the
simple backend from module 2, the fast and cuda backends from module 3. The
models are imported when the page draws, never when it is imported.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from minifw.datasets import DATASETS
from project.app_pages.common import (
    backend_choices,
    curves,
    demo_epochs,
    demo_once,
    epochs_table,
    kernel_notice,
    live,
    page_header,
    reached,
    remember_warm,
    show_progress,
    shows_stubs,
)
from project.jobs import JobSnapshot, TrainingJob
from project.kernels import workload_of
from project.plots import boundary_png, grid
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


def engine_choices() -> list[str]:
    """The engines the student has built: Scalar (module 1), then the tensor backends."""
    return ["scalar", *(backend_choices() if reached(2) else [])]


def default_engine(engines: list[str]) -> str:
    """The engine a page opens with: fast once it is built, else the newest one."""
    return "fast" if "fast" in engines else engines[-1]


def settings() -> tuple[Trainer | None, int]:
    """The settings widgets; returns a new trainer when Train is clicked, and the epochs."""
    from project.points import DEFAULTS, SCALAR_DEFAULTS, PointsTrainer, ScalarTrainer

    left, middle, right = st.columns(3)
    engines = engine_choices()
    first = engines.index(default_engine(engines))
    engine = str(left.selectbox("engine", engines, index=first, format_func=lambda e: ENGINES[e]))
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
    kernel_notice(workload_of("points MLP", engine))
    buttons = st.columns([1, 1, 6])
    train = buttons[0].button("Train", type="primary", key="train-run")
    if buttons[1].button("Stop", key="train-stop"):
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
    """Start a job that pictures the decision boundary now and then (PNG bytes).

    The picture is drawn in the training thread, within the job's budget for
    observations, so a redraw of the page only shows bytes.
    """
    resolution = 25 if trainer.kind == "scalar" else 50
    points = boundary_grid(resolution)

    def observe(t: Trainer) -> bytes:
        probabilities = t.predict_proba(points)  # type: ignore[attr-defined]
        title = f"after epoch {t.epochs_done}" if t.epochs_done else "before training"
        return boundary_png(probabilities, t.X, t.y, title)  # type: ignore[attr-defined]

    return TrainingJob(trainer, epochs, observe, every=max(1, epochs // 40)).start()


def draw(snapshot: JobSnapshot, trainer: Trainer, epochs: int) -> None:
    """Metrics, chart, boundary and table of one snapshot."""
    show_progress(snapshot, epochs)
    remember_warm(workload_of("points MLP", trainer.config.get("backend", "scalar")), snapshot)
    left, right = st.columns(2)
    with left:
        st.subheader("loss and accuracy")
        if snapshot.records:
            curves(snapshot.records)
    with right:
        st.subheader("decision boundary")
        if snapshot.observation is not None:
            st.image(snapshot.observation)
    st.subheader("epochs")
    epochs_table(snapshot.records, height=240)


def demo_trainer() -> tuple[Trainer, int]:
    """The run a demo link starts: xor on the default engine."""
    from project.points import DEFAULTS, SCALAR_DEFAULTS, PointsTrainer, ScalarTrainer

    engine = default_engine(engine_choices())
    if engine == "scalar":
        return ScalarTrainer("xor"), demo_epochs(SCALAR_DEFAULTS["xor"].epochs)
    return PointsTrainer("xor", backend=engine), demo_epochs(DEFAULTS["xor"].epochs)


@shows_stubs
def render() -> None:
    """Draw the Train page."""
    page_header("train")
    st.caption("Fit a classifier to a toy 2-D set and watch its decision boundary move.")
    try:
        trainer, epochs = settings()
    except (ValueError, RuntimeError) as error:
        st.error(f"cannot build the model: {error}")
        trainer, epochs = None, 0
    if trainer is None and demo_once("train"):
        trainer, epochs = demo_trainer()
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


if __name__ == "__main__":  # streamlit runs this file as one page of project/app.py
    render()
