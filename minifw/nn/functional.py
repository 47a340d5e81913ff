"""`minifw.nn.functional`: the stateless operations that layers are built from.

Mirrors `torch.nn.functional`. Activations, softmax and dropout live in
`activation.py`, convolution and pooling in `conv.py`, losses in `loss_functions.py`;
this module adds `linear`, `embedding`, `layer_norm`, `cosine_similarity` and
`normalize`, and gathers all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from minifw.core import dtypes
from minifw.core import operators as ops
from minifw.core.autodiff import no_grad
from minifw.nn.activation import (
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    max_along,
    mish,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softplus,
    softsign,
    tanh,
)  # fmt: skip
from minifw.nn.attention import scaled_dot_product_attention
from minifw.nn.conv import unfold
from minifw.nn.convolution import conv1d, conv2d
from minifw.nn.loss_functions import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)  # fmt: skip
from minifw.nn.padding import pad
from minifw.nn.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from minifw.nn.resize import interpolate, upsample
from minifw.tensor.functions import Adjoint, Function, FunctionCtx, MatMul, Permute, Sum, Where
from minifw.tensor.kernel_api import cells, floating, scalar, wrap, zip_op
from minifw.tensor.tensor import Tensor, tensor


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """Affine map input @ weight.T + bias, for input (..., in) and weight (out, in)."""
    if weight.dim() != 2 or input.dim() == 0 or input.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"linear: input of shape {tuple(input.shape)} has "
            f"{input.shape[-1] if input.dim() else 0} features but weight of shape "
            f"{tuple(weight.shape)} expects (out_features, in_features)"
            f" with in_features = {weight.shape[1] if weight.dim() == 2 else '?'}"
        )
    if (
        input.dim() == 2
        and input.dtype is weight.dtype
        and input.backend is weight.backend
        and (bias is None or (bias.dtype is input.dtype and bias.backend is input.backend))
        and (bias is None or bias.shape == (weight.shape[0],))
    ):
        return _Linear.apply(input, weight, bias)
    out = input @ weight.transpose(0, 1)
    return out if bias is None else out + bias


class _Linear(Function):
    """x @ w.T + b for 2-D x of one dtype and backend: one matmul, one add, one node."""

    node_name = "Addmm"
    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, x: Tensor, w: Tensor, b: Tensor | None
    ) -> Tensor:
        """Return x @ w.T (+ b broadcast over rows)."""
        need_x, need_w, _ = ctx.needs_input_grad
        ctx.save_for_backward(x if need_w else None, w if need_x else None)
        out = wrap(x.backend.matmul(cells(x), cells(w).permute(1, 0)), x)
        return out if b is None else zip_op(ops.ADD, out, b)

    @staticmethod
    def backward(
        ctx: FunctionCtx, grad: Tensor
    ) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        """Return grad @ w, grad.T @ x (already (out, in): no transposed copy), grad summed."""
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        return (
            MatMul.apply(grad, w) if need_x else None,
            MatMul.apply(Permute.apply(grad, (1, 0)), x) if need_w else None,
            Sum.apply(grad, (0,), False) if need_b else None,
        )


class EmbeddingLookup(Function):
    """Rows of `weight` picked by int64 indices; backward adds each gradient row back."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, weight: Tensor, indices: Tensor, padding_idx: int | None
    ) -> Tensor:
        """out[..., :] = weight[indices[...], :] (a gather on the host copy of the indices)."""
        index = indices.detach().cpu().numpy()
        ctx.index, ctx.rows, ctx.padding_idx = index, weight.shape[0], padding_idx
        rows = weight.detach().cpu().numpy()[index]
        return tensor(rows, dtype=weight.dtype, backend=weight.backend)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """grad_weight[i] = sum of grad rows whose index is i (scatter-add); padding row 0.

        Linear in grad; as a node (`Adjoint`), its own backward gathers the rows again.
        """
        rows = Adjoint.apply(grad, partial(_scatter_rows, ctx), partial(_gather_rows, ctx))
        return rows, None, None


