"""Layers and losses as Modules, initialised as PyTorch initialises them.

Linear and Conv weights use PyTorch's default `kaiming_uniform_(a=sqrt(5))`, which is
uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)); biases use the same bound. Embedding rows
are N(0, 1) and LayerNorm starts at weight 1, bias 0. Every draw comes from
minifw's generator, so `mf.manual_seed` makes a model reproducible.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from minifw.core import dtypes
from minifw.core.autodiff import no_grad
from minifw.core.random import generator
from minifw.nn import activation
from minifw.nn import functional as F  # noqa: N812 - PyTorch's idiom
from minifw.nn.conv import IntOrTuple, _tuple
from minifw.nn.convolution import conv_nd
from minifw.nn.module import Module, Parameter
from minifw.nn.spatial import _AvgPoolNd, _MaxPoolNd
from minifw.tensor.tensor import Tensor, tensor


def _param(values: Any, device: str | None, dtype: Any) -> Parameter:
    """A Parameter holding a new tensor of `values` (default float dtype unless `dtype`)."""
    kind = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    return Parameter(tensor(values, dtype=kind, device=device))


def _uniform(shape: tuple[int, ...], fan_in: int, device: str | None, dtype: Any) -> Parameter:
    """uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default weight and bias init."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return _param(generator().uniform(-bound, bound, size=shape), device, dtype)


def _value(param: Parameter | None) -> Tensor | None:
    """The tensor inside an optional Parameter."""
    return None if param is None else param.value  # type: ignore[no-any-return]


class Linear(Module):
    """y = x @ weight.T + bias, with weight (out_features, in_features)."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True,
        device: str | None = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = _uniform((out_features, in_features), in_features, device, dtype)
        bias_param = _uniform((out_features,), in_features, device, dtype) if bias else None
        self.register_parameter("bias", bias_param)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply the affine map to the last dim."""
        return F.linear(input, self.weight.value, _value(self.bias))

    def extra_repr(self) -> str:
        """Sizes, as PyTorch shows them."""
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class _ConvNd(Module):
    """Shared parts of Conv1d and Conv2d: weight (out, in, *kernel) and bias (out,)."""

    dims = 2

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
        stride: IntOrTuple = 1, padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1,
        groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
        device: str | None = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                f"divisible by groups ({groups})"
            )
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be zeros, reflect, replicate or circular, "
                             f"got {padding_mode!r}")  # fmt: skip
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, self.dims, "kernel_size")
        self.stride = _tuple(stride, self.dims, "stride")
        self.padding: Any = (
            padding if isinstance(padding, str) else _tuple(padding, self.dims, "padding")
        )
        self.dilation = _tuple(dilation, self.dims, "dilation")
        self.groups, self.padding_mode = groups, padding_mode
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = _uniform(shape, fan_in, device, dtype)
        bias_param = _uniform((out_channels,), fan_in, device, dtype) if bias else None
        self.register_parameter("bias", bias_param)

    def extra_repr(self) -> str:
        """Channels, kernel and stride (padding and bias only when not the default)."""
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if isinstance(self.padding, str) or any(self.padding):
            text += f", padding={self.padding}"
        if any(d != 1 for d in self.dilation):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text + ("" if self.bias is not None else ", bias=False")

    def _convolve(self, input: Tensor) -> Tensor:  # noqa: A002
        """The convolution with this layer's settings (padding_mode pads first)."""
        w, b = self.weight.value, _value(self.bias)
        source, padding = input, self.padding
        if self.padding_mode != "zeros" and not isinstance(padding, str):
            pads = [p for p in reversed(padding) for _ in range(2)]
            source, padding = F.pad(input, pads, self.padding_mode), 0
        return conv_nd(self.dims, source, w, b, self.stride, padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) inputs."""

    dims = 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Convolve."""
        return self._convolve(input)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) inputs."""

    dims = 2

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Convolve."""
        return self._convolve(input)


class MaxPool2d(_MaxPoolNd):
    """The max of each kernel_size window of (N, C, H, W) (stride defaults to kernel_size)."""

    dims = 2


class AvgPool2d(_AvgPoolNd):
    """The mean of each kernel_size window of (N, C, H, W) (stride defaults to kernel_size)."""

    dims = 2


