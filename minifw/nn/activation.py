"""Functional activations: relu, sigmoid, tanh, softmax, log_softmax, dropout, one_hot.

These are composites of Tensor operations, so autograd differentiates them and they
run on every backend. softmax and log_softmax subtract the max along `dim` first:
exp never sees a positive argument, so logits of 1000 do not overflow.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import operators as ops
from ..random import generator
from ..tensor import Tensor, tensor
from ..tensor_data import normalize_dim


def relu(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
    """max(x, 0) cell by cell."""
    return input.relu()


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """1 / (1 + e^-x) cell by cell."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """The hyperbolic tangent, cell by cell."""
    return input.tanh()


# BEGIN TASK 4.4


def _shifted(x: Tensor, dim: int) -> tuple[Tensor, int]:
    """`x` minus its max along `dim` (a constant: softmax does not depend on it)."""
    d = normalize_dim(dim, x.dim())
    peak = x.detach()._reduce(ops.MAX, d) if x.dim() else x.detach()
    return x - peak, d


def softmax(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """e^x / sum(e^x) along `dim`: every slice along `dim` becomes a distribution."""
    shifted, d = _shifted(input._floating(), dim)
    e = shifted.exp()
    return e / e.sum(d, keepdim=True)


def log_softmax(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """log(softmax(x)) along `dim`, computed as x - max - log(sum(e^(x - max)))."""
    shifted, d = _shifted(input._floating(), dim)
    return shifted - shifted.exp().sum(d, keepdim=True).log()


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:  # noqa: A002
    """Zero each cell with probability p and scale the rest by 1 / (1 - p).

    The identity when `training` is False or p == 0. The mask is drawn from minifw's
    generator, so `mf.manual_seed` makes it reproducible.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = generator().random(input.shape) >= p
    mask = tensor(keep / (1.0 - p), dtype=input.dtype, backend=input.backend)
    return input * mask


# END TASK 4.4


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:  # noqa: A002
    """int64 tensor of shape input.shape + (num_classes,): 1 at each index, 0 elsewhere.

    `num_classes=-1` uses the largest index + 1.
    """
    if input.dtype is not dtypes.int64:
        raise RuntimeError(
            f"one_hot is only applicable to index tensor of dtype int64, got {input.dtype}"
        )
    values = input.detach().cpu().numpy()
    if values.size and values.min() < 0:
        raise RuntimeError(f"Class values must be non-negative (got {values.min()}).")
    if num_classes == -1:
        if values.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(values.max()) + 1
    if values.size and values.max() >= num_classes:
        raise RuntimeError(
            f"Class values must be smaller than num_classes ({values.max()} >= {num_classes})."
        )
    classes = tensor(np.arange(num_classes), backend=input.backend)
    return (input.unsqueeze(-1) == classes).long()
