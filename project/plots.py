"""Matplotlib figures for the scripts' `--plot` and the app: curves, boundaries, digits.

Figures are built with matplotlib's object API (`Figure`, never `pyplot`), so no
window or global figure state is involved: the scripts save them, the app shows them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from project.training import EpochRecord

BOUNDS = (-0.05, 1.05)
POINT_COLORS = ListedColormap(["#d62728", "#1f77b4"])


def grid(resolution: int = 40, bounds: tuple[float, float] = BOUNDS) -> np.ndarray:
    """A (resolution**2, 2) array of points covering the square `bounds` x `bounds`."""
    axis = np.linspace(bounds[0], bounds[1], resolution)
    xs, ys = np.meshgrid(axis, axis)
    return np.stack([xs.ravel(), ys.ravel()], axis=1)


def curves_axes(ax: Axes, records: Sequence[EpochRecord]) -> None:
    """Draw loss (left axis) and accuracy (right axis) against epoch on `ax`."""
    epochs = [r.epoch for r in records]
    ax.plot(epochs, [r.loss for r in records], color="#1f77b4", label="loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss", color="#1f77b4")
    twin = ax.twinx()
    twin.plot(epochs, [r.accuracy for r in records], color="#ff7f0e", label="accuracy")
    twin.set_ylabel("accuracy", color="#ff7f0e")
    twin.set_ylim(0.0, 1.02)
    ax.set_title("training loss and accuracy")


def boundary_axes(
    ax: Axes, probabilities: np.ndarray | None, X: np.ndarray, y: np.ndarray, title: str = ""
) -> None:
    """Shade P(label 1) over the grid (if given) and scatter the labelled points."""
    if probabilities is not None:
        side = int(round(np.sqrt(probabilities.size)))
        ax.imshow(
            probabilities.reshape(side, side),
            origin="lower",
            extent=(*BOUNDS, *BOUNDS),
            cmap="RdBu",
            vmin=0.0,
            vmax=1.0,
            alpha=0.6,
            aspect="equal",
        )
        ax.contour(
            np.linspace(*BOUNDS, side),
            np.linspace(*BOUNDS, side),
            probabilities.reshape(side, side),
            levels=[0.5],
            colors="black",
            linewidths=1.0,
        )
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap=POINT_COLORS, edgecolors="white", s=30)
    ax.set_xlim(*BOUNDS)
    ax.set_ylim(*BOUNDS)
    ax.set_title(title or "decision boundary (black line: P = 0.5)")


def boundary_png(
    probabilities: np.ndarray | None, X: np.ndarray, y: np.ndarray, title: str = ""
) -> bytes:
    """The decision boundary as PNG bytes, for the app's live view.

    A fixed layout: about half the drawing time of a constrained one.
    """
    import io

    fig = Figure(figsize=(4.5, 4.2))
    fig.subplots_adjust(left=0.1, bottom=0.08, right=0.98, top=0.93)
    boundary_axes(fig.subplots(), probabilities, X, y, title=title or " ")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def training_figure(
    records: Sequence[EpochRecord],
    probabilities: np.ndarray | None = None,
    X: np.ndarray | None = None,
    y: np.ndarray | None = None,
) -> Figure:
    """The loss curve, with the decision boundary beside it when points are given."""
    with_points = X is not None and y is not None
    fig = Figure(figsize=(10, 4) if with_points else (5.5, 4), layout="constrained")
    axes = fig.subplots(1, 2 if with_points else 1, squeeze=False)[0]
    curves_axes(axes[0], records)
    if with_points:
        assert X is not None and y is not None
        boundary_axes(axes[1], probabilities, X, y)
    return fig


def digits_figure(
    images: np.ndarray, labels: np.ndarray, predictions: np.ndarray, columns: int = 8
) -> Figure:
    """A grid of images titled "pred p / true t" (red when wrong)."""
    count = len(images)
    rows = max(1, -(-count // columns))
    fig = Figure(figsize=(columns * 1.1, rows * 1.3), layout="constrained")
    for i, ax in enumerate(fig.subplots(rows, columns, squeeze=False).ravel()):
        ax.axis("off")
        if i < count:
            ax.imshow(images[i].reshape(images[i].shape[-2:]), cmap="gray_r")
            ok = predictions[i] == labels[i]
            ax.set_title(
                f"pred {predictions[i]} / true {labels[i]}",
                fontsize=7,
                color="black" if ok else "red",
            )
    return fig


def confusion_figure(matrix: np.ndarray) -> Figure:
    """A heatmap of a confusion matrix (rows: true class, columns: predicted)."""
    fig = Figure(figsize=(4.5, 4), layout="constrained")
    ax = fig.subplots()
    ax.imshow(matrix, cmap="Blues")
    for (i, j), value in np.ndenumerate(matrix):
        color = "white" if value > matrix.max() / 2 else "black"
        ax.text(j, i, str(value), ha="center", va="center", fontsize=7, color=color)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_xticks(range(matrix.shape[1]))
    ax.set_yticks(range(matrix.shape[0]))
    ax.set_title("confusion matrix (test set)")
    return fig


def feature_maps_figure(image: np.ndarray, maps: np.ndarray, columns: int = 3) -> Figure:
    """The input image followed by each channel of the first conv layer's output, in a grid."""
    count = 1 + len(maps)
    rows = -(-count // columns)
    fig = Figure(figsize=(columns * 1.6, rows * 1.7), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    axes[0].imshow(image.reshape(image.shape[-2:]), cmap="gray_r")
    axes[0].set_title("input", fontsize=9)
    for k, fmap in enumerate(maps):
        axes[k + 1].imshow(fmap, cmap="viridis")
        axes[k + 1].set_title(f"channel {k}", fontsize=9)
    for ax in axes:
        ax.axis("off")
    return fig
