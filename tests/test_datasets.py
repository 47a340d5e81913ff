"""Tests of minifw/datasets.py: toy point sets, digits, and the MNIST IDX reader."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from minifw import datasets
from minifw.datasets import DATASETS, load_digits, load_mnist

RULES = {
    "simple": lambda x1, x2: x1 < 0.5,
    "diag": lambda x1, x2: x1 + x2 < 0.5,
    "split": lambda x1, x2: x1 < 0.2 or x1 > 0.8,
    "xor": lambda x1, x2: (x1 < 0.5) != (x2 < 0.5),
    "circle": lambda x1, x2: (x1 - 0.5) ** 2 + (x2 - 0.5) ** 2 > 0.1,
}


@pytest.mark.extra
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_toy_sets_are_deterministic_sized_and_labelled(name: str) -> None:
    make = DATASETS[name]
    data = make(40, 3)
    assert data.name == name and data.n == 40 and len(data.y) == 40
    assert data == make(40, 3)  # same seed, same points
    assert data.X != make(40, 4).X  # another seed, other points
    assert set(data.y) <= {0, 1}
    for x1, x2 in data.X:
        assert isinstance(x1, float) and isinstance(x2, float)
        assert 0.0 <= x1 <= 1.0 and 0.0 <= x2 <= 1.0
    if name in RULES:
        assert data.y == [int(RULES[name](x1, x2)) for x1, x2 in data.X]


@pytest.mark.extra
def test_toy_sets_do_not_touch_global_random_state() -> None:
    import random

    random.seed(123)
    expected = random.random()
    random.seed(123)
    datasets.xor(50, 0)
    assert random.random() == expected


@pytest.mark.extra
def test_spiral_has_two_balanced_arms() -> None:
    data = datasets.spiral(100, 1)
    assert data.y.count(0) == 50 and data.y.count(1) == 50
    # the arms wind around the centre: both cover all four quadrants
    for arm in (0, 1):
        quadrants = {
            (x1 > 0.5, x2 > 0.5) for (x1, x2), y in zip(data.X, data.y, strict=True) if y == arm
        }
        assert len(quadrants) == 4


@pytest.mark.extra
@pytest.mark.parametrize("n", [0, -1, 2.5, True])
def test_toy_sets_reject_bad_sizes(n: object) -> None:
    with pytest.raises(ValueError, match="positive int"):
        datasets.simple(n)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive int"):
        datasets.spiral(n)  # type: ignore[arg-type]


@pytest.mark.extra
def test_load_digits_shapes_dtypes_and_split() -> None:
    pytest.importorskip("sklearn")
    split = load_digits(test_fraction=0.25, seed=1)
    x_train, y_train, x_test, y_test = split
    assert x_train.shape[1:] == (1, 8, 8) and x_test.shape[1:] == (1, 8, 8)
    assert len(x_train) + len(x_test) == 1797 and len(x_test) == round(1797 * 0.25)
    assert x_train.dtype == np.float64 and y_train.dtype == np.int64
    assert x_train.min() == 0.0 and x_train.max() == 1.0
    assert set(np.unique(y_test)) <= set(range(10)) and len(np.unique(y_train)) == 10
    again = load_digits(test_fraction=0.25, seed=1)
    assert np.array_equal(again.test_labels, y_test)
    other = load_digits(test_fraction=0.25, seed=2)
    assert not np.array_equal(other.test_labels, y_test)


@pytest.mark.extra
def test_load_digits_rejects_bad_fraction() -> None:
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits(test_fraction=1.0)


@pytest.mark.extra
def test_load_digits_without_sklearn_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match=r"pip install minifw\[digits\]"):
        load_digits()


# ---- MNIST IDX files written by the tests ----


def idx_images(images: np.ndarray, magic: int = 2051) -> bytes:
    n, rows, cols = images.shape
    return struct.pack(">iiii", magic, n, rows, cols) + images.astype(np.uint8).tobytes()


def idx_labels(labels: np.ndarray, magic: int = 2049) -> bytes:
    return struct.pack(">ii", magic, len(labels)) + labels.astype(np.uint8).tobytes()


def write(path: Path, payload: bytes, gzipped: bool) -> None:
    if gzipped:
        with gzip.open(str(path) + ".gz", "wb") as stream:
            stream.write(payload)
    else:
        path.write_bytes(payload)


def sample(n: int = 5, rows: int = 4, cols: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (n, rows, cols)), rng.integers(0, 10, n)


@pytest.mark.extra
@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("kind", ["train", "t10k"])
def test_load_mnist_reads_plain_and_gzipped_files(
    tmp_path: Path, gzipped: bool, kind: str
) -> None:
    images, labels = sample()
    write(tmp_path / f"{kind}-images-idx3-ubyte", idx_images(images), gzipped)
    write(tmp_path / f"{kind}-labels-idx1-ubyte", idx_labels(labels), gzipped)
    x, y = load_mnist(tmp_path, kind=kind)
    assert x.shape == (5, 1, 4, 3) and x.dtype == np.float64
    assert y.dtype == np.int64 and y.tolist() == labels.tolist()
    np.testing.assert_array_equal(x[:, 0] * 255.0, images.astype(np.float64))
    if kind == "t10k":
        x_test, _ = load_mnist(str(tmp_path), kind="test")
        np.testing.assert_array_equal(x_test, x)


@pytest.mark.extra
def test_load_mnist_names_a_missing_file(tmp_path: Path) -> None:
    images, _ = sample()
    write(tmp_path / "train-images-idx3-ubyte", idx_images(images), False)
    with pytest.raises(FileNotFoundError, match="train-labels-idx1-ubyte"):
        load_mnist(tmp_path)
    with pytest.raises(FileNotFoundError, match="directory"):
        load_mnist(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="kind"):
        load_mnist(tmp_path, kind="validation")


@pytest.mark.extra
@pytest.mark.parametrize(
    ("images_bytes", "labels_bytes", "message", "culprit"),
    [
        (
            idx_images(sample()[0], magic=2049),
            idx_labels(sample()[1]),
            "magic number 2049",
            "images",
        ),
        (
            idx_images(sample()[0]),
            idx_labels(sample()[1], magic=2051),
            "magic number 2051",
            "labels",
        ),
        (idx_images(sample()[0])[:-1], idx_labels(sample()[1]), "truncated", "images"),
        (idx_images(sample()[0]) + b"\0", idx_labels(sample()[1]), "trailing", "images"),
        (idx_images(sample()[0]), idx_labels(sample()[1])[:6], "truncated header", "labels"),
        (idx_images(sample()[0]), idx_labels(sample(n=4)[1]), "5 images but", "images"),
    ],
)
def test_load_mnist_rejects_bad_files_naming_them(
    tmp_path: Path, images_bytes: bytes, labels_bytes: bytes, message: str, culprit: str
) -> None:
    write(tmp_path / "train-images-idx3-ubyte", images_bytes, False)
    write(tmp_path / "train-labels-idx1-ubyte", labels_bytes, False)
    with pytest.raises(ValueError, match=message) as error:
        load_mnist(tmp_path)
    assert f"train-{culprit}-idx" in str(error.value)


@pytest.mark.extra
def test_load_mnist_reports_a_corrupt_gzip(tmp_path: Path) -> None:
    images, labels = sample()
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"not gzip at all")
    write(tmp_path / "train-labels-idx1-ubyte", idx_labels(labels), True)
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte\.gz: cannot read"):
        load_mnist(tmp_path)
