"""`mf.device` and `mf.Size`: the objects PyTorch programs touch before any math.

A device names where a tensor's storage lives (`device(type='cpu')`,
`device(type='cuda', index=0)`); a Size is the tuple that `t.shape` and `t.size()`
return, printed as `minifw.Size([2, 3])`. Both behave as PyTorch's do: a device equals
only another device of the same type and index (never a string), and is hashable.
"""

from __future__ import annotations

import operator
from typing import Any

DEVICE_TYPES = ("cpu", "cuda")


class device:  # noqa: N801 - PyTorch's name
    """Where a tensor lives: `device("cpu")`, `device("cuda:0")` or `device("cuda", 0)`."""

    __slots__ = ("_type", "_index")
    _type: str
    _index: int | None

    def __init__(self, type: Any, index: Any = None) -> None:  # noqa: A002 - PyTorch's name
        """Parse a device string ("cpu", "cuda", "cuda:1"), or copy another device."""
        if isinstance(type, device):
            self._type, self._index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(
                f"device() expects a device string such as 'cpu' or 'cuda:0' or a device, "
                f"got {_kind(type)}"
            )
        kind, parsed = _parse(type)
        if index is not None:
            if parsed is not None:
                raise RuntimeError(
                    f"type (string) must not include an index because index was passed "
                    f"explicitly: {type}"
                )
            parsed = _check_index(index)
        self._type, self._index = kind, parsed

    @property
    def type(self) -> str:
        """The device type: "cpu" or "cuda"."""
        return self._type

    @property
    def index(self) -> int | None:
        """The device index (None when not given)."""
        return self._index

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, device):
            return False  # as PyTorch: torch.device("cpu") == "cpu" is False
        return self._type == other._type and self._index == other._index

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._type, self._index))

    def __reduce__(self) -> tuple[Any, ...]:
        return (device, (str(self),))


Device = device  # the class under a name that annotations inside Tensor can use


def _kind(value: Any) -> str:
    return type(value).__name__


def _parse(text: str) -> tuple[str, int | None]:
    """("cuda", 1) for "cuda:1", ("cpu", None) for "cpu"; PyTorch's errors otherwise."""
    kind, colon, number = text.partition(":")
    if kind not in DEVICE_TYPES:
        raise RuntimeError(
            f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device "
            f"string: {text}"
        )
    if not colon:
        return kind, None
    if not number.isdigit() or (len(number) > 1 and number[0] == "0"):
        raise RuntimeError(f"Invalid device string: '{text}'")
    return kind, int(number)


def _check_index(index: Any) -> int:
    if isinstance(index, bool) or not hasattr(index, "__index__"):
        raise TypeError(f"device(): argument 'index' must be int, not {_kind(index)}")
    value = operator.index(index)
    if value < 0:
        raise RuntimeError(f"Device index must not be negative (got {value})")
    return value


def as_device(value: Any) -> device:
    """`value` (a device, a device string or a GPU index) as a device."""
    if isinstance(value, device):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return device("cuda", value)
    return device(value)


def device_type(value: Any) -> str | None:
    """The type ("cpu"/"cuda") of a device or device string; None for None."""
    if value is None:
        return None
    if isinstance(value, str):
        return _parse(value)[0]
    return as_device(value).type


def is_device_like(value: Any) -> bool:
    """True for a device object or a string naming a device ("cpu", "cuda:0")."""
    if isinstance(value, device):
        return True
    return isinstance(value, str) and value.partition(":")[0] in DEVICE_TYPES


# The device object of each backend device name, made once (t.device is read often).
DEVICES = {"cpu": device("cpu"), "cuda": device("cuda", 0)}
