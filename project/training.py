"""The one training loop behind every script, the tests and the app.

`Trainer.train` runs `fit`, which calls the trainer's `run_epoch` once per epoch,
times it, and reports through a callback `log_fn(epoch, loss, accuracy, seconds)`.
The command line prints from that callback, the tests collect from it and the app
draws from it. A callback (or a `should_stop` check) may end a run early: raising
`StopTraining` stops after the current epoch and keeps everything learned so far.

A trainer knows its model, its data and one epoch of training; this module also
holds the tensor-engine pieces shared by the 2-D and the digits trainers: batches,
one training step (task 2.5: `train_step`), one epoch of minibatch SGD/Adam,
evaluation, checkpoints.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

import minifw as mf
from minifw import optim
from minifw.backends import default_backend
from minifw.nn import functional
from minifw.serialization import load, save

LogFn = Callable[[int, float, float, float], None]
StopFn = Callable[[], bool]
BACKENDS = ("simple", "readable", "fast", "cuda")
_BACKEND_LOCK = threading.Lock()


class StopTraining(Exception):  # noqa: N818 - a signal, like StopIteration, not an error
    """Raised by a `log_fn` to end training after the current epoch."""


@dataclass(frozen=True)
class EpochRecord:
    """What one epoch reported: its number (from 1), mean loss, accuracy and wall time."""

    epoch: int
    loss: float
    accuracy: float
    seconds: float


def fit(
    run_epoch: Callable[[int], tuple[float, float]],
    epochs: int,
    log_fn: LogFn | None = None,
    *,
    start_epoch: int = 1,
    should_stop: StopFn | None = None,
) -> list[EpochRecord]:
    """Run epochs `start_epoch..epochs`, reporting each one through `log_fn`.

    Args:
        run_epoch: trains one epoch, given its number; returns (mean loss, accuracy).
        epochs: the number of the last epoch to run.
        log_fn: called as `log_fn(epoch, loss, accuracy, seconds)` after each epoch.
            Raising `StopTraining` in it ends the run after that epoch.
        start_epoch: the first epoch's number (above 1 when resuming).
        should_stop: checked before each epoch; True ends the run.

    Returns:
        The records of the epochs that ran, in order.
    """
    records: list[EpochRecord] = []
    for epoch in range(start_epoch, epochs + 1):
        if should_stop is not None and should_stop():
            break
        start = time.perf_counter()
        loss, accuracy = run_epoch(epoch)
        record = EpochRecord(epoch, float(loss), float(accuracy), time.perf_counter() - start)
        records.append(record)
        if log_fn is not None:
            try:
                log_fn(record.epoch, record.loss, record.accuracy, record.seconds)
            except StopTraining:
                break
    return records


class Trainer:
    """A model, its data and one epoch of training; subclasses define `run_epoch`.

    Attributes:
        kind: names the trainer in checkpoints ("points", "scalar", "digits").
        config: the settings that define the run (saved in checkpoints).
        epochs_done: how many epochs have run, counting any resumed from a checkpoint.
        records: every epoch's record, including resumed ones.
    """

    kind = "trainer"

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = dict(config)
        self.epochs_done = 0
        self.records: list[EpochRecord] = []

    def run_epoch(self, epoch: int) -> tuple[float, float]:
        """Train one epoch; return its mean loss and its accuracy."""
        raise NotImplementedError(f"{type(self).__name__} must define run_epoch")

    def train(
        self, epochs: int, log_fn: LogFn | None = None, should_stop: StopFn | None = None
    ) -> list[EpochRecord]:
        """Train until `epochs` epochs have run in total; return this call's records."""
        if epochs < 0:
            raise ValueError(f"epochs must be >= 0, got {epochs}")
        new = fit(
            self.run_epoch,
            epochs,
            log_fn,
            start_epoch=self.epochs_done + 1,
            should_stop=should_stop,
        )
        self.records.extend(new)
        if new:
            self.epochs_done = new[-1].epoch
        return new

    def extra_metrics(self) -> dict[str, float]:
        """More figures for log lines and the summary (test accuracy, ...); none here."""
        return {}

    def model_state(self) -> dict[str, Any]:
        """Everything needed to continue training (model and optimizer state)."""
        raise NotImplementedError(f"{type(self).__name__} cannot save checkpoints")

    def load_model_state(self, state: dict[str, Any]) -> None:
        """Put back what `model_state` returned."""
        raise NotImplementedError(f"{type(self).__name__} cannot load checkpoints")

    def save(self, path: str) -> None:
        """Write a checkpoint (settings, epochs done, history and state) with `mf.save`."""
        history = [[r.epoch, r.loss, r.accuracy, r.seconds] for r in self.records]
        checkpoint = {
            "kind": self.kind,
            "config": self.config,
            "epoch": self.epochs_done,
            "history": history,
            "state": self.model_state(),
        }
        save(checkpoint, path)

    def resume(self, path: str) -> None:
        """Load a checkpoint written by `save` for the same kind of run and settings.

        Raises:
            ValueError: the checkpoint is for another trainer or other settings.
        """
        checkpoint = load(path)
        if not isinstance(checkpoint, dict) or checkpoint.get("kind") != self.kind:
            found = checkpoint.get("kind") if isinstance(checkpoint, dict) else None
            raise ValueError(f"{path} is a {found!r} checkpoint, not a {self.kind!r} one")
        saved = checkpoint["config"]
        clashes = {
            key: (saved.get(key), value)
            for key, value in self.config.items()
            if key in RESUMABLE_KEYS.get(self.kind, ()) and saved.get(key) != value
        }
        if clashes:
            details = ", ".join(f"{k}: saved {a!r}, now {b!r}" for k, (a, b) in clashes.items())
            raise ValueError(f"{path} was trained with other settings ({details})")
        self.load_model_state(checkpoint["state"])
        self.epochs_done = int(checkpoint["epoch"])
        self.records = [EpochRecord(int(row[0]), *row[1:]) for row in checkpoint["history"]]


