"""One training step, profiled and timed eager vs compiled (for the app's Profiler page).

`make_step` builds a model, a batch and an optimizer and returns a function that
runs one step (zero_grad, forward, loss, backward, optimizer step), with the
forward + loss either eager or wrapped in `mf.compile`. `profile_step` runs one
step under `minifw.profiler.profile()`; `best_time` times steps.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from minifw.compiler.compile import CompileWarning
from minifw.compiler.compile import compile as mf_compile
from minifw.tools import profiler
from project.points import bce_with_logits, points_mlp
from project.training import build_model, cross_entropy, make_optimizer, to_tensor

MODELS = ("points MLP", "digits conv net")
# The course module whose code each model's step runs (the conv net needs module 4).
MODEL_MODULE = {"points MLP": 2, "digits conv net": 4}


class TrainingStep:
    """One training step, callable again and again; `explain()` shows what was compiled.

    Attributes:
        compiled: the `mf.compile`d forward + loss, or None for an eager step.
    """

    def __init__(self, run: Callable[[], float], compiled: Any | None) -> None:
        self._run = run
        self.compiled = compiled
        self.reasons: list[str] = []

    def __call__(self) -> float:
        """Run one step; returns the loss (a capture's fallback reason is kept)."""
        if self.compiled is None or self.compiled.stats["captures"]:
            return self._run()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CompileWarning)
            loss = self._run()
        self.reasons += [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
        return loss

    @property
    def fallback(self) -> str | None:
        """Why `mf.compile` ran this step eagerly, or None when it was compiled (or eager).

        The fact comes from the compiled function's `stats["fallbacks"]`; the reason
        from the warning its capture gave.
        """
        if self.compiled is None or not self.compiled.stats["fallbacks"]:
            return None
        reason = " ".join(self.reasons) or "mf.compile could not capture the step"
        return reason.removeprefix("mf.compile: ")

    def explain(self) -> str:
        """The kernels `mf.compile` captured and fused (or a note for an eager step)."""
        if self.compiled is None:
            return "eager: every op launches its own kernel"
        return f"{self.compiled.explain()}\n{self.compiled.stats}"


def make_step(model: str, backend: str, batch: int, hidden: int, compiled: bool) -> TrainingStep:
    """One training step of `model` on a fixed random batch (forward eager or compiled)."""
    rng = np.random.default_rng(0)
    inputs: np.ndarray
    targets: np.ndarray
    loss_fn: Callable[[Any, Any], Any]
    if model == "points MLP":
        net = build_model(lambda: points_mlp(hidden), backend, seed=0)
        inputs = rng.uniform(-1.0, 1.0, size=(batch, 2))
        targets = rng.integers(0, 2, size=(batch, 1)).astype(np.float64)
        loss_fn = bce_with_logits
    elif model == "digits conv net":
        from project.digits import DigitsNet  # module 4 code: imported only when asked for

        net = build_model(lambda: DigitsNet(8), backend, seed=0)
        inputs = rng.uniform(0.0, 1.0, size=(batch, 1, 8, 8))
        targets = rng.integers(0, 10, size=batch)
        loss_fn = cross_entropy
    else:
        raise ValueError(f"unknown model {model!r}: expected one of {', '.join(MODELS)}")
    x, y = to_tensor(inputs, backend), to_tensor(targets, backend)
    optimizer = make_optimizer("sgd", net, 0.01)

    def loss_of(xb: Any, yb: Any) -> Any:
        return loss_fn(net(xb), yb)

    forward = mf_compile(loss_of) if compiled else loss_of

    def step() -> float:
        optimizer.zero_grad()
        loss = forward(x, y)
        loss.backward()
        optimizer.step()
        return float(loss.item())

    return TrainingStep(step, forward if compiled else None)


def profile_step(step: Callable[[], float], warmup: int = 3) -> profiler.profile:
    """Run `step` `warmup` times (compiles, captures), then once under the profiler."""
    for _ in range(warmup):
        step()
    with profiler.profile() as prof:
        step()
    return prof


def best_time(step: Callable[[], float], repeat: int = 5) -> float:
    """The fastest of `repeat` timed steps, in seconds (after one warm-up step)."""
    step()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    return best


def ops_frame(prof: profiler.profile) -> pd.DataFrame:
    """Per-op totals of a profile: calls, kernel and Python time (ms), FLOPs, bytes."""
    rows = sorted(prof.key_averages(), key=lambda s: -(s.kernel_us + s.python_us))
    return pd.DataFrame(
        {
            "op": [" ".join(s.key) for s in rows],
            "calls": [s.calls for s in rows],
            "kernel ms": [s.kernel_us / 1e3 for s in rows],
            "python ms": [s.python_us / 1e3 for s in rows],
            "MFLOP": [s.flops / 1e6 for s in rows],
            "KB moved": [(s.bytes_read + s.bytes_written) / 1e3 for s in rows],
        }
    )
