"""A multi-layer perceptron built from Scalars, and its training (course task 1.5).

Task 1.5 writes the network's forward (`ScalarLinear.forward`, `ScalarMLP.forward`)
and one training step: the loss of the whole set as one Scalar graph (`epoch_loss`),
the plain SGD update (`sgd_step`) and the step that joins them (`train_epoch`). The
parameters, the loop and the command line around them are given.

`train_scalar` runs the shared training loop of project/training.py, which reports
through a callback, so the command line (`run_scalar.py`), the tests and the app
share one loop; `train_epoch` is one epoch of it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from minifw.core.autodiff import no_grad
from minifw.datasets import PointSet
from minifw.nn import Module, Parameter
from minifw.scalar.scalar import Scalar
from project.training import LogFn, fit


class ScalarLinear(Module):
    """y_j = b_j + sum_i w_ij x_i, one Scalar parameter per weight and bias.

    Weights and biases start uniform in +-1/sqrt(in_size), as PyTorch's Linear does.
    """

    def __init__(self, in_size: int, out_size: int, rng: random.Random) -> None:
        super().__init__()
        self.in_size, self.out_size = in_size, out_size
        bound = 1.0 / math.sqrt(in_size)
        self.weights: list[list[Parameter]] = []
        self.biases: list[Parameter] = []
        for j in range(out_size):
            row = []
            for i in range(in_size):
                row.append(Parameter(Scalar(rng.uniform(-bound, bound))))
                self.register_parameter(f"weight_{j}_{i}", row[-1])
            self.weights.append(row)
            self.biases.append(Parameter(Scalar(rng.uniform(-bound, bound))))
            self.register_parameter(f"bias_{j}", self.biases[-1])

    # BEGIN TASK 1.5
    def forward(self, inputs: Sequence[Scalar | float]) -> list[Scalar]:
        """Return the out_size outputs for one input point: b_j + sum_i w_ij x_i.

        Output j uses `self.biases[j]` and the row `self.weights[j]` (one Parameter
        per input); a Parameter's Scalar is its `.value`.
        """
        outputs = []
        for row, bias in zip(self.weights, self.biases, strict=True):
            acc = bias.value
            for w, x in zip(row, inputs, strict=True):
                acc = acc + w.value * x
            outputs.append(acc)
        return outputs

    # END TASK 1.5

    def extra_repr(self) -> str:
        """The sizes, for repr."""
        return f"in_size={self.in_size}, out_size={self.out_size}"


class ScalarMLP(Module):
    """Linear layers of the given sizes, `activation` between them (none after the last).

    `activation` names a Scalar method: "tanh" (the default), "relu" or "sigmoid".
    """

    def __init__(self, sizes: Sequence[int], activation: str = "tanh", seed: int = 0) -> None:
        super().__init__()
        if activation not in ("tanh", "relu", "sigmoid"):
            raise ValueError(f"activation must be tanh, relu or sigmoid, got {activation!r}")
        if len(sizes) < 2 or min(sizes) < 1:
            raise ValueError(f"sizes must list at least two positive sizes, got {list(sizes)}")
        self.activation = activation
        rng = random.Random(seed)
        self.layers = [ScalarLinear(sizes[k], sizes[k + 1], rng) for k in range(len(sizes) - 1)]
        for k, layer in enumerate(self.layers):
            self.add_module(f"layer{k + 1}", layer)

    # BEGIN TASK 1.5
    def forward(self, point: Sequence[Scalar | float]) -> list[Scalar]:
        """Return the last layer's outputs for one input point.

        Run `self.layers` in order; after every layer but the last, apply the Scalar
        method named by `self.activation` ("tanh", "relu" or "sigmoid") to each output.
        """
        hidden: Sequence[Scalar | float] = point
        for layer in self.layers[:-1]:
            hidden = [getattr(h, self.activation)() for h in layer(hidden)]
        return self.layers[-1](hidden)  # type: ignore[no-any-return]

    # END TASK 1.5


# BEGIN TASK 1.5


def sgd_step(model: Module, lr: float) -> None:
    """Move every parameter against its gradient and clear the gradient.

    For each Scalar s = param.value of `model.parameters()` whose `grad` is not None:
    s.data -= lr * s.grad, then s.grad = None. Parameters without a gradient stay.
    """
    for param in model.parameters():
        value = param.value
        if value.grad is not None:
            value.data -= lr * value.grad
            value.grad = None


def epoch_loss(model: ScalarMLP, data: PointSet) -> tuple[Scalar, int]:
    """Mean binary cross-entropy over the set (as one graph) and the count of hits.

    The model's single output z is a logit: P(y = 1) = sigmoid(z) and P(y = 0) =
    sigmoid(-z). The loss is the mean over the points of -log P(y = label), one Scalar
    whose graph reaches every parameter; a point counts as a hit when z > 0 exactly
    for label 1.
    """
    total = Scalar(0.0, requires_grad=False)
    correct = 0
    for point, label in zip(data.X, data.y, strict=True):
        (z,) = model(point)
        p_true = z.sigmoid() if label == 1 else (-z).sigmoid()
        total = total - p_true.log()
        correct += int((z.data > 0.0) == (label == 1))
    return total / data.n, correct


def train_epoch(model: ScalarMLP, data: PointSet, lr: float) -> tuple[float, float]:
    """One full-batch SGD step: the mean loss over `data`, backward, update.

    Returns the epoch's mean loss (a float) and the fraction classified correctly,
    both measured in that epoch's forward pass, before the update.
    """
    loss, correct = epoch_loss(model, data)
    loss.backward()
    sgd_step(model, lr)
    return loss.data, correct / data.n


# END TASK 1.5


def train_scalar(
    dataset: PointSet,
    hidden: int = 2,
    lr: float = 0.5,
    epochs: int = 500,
    log_fn: LogFn | None = None,
    seed: int = 0,
) -> ScalarMLP:
    """Train a 2-hidden-1 tanh Scalar MLP on `dataset` with full-batch SGD.

    After each epoch, `log_fn(epoch, loss, accuracy, seconds)` receives the epoch
    number (from 1), the mean loss, the fraction classified correctly (both measured
    during that epoch's forward pass) and the epoch's wall time. Returns the model.
    """
    if hidden < 1 or epochs < 0 or lr <= 0.0:
        raise ValueError(f"need hidden >= 1, epochs >= 0 and lr > 0; got {hidden}, {epochs}, {lr}")
    model = ScalarMLP([2, hidden, 1], seed=seed)
    fit(lambda epoch: train_epoch(model, dataset, lr), epochs, log_fn)
    return model


def accuracy(model: ScalarMLP, data: PointSet) -> float:
    """The fraction of `data` that `model` classifies correctly."""
    hits = 0
    with no_grad():
        for point, label in zip(data.X, data.y, strict=True):
            (z,) = model(point)
            hits += int((z.data > 0.0) == (label == 1))
    return hits / data.n