class ReLU(Module):
    """max(x, 0). `inplace` is accepted for PyTorch's signature; the result is a new tensor."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        """inplace=True when set, as PyTorch shows it."""
        return "inplace=True" if self.inplace else ""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.relu(input)


class Sigmoid(Module):
    """1 / (1 + e^-x)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.sigmoid(input)


class Tanh(Module):
    """tanh x."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.tanh(input)


def _implicit_dim(dim: int | None, input: Tensor, name: str) -> int:  # noqa: A002
    """`dim`, or PyTorch's deprecated implicit choice (0 for 0-, 1- and 3-D inputs, else 1)."""
    if dim is not None:
        return dim
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to "
        "include dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if input.dim() in (0, 1, 3) else 1


class Softmax(Module):
    """softmax along `dim`."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.softmax(input, _implicit_dim(self.dim, input, "softmax"))

    def extra_repr(self) -> str:
        """The dim."""
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log_softmax along `dim`."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.log_softmax(input, _implicit_dim(self.dim, input, "log_softmax"))


class Dropout(Module):
    """Zero cells with probability p in training mode (scaling the rest); identity in eval.

    `inplace` is accepted for PyTorch's signature; the result is always a new tensor.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply (only while `self.training`)."""
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        """The probability."""
        return f"p={self.p}, inplace={self.inplace}"


