"""Functional activations: relu, sigmoid, tanh, max_along, softmax, log_softmax, dropout.

These run on every backend. relu, sigmoid, tanh and dropout are Tensor operations;
`max_along` is one autograd node (`MaxAlongDim`) plus the indices of the maxima;
softmax and log_softmax are one autograd node each (`Softmax`, `LogSoftmax`), whose
forward and backward launch kernels directly (5 and 6 launches forward, 4 backward).
They subtract the max along `dim` first: exp never sees a positive argument, so
logits of 1000 do not overflow. Task 4.4 fences everything from `MaxAlongDim` to
`dropout`; one_hot is given.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from minifw.core import dtypes
from minifw.core import operators as ops
from minifw.core.random import generator
from minifw.core.tensor_data import normalize_dim
from minifw.tensor.functions import Function, FunctionCtx, Where
from minifw.tensor.kernel_api import floating, map_op, one_hot_along, reduce_op, scalar, zip_op
from minifw.tensor.tensor import MaxResult, Tensor, tensor


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


class MaxAlongDim(Function):
    """The largest value along `dim` (kept as a size-1 dim); its gradient goes to the argmax."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, x: Tensor, dim: int, indices: Tensor
    ) -> Tensor:
        """Return x reduced with MAX along `dim`, keeping that dim with size 1.

        `indices` (keepdim-shaped) holds where each max sits; keep it for backward.
        """
        ctx.save_for_backward(x, indices)
        ctx.dim = dim
        return reduce_op(ops.MAX, x, dim)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Return grad at the position `indices` names along `dim`, 0 everywhere else.

        One cell per slice gets the gradient, even when several cells tie for the max.
        """
        x, indices = ctx.saved_tensors
        return grad * one_hot_along(x, ctx.dim, indices), None, None


def max_along(input: Tensor, dim: int, keepdim: bool = False) -> MaxResult:  # noqa: A002
    """The (values, indices) of the largest entries along `dim`, like `torch.max(x, dim)`.

    Write: the indices are the first position of the max in each slice (int64, no
    gradient; `Tensor.argmax` finds them); the values are `MaxAlongDim` applied to the
    input, so gradients flow to those positions only. Without `keepdim`, `dim` is
    dropped from both results. Raises IndexError for a `dim` out of range.
    """
    d = normalize_dim(dim, input.dim())
    indices = input.argmax(d, keepdim=True)
    values = MaxAlongDim.apply(input, d, indices)
    if keepdim:
        return MaxResult(values, indices)
    return MaxResult(values.squeeze(d), indices.squeeze(d))


def _minus_max(x: Tensor, dim: int) -> Tensor:
    """Return x minus its max along `dim`: softmax is unchanged, and e^x cannot overflow."""
    return zip_op(ops.SUB, x, reduce_op(ops.MAX, x, dim)) if x.numel() else x


class LogSoftmax(Function):
    """log(softmax(x)) along `dim` as one node: x - max - log(sum(e^(x - max)))."""

    fresh_grads = True

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, dim: int) -> Tensor:  # type: ignore[override]
        """Shift by the max along dim (the result does not depend on it), then normalise."""
        shifted = _minus_max(x, dim)
        out = zip_op(
            ops.SUB, shifted, map_op(ops.LOG, reduce_op(ops.ADD, map_op(ops.EXP, shifted), dim))
        )
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Return grad - softmax * sum(grad) along dim, with softmax = e^out."""
        (out,) = ctx.saved_tensors
        return grad - out.exp() * grad.sum(ctx.dim, keepdim=True), None


class Softmax(Function):
    """e^x / sum(e^x) along `dim` as one node, computed on x - max (no overflow)."""

    fresh_grads = True

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, dim: int) -> Tensor:  # type: ignore[override]
        """Exponentiate x - max along dim and divide by the sum."""
        e = map_op(ops.EXP, _minus_max(x, dim))
        out = zip_op(ops.DIV, e, reduce_op(ops.ADD, e, dim))
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Return s * (grad - sum(grad * s) along dim), with s the softmax."""
        (s,) = ctx.saved_tensors
        return s * (grad - (grad * s).sum(ctx.dim, keepdim=True)), None


def softmax(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """e^x / sum(e^x) along `dim`: every slice along `dim` becomes a distribution.

    Write: integer inputs become floating point first (`Tensor._floating`); a negative
    `dim` counts from the end. Subtract the max along `dim` before exponentiating so that
    huge logits (1000) give finite results; the gradient must be exact (gradcheck).
    """
    x = floating(input)
    return Softmax.apply(x, normalize_dim(dim, x.dim()))


def log_softmax(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """log(softmax(x)) along `dim`, computed as x - max - log(sum(e^(x - max))).

    Write: as softmax, but never take the log of a softmax that may have rounded to 0:
    use the shifted form above, so log_softmax of logits 1000 apart stays finite.
    """
    x = floating(input)
    return LogSoftmax.apply(x, normalize_dim(dim, x.dim()))


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:  # noqa: A002
    """Zero each cell with probability p and scale the rest by 1 / (1 - p).

    Write: return the input itself (the same object) when `training` is False or p == 0,
    zeros when p == 1, and raise ValueError unless 0 <= p <= 1. Draw the keep-mask from
    minifw's generator (`minifw.core.random.generator()`), so that `mf.manual_seed` makes
    it reproducible; gradients flow through the kept cells with the same 1 / (1 - p) scale.
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


# ---- More activations: compositions of differentiable tensor operations ------
#
# Each is built from Tensor operations and `Where`, so autograd (and create_graph) comes
# for free on every backend. Branches that could overflow (exp of a large input) see a
# clamped copy of the input, so the gradient of the branch not taken stays 0, never nan.