def _scatter_rows(ctx: FunctionCtx, grad: Tensor) -> Tensor:
    """The scatter-add of the gradient rows into a (rows, dim) tensor, on the host."""
    g = grad.detach().cpu().numpy().reshape(-1, grad.shape[-1])
    total = np.zeros((ctx.rows, grad.shape[-1]), dtype=g.dtype)
    np.add.at(total, ctx.index.reshape(-1), g)
    if ctx.padding_idx is not None:
        total[ctx.padding_idx] = 0.0
    return tensor(total, dtype=grad.dtype, backend=grad.backend)


def _gather_rows(ctx: FunctionCtx, g: Tensor) -> Tensor:
    """The lookup again, of the rows of `g` (the padding row, zeroed by the scatter, as 0)."""
    if ctx.padding_idx is not None:
        keep = np.ones((ctx.rows, 1))
        keep[ctx.padding_idx] = 0.0
        g = g * tensor(keep, dtype=g.dtype, backend=g.backend)
    out: Tensor = EmbeddingLookup.apply(g, tensor(ctx.index, backend=g.backend), None)
    return out


def checked_padding_idx(padding_idx: int, num_embeddings: int) -> int:
    """`padding_idx` in [0, num_embeddings): negatives wrap, others raise as PyTorch does."""
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError(
            f"Padding_idx must be within num_embeddings, got {padding_idx} for "
            f"{num_embeddings} embeddings"
        )
    return padding_idx % num_embeddings


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,  # noqa: A002
) -> Tensor:
    """Rows of `weight` (num_embeddings, dim) for each int64 index: input.shape + (dim,)."""
    if input.dtype is not dtypes.int64:
        raise RuntimeError(
            f"Expected tensor for argument #1 'indices' to have scalar type Long (int64); "
            f"but got {input.dtype} instead (shape {tuple(input.shape)})"
        )
    if weight.dim() != 2:
        raise RuntimeError(f"embedding: weight must be 2-D, got shape {tuple(weight.shape)}")
    values = input.detach().cpu().numpy()
    if values.size and (values.min() < 0 or values.max() >= weight.shape[0]):
        bad = values.min() if values.min() < 0 else values.max()
        raise IndexError(
            f"index out of range in self: index {bad} for an embedding of {weight.shape[0]} rows"
        )
    if padding_idx is not None:
        padding_idx = checked_padding_idx(padding_idx, weight.shape[0])
    return EmbeddingLookup.apply(weight, input, padding_idx)  # type: ignore[no-any-return]


def layer_norm(
    input: Tensor,  # noqa: A002
    normalized_shape: Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims."""
    shape = tuple(normalized_shape)
    if not shape or input.shape[input.dim() - len(shape) :] != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(map(str, shape))}], but got input of size {list(input.shape)}"
        )
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    centered = input - input.mean(dims, keepdim=True)
    var = (centered * centered).mean(dims, keepdim=True)
    out = centered / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


# ---- batch and group normalisation ----


def _channel_view(t: Tensor, x: Tensor) -> Tensor:
    """A per-channel (C,) tensor viewed as (1, C, 1, ...) to broadcast over `x` (N, C, ...)."""
    return t.view(1, -1, *([1] * (x.dim() - 2)))


def batch_norm(
    input: Tensor,  # noqa: A002
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) of (N, C, ...) to mean 0, variance 1, then scale, shift.

    Training uses the batch's (biased) statistics and moves the running buffers, when
    given, `momentum` of the way towards the batch mean and unbiased variance (in place,
    without gradient); otherwise the running statistics normalise.
    """
    if input.dim() < 2:
        raise ValueError(
            f"batch_norm: expected an input (N, C, ...), got shape {tuple(input.shape)}"
        )
    dims = (0, *range(2, input.dim()))
    if training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{tuple(input.shape)}"
            )
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        _move_running_stats(running_mean, running_var, mean, var, momentum, count)
        out = centered / (var + eps).sqrt()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm: running_mean and running_var are needed in eval")
        scale = (_channel_view(running_var, input) + eps).sqrt()
        out = (input - _channel_view(running_mean, input)) / scale
    if weight is not None:
        out = out * _channel_view(weight, input)
    if bias is not None:
        out = out + _channel_view(bias, input)
    return out


