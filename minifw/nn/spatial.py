"""Layers that pool, pad and resize: thin Modules over pooling.py, padding.py and resize.py."""

from __future__ import annotations

from typing import Any

from minifw.nn import pooling
from minifw.nn.module import Module
from minifw.nn.padding import pad
from minifw.nn.resize import interpolate
from minifw.tensor.tensor import Tensor


def _one(value: Any) -> tuple[int, ...]:
    return (value,) if isinstance(value, int) else tuple(value)


class _MaxPoolNd(Module):
    """Max pooling with PyTorch's arguments; `dims` spatial dims."""

    dims = 1

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
        return_indices: bool = False, ceil_mode: bool = False,
    ) -> None:  # fmt: skip
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Pool."""
        return pooling.max_pool(
            self.dims, input, self.kernel_size, self.stride, self.padding, self.dilation,
            self.ceil_mode, self.return_indices,
        )  # fmt: skip

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """The max of each window of (N, C, L) inputs."""


class _AvgPoolNd(Module):
    """Average pooling with PyTorch's arguments; `dims` spatial dims."""

    dims = 1

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
        count_include_pad: bool = True, divisor_override: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        if self.dims == 1:  # PyTorch keeps 1-D average pooling's settings as 1-tuples
            kernel_size, padding = _one(kernel_size), _one(padding)
            stride = None if stride is None else _one(stride)
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Pool."""
        return pooling.avg_pool(
            self.dims, input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip

    def extra_repr(self) -> str:
        """Settings, as PyTorch shows them."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """The mean of each window of (N, C, L) inputs."""


class _AdaptivePool(Module):
    """Pooling to a fixed output size; `kind` is "avg" or "max"."""

    dims, kind = 2, "avg"

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Pool."""
        if self.kind == "avg":
            return pooling.adaptive_avg_pool(self.dims, input, self.output_size)
        return pooling.adaptive_max_pool(self.dims, input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        """The output size."""
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average pooling of (N, C, L) to a fixed length."""

    dims = 1


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average pooling of (N, C, H, W) to a fixed (H', W')."""


class AdaptiveMaxPool1d(_AdaptivePool):
    """Max pooling of (N, C, L) to a fixed length."""

    dims, kind = 1, "max"


class AdaptiveMaxPool2d(_AdaptivePool):
    """Max pooling of (N, C, H, W) to a fixed (H', W')."""

    kind = "max"


class _Pad(Module):
    """Padding of the last `dims` dims in `mode` (the padding as an int or 2*dims ints)."""

    dims, mode = 1, "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        sides = 2 * self.dims
        self.padding = (padding,) * sides if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != sides:
            raise ValueError(f"padding must be an int or {sides} ints, got {padding!r}")
        self.value = value

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Pad."""
        value = self.value if self.mode == "constant" else None
        return pad(input, self.padding, self.mode, value)

    def extra_repr(self) -> str:
        """The padding (and the value of constant padding)."""
        if self.mode == "constant" and type(self) not in (ZeroPad1d, ZeroPad2d):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


class ConstantPad1d(_Pad):
    """Pad the last dim with a constant."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    """Pad the last two dims with a constant."""

    dims = 2


class ZeroPad1d(_Pad):
    """Pad the last dim with zeros."""


class ZeroPad2d(_Pad):
    """Pad the last two dims with zeros."""

    dims = 2


class ReflectionPad1d(_Pad):
    """Pad the last dim with its mirror image."""

    mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pad the last two dims with their mirror images."""

    dims = 2


class ReplicationPad1d(_Pad):
    """Pad the last dim by repeating its edge cells."""

    mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pad the last two dims by repeating their edge cells."""

    dims = 2


class CircularPad1d(_Pad):
    """Pad the last dim with the cells from its other end."""

    mode = "circular"


class CircularPad2d(CircularPad1d):
    """Pad the last two dims with the cells from their other ends."""

    dims = 2


class Upsample(Module):
    """Resize the spatial dims (nearest or linear modes), as `F.interpolate`."""

    def __init__(
        self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
        align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Resize."""
        return interpolate(
            input, self.size, self.scale_factor, self.mode, self.align_corners,
            self.recompute_scale_factor,
        )  # fmt: skip

    def extra_repr(self) -> str:
        """The target size or factor and the mode."""
        factor = self.scale_factor
        factor = float(factor) if isinstance(factor, int | float) else factor
        target = f"size={self.size}" if self.size is not None else f"scale_factor={factor}"
        return f"{target}, mode='{self.mode}'"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) with aligned corners (as PyTorch's)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


LAYERS = (
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AvgPool1d", "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d",
    "MaxPool1d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d",
)  # fmt: skip
__all__ = list(LAYERS)
