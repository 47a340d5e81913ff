"""Training on the toy 2-D sets (task 2.5: `bce_with_logits` and `train_step`): the documented
defaults reach 95%, checkpoints resume."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from minifw.backends import cuda_available
from minifw.datasets import DATASETS
from project.points import (
    DEFAULTS,
    SCALAR_DEFAULTS,
    PointsTrainer,
    ScalarTrainer,
    bce_with_logits,
)
from project.training import train_step

pytestmark = pytest.mark.slow
NO_CUDA = "cuda backend: no CUDA GPU here and NUMBA_ENABLE_CUDASIM=1 is not set"


@pytest.mark.task2_5
@given(
    st.lists(st.floats(0.05, 60.0).flatmap(lambda v: st.sampled_from([v, -v])), min_size=1,
             max_size=6),
    st.data(),
)  # fmt: skip
def test_bce_with_logits_is_stable_and_has_the_right_gradient(
    drawn: list[float], data: st.DataObject
) -> None:
    # chosen logits (huge ones too) and drawn ones; never 0: relu and abs have a kink there
    z_values = [-60.0, -1.0, 0.3, 2.0, 60.0, *drawn]
    targets = [0.0, 1.0, 1.0, 0.0, 1.0]
    targets += data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=len(drawn),
                                  max_size=len(drawn)), label="targets")  # fmt: skip
    n = len(z_values)
    z = mf.tensor(z_values, requires_grad=True, backend="simple")
    loss = bce_with_logits(z, mf.tensor(targets, backend="simple"))
    loss.backward()
    expected = [
        -(t * math.log(1 / (1 + math.exp(-v))) + (1 - t) * math.log(1 / (1 + math.exp(v))))
        if abs(v) < 30
        else max(v, 0.0) - v * t
        for v, t in zip(z_values, targets, strict=True)
    ]
    assert loss.item() == pytest.approx(sum(expected) / n, rel=1e-9)
    sigmoid = [1 / (1 + math.exp(-v)) for v in z_values]
    np.testing.assert_allclose(
        z.grad.numpy(), [(s - t) / n for s, t in zip(sigmoid, targets, strict=True)], atol=1e-12
    )


class RecordingSGD:
    """Plain SGD that records the order of the calls the training step makes."""

    def __init__(self, params: list, lr: float, calls: list) -> None:  # type: ignore[type-arg]
        self.params, self.lr, self.calls = params, lr, calls

    def zero_grad(self) -> None:
        self.calls.append("zero_grad")
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        self.calls.append("step")
        with mf.no_grad():
            for p in self.params:
                p -= self.lr * p.grad


# small integers: every product and sum of the step below is exact
ints = st.integers(-3, 3).map(float)


@pytest.mark.task2_5
@given(st.lists(ints, min_size=2, max_size=2), st.lists(ints, min_size=4, max_size=4),
       st.lists(ints, min_size=2, max_size=2))  # fmt: skip
def test_train_step_zeroes_runs_backpropagates_and_steps_once(
    w0: list[float], xs: list[float], ys: list[float]
) -> None:
    calls: list[str] = []
    w = mf.tensor([[w0[0]], [w0[1]]], requires_grad=True, backend="simple")
    w.grad = mf.tensor([[100.0], [100.0]], backend="simple")  # stale: must not leak in
    optimizer = RecordingSGD([w], lr=0.25, calls=calls)
    x_np, y_np, w_np = (
        np.array(xs).reshape(2, 2),
        np.array(ys).reshape(2, 1),
        np.array(w0)[:, None],
    )
    x = mf.tensor(x_np.tolist(), backend="simple")
    y = mf.tensor(y_np.tolist(), backend="simple")

    def model(inputs: mf.Tensor) -> mf.Tensor:
        calls.append("forward")
        return inputs @ w

    def loss_fn(outputs: mf.Tensor, targets: mf.Tensor) -> mf.Tensor:
        calls.append("loss")
        return ((outputs - targets) ** 2).mean()

    outputs, loss = train_step(model, optimizer, x, y, loss_fn)
    assert calls == ["zero_grad", "forward", "loss", "step"]
    predicted = x_np @ w_np
    np.testing.assert_allclose(outputs.detach().numpy(), predicted)
    assert loss.item() == pytest.approx(((predicted - y_np) ** 2).mean())
    # d loss / d w = X^T (2 (Xw - y) / 2): no stale gradient added in
    grad = x_np.T @ (predicted - y_np)
    np.testing.assert_allclose(w.grad.numpy(), grad)
    np.testing.assert_allclose(w.detach().numpy(), w_np - 0.25 * grad)


@pytest.mark.task2_5
def test_simple_set_reaches_95_percent_on_the_simple_backend() -> None:
    trainer = PointsTrainer("simple", backend="simple")
    records = trainer.train(DEFAULTS["simple"].epochs)
    assert len(records) == DEFAULTS["simple"].epochs
    assert records[-1].loss < 0.5 * records[0].loss
    assert trainer.accuracy() >= 0.95
    probabilities = trainer.predict_proba(np.array([[0.1, 0.5], [0.9, 0.5]]))
    assert probabilities[0] > 0.5 > probabilities[1]  # label 1 left of x1 = 0.5


def small(**changes: object) -> PointsTrainer:
    settings = {"dataset": "xor", "points": 12, "hidden": 3, "batch": 4, "backend": "simple"}
    settings.update(changes)
    return PointsTrainer(**settings)  # type: ignore[arg-type]


@pytest.mark.extra  # checkpoints and settings checks are given code
def test_checkpoint_resume_continues_the_same_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    straight = small()
    straight.train(4)
    first = small()
    first.train(2)
    path = str(tmp_path / "run.mf")
    first.save(path)
    resumed = small()
    resumed.resume(path)
    assert resumed.epochs_done == 2 and [r.epoch for r in resumed.records] == [1, 2]
    resumed.train(4)
    np.testing.assert_allclose(
        [r.loss for r in resumed.records], [r.loss for r in straight.records], rtol=1e-10
    )
    points = np.random.default_rng(0).random((5, 2))
    np.testing.assert_allclose(resumed.predict_proba(points), straight.predict_proba(points))


@pytest.mark.extra  # checkpoints and settings checks are given code
def test_resume_refuses_a_checkpoint_of_other_settings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "run.mf")
    trainer = small()
    trainer.train(1)
    trainer.save(path)
    with pytest.raises(ValueError, match="hidden: saved 3, now 4"):
        small(hidden=4).resume(path)
    scalar = ScalarTrainer("xor", points=12, hidden=3)
    with pytest.raises(ValueError, match="'points' checkpoint, not a 'scalar' one"):
        scalar.resume(path)


@pytest.mark.extra  # checkpoints and settings checks are given code
def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        PointsTrainer("moons", backend="simple")
    with pytest.raises(ValueError, match="unknown backend"):
        PointsTrainer("xor", backend="tpu")
    with pytest.raises(ValueError, match="learning rate"):
        PointsTrainer("xor", lr=-1.0, backend="simple")


@pytest.mark.extra
@pytest.mark.parametrize("dataset", list(DATASETS))
def test_every_dataset_reaches_95_percent_with_its_defaults(dataset: str) -> None:
    trainer = PointsTrainer(dataset, backend="fast")
    trainer.train(DEFAULTS[dataset].epochs)
    assert trainer.accuracy() >= 0.95, f"{dataset}: {trainer.accuracy():.1%}"


@pytest.mark.extra
@pytest.mark.skipif(not cuda_available(), reason=NO_CUDA)
def test_a_few_steps_on_the_cuda_backend_match_the_fast_backend() -> None:
    runs = [small(points=4, hidden=2, batch=4, backend=b) for b in ("fast", "cuda")]
    for trainer in runs:
        trainer.train(2)
    np.testing.assert_allclose(
        [r.loss for r in runs[1].records], [r.loss for r in runs[0].records], rtol=1e-9
    )


@pytest.mark.extra  # the trainer and checkpoints are given; task 1.5 is graded in its own tests
def test_scalar_trainer_learns_simple_and_resumes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    trainer = ScalarTrainer("simple")
    trainer.train(SCALAR_DEFAULTS["simple"].epochs)
    assert trainer.accuracy() >= 0.95
    path = str(tmp_path / "scalar.mf")
    trainer.save(path)
    again = ScalarTrainer("simple")
    again.resume(path)
    points = np.array([[0.2, 0.3], [0.7, 0.9], [0.45, 0.1]])
    np.testing.assert_allclose(again.predict_proba(points), trainer.predict_proba(points))
    assert again.epochs_done == trainer.epochs_done
