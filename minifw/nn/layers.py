"""Layers and losses as Modules, initialised as PyTorch initialises them.

Linear and Conv weights use PyTorch's default `kaiming_uniform_(a=sqrt(5))`, which is
uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)); biases use the same bound. Embedding rows
are N(0, 1) and LayerNorm starts at weight 1, bias 0. Every draw comes from
minifw's generator, so `mf.manual_seed` makes a model reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from minifw.core import dtypes
from minifw.core.autodiff import no_grad
from minifw.core.random import generator
from minifw.nn import functional as F  # noqa: N812 - PyTorch's idiom
from minifw.nn.conv import IntOrTuple, _tuple
from minifw.nn.module import Module, Parameter
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
        stride: IntOrTuple = 1, padding: IntOrTuple = 0, bias: bool = True,
        device: str | None = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, self.dims, "kernel_size")
        self.stride = _tuple(stride, self.dims, "stride")
        self.padding = _tuple(padding, self.dims, "padding")
        fan_in = in_channels * math.prod(self.kernel_size)
        shape = (out_channels, in_channels, *self.kernel_size)
        self.weight = _uniform(shape, fan_in, device, dtype)
        bias_param = _uniform((out_channels,), fan_in, device, dtype) if bias else None
        self.register_parameter("bias", bias_param)

    def extra_repr(self) -> str:
        """Channels, kernel and stride (padding and bias only when not the default)."""
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if any(self.padding):
            text += f", padding={self.padding}"
        return text + ("" if self.bias is not None else ", bias=False")


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) inputs."""

    dims = 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Convolve."""
        w, b = self.weight.value, _value(self.bias)
        return F.conv1d(input, w, b, self.stride, self.padding)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) inputs."""

    dims = 2

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Convolve."""
        w, b = self.weight.value, _value(self.bias)
        return F.conv2d(input, w, b, self.stride, self.padding)


class MaxPool2d(Module):
    """The max of each kernel_size window (stride defaults to kernel_size)."""

    def __init__(
        self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Pool."""
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            "dilation=1, ceil_mode=False"
        )


class AvgPool2d(MaxPool2d):
    """The mean of each kernel_size window (stride defaults to kernel_size)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Pool."""
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class ReLU(Module):
    """max(x, 0)."""

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


class Softmax(Module):
    """softmax along `dim`."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        """The dim."""
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log_softmax along `dim`."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply."""
        return F.log_softmax(input, self.dim)


class Dropout(Module):
    """Zero cells with probability p in training mode (scaling the rest); identity in eval."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Apply (only while `self.training`)."""
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        """The probability."""
        return f"p={self.p}, inplace=False"


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


class BatchNorm1d(Module):
    """Normalise each channel of (N, C) or (N, C, L) over the batch (and length) dims.

    Training mode uses the batch's statistics and updates the running mean and
    (unbiased) variance buffers with `momentum`; eval mode uses the running ones.
    """

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
        device: str | None = None, dtype: Any = None, *, bias: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        self.num_features, self.eps, self.momentum, self.affine = (
            num_features, eps, momentum, affine
        )  # fmt: skip
        weight = _param(np.ones(num_features), device, dtype) if affine else None
        shift = _param(np.zeros(num_features), device, dtype) if affine and bias else None
        self.register_parameter("weight", weight)
        self.register_parameter("bias", shift)
        self.register_buffer("running_mean", _param(np.zeros(num_features), device, dtype).value)
        self.register_buffer("running_var", _param(np.ones(num_features), device, dtype).value)
        self.register_buffer("num_batches_tracked", tensor(0, device=device))
        for name in ("running_mean", "running_var"):
            self._buffers[name].requires_grad_(False)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Normalise with batch statistics (training) or running statistics (eval)."""
        if input.dim() not in (2, 3) or input.shape[1] != self.num_features:
            raise ValueError(
                f"BatchNorm1d({self.num_features}): expected input (N, {self.num_features}) or "
                f"(N, {self.num_features}, L), got {input.shape}"
            )
        dims = (0,) if input.dim() == 2 else (0, 2)
        shape = (1, self.num_features) + (1,) * (input.dim() - 2)
        if self.training:
            count = input.numel() // self.num_features
            if count < 2:
                raise ValueError(
                    "Expected more than 1 value per channel when training, got input "
                    f"{input.shape}"
                )
            mean = input.mean(dims, keepdim=True)
            var = ((input - mean) * (input - mean)).mean(dims, keepdim=True)
            with no_grad():
                m = self.momentum
                unbiased = var.detach().view(-1) * (count / (count - 1))
                self.running_mean.copy_(self.running_mean * (1 - m) + mean.detach().view(-1) * m)
                self.running_var.copy_(self.running_var * (1 - m) + unbiased * m)
                self.num_batches_tracked.add_(1)
        else:
            mean = self.running_mean.view(*shape)
            var = self.running_var.view(*shape)
        out = (input - mean) / (var + self.eps).sqrt()
        if self.weight is not None:
            out = out * self.weight.value.view(*shape)
        if self.bias is not None:
            out = out + self.bias.value.view(*shape)
        return out

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, track_running_stats=True"
        )
