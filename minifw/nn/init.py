"""`minifw.nn.init`: fill a tensor in place with values drawn as `torch.nn.init` draws them.

Every function writes into the tensor without recording a gradient (as under
`no_grad`) and returns the same tensor, so `init.xavier_uniform_(layer.weight)` works on
a parameter. The values are drawn on the host from minifw's generator (so
`mf.manual_seed` makes them reproducible) and copied in once; the scales (fan in, fan
out, gains) follow PyTorch's definitions, though the draws themselves differ.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from minifw.core import unsupported
from minifw.core.autodiff import no_grad
from minifw.core.random import generator
from minifw.tensor.tensor import Tensor, tensor

_LINEAR = (
    "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "sigmoid",
)  # fmt: skip


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale of the weights before `nonlinearity` (PyTorch's table)."""
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = _negative_slope(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _negative_slope(param: float | None) -> float:
    """leaky_relu's slope: 0.01 when not given; a bool or non-number is refused."""
    if param is None:
        return 0.01
    if isinstance(param, bool) or not isinstance(param, int | float):
        raise ValueError(f"negative_slope {param} not a valid number")
    return float(param)


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out): size(1) and size(0), each times the receptive field (dims 2...)."""
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(got shape {tuple(tensor.shape)})"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    """The fan `mode` ("fan_in" or "fan_out") names."""
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill(target: Tensor, values: Any) -> Tensor:
    """Copy `values` (host numbers of target's shape) into `target` in place; return it."""
    with no_grad():
        source = tensor(np.asarray(values), dtype=target.dtype, backend=target.backend)
        target.copy_(source)
    return target


def _host_rng(gen: Any) -> np.random.Generator:
    """The numpy generator to draw from: `gen` if one is given, else minifw's."""
    return gen if isinstance(gen, np.random.Generator) else generator(gen)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with draws from U(a, b)."""
    return _fill(tensor, _host_rng(generator).uniform(a, b, size=tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with draws from N(mean, std^2)."""
    return _fill(tensor, _host_rng(generator).normal(mean, std, size=tensor.shape))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
    generator: Any = None,
) -> Tensor:  # fmt: skip
    """Fill with draws from N(mean, std^2) kept inside [a, b] (out-of-range draws redrawn)."""
    if not a < b:
        raise ValueError(f"trunc_normal_: expected a < b, got a={a}, b={b}")
    rng = _host_rng(generator)
    values = rng.normal(mean, std, size=tensor.shape)
    outside = (values < a) | (values > b)
    while outside.any():
        values[outside] = rng.normal(mean, std, size=int(outside.sum()))
        outside = (values < a) | (values > b)
    return _fill(tensor, values)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    return _fill(tensor, np.full(tensor.shape, val))


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal, zeros elsewhere)."""
    if tensor.dim() != 2:
        raise ValueError(
            f"Only tensors with 2 dimensions are supported (got shape {tuple(tensor.shape)})"
        )
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight so the convolution passes its input through."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    values = np.zeros(tensor.shape)
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d, *centre)] = 1.0
    return _fill(tensor, values)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    """Gain / sqrt(fan), or None (with PyTorch's warning) for a tensor with no cells."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:  # fmt: skip
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al.); `a` is leaky_relu's slope."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:  # fmt: skip
    """N(0, std^2) with std = gain / sqrt(fan) (He et al.); `a` is leaky_relu's slope."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix times `gain`, from the QR factors of a normal draw.

    Dims after the first are flattened: rows = shape[0], columns = the rest.
    """
    if tensor.dim() < 2:
        raise ValueError(
            "Only tensors with 2 or more dimensions are supported (got shape "
            f"{tuple(tensor.shape)})"
        )
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _host_rng(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * gain).reshape(tensor.shape))


__all__ = [
    "calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_",
    "normal_", "ones_", "orthogonal_", "trunc_normal_", "uniform_",
    "xavier_normal_", "xavier_uniform_", "zeros_",
]  # fmt: skip

__getattr__ = unsupported.module_getattr("torch.nn.init", "minifw.nn.init")
