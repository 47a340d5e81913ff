"""The random generator behind rand, randn, dropout and DataLoader shuffling."""

from __future__ import annotations

import numpy as np

_generator = [np.random.default_rng()]


def manual_seed(seed: int) -> None:
    """Make every later random draw of minifw reproducible from `seed`."""
    _generator[0] = np.random.default_rng(int(seed))


def generator() -> np.random.Generator:
    """The generator minifw draws from (reseeded by `manual_seed`)."""
    return _generator[0]
