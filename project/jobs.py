"""Training in a background thread, so the app's page never waits for a whole run.

A `TrainingJob` runs `trainer.train(epochs, ...)` in a daemon thread. After each
epoch the thread appends the record to a list under a lock, and every `every`
epochs (and after the last one) it calls `observe(trainer)` to take a snapshot of
what the page should draw (e.g. the decision boundary as a numpy grid): the page
only ever reads copies, never the live model. `stop()` asks the loop to end after
the current epoch. Nothing here imports streamlit.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from project.training import EpochRecord, StopTraining, Trainer


@dataclass(frozen=True)
class JobSnapshot:
    """A consistent copy of a job's progress.

    Attributes:
        records: every epoch reported so far.
        observation: the latest value returned by `observe` (None before the first).
        status: "idle", "running", "stopped", "finished" or "failed".
        error: the traceback's text when the status is "failed".
    """

    records: list[EpochRecord] = field(default_factory=list)
    observation: Any = None
    status: str = "idle"
    error: str = ""


class TrainingJob:
    """Run one trainer in a background thread and expose thread-safe snapshots.

    Args:
        trainer: what to train.
        epochs: train until this many epochs have run in total.
        observe: called in the worker thread as `observe(trainer)` every `every`
            epochs and at the end; its result is kept as the latest observation.
        every: how often to observe, in epochs.
    """

    def __init__(
        self,
        trainer: Trainer,
        epochs: int,
        observe: Callable[[Trainer], Any] | None = None,
        every: int = 1,
    ) -> None:
        self.trainer = trainer
        self.epochs = epochs
        self.observe = observe
        self.every = max(1, every)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._records: list[EpochRecord] = []
        self._observation: Any = None
        self._status = "idle"
        self._error = ""
        self._thread: threading.Thread | None = None

    def start(self) -> TrainingJob:
        """Start the worker thread (once); returns self."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("this job was already started")
            self._status = "running"
            self._thread = threading.Thread(target=self._work, name="minifw-train", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the worker to stop after the epoch it is running."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker to end; True if it has ended."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    @property
    def running(self) -> bool:
        """True while the worker thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def snapshot(self) -> JobSnapshot:
        """A copy of the progress so far, safe to read while the worker runs."""
        with self._lock:
            return JobSnapshot(list(self._records), self._observation, self._status, self._error)

    def _work(self) -> None:
        try:
            self._take_observation()
            self.trainer.train(self.epochs, self._log, should_stop=self._stop.is_set)
            if self._records and self._records[-1].epoch % self.every:
                self._take_observation()
            status = "stopped" if self._stop.is_set() else "finished"
        except Exception:  # noqa: BLE001 - shown on the page instead of lost in a thread
            with self._lock:
                self._error = traceback.format_exc()
            status = "failed"
        with self._lock:
            self._status = status

    def _log(self, epoch: int, loss: float, accuracy: float, seconds: float) -> None:
        with self._lock:
            self._records.append(EpochRecord(epoch, loss, accuracy, seconds))
        if epoch % self.every == 0:
            self._take_observation()
        if self._stop.is_set():
            raise StopTraining

    def _take_observation(self) -> None:
        if self.observe is not None:
            value = self.observe(self.trainer)
            with self._lock:
                self._observation = value
