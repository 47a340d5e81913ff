"""Tests of the Scalar training run: project/scalar_model.py and project/run_scalar.py.

Task 1.5 is graded on what students write in project/scalar_model.py: the network's
forward, the loss of a set, the SGD update and the training step, and a training run
that reaches full accuracy on the "simple" set. The command line around them is given
code, tested under `extra`.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minifw.core.autodiff import no_grad
from minifw.datasets import PointSet, simple
from minifw.scalar.scalar import Scalar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `project` is not an installed package
    sys.path.insert(0, str(ROOT))

from project.run_scalar import main  # noqa: E402
from project.scalar_model import (  # noqa: E402
    ScalarLinear,
    ScalarMLP,
    accuracy,
    epoch_loss,
    sgd_step,
    train_epoch,
    train_scalar,
)

POINTS = PointSet("tiny", [(0.1, 0.9), (0.8, 0.3), (0.4, 0.4), (0.9, 0.9)], [1, 0, 1, 0])


def set_weights(layer: ScalarLinear, weights: list[list[float]], biases: list[float]) -> None:
    """Give a layer chosen weights (row j feeds output j) and biases."""
    for row, values in zip(layer.weights, weights, strict=True):
        for param, value in zip(row, values, strict=True):
            param.value.data = value
    for param, value in zip(layer.biases, biases, strict=True):
        param.value.data = value


def floats_of(layer: ScalarLinear) -> tuple[list[list[float]], list[float]]:
    """A layer's weights and biases as plain floats."""
    weights = [[p.value.data for p in row] for row in layer.weights]
    return weights, [p.value.data for p in layer.biases]


def linear_on_floats(layer: ScalarLinear, xs: list[float]) -> list[float]:
    """What a layer computes, on plain floats."""
    weights, biases = floats_of(layer)
    pairs = zip(weights, biases, strict=True)
    return [b + sum(w * x for w, x in zip(row, xs, strict=True)) for row, b in pairs]


ACTIVATIONS = {
    "tanh": math.tanh,
    "relu": lambda v: max(v, 0.0),
    "sigmoid": lambda v: 1.0 / (1.0 + math.exp(-v)),
}


# small integers and halves: every sum and product below is exact in floats
halves = st.integers(-8, 8).map(lambda n: n / 2)


@pytest.mark.task1_5
@given(st.lists(halves, min_size=6, max_size=6), st.lists(halves, min_size=2, max_size=2),
       st.lists(halves, min_size=3, max_size=3))  # fmt: skip
def test_linear_forward_is_bias_plus_weighted_sum_and_reaches_the_weights(
    flat: list[float], biases: list[float], xs: list[float]
) -> None:
    weights = [flat[:3], flat[3:]]
    layer = ScalarLinear(3, 2, random.Random(0))
    set_weights(layer, weights, biases)
    x = [Scalar(v) for v in xs]
    outputs = layer(x)
    expected = [b + sum(w * v for w, v in zip(row, xs, strict=True))
                for row, b in zip(weights, biases, strict=True)]  # fmt: skip
    assert [out.data for out in outputs] == pytest.approx(expected, abs=1e-12)
    outputs[1].backward()
    assert [p.value.grad for p in layer.weights[1]] == xs
    assert layer.biases[1].value.grad == 1.0
    assert all(p.value.grad is None for p in layer.weights[0])
    assert [xi.grad for xi in x] == weights[1]


