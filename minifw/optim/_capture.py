"""What an optimizer tells `mf.compile`'s capture, and step counts a replay can follow.

Under `mf.compile` a step is captured and replayed when the state it keeps can be
updated in place: plain SGD (no state) and Adam/AdamW, whose moments are written in
place and whose step count is a 0-dim float64 tensor on the parameter's device, from
which the bias corrections are computed with tensor ops while a capture records them
(eager on the CPU, the count is read and written on the host and the corrections are
Python numbers, with the same values). Their state is made before the first update,
so the capture reads it as state kept across calls (`hooks.state`). SGD with momentum,
RMSprop and Adagrad rebind their state at every step: a capture of them runs eagerly.
`state_dict()` saves step counts as ints in every case.

All of this reaches the capture through the hooks registry (`minifw.core.hooks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from minifw.core import hooks
from minifw.core.hooks import anyone_listening
from minifw.tensor.kernel_api import bump_version, cells
from minifw.tensor.tensor import Tensor

if TYPE_CHECKING:
    from minifw.optim.optimizer import Optimizer


def note_step(optimizer: Optimizer) -> None:
    """Under `mf.compile`: refuse a step that rebinds state; else report state and guards.

    A replay repeats the captured kernels, writing into the storages they wrote, so
    state rebound at every step (momentum buffers, RMSprop's averages) cannot replay.
    State updated in place (Adam's moments and step count) can: it is reported as kept
    across calls, and the replay looks it up again at every call. Either way the groups
    must hold the same parameters, hyperparameters and state tensors (a new lr or a
    `load_state_dict` captures again).
    """
    if any(optimizer._stateful(group) for group in optimizer.param_groups):
        hooks.unreplayable(
            f"{type(optimizer).__name__}.step keeps per-parameter state (momentum buffers, "
            "moments, step counts) that it replaces at every step, so a replay cannot "
            "update it"
        )
        return
    kept = [v for s in optimizer.state.values() for v in s.values() if isinstance(v, Tensor)]
    if kept:
        hooks.state(kept)
    hooks.guard(lambda: settings(optimizer))


def settings(optimizer: Optimizer) -> list[Any]:
    """Each group's parameters (by identity) and hyperparameters, and the state tensors."""
    groups: list[Any] = [
        ([id(p) for p in group["params"]], {k: v for k, v in group.items() if k != "params"})
        for group in optimizer.param_groups
    ]
    state = optimizer.state.values()
    kept = [id(v) for s in state for v in s.values() if isinstance(v, Tensor)]
    return [*groups, kept]


def new_step_count(param: Tensor) -> Tensor:
    """A step count of 0 kept on the device: a 0-dim float64 tensor on param's device."""
    backend = param.backend
    return Tensor(backend.full((), 0.0, np.float64), backend)


def advance(step: Tensor) -> float | None:
    """Add one to a step count kept on the device; return the new count when eager on the CPU.

    Eager on the CPU the cell is read and written on the host (no launch). Under a
    capture (or on a GPU) it is one launch, `step += 1`, and None is returned: the
    caller then computes what depends on the count with tensor ops, which a replay
    repeats on the count it finds.
    """
    if step.backend.device != "cpu" or (anyone_listening[0] and hooks.recording()):
        step.add_(1.0)
        return None
    data = cells(step)
    host = step.backend.ops.to_numpy(data.base)  # the storage itself on the CPU
    host[data.offset] += 1.0
    bump_version(step)
    return float(host[data.offset])


__all__ = ["advance", "new_step_count", "note_step", "settings"]