def final_figures(trainer: Trainer) -> dict[str, float]:
    """The evaluation after training that the command line's summary prints.

    The accuracy on the whole training set in eval mode (for trainers that have
    `accuracy()`), then the trainer's `extra_metrics()` (the digits' test accuracy),
    not the running accuracy of the last epoch.
    """
    figures: dict[str, float] = {}
    accuracy = getattr(trainer, "accuracy", None)
    if callable(accuracy):
        figures["train accuracy"] = float(accuracy())
    figures.update(trainer.extra_metrics())
    return figures


# Settings that must match for a checkpoint to be resumed (others, like lr, may change).
RESUMABLE_KEYS: dict[str, tuple[str, ...]] = {
    "points": ("dataset", "points", "hidden", "seed", "optimizer"),
    "scalar": ("dataset", "points", "hidden", "seed"),
    "digits": ("data", "channels", "hidden", "seed", "limit"),
}


@contextmanager
def backend_scope(name: str) -> Iterator[None]:
    """Within the block, new CPU tensors (model weights) use backend `name`.

    For "cuda" nothing changes here: build on the CPU, then move with `.to("cuda")`.
    The previous default comes back afterwards; a lock keeps threads from mixing.
    """
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: expected one of {', '.join(BACKENDS)}")
    with _BACKEND_LOCK:
        if name == "cuda":
            yield
            return
        previous = default_backend("cpu").name
        mf.set_default_backend(name)
        try:
            yield
        finally:
            mf.set_default_backend(previous)


def or_defaults(defaults: Any, **given: Any) -> dict[str, Any]:
    """Each setting in `given`, or where it is None the attribute of that name of `defaults`."""
    return {
        name: getattr(defaults, name) if value is None else value for name, value in given.items()
    }


def build_model(factory: Callable[[], Any], backend: str, seed: int) -> Any:
    """`factory()` with weights drawn from `seed`, on `backend` ("cuda": moved to the GPU)."""
    with backend_scope(backend):
        mf.manual_seed(seed)
        model = factory()
    if backend == "cuda":
        model.to("cuda")
    return model


