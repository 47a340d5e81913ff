"""Optimizers as in PyTorch: SGD, Adam, AdamW, RMSprop and Adagrad, and lr schedulers.

One module per optimizer, as `torch.optim`: `optimizer.py` holds the base class
(parameter groups, state, `zero_grad`, state dicts) and the checks every optimizer
shares; `sgd.py`, `adam.py`, `adamw.py`, `rmsprop.py` and `adagrad.py` each hold one
optimizer's math, following PyTorch's formulas exactly, so the same seed gives the same
run. Apart from the math: `_fused.py` runs an update as one kernel on the CPU (an
expert fast path), and `_capture.py` tells `mf.compile` what a step keeps so that a
capture can replay it. `lr_scheduler` loads on first use, as `torch.optim.lr_scheduler`.
"""

from __future__ import annotations

import importlib

from minifw.optim.adagrad import Adagrad
from minifw.optim.adam import Adam
from minifw.optim.adamw import AdamW
from minifw.optim.optimizer import Optimizer
from minifw.optim.rmsprop import RMSprop
from minifw.optim.sgd import SGD


def __getattr__(name: str) -> object:
    """`minifw.optim.lr_scheduler`, loaded on first use (as `torch.optim.lr_scheduler`)."""
    if name == "lr_scheduler":
        return importlib.import_module("minifw.optim.lr_scheduler")
    raise AttributeError(f"module 'minifw.optim' has no attribute {name!r}")


__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