def _move_running_stats(
    running_mean: Tensor | None, running_var: Tensor | None, mean: Tensor, var: Tensor,
    momentum: float, count: int,
) -> None:  # fmt: skip
    """Move the running statistics towards the batch ones (unbiased variance), in place."""
    with no_grad():
        if running_mean is not None:
            batch_mean = mean.detach().reshape(-1).to(running_mean.dtype)
            running_mean.copy_(running_mean * (1.0 - momentum) + batch_mean * momentum)
        if running_var is not None:
            unbiased = var.detach().reshape(-1).to(running_var.dtype) * (count / (count - 1))
            running_var.copy_(running_var * (1.0 - momentum) + unbiased * momentum)


def group_norm(
    input: Tensor,  # noqa: A002
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each group of C // num_groups channels of each sample, then scale, shift."""
    if input.dim() < 2 or input.shape[1] % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(input.shape)} and num_groups={num_groups}"
        )
    grouped = input.reshape(input.shape[0], num_groups, -1)
    centered = grouped - grouped.mean(2, keepdim=True)
    var = (centered * centered).mean(2, keepdim=True)
    out = (centered / (var + eps).sqrt()).reshape(*input.shape)
    if weight is not None:
        out = out * _channel_view(weight, input)
    if bias is not None:
        out = out + _channel_view(bias, input)
    return out


# Distances between vectors: cosine_similarity and normalize.


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 x2) / (max(||x1||, eps) max(||x2||, eps)) along `dim` (the inputs broadcast)."""
    shape = tuple(np.broadcast_shapes(x1.shape, x2.shape))
    a, b = floating(x1).expand(*shape), floating(x2).expand(*shape)
    norm_a = safe_norm(a, dim, keepdim=False)
    norm_b = safe_norm(b, dim, keepdim=False)
    floor = scalar(a, eps)
    denom_a = Where.apply(norm_a > eps, norm_a, floor)
    denom_b = Where.apply(norm_b > eps, norm_b, floor)
    return (a / denom_a.unsqueeze(dim) * (b / denom_b.unsqueeze(dim))).sum(dim)


def safe_norm(x: Tensor, dim: int, keepdim: bool = True, p: float = 2.0) -> Tensor:
    """The p-norm of `x` along `dim`; an all-zero slice has norm 0 and gradient 0 (not nan)."""
    if p == 2.0:
        powered = (x * x).sum(dim, keepdim=keepdim)
    else:
        powered = (x.abs() ** p).sum(dim, keepdim=keepdim)
    empty = powered == 0.0
    safe = Where.apply(empty, scalar(powered, 1.0), powered)
    root = safe.sqrt() if p == 2.0 else safe ** (1.0 / p)
    return Where.apply(empty, scalar(powered, 0.0), root)  # type: ignore[no-any-return]


def normalize(
    input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
) -> Tensor:  # fmt: skip
    """Unit vectors along `dim`: input / max(||input||_p, eps) (zero slices stay zero)."""
    x = floating(input)
    norm = safe_norm(x, dim, keepdim=True, p=p)
    return x / Where.apply(norm > eps, norm, scalar(norm, eps))


__all__ = [
    "batch_norm", "group_norm", "binary_cross_entropy_with_logits", "cosine_similarity",
    "dropout1d", "dropout2d", "dropout3d", "elu", "gelu", "hardsigmoid", "hardswish",
    "hardtanh", "huber_loss", "kl_div", "l1_loss", "leaky_relu", "logsigmoid", "mish",
    "normalize", "relu6", "selu", "silu", "smooth_l1_loss", "softplus", "softsign",
    "scaled_dot_product_attention",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "avg_pool1d", "interpolate", "max_pool1d", "pad", "upsample",
    "avg_pool2d", "binary_cross_entropy", "conv1d", "conv2d", "cross_entropy", "dropout",
    "embedding", "layer_norm", "linear", "log_softmax", "max_along", "max_pool2d", "mse_loss",
    "nll_loss", "one_hot", "relu", "sigmoid", "softmax", "tanh", "unfold",
]  # fmt: skip


def __getattr__(name: str) -> object:
    """A PyTorch name left out on purpose raises NotImplementedError saying why."""
    from minifw.core import unsupported

    raise unsupported.missing("torch.nn.functional", "minifw.nn.functional", name)
