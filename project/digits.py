"""The digits classifier: a LeNet-style conv net on 8x8 digits or MNIST (task 4.5).

Task 4.5 fences `DigitsNet.forward` (the network's forward pass, built from the conv,
pooling and linear layers of the earlier tasks) and `DigitsTrainer.run_epoch` (one
epoch of minibatch training with cross-entropy). With the defaults below it reaches
at least 95% test accuracy on scikit-learn's embedded 8x8 digits (no download).
`--mnist DIR` in `run_digits.py` trains the same network on 28x28 MNIST IDX files
instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import minifw as mf
from minifw.datasets import ImageSplit, load_digits, load_mnist
from project.training import (
    Trainer,
    argmax_hits,
    batches,
    build_model,
    cross_entropy,
    make_optimizer,
    predict_logits,
    to_numpy,
)

CLASSES = 10


@dataclass(frozen=True)
class DigitsDefaults:
    """The documented settings of the digits run."""

    epochs: int = 10
    lr: float = 0.01
    batch: int = 32
    channels: tuple[int, int] = (8, 16)
    hidden: int = 32
    optimizer: str = "adam"


DEFAULTS = DigitsDefaults()


class DigitsNet(mf.nn.Module):
    """conv3x3 -> ReLU -> maxpool2 -> conv3x3 -> ReLU -> maxpool2 -> linear -> ReLU -> linear.

    Args:
        size: the side of the square input images (8 for digits, 28 for MNIST).
        channels: output channels of the two conv layers.
        hidden: width of the hidden linear layer.
    """

    def __init__(self, size: int = 8, channels: tuple[int, int] = (8, 16), hidden: int = 32):
        super().__init__()
        if size < 4:
            raise ValueError(f"images must be at least 4x4 for two 2x2 poolings, got {size}")
        nn = mf.nn
        self.conv1 = nn.Conv2d(1, channels[0], 3, padding=1)
        self.conv2 = nn.Conv2d(channels[0], channels[1], 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(channels[1] * (size // 4) ** 2, hidden)
        self.fc2 = nn.Linear(hidden, CLASSES)

    # BEGIN TASK 4.5
    def forward(self, x: Any) -> Any:
        """Class logits (N, 10) for images (N, 1, size, size).

        Write: conv1 -> ReLU -> pool -> conv2 -> ReLU -> pool, flatten each image's maps
        to one row (N, channels[1] * (size // 4) ** 2), then fc1 -> ReLU -> fc2. No
        softmax at the end: the loss (cross-entropy) takes raw logits.
        """
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        return self.fc2(self.fc1(x.flatten(1)).relu())

    # END TASK 4.5

    def feature_maps(self, x: Any) -> Any:
        """The first conv layer's output after ReLU (N, channels[0], size, size)."""
        return self.conv1(x).relu()


def load_images(mnist: str | None = None, limit: int | None = None, seed: int = 0) -> ImageSplit:
    """The embedded 8x8 digits, or MNIST from directory `mnist`; at most `limit` train images."""
    if mnist is None:
        split = load_digits(seed=seed)
    else:
        train_x, train_y = load_mnist(mnist, "train")
        test_x, test_y = load_mnist(mnist, "t10k")
        split = ImageSplit(train_x, train_y, test_x, test_y)
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        split = ImageSplit(
            split.train_images[:limit],
            split.train_labels[:limit],
            split.test_images,
            split.test_labels,
        )
    return split


class DigitsTrainer(Trainer):
    """Trains `DigitsNet` with minibatches and cross-entropy; evaluates on the test set."""

    kind = "digits"

    def __init__(
        self,
        mnist: str | None = None,
        lr: float | None = None,
        batch: int | None = None,
        channels: tuple[int, int] | None = None,
        hidden: int | None = None,
        optimizer: str | None = None,
        backend: str = "fast",
        seed: int = 0,
        limit: int | None = None,
        images: ImageSplit | None = None,
    ) -> None:
        config: dict[str, Any] = {
            "data": "digits" if mnist is None else f"mnist:{mnist}",
            "lr": DEFAULTS.lr if lr is None else lr,
            "batch": DEFAULTS.batch if batch is None else batch,
            "channels": list(DEFAULTS.channels if channels is None else channels),
            "hidden": DEFAULTS.hidden if hidden is None else hidden,
            "optimizer": DEFAULTS.optimizer if optimizer is None else optimizer,
            "backend": backend,
            "seed": seed,
            "limit": -1 if limit is None else limit,
        }
        super().__init__(config)
        self.images = load_images(mnist, limit, seed) if images is None else images
        size = self.images.train_images.shape[-1]
        c1, c2 = config["channels"]
        self.model = build_model(
            lambda: DigitsNet(size, (c1, c2), config["hidden"]), backend, seed
        )
        self.optimizer = make_optimizer(config["optimizer"], self.model, config["lr"])

    # BEGIN TASK 4.5
    def run_epoch(self, epoch: int) -> tuple[float, float]:
        """One shuffled pass over the training images; returns (mean loss, accuracy).

        Write: shuffle with `np.random.default_rng([seed, epoch])` (the same epoch always
        sees the same order, so a resumed run repeats an uninterrupted one) and cut the
        training set into batches of `config["batch"]` images (`batches` does both).
        For each batch: zero the gradients, compute the logits, the mean cross-entropy
        against the labels, backpropagate, step the optimizer. Return the loss averaged
        over images (weight each batch's loss by its size) and the fraction of training
        images whose largest logit was at their label, both seen during the epoch.
        """
        rng = np.random.default_rng([self.config["seed"], epoch])
        data = batches(
            self.images.train_images,
            self.images.train_labels,
            self.config["batch"],
            self.config["backend"],
            rng,
        )
        self.model.train()
        total_loss, hits, seen = 0.0, 0, 0
        for images, labels in data:
            self.optimizer.zero_grad()
            logits = self.model(images)
            loss = cross_entropy(logits, labels)
            loss.backward()
            self.optimizer.step()
            count = labels.shape[0]
            total_loss += loss.item() * count
            hits += argmax_hits(to_numpy(logits), to_numpy(labels))
            seen += count
        return total_loss / max(seen, 1), hits / max(seen, 1)

    # END TASK 4.5

    def predict(self, images: np.ndarray) -> np.ndarray:
        """The predicted class of each image (N, 1, H, W)."""
        # In training batches: a first run then reuses the kernels training compiled.
        batch = self.config["batch"]
        logits = predict_logits(self.model, images, self.config["backend"], batch)
        return np.asarray(logits.argmax(axis=1))

    def test_accuracy(self) -> float:
        """The fraction of the test images classified correctly."""
        predictions = self.predict(self.images.test_images)
        return float(np.mean(predictions == self.images.test_labels))

    def confusion(self) -> np.ndarray:
        """The test set's confusion matrix: entry (t, p) counts class t predicted as p."""
        predictions = self.predict(self.images.test_images)
        return confusion_matrix(self.images.test_labels, predictions)

    def feature_maps(self, image: np.ndarray) -> np.ndarray:
        """The first conv layer's maps (channels, H, W) for one image (1, H, W)."""
        self.model.eval()
        with mf.no_grad():
            batch = mf.tensor(image[None], backend=self.config["backend"])
            maps = self.model.feature_maps(batch).detach().cpu().numpy()
        self.model.train()
        return np.asarray(maps[0])

    def extra_metrics(self) -> dict[str, float]:
        """Test accuracy, for the scripts' log lines and summary."""
        return {"test accuracy": self.test_accuracy()}

    def model_state(self) -> dict[str, Any]:
        """The model's and the optimizer's state dicts."""
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_model_state(self, state: dict[str, Any]) -> None:
        """Load the state dicts saved by `model_state`."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])


def confusion_matrix(labels: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """counts[t, p] = how many items of true class t were predicted as p."""
    counts = np.zeros((CLASSES, CLASSES), dtype=np.int64)
    np.add.at(counts, (labels, predictions), 1)
    return counts
