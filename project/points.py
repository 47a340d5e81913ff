"""Classifying the toy 2-D point sets: a tensor MLP (tasks 2.5, 3.5) and the Scalar MLP (1.5).

`DEFAULTS` is the table of documented per-dataset settings; with them every set
reaches at least 95% training accuracy (tests/project/test_points.py checks it).
Inputs are centred, `2 * (x - 0.5)`, so the ReLU units start on both sides of the
data; the plots use the original coordinates. The tensor MLP has one output, a
logit z with P(label 1) = sigmoid(z), trained with binary cross-entropy written
with the elementwise ops of course module 2 (so it runs before module 4's
`cross_entropy` exists). Task 2.5 writes that loss, `bce_with_logits`, and the
training step it drives, `project.training.train_step`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import minifw as mf
from minifw.datasets import DATASETS, PointSet
from project.scalar_model import ScalarMLP, train_epoch
from project.training import (
    Trainer,
    batches,
    build_model,
    make_optimizer,
    minibatch_epoch,
    or_defaults,
    predict_logits,
)


@dataclass(frozen=True)
class PointsDefaults:
    """The documented settings of one dataset (tensor engine)."""

    points: int
    hidden: int
    lr: float
    epochs: int
    batch: int
    optimizer: str


DEFAULTS: dict[str, PointsDefaults] = {
    #                        points hidden   lr  epochs batch optimizer (SGD: momentum 0.9)
    "simple": PointsDefaults(    50,    10, 0.05,    50,   10, "sgd"),
    "diag":   PointsDefaults(    50,    10, 0.05,    50,   10, "sgd"),
    "split":  PointsDefaults(    50,    20, 0.1,     80,   10, "sgd"),
    "xor":    PointsDefaults(    50,    20, 0.1,    150,   10, "sgd"),
    "circle": PointsDefaults(    50,    20, 0.1,    150,   10, "sgd"),
    "spiral": PointsDefaults(   100,    32, 0.05,   300,   10, "sgd"),
}  # fmt: skip


@dataclass(frozen=True)
class ScalarDefaults:
    """The documented settings of one dataset for the Scalar engine (full-batch SGD)."""

    points: int
    hidden: int
    lr: float
    epochs: int


SCALAR_DEFAULTS: dict[str, ScalarDefaults] = {
    #                        points hidden  lr  epochs
    "simple": ScalarDefaults(    50,     2, 0.5,   200),
    "diag":   ScalarDefaults(    50,     2, 0.5,   300),
    "split":  ScalarDefaults(    50,     4, 0.5,   500),
    "xor":    ScalarDefaults(    50,     6, 1.0,   500),
    "circle": ScalarDefaults(    50,     8, 1.0,   500),
    "spiral": ScalarDefaults(    50,    24, 2.0,  1000),
}  # fmt: skip


def load_points(dataset: str, points: int, seed: int) -> PointSet:
    """The named toy set, with a clear error for an unknown name."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}: expected one of {', '.join(DATASETS)}")
    return DATASETS[dataset](points, seed)


def features(X: np.ndarray) -> np.ndarray:
    """What the networks see: the points centred on 0, `2 * (x - 0.5)`."""
    return 2.0 * (np.asarray(X, dtype=np.float64) - 0.5)  # type: ignore[no-any-return]


def points_mlp(hidden: int) -> Any:
    """2 -> hidden -> hidden -> 1 with ReLUs: one logit per point."""
    nn = mf.nn
    return nn.Sequential(
        nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
    )


# BEGIN TASK 2.5


def bce_with_logits(logits: Any, targets: Any) -> Any:
    """Mean binary cross-entropy of logits z against 0/1 targets t, computed stably.

    Write it with tensor ops as relu(z) - z * t + log(1 + exp(-|z|)), averaged over every
    cell: it equals -[t log sigmoid(z) + (1 - t) log(1 - sigmoid(z))] but never takes
    the log of 0 or the exp of a large number.
    """
    return (logits.relu() - logits * targets + ((-logits.abs()).exp() + 1.0).log()).mean()


# END TASK 2.5


def logit_hits(logits: np.ndarray, targets: np.ndarray) -> int:
    """How many logits are on the side of 0 that their 0/1 target says."""
    return int(((logits > 0.0) == (targets > 0.5)).sum())


