"""Page 4, Digits: train the conv net on the 8x8 digits and look inside it.

Training runs in a background job like the Train page. The test accuracy is
evaluated after every few epochs (shown as "-" until the first evaluation) and
after the last one. Once it has stopped, the page shows test images with
predicted and true labels, the confusion matrix and the first conv layer's
feature maps for a chosen image.
"""

from __future__ import annotations

import streamlit as st

from minifw.datasets import ImageSplit
from project.app_pages.common import (
    backend_choices,
    curves,
    demo_epochs,
    demo_once,
    epochs_table,
    kernel_notice,
    live,
    page_header,
    remember_warm,
    show_progress,
    shows_stubs,
)
from project.digits import DEFAULTS, DigitsTrainer, load_images
from project.jobs import JobSnapshot, TrainingJob
from project.kernels import workload_of
from project.plots import confusion_figure, digits_figure, feature_maps_figure
from project.training import Trainer


@st.cache_data
def images() -> ImageSplit:
    """scikit-learn's 8x8 digits split into train and test (loaded once)."""
    return load_images()


def settings() -> tuple[DigitsTrainer | None, int]:
    """The settings widgets; returns a new trainer when Train is clicked, and the epochs."""
    cols = st.columns(4)
    backend = cols[0].selectbox("backend", backend_choices(), index=1, key="digits-backend")
    epochs = int(cols[1].number_input("epochs", 1, 100, DEFAULTS.epochs, key="digits-epochs"))
    lr = cols[2].number_input(
        "learning rate", 1e-4, 1.0, DEFAULTS.lr, format="%.4f", key="digits-lr"
    )
    batch = cols[3].number_input("batch size", 1, 512, DEFAULTS.batch, key="digits-batch")
    kernel_notice(workload_of("digits conv net", backend))
    buttons = st.columns([1, 1, 6])
    train = buttons[0].button("Train", type="primary", key="digits-train")
    if buttons[1].button("Stop", key="digits-stop"):
        job = st.session_state.get("digits_job")
        if job is not None:
            job.stop()
    if not train:
        return None, epochs
    trainer = DigitsTrainer(lr=float(lr), batch=int(batch), backend=backend, images=images())
    return trainer, epochs


def observe(trainer: Trainer) -> float:
    """Test accuracy, taken in the worker thread a few times per run."""
    return trainer.test_accuracy()  # type: ignore[attr-defined, no-any-return]


def start(trainer: Trainer, epochs: int) -> TrainingJob:
    """Start a job that evaluates the test accuracy about five times per run (not before)."""
    every = max(1, epochs // 5)
    return TrainingJob(trainer, epochs, observe, every, observe_first=False).start()


def draw(snapshot: JobSnapshot, epochs: int, backend: str) -> None:
    """Progress, the loss curve, the test accuracy and the table of epochs."""
    show_progress(snapshot, epochs)
    remember_warm(workload_of("digits conv net", backend), snapshot)
    tested = snapshot.observed_epoch
    if tested:  # never the accuracy of the untrained net
        st.metric(
            "test accuracy",
            f"{snapshot.observation:.1%}",
            help=f"evaluated on the test images after epoch {tested}",
        )
        st.caption(f"test accuracy evaluated after epoch {tested}")
    else:
        st.metric("test accuracy", "-", help="evaluated after the first few epochs")
    left, right = st.columns(2)
    with left:
        st.subheader("loss and accuracy")
        if snapshot.records:
            curves(snapshot.records)
    with right:
        st.subheader("epochs")
        epochs_table(snapshot.records, height=300)


def results(trainer: DigitsTrainer) -> None:
    """Predictions, confusion matrix and feature maps of the trained network."""
    data = trainer.images
    count = 16
    predictions = trainer.predict(data.test_images[:count])
    st.subheader("test images: predicted / true")
    st.pyplot(digits_figure(data.test_images[:count], data.test_labels[:count], predictions))
    left, right = st.columns(2)
    with left:
        st.pyplot(confusion_figure(trainer.confusion()), width="content")
    with right:
        st.subheader("first conv layer's feature maps")
        pick = st.slider("test image", 0, len(data.test_images) - 1, 0, key="digits-image")
        image = data.test_images[pick]
        st.pyplot(feature_maps_figure(image, trainer.feature_maps(image)))


@shows_stubs
def render() -> None:
    """Draw the Digits page."""
    page_header("digits")
    st.caption("A LeNet-style conv net on scikit-learn's 8x8 digits.")
    try:
        trainer, epochs = settings()
    except (ValueError, RuntimeError, ImportError) as error:
        st.error(f"cannot build the model: {error}")
        return
    if trainer is None and demo_once("digits"):
        trainer, epochs = DigitsTrainer(images=images()), demo_epochs(DEFAULTS.epochs)
    if trainer is not None:
        previous = st.session_state.get("digits_job")
        if previous is not None:
            previous.stop()
        st.session_state["digits_job"] = start(trainer, epochs)
        st.session_state["digits_epochs"] = epochs
    job = st.session_state.get("digits_job")
    if job is None:
        st.info("Press Train: about ten epochs reach 95% test accuracy.")
        return
    backend = job.trainer.config["backend"]
    live(job, lambda snapshot: draw(snapshot, st.session_state["digits_epochs"], backend))
    if not job.running and job.trainer.records:
        results(job.trainer)


if __name__ == "__main__":  # streamlit runs this file as one page of project/app.py
    render()