class Flatten(Module):
    """Merge dims start_dim..end_dim (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Flatten."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """The dims."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Embedding(Module):
    """A lookup table: row i of weight (num_embeddings, embedding_dim) for index i."""

    def __init__(
        self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
        device: str | None = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            padding_idx = F.checked_padding_idx(padding_idx, num_embeddings)
        self.padding_idx = padding_idx
        rows = generator().standard_normal((num_embeddings, embedding_dim))
        if padding_idx is not None:
            rows[padding_idx] = 0.0
        self.weight = _param(rows, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Look up rows."""
        return F.embedding(input, self.weight.value, self.padding_idx)

    def extra_repr(self) -> str:
        """Sizes, as PyTorch shows them."""
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        return text if self.padding_idx is None else f"{text}, padding_idx={self.padding_idx}"


class LayerNorm(Module):
    """Normalise over the last dims to mean 0, variance 1, then scale and shift."""

    def __init__(
        self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
        elementwise_affine: bool = True, bias: bool = True,
        device: str | None = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        self.normalized_shape = tuple(int(s) for s in shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        weight = _param(np.ones(self.normalized_shape), device, dtype)
        bias_param = _param(np.zeros(self.normalized_shape), device, dtype)
        self.register_parameter("weight", weight if elementwise_affine else None)
        self.register_parameter("bias", bias_param if elementwise_affine and bias else None)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Normalise."""
        w, b = _value(self.weight), _value(self.bias)
        return F.layer_norm(input, self.normalized_shape, w, b, self.eps)

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class _BatchNorm(Module):
    """Normalise each channel over the batch (and spatial) dims; subclasses fix the rank.

    Training mode uses the batch's statistics and, with `track_running_stats`, moves the
    running mean and (unbiased) variance buffers by `momentum` (None: a cumulative
    average over the batches seen); eval mode uses the running ones (the batch's when
    there are none).
    """

    ranks: tuple[int, ...] = (2, 3)

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
        affine: bool = True, track_running_stats: bool = True,
        device: str | None = None, dtype: Any = None, *, bias: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        weight = _param(np.ones(num_features), device, dtype) if affine else None
        shift = _param(np.zeros(num_features), device, dtype) if affine and bias else None
        self.register_parameter("weight", weight)
        self.register_parameter("bias", shift)
        if track_running_stats:
            mean = _param(np.zeros(num_features), device, dtype).value.detach()
            var = _param(np.ones(num_features), device, dtype).value.detach()
            self.register_buffer("running_mean", mean)
            self.register_buffer("running_var", var)
            self.register_buffer("num_batches_tracked", tensor(0, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches tracked."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def _check_input(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() not in self.ranks:
            ranks = " or ".join(f"{r}D" for r in self.ranks)
            raise ValueError(f"expected {ranks} input (got {input.dim()}D input)")
        if input.shape[1] != self.num_features:
            raise ValueError(
                f"{type(self).__name__}({self.num_features}): expected {self.num_features} "
                f"channels (dim 1), got input of shape {tuple(input.shape)}"
            )

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Normalise with batch statistics (training) or running statistics (eval)."""
        self._check_input(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        batch_stats = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input, self.running_mean if track else None, self.running_var if track else None,
            _value(self.weight), _value(self.bias), batch_stats, factor, self.eps,
        )  # fmt: skip

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs, per channel."""

    ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs, per channel."""

    ranks = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs, per channel."""

    ranks = (5,)


class GroupNorm(Module):
    """Normalise each group of channels of each sample, then scale and shift per channel."""

    def __init__(
        self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
        device: str | None = None, dtype: Any = None, *, bias: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        weight = _param(np.ones(num_channels), device, dtype) if affine else None
        shift = _param(np.zeros(num_channels), device, dtype) if affine and bias else None
        self.register_parameter("weight", weight)
        self.register_parameter("bias", shift)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Normalise."""
        w, b = _value(self.weight), _value(self.bias)
        return F.group_norm(input, self.num_groups, w, b, self.eps)

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


# ---- Activation modules, identity, reshaping and channel dropout ---------------


class Identity(Module):
    """Return the input unchanged (any constructor arguments are ignored)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:  # noqa: A002
        """The input itself."""
        return input


class _Activation(Module):
    """An elementwise function of one input, with settings shown by `extra_repr`."""

    _settings: tuple[str, ...] = ()

    def extra_repr(self) -> str:
        """The settings, as PyTorch shows them."""
        return ", ".join(f"{name}={getattr(self, name)!r}" for name in self._settings)


class GELU(_Activation):
    """x * Phi(x); approximate="tanh" uses the tanh approximation."""

    _settings = ("approximate",)

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.gelu(input, self.approximate)


class LeakyReLU(_Activation):
    """x where positive, negative_slope * x elsewhere."""

    _settings = ("negative_slope",)

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.leaky_relu(input, self.negative_slope)


class ELU(_Activation):
    """x where positive, alpha (e^x - 1) elsewhere."""

    _settings = ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.elu(input, self.alpha)


class Softplus(_Activation):
    """log(1 + e^(beta x)) / beta (linear above `threshold`)."""

    _settings = ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.softplus(input, self.beta, self.threshold)


class Hardtanh(_Activation):
    """x clamped to [min_val, max_val]."""

    _settings = ("min_val", "max_val")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"min_val cannot be greater than max_val ({min_val} > {max_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.hardtanh(input, self.min_val, self.max_val)


class _Elementwise(_Activation):
    """A Module applying `function` (`inplace` is accepted and ignored: a new tensor)."""

    function: Any = staticmethod(activation.relu)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return self.function(input)  # type: ignore[no-any-return]


class SiLU(_Elementwise):
    """x * sigmoid(x)."""

    function = staticmethod(activation.silu)


class Mish(_Elementwise):
    """x * tanh(softplus(x))."""

    function = staticmethod(activation.mish)


class SELU(_Elementwise):
    """scale * elu(x, alpha) with the self-normalising constants."""

    function = staticmethod(activation.selu)


class ReLU6(_Elementwise):
    """min(max(x, 0), 6)."""

    function = staticmethod(activation.relu6)


class Hardsigmoid(_Elementwise):
    """relu6(x + 3) / 6."""

    function = staticmethod(activation.hardsigmoid)


class Hardswish(_Elementwise):
    """x * relu6(x + 3) / 6."""

    function = staticmethod(activation.hardswish)


class LogSigmoid(_Elementwise):
    """log(sigmoid(x)), finite for large negative x."""

    function = staticmethod(activation.logsigmoid)


class Softsign(_Elementwise):
    """x / (1 + |x|)."""

    function = staticmethod(activation.softsign)


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size` (the inverse of Flatten)."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Reshape."""
        dim = self.dim % input.dim() if input.dim() else 0
        shape = input.shape[:dim] + self.unflattened_size + input.shape[dim + 1 :]
        return input.reshape(*shape)

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Dropout1d(Dropout):
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability p while training."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply (only while `self.training`)."""
        return F.dropout1d(input, self.p, self.training)


class Dropout2d(Dropout):
    """Zero whole channels of (N, C, H, W) or (C, H, W) inputs with probability p."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply (only while `self.training`)."""
        return F.dropout2d(input, self.p, self.training)


class Dropout3d(Dropout):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability p."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply (only while `self.training`)."""
        return F.dropout3d(input, self.p, self.training)


class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along `dim`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The similarity."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
