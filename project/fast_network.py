"""Task 3.5: the points network written for speed, trained on the fast backend.

A layer that treats a batch one sample at a time, or that multiplies a broadcast
(batch, in, 1) * (in, out) product and sums it over `in`, launches many kernels or
builds a tensor `in` times bigger than its output. Written for speed, a layer is ONE
matmul for the whole batch plus a broadcast bias, and the network is a chain of such
layers with ReLUs between them: a handful of kernel launches per layer, each big
enough to keep the parallel kernels of tasks 3.1 and 3.2 busy.

`FastPointsTrainer` trains `FastNetwork` on a toy 2-D set exactly as `PointsTrainer`
trains its network (same data, loss, optimizer and checkpoints), by default on the
"fast" backend. `python project/run_fast_tensor.py` runs it from the command line;
`bench/course_speed.py` times it on SimpleOps and on the readable FastOps kernels.
"""

from __future__ import annotations

import math
from typing import Any

import minifw as mf
from minifw.core.random import generator
from project.points import PointsTrainer
from project.training import build_model, make_optimizer


def uniform_parameter(shape: tuple[int, ...], fan_in: int) -> Any:
    """A Parameter of `shape` drawn from uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)
    return mf.nn.Parameter(mf.tensor(generator().uniform(-bound, bound, size=shape)))


class FastLinear(mf.nn.Module):
    """An affine layer for a whole batch: (batch, in) -> (batch, out).

    `weight` is (in_features, out_features) and `bias` (out_features,), both Parameters:
    read their tensors as `self.weight.value` and `self.bias.value`.
    """

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = uniform_parameter((in_features, out_features), in_features)
        self.bias = uniform_parameter((out_features,), in_features)

    # BEGIN TASK 3.5

    def forward(self, x: Any) -> Any:
        """Return x @ weight + bias for the (batch, in) input x: one matmul for the batch.

        No loop over samples and no broadcast product summed over a dim: the bias
        (out,) broadcasts over the batch rows of the (batch, out) product.
        """
        return x @ self.weight.value + self.bias.value

    # END TASK 3.5


class FastNetwork(mf.nn.Module):
    """The points classifier: 2 -> hidden -> hidden -> 1 with ReLUs, one logit per point."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.layer1 = FastLinear(2, hidden)
        self.layer2 = FastLinear(hidden, hidden)
        self.layer3 = FastLinear(hidden, 1)

    # BEGIN TASK 3.5

    def forward(self, x: Any) -> Any:
        """Return the (batch, 1) logits of the (batch, 2) points x.

        Apply layer1, ReLU, layer2, ReLU, layer3 to the whole batch at once (no ReLU
        after layer3: the loss takes logits).
        """
        hidden = self.layer1(x).relu()
        hidden = self.layer2(hidden).relu()
        return self.layer3(hidden)

    # END TASK 3.5


class FastPointsTrainer(PointsTrainer):
    """`PointsTrainer` with `FastNetwork` as its model (default backend: "fast")."""

    kind = "fast-points"

    def __init__(self, dataset: str = "simple", backend: str = "fast", **settings: Any) -> None:
        super().__init__(dataset, backend=backend, **settings)
        config = self.config
        self.model = build_model(lambda: FastNetwork(config["hidden"]), backend, config["seed"])
        self.optimizer = make_optimizer(config["optimizer"], self.model, config["lr"])


__all__ = ["FastLinear", "FastNetwork", "FastPointsTrainer"]
