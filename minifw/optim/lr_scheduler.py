"""Learning-rate schedules, as `torch.optim.lr_scheduler`.

StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR and LambdaLR.

A scheduler owns an optimizer's learning rates: it records each group's "initial_lr"
(`base_lrs`), sets the rate for epoch 0 when it is built, and `step()` (called after
`optimizer.step()`, once per epoch) moves to the next epoch's rate. Each schedule
updates the current rates as PyTorch's `get_lr` does (a step rule, not a closed form),
so a run prints the same rates as PyTorch's. `state_dict()` holds every attribute but
the optimizer; `load_state_dict` puts them back.
"""

from __future__ import annotations

import math
import types
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from minifw.optim.optimizer import Optimizer


class LRScheduler:
    """Base class: epoch counting, base rates, the last rates and state dicts.

    Args:
        optimizer: the optimizer whose groups' "lr" this schedule sets.
        last_epoch: the epoch to resume after (-1: start afresh; else every group must
            hold an "initial_lr", as a loaded optimizer state does).
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                    f"a scheduler with last_epoch = {last_epoch} >= 0"
                )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rate of each group for epoch `last_epoch` (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} must define get_lr")

    def _current(self) -> list[float]:
        """Each group's rate as it is now."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self, epoch: int | None = None) -> None:
        """Move to the next epoch (or to `epoch`) and set every group's rate for it."""
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            rates = self.get_lr()
        else:
            self.last_epoch = epoch
            rates = self._closed_form() if hasattr(self, "_closed_form") else self.get_lr()
        for group, rate in zip(self.optimizer.param_groups, rates, strict=True):
            group["lr"] = rate
        self._last_lr = self._current()

    def get_last_lr(self) -> list[float]:
        """The rates the last `step()` set, one per group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes `state_dict` saved."""
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiply the rates by `gamma` every `step_size` epochs."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates, times gamma at each multiple of step_size."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [rate * self.gamma for rate in self._current()]

    def _closed_form(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rates by `gamma` at each epoch listed in `milestones`."""

    def __init__(
        self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:  # fmt: skip
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates, times gamma (once per repeat) at a milestone."""
        if self.last_epoch not in self.milestones:
            return self._current()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [rate * factor for rate in self._current()]


class ExponentialLR(LRScheduler):
    """Multiply the rates by `gamma` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current rates times gamma (unchanged when the scheduler is built)."""
        if self._is_initial:
            return self._current()
        return [rate * self.gamma for rate in self._current()]

    def _closed_form(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal each rate from its base to `eta_min` along half a cosine over `T_max` epochs.

    lr(t) = eta_min + (base - eta_min) (1 + cos(pi t / T_max)) / 2, computed step by step
    from the current rate as PyTorch does (so a rate changed by hand is followed).
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
        last_epoch: int = -1,
    ) -> None:  # fmt: skip
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The next rate of each group on the cosine."""
        t, period, low = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current()
        if self._step_count == 1 and t > 0:
            return self._closed_form()
        if (t - 1 - period) % (2 * period) == 0:
            rise = (1 - math.cos(math.pi / period)) / 2
            return [
                rate + (base - low) * rise
                for rate, base in zip(self._current(), self.base_lrs, strict=True)
            ]
        ratio = (1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
        return [ratio * (rate - low) + low for rate in self._current()]

    def _closed_form(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class LambdaLR(LRScheduler):
    """Each group's rate is its base rate times `lr_lambda(epoch)` (one function or one each)."""

    def __init__(
        self, optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]], last_epoch: int = -1,
    ) -> None:  # fmt: skip
        groups = len(optimizer.param_groups)
        if isinstance(lr_lambda, list | tuple):
            if len(lr_lambda) != groups:
                raise ValueError(f"Expected {groups} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """Return base * lr_lambda(last_epoch) for each group."""
        return [
            base * factor(self.last_epoch)
            for factor, base in zip(self.lr_lambdas, self.base_lrs, strict=True)
        ]

    def state_dict(self) -> dict[str, Any]:
        """The attributes, with plain functions as None (callable objects keep their state)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes; callable objects get their saved state back."""
        state = dict(state_dict)
        saved = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, fn_state in zip(self.lr_lambdas, saved, strict=True):
            if fn_state is not None:
                fn.__dict__.update(fn_state)


_LRScheduler = LRScheduler  # the name PyTorch kept for old code

__all__ = [
    "CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "MultiStepLR", "StepLR",
]  # fmt: skip