@pytest.mark.task1_5
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@given(st.integers(0, 10_000), st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=2))
def test_mlp_applies_the_activation_between_layers_only(
    activation: str, seed: int, point: list[float]
) -> None:
    model = ScalarMLP([2, 3, 2, 1], activation=activation, seed=seed)
    expected = point
    for k, layer in enumerate(model.layers):
        expected = linear_on_floats(layer, expected)
        if k < len(model.layers) - 1:
            expected = [ACTIVATIONS[activation](v) for v in expected]
    (out,) = model(point)
    assert isinstance(out, Scalar) and out.history is not None
    assert math.isclose(out.data, expected[0], rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.task1_5
@given(st.integers(1, 5), st.integers(0, 10_000), st.floats(-1.0, 1.0))
def test_model_shape_and_parameters(hidden: int, seed: int, x: float) -> None:
    model = ScalarMLP([2, hidden, 1], seed=seed)
    names = [name for name, _ in model.named_parameters()]
    assert len(names) == 2 * hidden + hidden + hidden * 1 + 1
    assert names[0] == "layer1.weight_0_0" and names[-1] == "layer2.bias_0"
    (out,) = model([x, 0.7])
    assert isinstance(out, Scalar) and out.history is not None
    assert ScalarMLP([2, hidden, 1], seed=seed)([x, 0.7])[0].data == out.data  # seeded
    with pytest.raises(ValueError, match="activation"):
        ScalarMLP([2, 1], activation="gelu")


@pytest.mark.task1_5
@given(st.integers(0, 10_000))
def test_epoch_loss_is_the_mean_cross_entropy_and_counts_hits(seed: int) -> None:
    model = ScalarMLP([2, 2, 1], seed=seed)
    with no_grad():
        logits = [model(point)[0].data for point in POINTS.X]
    expected = sum(
        math.log1p(math.exp(-z if label == 1 else z))
        for z, label in zip(logits, POINTS.y, strict=True)
    ) / POINTS.n  # fmt: skip
    hits = sum((z > 0.0) == (label == 1) for z, label in zip(logits, POINTS.y, strict=True))
    loss, correct = epoch_loss(model, POINTS)
    assert isinstance(loss, Scalar) and math.isclose(loss.data, expected, rel_tol=1e-9)
    assert correct == hits
    loss.backward()
    assert all(p.value.grad is not None for p in model.parameters())


@pytest.mark.task1_5
@given(st.integers(0, 10_000), halves, halves, st.sampled_from([0.5, 0.25, 0.125]))
def test_sgd_step_moves_against_the_gradient_and_clears_it(
    seed: int, first: float, second: float, lr: float
) -> None:
    model = ScalarMLP([2, 1], seed=seed)
    params = list(model.parameters())
    before = [p.value.data for p in params]
    params[0].value.grad = first
    params[1].value.grad = second
    sgd_step(model, lr)
    after = [p.value.data for p in params]
    assert after[0] == pytest.approx(before[0] - lr * first, rel=1e-12, abs=1e-15)
    assert after[1] == pytest.approx(before[1] - lr * second, rel=1e-12, abs=1e-15)
    assert after[2:] == before[2:]  # no gradient: unchanged
    assert all(p.value.grad is None for p in params)


@pytest.mark.task1_5
@given(st.integers(0, 10_000))
def test_train_epoch_reports_the_loss_before_its_update_and_lowers_it(seed: int) -> None:
    model = ScalarMLP([2, 3, 1], seed=seed)
    with no_grad():
        start, start_hits = epoch_loss(model, POINTS)
    loss, acc = train_epoch(model, POINTS, lr=0.05)  # a small step lowers a smooth loss
    assert math.isclose(loss, start.data, rel_tol=1e-12) and acc == start_hits / POINTS.n
    assert all(p.value.grad is None for p in model.parameters())
    with no_grad():
        assert epoch_loss(model, POINTS)[0].data < loss


@pytest.mark.task1_5
@pytest.mark.slow
def test_simple_reaches_full_accuracy_with_the_defaults() -> None:
    data = simple(50, 0)
    log: list[tuple[int, float, float, float]] = []
    model = train_scalar(data, log_fn=lambda *entry: log.append(entry))
    assert [entry[0] for entry in log] == list(range(1, 501))
    assert log[-1][1] < 0.5 * log[0][1]  # the loss went down
    assert log[-1][2] == 1.0
    assert accuracy(model, data) == 1.0


# ---- given code: the command line ----


@pytest.mark.extra
def test_main_runs_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--dataset", "xor", "--points", "12", "--hidden", "3", "--epochs", "4"]
    assert main([*argv, "--log-every", "2", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "run_scalar: epochs=4 dataset=xor points=12 hidden=3" in out
    lines = [line.split() for line in out.splitlines() if line.startswith("epoch")]
    assert [line[1] for line in lines] == ["2/4", "4/4"]
    assert "done: xor on scalar, 4 epochs" in out and "train accuracy" in out
    assert "ms/epoch" in out


@pytest.mark.extra
def test_main_rejects_bad_settings() -> None:
    with pytest.raises(SystemExit):
        main(["--epochs", "0"])
    with pytest.raises(SystemExit):
        main(["--dataset", "moons"])


@pytest.mark.extra
def test_script_runs_from_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "project/run_scalar.py", "--epochs", "2", "--points", "8"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "done: simple on scalar, 2 epochs" in done.stdout