class PointsTrainer(Trainer):
    """A tensor MLP learning one toy set with minibatches and cross-entropy.

    Args left as None take the dataset's value from `DEFAULTS`.
    """

    kind = "points"

    def __init__(
        self,
        dataset: str = "simple",
        points: int | None = None,
        hidden: int | None = None,
        lr: float | None = None,
        batch: int | None = None,
        optimizer: str | None = None,
        backend: str = "fast",
        seed: int = 0,
    ) -> None:
        base = DEFAULTS.get(dataset, DEFAULTS["simple"])
        config: dict[str, Any] = {
            "dataset": dataset,
            **or_defaults(
                base, points=points, hidden=hidden, lr=lr, batch=batch, optimizer=optimizer
            ),
            "backend": backend,
            "seed": seed,
        }
        super().__init__(config)
        if config["hidden"] < 1 or config["batch"] < 1:
            raise ValueError(f"hidden and batch must be >= 1, got {config}")
        self.data = load_points(dataset, config["points"], seed)
        self.X = np.asarray(self.data.X, dtype=np.float64)
        self.y = np.asarray(self.data.y, dtype=np.int64)
        self.inputs = features(self.X)
        self.targets = self.y.astype(np.float64).reshape(-1, 1)
        self.model = build_model(lambda: points_mlp(config["hidden"]), backend, seed)
        self.optimizer = make_optimizer(config["optimizer"], self.model, config["lr"])

    def run_epoch(self, epoch: int) -> tuple[float, float]:
        """One pass over the shuffled points in minibatches."""
        rng = np.random.default_rng([self.config["seed"], epoch])
        data = batches(
            self.inputs, self.targets, self.config["batch"], self.config["backend"], rng
        )
        return minibatch_epoch(self.model, self.optimizer, data, bce_with_logits, logit_hits)

    def predict_proba(self, points: np.ndarray) -> np.ndarray:
        """P(label 1) at each of the (n, 2) `points`, in the data's coordinates."""
        logits = predict_logits(self.model, features(points), self.config["backend"])[:, 0]
        return 0.5 * (1.0 + np.tanh(0.5 * logits))  # sigmoid, without overflow warnings

    def accuracy(self) -> float:
        """The fraction of the training points classified correctly now."""
        return float(np.mean((self.predict_proba(self.X) > 0.5) == (self.y == 1)))

    def model_state(self) -> dict[str, Any]:
        """The model's and the optimizer's state dicts."""
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_model_state(self, state: dict[str, Any]) -> None:
        """Load the state dicts saved by `model_state`."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])


class ScalarTrainer(Trainer):
    """The Scalar MLP (tanh, one logit) on one toy set with full-batch SGD (task 1.5)."""

    kind = "scalar"

    def __init__(
        self,
        dataset: str = "simple",
        points: int | None = None,
        hidden: int | None = None,
        lr: float | None = None,
        seed: int = 0,
    ) -> None:
        base = SCALAR_DEFAULTS.get(dataset, SCALAR_DEFAULTS["simple"])
        config: dict[str, Any] = {
            "dataset": dataset,
            **or_defaults(base, points=points, hidden=hidden, lr=lr),
            "seed": seed,
        }
        super().__init__(config)
        if config["hidden"] < 1 or config["lr"] <= 0:
            raise ValueError(f"need hidden >= 1 and lr > 0, got {config}")
        self.data = load_points(dataset, config["points"], seed)
        self.X = np.asarray(self.data.X, dtype=np.float64)
        self.y = np.asarray(self.data.y, dtype=np.int64)
        centred = [tuple(float(v) for v in row) for row in features(self.X)]
        self.inputs = PointSet(dataset, centred, list(self.data.y))  # type: ignore[arg-type]
        self.model = ScalarMLP([2, config["hidden"], 1], seed=seed)

    def run_epoch(self, epoch: int) -> tuple[float, float]:
        """One full-batch step: the mean loss over all points, backward, SGD."""
        return train_epoch(self.model, self.inputs, self.config["lr"])

    def predict_proba(self, points: np.ndarray) -> np.ndarray:
        """P(label 1) = sigmoid(logit) at each point (Scalars, no graph kept)."""
        probabilities = []
        with mf.no_grad():
            for x1, x2 in features(points):
                (z,) = self.model((float(x1), float(x2)))
                probabilities.append(z.sigmoid().data)
        return np.asarray(probabilities)

    def accuracy(self) -> float:
        """The fraction of the training points classified correctly now."""
        return float(np.mean((self.predict_proba(self.X) > 0.5) == (self.y == 1)))

    def model_state(self) -> dict[str, Any]:
        """Every parameter's value, by dotted name."""
        return {name: p.value.data for name, p in self.model.named_parameters()}

    def load_model_state(self, state: dict[str, Any]) -> None:
        """Put back the values saved by `model_state`."""
        params = dict(self.model.named_parameters())
        if set(params) != set(state):
            raise ValueError(f"checkpoint parameters {sorted(state)} != model's {sorted(params)}")
        for name, value in state.items():
            params[name].value.data = float(value)
            params[name].value.grad = None
