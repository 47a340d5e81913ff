"""The course's tensor lessons end to end: the micrograd expression, linear regression and a
PyTorch program run unchanged on minifw (task 2.4: tensor backwards), and 2-D toy training
with the students' `train_step` and `bce_with_logits` (task 2.5)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw import datasets
from minifw.tensor_ops import TensorBackend
from project.points import bce_with_logits
from project.training import train_step

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.mark.task2_4
def test_micrograd_readme_expression_with_tensors(backend: TensorBackend) -> None:
    a = mf.tensor(-4.0, requires_grad=True, backend=backend)
    b = mf.tensor(2.0, requires_grad=True, backend=backend)
    c = a + b
    d = a * b + b**3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g += 10.0 / f
    assert f"{g.item():.4f}" == "24.7041"
    g.backward()
    assert a.grad is not None and f"{a.grad.item():.4f}" == "138.8338"
    assert b.grad is not None and f"{b.grad.item():.4f}" == "645.5773"


@pytest.mark.task2_4
def test_linear_regression_lesson_recovers_the_line(backend: TensorBackend) -> None:
    mf.manual_seed(0)
    x = mf.randn(100, 1, backend=backend)
    y = 3 * x + 1 + 0.1 * mf.randn(100, 1, backend=backend)
    w = mf.zeros(1, requires_grad=True, backend=backend)
    b = mf.zeros(1, requires_grad=True, backend=backend)
    lr = 0.3  # a step that converges in 25 iterations: the simulated CUDA backend is slow
    for _ in range(25):
        loss = ((x * w + b - y) ** 2).mean()
        loss.backward()
        with mf.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
            w.grad.zero_()  # type: ignore[union-attr]
            b.grad.zero_()  # type: ignore[union-attr]
    assert w.item() == pytest.approx(3.0, abs=0.05)
    assert b.item() == pytest.approx(1.0, abs=0.05)
    assert loss.item() < 0.02 and w.is_leaf and w.grad is not None


# A PyTorch program that uses only API.md's surface. It runs as written on PyTorch, and on
# minifw with its import line swapped; nothing else changes.
PROGRAM = """
import torch


def train(X_values, y_values, W1_values, W2_values, steps=60, lr=0.5):
    X = torch.tensor(X_values, dtype=torch.float64)
    y = torch.tensor(y_values)
    W1 = torch.tensor(W1_values, requires_grad=True)
    b1 = torch.zeros(W1.shape[1], dtype=torch.float64, requires_grad=True)
    W2 = torch.tensor(W2_values, requires_grad=True)
    b2 = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    params = [W1, b1, W2, b2]
    classes = torch.arange(2).view(1, -1)
    losses = []
    for step in range(steps):
        logits = (X @ W1 + b1).relu() @ W2 + b2
        top = logits.max(dim=1, keepdim=True).values
        log_probs = logits - top - (logits - top).exp().sum(dim=1, keepdim=True).log()
        one_hot = (y.view(-1, 1) == classes).to(torch.float64)
        loss = -(log_probs * one_hot).sum(dim=1).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= lr * p.grad
        losses.append(loss.item())
    with torch.no_grad():
        predictions = ((X @ W1 + b1).relu() @ W2 + b2).argmax(dim=1)
        accuracy = (predictions == y).float().mean().item()
    return losses, accuracy, W1.detach().numpy().copy()