def _where(condition: Tensor, a: Tensor | float, b: Tensor | float, like: Tensor) -> Tensor:
    """A where `condition` holds, else b (numbers become 0-dim tensors like `like`)."""
    first = a if isinstance(a, Tensor) else scalar(like, a)
    second = b if isinstance(b, Tensor) else scalar(like, b)
    return Where.apply(condition, first, second)  # type: ignore[no-any-return]


def _float_input(name: str, input: Tensor) -> Tensor:  # noqa: A002
    """`input` itself if it is floating point; PyTorch's RuntimeError otherwise."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating point input, got {input.dtype}")
    return input


def _stable_softplus(z: Tensor, threshold: float = 20.0) -> Tensor:
    """log(1 + e^z), exactly z above `threshold`; its gradient is sigmoid(z) everywhere."""
    linear = z > threshold
    safe = _where(linear, 0.0, z, z)
    return _where(linear, z, -(-safe).sigmoid().log(), z)


def leaky_relu(
    input: Tensor, negative_slope: float = 0.01, inplace: bool = False,  # noqa: A002
) -> Tensor:  # fmt: skip
    """X where x > 0, else negative_slope * x."""
    x = _float_input("leaky_relu", input)
    return _where(x > 0.0, x, x * negative_slope, x)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """X where x > 0, else alpha * (e^x - 1)."""
    x = _float_input("elu", input)
    positive = x > 0.0
    negative_part = _where(positive, 0.0, x, x)
    return _where(positive, x, (negative_part.exp() - 1.0) * alpha, x)


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """Scale * elu(x, alpha) with the self-normalising constants."""
    return elu(input, SELU_ALPHA) * SELU_SCALE


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """X * Phi(x) (Phi the standard normal CDF); "tanh" uses PyTorch's tanh approximation."""
    x = _float_input("gelu", input)
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (inner.tanh() + 1.0)
    if approximate != "none":
        raise RuntimeError(
            f"approximate argument must be either none or tanh, got {approximate!r}"
        )
    return x * 0.5 * ((x * (1.0 / math.sqrt(2.0))).erf() + 1.0)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """X * sigmoid(x) (also called swish)."""
    x = _float_input("silu", input)
    return x * x.sigmoid()


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """log(1 + e^(beta x)) / beta, and x itself where beta * x > threshold."""
    x = _float_input("softplus", input)
    if beta == 1.0:
        return _stable_softplus(x, threshold)
    return _stable_softplus(x * beta, threshold) / beta


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """X * tanh(softplus(x))."""
    x = _float_input("mish", input)
    return x * _stable_softplus(x).tanh()


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """log(sigmoid(x)) = -softplus(-x), finite for large negative x."""
    x = _float_input("logsigmoid", input)
    return -_stable_softplus(-x)


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,  # noqa: A002
) -> Tensor:  # fmt: skip
    """X clamped to [min_val, max_val]; the gradient is 0 outside (min_val, max_val)."""
    if min_val > max_val:
        raise ValueError(f"min_val cannot be greater than max_val (got {min_val} > {max_val})")
    x = _float_input("hardtanh", input)
    return _where(x <= min_val, min_val, _where(x >= max_val, max_val, x, x), x)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between."""
    return relu6(_float_input("hardsigmoid", input) + 3.0) * (1.0 / 6.0)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """X * relu6(x + 3) / 6."""
    x = _float_input("hardswish", input)
    return _where(x < -3.0, 0.0, _where(x > 3.0, x, x * (x + 3.0) * (1.0 / 6.0), x), x)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """X / (1 + |x|)."""
    x = _float_input("softsign", input)
    return x / (x.abs() + 1.0)


def _feature_dropout(input: Tensor, p: float, training: bool, batched: bool) -> Tensor:  # noqa: A002
    """Zero whole channels: one keep draw per (sample, channel), or per channel if unbatched.

    The dims after the sample and channel dims share their channel's draw.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    lead = min(2 if batched else 1, input.dim())
    mask_shape = input.shape[:lead] + (1,) * (input.dim() - lead)
    keep = generator().random(mask_shape) >= p
    return input * tensor(keep / (1.0 - p), dtype=input.dtype, backend=input.backend)


def _warn_rank(name: str, input: Tensor, ranks: tuple[int, int]) -> None:  # noqa: A002
    """PyTorch's deprecation warning for an input of a rank the channel dropout is not for."""
    if input.dim() not in ranks:
        warnings.warn(
            f"{name}: Received a {input.dim()}-D input to {name}, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead.",
            UserWarning,
            stacklevel=3,
        )


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,  # noqa: A002
) -> Tensor:  # fmt: skip
    """Zero whole channels of (N, C, L) or (C, L) with probability p; scale the rest."""
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input "
            f"of shape {tuple(input.shape)}"
        )
    return _feature_dropout(input, p, training, batched=input.dim() == 3)


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,  # noqa: A002
) -> Tensor:  # fmt: skip
    """Zero whole channels of (N, C, H, W) with probability p; scale the rest.

    As in PyTorch, a 3-D input is read as (N, C, L) (with a warning), not as (C, H, W).
    """
    _warn_rank("dropout2d", input, (3, 4))
    if input.dim() == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim.",
            UserWarning,
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, batched=True)


def dropout3d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,  # noqa: A002
) -> Tensor:  # fmt: skip
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p."""
    _warn_rank("dropout3d", input, (4, 5))
    return _feature_dropout(input, p, training, batched=input.dim() == 5)
