"""Training in a background thread, so the app's page never waits for a run (nor it for the page).

A `TrainingJob` runs `trainer.train(epochs, ...)` in a daemon thread. After each
epoch the thread puts the record into a queue (never blocking), and now and then
(and after the last epoch) it calls `observe(trainer)` to take a snapshot of what
the page should draw (the decision boundary as a numpy grid, the test accuracy):
the page only ever reads copies, never the live model. Observing costs time the
command line does not spend, so it is rationed: at most every `every` epochs, at
most every `min_interval` seconds (the page redraws no faster), and never more
than `OBSERVE_SHARE` of the run's time. When the run
ends the thread takes the final evaluation, the figures the command line's summary
prints (`final_figures`). `stop()` asks the loop to end after the current epoch.

The page's side, `snapshot()`, drains the queue into its own list under a lock the
worker never takes, so a redraw never waits for training and training never waits
for a redraw. Nothing here imports streamlit.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from project.training import EpochRecord, StopTraining, Trainer, final_figures

OBSERVE_SHARE = 0.1  # observations may take at most this fraction of the run
MIN_INTERVAL = 0.5  # seconds between observations (the page's redraw interval)


@dataclass(frozen=True)
class JobSnapshot:
    """A consistent copy of a job's progress.

    Attributes:
        records: every epoch reported so far.
        observation: the latest value returned by `observe` (None before the first).
        observed_epoch: the epoch after which `observation` was taken (0: before
            training; None: nothing observed yet).
        status: "idle", "running", "stopped", "finished" or "failed".
        error: the traceback's text when the status is "failed".
        final: the final evaluation once the run has ended (train / test accuracy).
        elapsed: seconds since the job started (until it ended).
        epoch_elapsed: seconds the epoch now running has taken so far (0 when none runs).
    """

    records: list[EpochRecord] = field(default_factory=list)
    observation: Any = None
    observed_epoch: int | None = None
    status: str = "idle"
    error: str = ""
    final: dict[str, float] = field(default_factory=dict)
    elapsed: float = 0.0
    epoch_elapsed: float = 0.0

    @property
    def epoch(self) -> int:
        """The newest epoch reported (0 before the first)."""
        return self.records[-1].epoch if self.records else 0


def training_threads() -> int:
    """Numba threads for the app's training: all cores but one, left to the page.

    The server that redraws the page and the browser that shows it run on the same
    machine; a parallel kernel split over every core waits for the slowest one, so a
    busy core slows every kernel (`MINIFW_APP_THREADS` overrides).
    """
    import numba

    wanted = os.environ.get("MINIFW_APP_THREADS")
    available = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    if wanted is not None and wanted.isdigit() and int(wanted) > 0:
        return min(int(wanted), available)
    return max(1, available - 1)


class TrainingJob:
    """Run one trainer in a background thread and expose thread-safe snapshots.

    Args:
        trainer: what to train.
        epochs: train until this many epochs have run in total.
        observe: called in the worker thread as `observe(trainer)` every `every`
            epochs and at the end; its result is kept as the latest observation.
        every: observe at most every this many epochs.
        min_interval: and at most every this many seconds (0: every `every` epochs).
        observe_first: also observe before the first epoch (a picture of the
            untrained model); False leaves nothing to show until epoch `every`.
        threads: Numba threads for the worker's kernels (default `training_threads()`).
    """

    def __init__(
        self,
        trainer: Trainer,
        epochs: int,
        observe: Callable[[Trainer], Any] | None = None,
        every: int = 1,
        observe_first: bool = True,
        threads: int | None = None,
        min_interval: float = MIN_INTERVAL,
    ) -> None:
        self.trainer = trainer
        self.epochs = epochs
        self.observe = observe
        self.every = max(1, every)
        self.min_interval = min_interval
        self._observed_at = 0.0
        self._observe_cost = 0.0
        self.observe_first = observe_first
        self.threads = threads
        self._queue: queue.SimpleQueue[EpochRecord] = queue.SimpleQueue()
        self._read_lock = threading.Lock()  # the readers' own: the worker never takes it
        self._stop = threading.Event()
        self._records: list[EpochRecord] = []
        # Written by the worker as whole objects (atomic under the GIL), read by the page.
        self._observation: tuple[int | None, Any] = (None, None)
        self._status = "idle"
        self._error = ""
        self._final: dict[str, float] = {}
        self._started = 0.0
        self._ended: float | None = None
        self._epoch_started: float | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> TrainingJob:
        """Start the worker thread (once); returns self."""
        if self._thread is not None:
            raise RuntimeError("this job was already started")
        self._status = "running"
        self._started = time.perf_counter()
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
        status = self._status  # read first: records that arrive later are newer
        observed_epoch, observation = self._observation
        with self._read_lock:
            while True:
                try:
                    self._records.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            records = list(self._records)
        now = self._ended if self._ended is not None else time.perf_counter()
        epoch_started = self._epoch_started
        return JobSnapshot(
            records,
            observation,
            observed_epoch,
            status,
            self._error,
            dict(self._final),
            now - self._started if self._started else 0.0,
            0.0 if epoch_started is None else max(0.0, now - epoch_started),
        )

    def _work(self) -> None:
        try:
            self._set_threads()
            if self.observe_first:
                self._take_observation(self.trainer.epochs_done)
            self._epoch_started = time.perf_counter()
            self.trainer.train(self.epochs, self._log, should_stop=self._stop.is_set)
            self._epoch_started = None
            last = self.trainer.epochs_done
            if self.trainer.records and self._observation[0] != last:
                self._take_observation(last)
            self._final = final_figures(self.trainer) if self.trainer.records else {}
            status = "stopped" if self._stop.is_set() else "finished"
        except Exception:  # noqa: BLE001 - shown on the page instead of lost in a thread
            self._error = traceback.format_exc()
            status = "failed"
        self._epoch_started = None
        self._ended = time.perf_counter()
        self._status = status

    def _set_threads(self) -> None:
        """Limit this thread's Numba kernels to `threads` (a per-thread Numba setting)."""
        try:
            import numba

            numba.set_num_threads(self.threads or training_threads())
        except (ImportError, ValueError, RuntimeError):
            pass  # no Numba, or a threading layer that cannot: run as configured

    def _log(self, epoch: int, loss: float, accuracy: float, seconds: float) -> None:
        self._queue.put(EpochRecord(epoch, loss, accuracy, seconds))
        if self._observation_due(epoch):
            self._take_observation(epoch)
        self._epoch_started = time.perf_counter()
        if self._stop.is_set():
            raise StopTraining

    def _observation_due(self, epoch: int) -> bool:
        """Whether to observe after `epoch`: every `every` epochs, within the time budget."""
        if self.observe is None or epoch % self.every:
            return False
        if self.min_interval <= 0:
            return True
        wait = max(self.min_interval, self._observe_cost / OBSERVE_SHARE)
        return time.perf_counter() - self._observed_at >= wait

    def _take_observation(self, epoch: int) -> None:
        if self.observe is not None:
            start = time.perf_counter()
            self._observation = (epoch, self.observe(self.trainer))
            self._observed_at = time.perf_counter()
            self._observe_cost = self._observed_at - start