"""


def run_program(import_line: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(PROGRAM.replace("import torch\n", import_line + "\n", 1), namespace)  # noqa: S102
    points = datasets.xor(60, seed=1)
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(0.0, 0.8, (2, 12)), rng.normal(0.0, 0.8, (12, 2))
    return namespace["train"](np.array(points.X), np.array(points.y), w1, w2)


@pytest.mark.extra  # needs PyTorch, which grading never installs
def test_a_pytorch_program_runs_on_minifw_by_swapping_the_import() -> None:
    pytest.importorskip("torch")
    losses_torch, accuracy_torch, w_torch = run_program("import torch")
    losses_mf, accuracy_mf, w_mf = run_program("import minifw as torch")
    np.testing.assert_allclose(losses_mf, losses_torch, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w_mf, w_torch, rtol=1e-9, atol=1e-12)
    assert accuracy_mf == accuracy_torch
    assert losses_mf[-1] < losses_mf[0]


# ---- 2.5: the 2-D toy sets with a raw-tensor MLP, trained by `train_step` ----------------


def mlp(params: list[mf.Tensor]) -> Any:
    """The 2-hidden-hidden-1 ReLU MLP over the weight and bias tensors `params`."""

    def forward(X: mf.Tensor) -> mf.Tensor:
        h = X
        for k in range(0, len(params), 2):
            h = h @ params[k] + params[k + 1]
            h = h.relu() if k + 2 < len(params) else h
        return h

    return forward


def train_mlp(points: datasets.PointSet, hidden: int, lr: float, epochs: int) -> float:
    """Full-batch gradient descent with `train_step` and `bce_with_logits`; returns accuracy."""
    X, y = mf.tensor(points.X), mf.tensor(points.y).double().view(-1, 1)
    rng = np.random.default_rng(0)
    sizes = [2, hidden, hidden, 1]
    params = []
    for fan_in, fan_out in zip(sizes, sizes[1:], strict=False):
        bound = 1 / np.sqrt(fan_in)
        params.append(mf.tensor(rng.uniform(-bound, bound, (fan_in, fan_out)), requires_grad=True))
        params.append(mf.tensor(rng.uniform(-bound, bound, fan_out), requires_grad=True))
    model, optimizer = mlp(params), mf.optim.SGD(params, lr=lr)
    for _ in range(epochs):
        train_step(model, optimizer, X, y, bce_with_logits)
    with mf.no_grad():
        return ((model(X) > 0) == y).float().mean().item()  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.task2_5
@pytest.mark.parametrize(("name", "epochs"), [("diag", 100), ("split", 200)])
def test_tensor_mlp_learns_the_toy_sets(name: str, epochs: int) -> None:
    """Two sets, few epochs: it runs on SimpleOps (module 2's only backend) in seconds."""
    points = datasets.DATASETS[name](50, 0)
    assert train_mlp(points, hidden=16, lr=0.5, epochs=epochs) >= 0.95


def scalar_run(
    points: datasets.PointSet, weights: list[np.ndarray], lr: float, epochs: int
) -> list:
    """Train the MLP point by point with the scalar engine; (loss, accuracy) per epoch."""
    params = [[[mf.Scalar(float(v)) for v in row] for row in np.atleast_2d(w)] for w in weights]
    history = []
    for _ in range(epochs):
        total, hits = mf.Scalar(0.0, requires_grad=False), 0
        for point, label in zip(points.X, points.y, strict=True):
            h: list[Any] = list(point)
            for k in range(0, len(params), 2):
                w, b = params[k], params[k + 1][0]
                h = [sum((h[i] * w[i][j] for i in range(len(h))), b[j]) for j in range(len(b))]
                h = [v.relu() for v in h] if k + 2 < len(params) else h
            z = h[0]
            total = total - (z if label == 1 else -z).sigmoid().log()
            hits += int((z.data > 0.0) == (label == 1))
        loss = total / len(points.X)
        loss.backward()
        for group in params:
            for row in group:
                for value in row:
                    value.data -= lr * value.grad
                    value.grad = None
        history.append((loss.data, hits / len(points.X)))
    return history


@pytest.mark.slow
@pytest.mark.task2_5
def test_tensor_mlp_retraces_the_scalar_engine() -> None:
    """The same network, weights, loss and updates in both engines: the same run."""
    points = datasets.xor(30, seed=2)
    rng = np.random.default_rng(3)
    sizes, lr, epochs = [2, 3, 3, 1], 0.5, 20
    weights: list[np.ndarray] = []
    for fan_in, fan_out in zip(sizes, sizes[1:], strict=False):
        weights += [rng.uniform(-1, 1, (fan_in, fan_out)), rng.uniform(-1, 1, fan_out)]
    expected = scalar_run(points, weights, lr, epochs)
    params = [mf.tensor(w, requires_grad=True) for w in weights]
    X, y = mf.tensor(points.X), mf.tensor(points.y).double().view(-1, 1)
    model, optimizer = mlp(params), mf.optim.SGD(params, lr=lr)

    def loss_fn(h: mf.Tensor, y: mf.Tensor) -> mf.Tensor:
        return -((h * (2 * y - 1)).sigmoid().log()).mean()

    for epoch in range(epochs):
        h, loss = train_step(model, optimizer, X, y, loss_fn)
        accuracy = ((h > 0) == y).double().mean().item()
        assert loss.item() == pytest.approx(expected[epoch][0], rel=1e-9, abs=1e-12)
        assert accuracy == expected[epoch][1]
    assert expected[-1][0] < expected[0][0]