def make_optimizer(name: str, model: Any, lr: float) -> Any:
    """`optim.SGD` (momentum 0.9) or `optim.Adam` over the model's parameters."""
    if lr <= 0:
        raise ValueError(f"the learning rate must be positive, got {lr}")
    if name == "sgd":
        return optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    if name == "adam":
        return optim.Adam(model.parameters(), lr=lr)
    raise ValueError(f"unknown optimizer {name!r}: expected 'sgd' or 'adam'")


def to_tensor(array: np.ndarray, backend: str) -> Any:
    """A tensor copy of `array` on `backend` (int arrays stay int64 for class labels)."""
    return mf.tensor(array, backend=backend)


def batches(
    X: np.ndarray, y: np.ndarray, batch_size: int, backend: str, rng: np.random.Generator | None
) -> Iterator[tuple[Any, Any]]:
    """(inputs, targets) tensors of `batch_size` rows, shuffled by `rng` if given."""
    if batch_size < 1:
        raise ValueError(f"the batch size must be >= 1, got {batch_size}")
    order = rng.permutation(len(y)) if rng is not None else np.arange(len(y))
    for start in range(0, len(y), batch_size):
        rows = order[start : start + batch_size]
        yield to_tensor(X[rows], backend), to_tensor(y[rows], backend)


# BEGIN TASK 2.5


def train_step(
    model: Any,
    optimizer: Any,
    inputs: Any,
    targets: Any,
    loss_fn: Callable[[Any, Any], Any],
) -> tuple[Any, Any]:
    """One step of gradient descent on one batch; return (outputs, loss).

    Write: clear the gradients left by the last step (`optimizer.zero_grad()`), run
    the model on `inputs`, compute `loss_fn(outputs, targets)`, backpropagate the loss
    and let the optimizer update the parameters (`optimizer.step()`).
    """
    optimizer.zero_grad()
    outputs = model(inputs)
    loss = loss_fn(outputs, targets)
    loss.backward()
    optimizer.step()
    return outputs, loss


# END TASK 2.5


def minibatch_epoch(
    model: Any,
    optimizer: Any,
    batches: Iterable[tuple[Any, Any]],
    loss_fn: Callable[[Any, Any], Any],
    hits_fn: Callable[[np.ndarray, np.ndarray], int],
) -> tuple[float, float]:
    """One pass of minibatch training; returns the (mean loss, accuracy) seen on the way.

    Args:
        model: maps an input batch to outputs.
        optimizer: steps the model's parameters.
        batches: (inputs, targets) tensor pairs.
        loss_fn: `loss_fn(outputs, targets)`, a one-element tensor (a batch mean).
        hits_fn: how many rows are right, from numpy copies of outputs and targets.
    """
    model.train()
    total_loss, hits, seen = 0.0, 0, 0
    for inputs, targets in batches:
        outputs, loss = train_step(model, optimizer, inputs, targets, loss_fn)
        count = targets.shape[0]
        total_loss += loss.item() * count
        hits += hits_fn(to_numpy(outputs), to_numpy(targets))
        seen += count
    return total_loss / max(seen, 1), hits / max(seen, 1)


def cross_entropy(logits: Any, labels: Any) -> Any:
    """Mean cross-entropy of class logits (N, C) against int64 labels (N,)."""
    return functional.cross_entropy(logits, labels)


def argmax_hits(logits: np.ndarray, labels: np.ndarray) -> int:
    """How many rows' largest logit is at the label."""
    return int((logits.argmax(axis=1) == labels).sum())


def predict_logits(model: Any, X: np.ndarray, backend: str, batch_size: int = 512) -> np.ndarray:
    """The model's outputs for every row of `X`, in eval mode without autograd."""
    model.eval()
    outputs = []
    with mf.no_grad():
        for start in range(0, len(X), batch_size):
            outputs.append(to_numpy(model(to_tensor(X[start : start + batch_size], backend))))
    model.train()
    return np.concatenate(outputs) if outputs else np.zeros((0, 0))


def to_numpy(t: Any) -> np.ndarray:
    """A numpy copy of a tensor's values wherever the tensor lives."""
    return np.asarray(t.detach().cpu().numpy())
