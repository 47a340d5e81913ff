"""The shared training loop, its stop signals, and training in a background thread."""

from __future__ import annotations

import threading
import time

import pytest

from project.jobs import TrainingJob
from project.training import EpochRecord, StopTraining, Trainer, fit

pytestmark = pytest.mark.extra


class Countdown(Trainer):
    """A trainer whose loss is 1/epoch and whose accuracy grows to 1."""

    kind = "countdown"

    def __init__(self, fail_at: int | None = None, gate: threading.Event | None = None) -> None:
        super().__init__({"fail_at": fail_at})
        self.fail_at = fail_at
        self.gate = gate
        self.seen: list[int] = []

    def run_epoch(self, epoch: int) -> tuple[float, float]:
        if self.gate is not None:
            assert self.gate.wait(10), "the test never opened the gate"
        if epoch == self.fail_at:
            raise RuntimeError(f"boom at epoch {epoch}")
        self.seen.append(epoch)
        return 1.0 / epoch, min(1.0, epoch / 4)

    def predict_proba(self, points: object) -> str:
        return f"after {len(self.seen)}"


def test_fit_reports_every_epoch_through_log_fn() -> None:
    log: list[tuple[int, float, float, float]] = []
    records = fit(lambda e: (1.0 / e, e / 10), 5, lambda *entry: log.append(entry))
    assert [r.epoch for r in records] == [1, 2, 3, 4, 5]
    assert [entry[:3] for entry in log] == [(e, 1.0 / e, e / 10) for e in range(1, 6)]
    assert all(isinstance(r, EpochRecord) and r.seconds >= 0.0 for r in records)


def test_stop_training_from_log_fn_and_should_stop() -> None:
    def log_fn(epoch: int, loss: float, accuracy: float, seconds: float) -> None:
        if epoch == 3:
            raise StopTraining

    assert [r.epoch for r in fit(lambda e: (0.0, 0.0), 10, log_fn)] == [1, 2, 3]
    calls: list[int] = []

    def run(epoch: int) -> tuple[float, float]:
        calls.append(epoch)
        return 0.0, 0.0

    records = fit(run, 10, should_stop=lambda: len(calls) >= 2)
    assert calls == [1, 2] and len(records) == 2


def test_trainer_continues_where_it_stopped() -> None:
    trainer = Countdown()
    trainer.train(3)
    trainer.train(5)
    assert trainer.seen == [1, 2, 3, 4, 5] and trainer.epochs_done == 5
    assert [r.epoch for r in trainer.records] == [1, 2, 3, 4, 5]
    assert trainer.train(4) == []  # already past epoch 4
    with pytest.raises(ValueError, match="epochs"):
        trainer.train(-1)


def test_job_trains_in_a_thread_and_stop_ends_it() -> None:
    gate = threading.Event()
    job = TrainingJob(Countdown(gate=gate), 1000, observe=lambda t: t.predict_proba(None))
    job.start()
    assert job.running and job.snapshot().status == "running"
    deadline = time.monotonic() + 10
    while job.snapshot().observation is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert job.snapshot().observation == "after 0"  # taken before the first epoch
    assert job.snapshot().records == []  # the worker waits at the gate
    gate.set()
    job.stop()
    assert job.join(10)
    snapshot = job.snapshot()
    assert snapshot.status == "stopped"
    assert 1 <= len(snapshot.records) < 1000
    with pytest.raises(RuntimeError, match="already"):
        job.start()


def test_job_runs_to_the_end_and_observes_every_n_epochs() -> None:
    seen: list[int] = []

    def observe(trainer: Trainer) -> int:
        seen.append(trainer.epochs_done)
        return trainer.epochs_done

    job = TrainingJob(Countdown(), 7, observe=observe, every=3).start()
    assert job.join(10)
    snapshot = job.snapshot()
    assert snapshot.status == "finished" and [r.epoch for r in snapshot.records] == list(
        range(1, 8)
    )
    assert snapshot.observation == 7
    assert seen[0] == 0 and 7 in seen


def test_job_failure_is_reported_not_lost() -> None:
    job = TrainingJob(Countdown(fail_at=2), 5).start()
    assert job.join(10)
    snapshot = job.snapshot()
    assert snapshot.status == "failed" and "boom at epoch 2" in snapshot.error
    assert [r.epoch for r in snapshot.records] == [1]
