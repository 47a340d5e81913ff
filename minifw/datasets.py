"""Data for the course: toy 2-D point sets, the digits images and an MNIST reader.

The toy sets are generated in code from a seed (`simple`, `diag`, `split`, `xor`,
`circle`, `spiral`, also listed in `DATASETS`). `load_digits` splits scikit-learn's
bundled 8x8 digits; `load_mnist` reads MNIST / Fashion-MNIST IDX files from a
directory. Everything returns lists or numpy arrays, never Tensors.
"""

from __future__ import annotations

import gzip
import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Point = tuple[float, float]


@dataclass(frozen=True)
class PointSet:
    """A labelled 2-D point set.

    Attributes:
        name: which generator made it ("xor", ...).
        X: the points (x1, x2); every set but "spiral" lies in [0, 1]^2.
        y: the label of each point, 0 or 1.
    """

    name: str
    X: list[Point]
    y: list[int]

    @property
    def n(self) -> int:
        """The number of points."""
        return len(self.X)


def _points(n: int, seed: int) -> list[Point]:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    rng = random.Random(seed)
    return [(rng.random(), rng.random()) for _ in range(n)]


def _labelled(name: str, n: int, seed: int, rule: Callable[[float, float], bool]) -> PointSet:
    X = _points(n, seed)
    return PointSet(name, X, [1 if rule(x1, x2) else 0 for x1, x2 in X])


def simple(n: int = 50, seed: int = 0) -> PointSet:
    """Points labelled 1 left of the vertical line x1 = 0.5."""
    return _labelled("simple", n, seed, lambda x1, x2: x1 < 0.5)


def diag(n: int = 50, seed: int = 0) -> PointSet:
    """Points labelled 1 below the diagonal x1 + x2 = 0.5."""
    return _labelled("diag", n, seed, lambda x1, x2: x1 + x2 < 0.5)


def split(n: int = 50, seed: int = 0) -> PointSet:
    """Points labelled 1 in the two outer bands x1 < 0.2 and x1 > 0.8."""
    return _labelled("split", n, seed, lambda x1, x2: x1 < 0.2 or x1 > 0.8)


def xor(n: int = 50, seed: int = 0) -> PointSet:
    """Points labelled 1 in the top-left and bottom-right quarters."""
    return _labelled("xor", n, seed, lambda x1, x2: (x1 < 0.5) != (x2 < 0.5))


def circle(n: int = 50, seed: int = 0) -> PointSet:
    """Points labelled 1 outside the circle of radius sqrt(0.1) around the centre."""
    return _labelled("circle", n, seed, lambda x1, x2: (x1 - 0.5) ** 2 + (x2 - 0.5) ** 2 > 0.1)


def spiral(n: int = 50, seed: int = 0) -> PointSet:
    """Two interleaved spiral arms around (0.5, 0.5); the label says which arm."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    rng = random.Random(seed)
    X: list[Point] = []
    y: list[int] = []
    for i in range(n):
        arm = i % 2
        t = rng.uniform(0.25, 1.0)
        angle = 3.0 * math.pi * t + math.pi * arm
        radius = 0.45 * t
        X.append((0.5 + radius * math.cos(angle), 0.5 + radius * math.sin(angle)))
        y.append(arm)
    return PointSet("spiral", X, y)


DATASETS: dict[str, Callable[[int, int], PointSet]] = {
    "simple": simple,
    "diag": diag,
    "split": split,
    "xor": xor,
    "circle": circle,
    "spiral": spiral,
}


class ImageSplit(NamedTuple):
    """Train and test images (N, 1, H, W) float64 in [0, 1] with int64 labels."""

    train_images: npt.NDArray[np.float64]
    train_labels: npt.NDArray[np.int64]
    test_images: npt.NDArray[np.float64]
    test_labels: npt.NDArray[np.int64]


def load_digits(test_fraction: float = 0.2, seed: int = 0) -> ImageSplit:
    """Load scikit-learn's 1797 8x8 digits, shuffled with `seed` and split train/test.

    Images are float64 scaled to [0, 1] with shape (N, 1, 8, 8); labels are int64.
    `test_fraction` of the images (rounded, at least one) form the test set.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError as error:
        raise ImportError(
            "load_digits needs scikit-learn; install it with: pip install minifw[digits]"
        ) from error
    bunch = sklearn_digits()
    images = np.asarray(bunch.images, dtype=np.float64).reshape(-1, 1, 8, 8) / 16.0
    labels = np.asarray(bunch.target, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = max(1, round(len(labels) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return ImageSplit(images[train], labels[train], images[test], labels[test])


IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049


def _find_idx(directory: str, name: str) -> str:
    """Return the path of `name` or `name.gz` in `directory`, or raise FileNotFoundError."""
    for candidate in (name, name + ".gz"):
        path = os.path.join(directory, candidate)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"MNIST file not found: neither {os.path.join(directory, name)} nor its .gz exists"
    )


def _read_idx(path: str, magic: int, ndim: int) -> npt.NDArray[np.uint8]:
    """Read one IDX file of unsigned bytes, checking its magic number, dims and size."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as stream:
                raw = stream.read()
        else:
            with open(path, "rb") as stream:
                raw = stream.read()
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: cannot read the file ({error})") from error
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated header ({len(raw)} bytes, need {header})")
    found = int.from_bytes(raw[0:4], "big")
    if found != magic:
        raise ValueError(f"{path}: bad magic number {found}, expected {magic}")
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    expected = header + math.prod(dims)
    if len(raw) != expected:
        problem = "truncated" if len(raw) < expected else "has trailing bytes"
        raise ValueError(
            f"{path}: {problem}: dims {dims} need {expected} bytes, the file has {len(raw)}"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load_mnist(
    path: str | os.PathLike[str], kind: str = "train"
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Read MNIST or Fashion-MNIST IDX files (plain or gzipped) from a directory.

    Args:
        path: the directory holding `{kind}-images-idx3-ubyte[.gz]` and
            `{kind}-labels-idx1-ubyte[.gz]`.
        kind: "train" or "t10k" ("test" is accepted for "t10k").

    Returns:
        images as float64 in [0, 1] of shape (N, 1, rows, cols), labels as int64 (N,).
    """
    kinds = {"train": "train", "t10k": "t10k", "test": "t10k"}
    if kind not in kinds:
        raise ValueError(f"kind must be 'train' or 't10k' (or 'test'), got {kind!r}")
    directory = os.fspath(path)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"MNIST directory not found: {directory}")
    prefix = kinds[kind]
    images_path = _find_idx(directory, f"{prefix}-images-idx3-ubyte")
    labels_path = _find_idx(directory, f"{prefix}-labels-idx1-ubyte")
    images = _read_idx(images_path, IMAGES_MAGIC, 3)
    labels = _read_idx(labels_path, LABELS_MAGIC, 1)
    if len(images) != len(labels):
        raise ValueError(
            f"{images_path} holds {len(images)} images but {labels_path} holds "
            f"{len(labels)} labels"
        )
    n, rows, cols = images.shape
    scaled = images.astype(np.float64).reshape(n, 1, rows, cols) / 255.0
    return scaled, labels.astype(np.int64)
