"""The random generators behind rand, randn, dropout, samplers and DataLoader shuffling.

`Generator` is PyTorch's seedable generator object: random functions take one through
`generator=` and draw from it instead of the default generator, so a seeded Generator
gives the same numbers whatever the global seed is. `mf.manual_seed` reseeds the
default generator (`default_generator`). Each Generator wraps a numpy `PCG64`
generator: the numbers are minifw's own, not PyTorch's bit stream.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from minifw.core.device import device as as_device

# A new Generator starts from PyTorch's default seed, as torch.Generator() does.
DEFAULT_SEED = 67280421310721
_UINT64 = 1 << 64
# get_state's layout, in bytes: the seed, PCG64's 128-bit state and increment, whether a
# spare 32-bit half is kept, and that half.
_STATE_FIELDS = (("seed", 8), ("state", 16), ("inc", 16), ("has_uint32", 1), ("uinteger", 4))
STATE_BYTES = sum(size for _, size in _STATE_FIELDS)


def _as_seed(seed: Any) -> int:
    """`seed` as PyTorch stores it: an int in [0, 2**64), negative ones wrapped around."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    value = int(seed)
    if not -(1 << 63) <= value < _UINT64:
        raise ValueError(
            f"Overflow when unpacking long long: seed {value} is not in [-2**63, 2**64)"
        )
    return value % _UINT64


class Generator:
    """A seedable random generator (`torch.Generator`); only the CPU device is supported.

    Args:
        device: where its numbers are drawn; minifw draws every random number on the host.
    """

    def __init__(self, device: Any = "cpu") -> None:
        self.device = as_device(device)
        if self.device.type != "cpu":
            raise RuntimeError(
                f"minifw.Generator draws on the host only: device {self.device} is not "
                "supported (use device='cpu' and move the tensor with .to())"
            )
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Restart from `seed` (an int; negative ones wrap modulo 2**64); returns self."""
        self._seed = _as_seed(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        fresh = secrets.randbits(63)
        self.manual_seed(fresh)
        return fresh

    def initial_seed(self) -> int:
        """The seed this generator last started from."""
        return self._seed

    def get_state(self) -> np.ndarray:
        """The whole state as a uint8 array (PyTorch returns a ByteTensor); see set_state."""
        raw = self._rng.bit_generator.state
        values = {"seed": self._seed, **raw["state"], "has_uint32": raw["has_uint32"],
                  "uinteger": raw["uinteger"]}  # fmt: skip
        packed = b"".join(int(values[k]).to_bytes(size, "little") for k, size in _STATE_FIELDS)
        return np.frombuffer(packed, dtype=np.uint8).copy()

    def set_state(self, new_state: Any) -> Generator:
        """Continue from a state `get_state` returned (an array or tensor of its bytes)."""
        if hasattr(new_state, "numpy") and not isinstance(new_state, np.ndarray):
            new_state = new_state.numpy()
        if not isinstance(new_state, np.ndarray):
            raise TypeError(
                f"expected a generator state from get_state(), but got {type(new_state).__name__}"
            )
        data = new_state.astype(np.uint8).tobytes()
        if new_state.ndim != 1 or len(data) != STATE_BYTES:
            raise RuntimeError(
                f"Invalid generator state: expected {STATE_BYTES} bytes from get_state(), "
                f"got shape {tuple(new_state.shape)}"
            )
        values, start = {}, 0
        for name, size in _STATE_FIELDS:
            values[name] = int.from_bytes(data[start : start + size], "little")
            start += size
        self.manual_seed(values["seed"])
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": values["state"], "inc": values["inc"]},
            "has_uint32": values["has_uint32"],
            "uinteger": values["uinteger"],
        }
        return self

    def __repr__(self) -> str:
        return f"<minifw.Generator object at {id(self):#x}>"


def _fresh_default() -> Generator:
    made = Generator()
    made.seed()
    return made


# The generator every random function draws from unless given `generator=`.
default_generator = _fresh_default()


def manual_seed(seed: int) -> Generator:
    """Make every later random draw of minifw reproducible from `seed`; the default generator."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Reseed the default generator from the operating system's entropy; the new seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator last started from (`mf.manual_seed` or a random one)."""
    return default_generator.initial_seed()


def generator(chosen: Generator | None = None) -> np.random.Generator:
    """The numpy generator to draw from: `chosen`'s, or the default generator's.

    Raises:
        TypeError: `chosen` is neither None nor a minifw.Generator.
    """
    if chosen is None:
        return default_generator._rng
    if not isinstance(chosen, Generator):
        raise TypeError(
            f"generator must be a minifw.Generator (or None for the default one), "
            f"got {type(chosen).__name__}"
        )
    return chosen._rng
