"""The Optimizer base class: parameter groups, per-parameter state, zero_grad, state dicts.

An optimizer holds `param_groups`, a list of dicts each with "params" and its own
hyperparameters ("lr", ...), and a per-parameter `state` (momentum buffers, Adam's
moments). `step()` updates the parameters in place under `no_grad`; each subclass
(sgd.py, adam.py, ...) writes the update of one parameter, `_update`. `state_dict()`
names parameters by their position (0, 1, ...) across groups, like PyTorch, and
`load_state_dict` puts the state back so training resumes where it stopped.

Parameters may be `nn.Parameter`s (the optimizer reads `.value` at each step, so it
follows `module.to(...)`) or plain tensors that require grad.

Also here: the checks and small formulas every optimizer shares (`check_lr`,
`check_range`, `ascent`, `decayed`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

from minifw.core import hooks
from minifw.core.autodiff import no_grad
from minifw.core.hooks import anyone_listening
from minifw.nn.module import Parameter
from minifw.optim import _capture
from minifw.tensor.tensor import Tensor

ParamLike = Parameter | Tensor


def param_tensor(param: ParamLike) -> Tensor:
    """The tensor a Parameter wraps, or the tensor itself."""
    return param.value if isinstance(param, Parameter) else param  # type: ignore[no-any-return]


def check_lr(lr: Any) -> None:
    """PyTorch's ValueError unless the learning rate is a finite number >= 0.

    PyTorch lets `inf` through (and `nan` through SGD); every step then makes the
    parameters nan, so minifw refuses them all.
    """
    if not 0.0 <= lr < math.inf:
        raise ValueError(f"Invalid learning rate: {lr}")


def check_range(name: str, value: float, low: float = 0.0) -> None:
    """PyTorch's ValueError unless low <= value (nan fails too)."""
    if not low <= value:
        raise ValueError(f"Invalid {name} value: {value}")


def ascent(grad: Tensor, group: dict[str, Any]) -> Tensor:
    """The gradient to descend: negated when the group maximizes its objective."""
    return -grad if group.get("maximize") else grad


def decayed(grad: Tensor, param: Tensor, group: dict[str, Any]) -> Tensor:
    """Return grad + weight_decay * param (the L2 penalty of SGD, Adam, RMSprop and Adagrad)."""
    return grad + param * group["weight_decay"] if group["weight_decay"] else grad


def _typename(value: Any) -> str:
    """How PyTorch names the type of a wrong `params` argument (`torch.FloatTensor`)."""
    return value.type() if isinstance(value, Tensor) else type(value).__name__  # type: ignore[no-any-return]


class Optimizer:
    """Base class: parameter groups, per-parameter state, zero_grad and state dicts.

    Args:
        params: an iterable of parameters (or tensors), or of dicts with "params" and
            overrides of `defaults`.
        defaults: the hyperparameters every group gets unless it sets its own.
    """

    # The per-parameter state a subclass keeps: tensors of the parameter's shape (those in
    # _state_optional may be None), and step counts.
    _state_tensors: tuple[str, ...] = ()
    _state_optional: tuple[str, ...] = ()
    _state_counts: tuple[str, ...] = ()

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        if isinstance(params, Parameter | Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {_typename(params)}"
            )
        self.defaults = dict(defaults)
        self.state: dict[ParamLike, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (others from defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param group must be a dict, got {type(param_group).__name__}")
        given = param_group["params"]
        params = [given] if isinstance(given, Parameter | Tensor) else list(given)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        for i, p in enumerate(params):
            if not isinstance(p, Parameter | Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors or Parameters, but param {i} of the "
                    f"group is a {type(p).__name__}"
                )
            t = param_tensor(p)
            if not t.is_leaf:
                raise ValueError(
                    f"can't optimize a non-leaf Tensor (param {i}, shape {tuple(t.shape)})"
                )
            if id(p) in seen:
                raise ValueError("some parameters appear in more than one parameter group")
            seen.add(id(p))
        group = {**self.defaults, **param_group, "params": params}
        if "lr" in group:
            check_lr(group["lr"])
        for key, value in group.items():
            if key != "params" and isinstance(value, float) and value < 0:
                raise ValueError(f"Invalid {key} value: {value}")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (set it to None, or fill it with zeros)."""
        tensors = [param_tensor(p) for group in self.param_groups for p in group["params"]]
        if set_to_none and anyone_listening[0]:  # mf.compile's capture needs to know
            hooks.grads_cleared(tensors)
        for t in tensors:
            if set_to_none:
                t.grad = None
            elif t.grad is not None:
                with no_grad():
                    t.grad.zero_()

    def step(self) -> None:
        """Update every parameter that has a gradient, in place."""
        with no_grad():
            todo = [
                (t, t.grad, group, self.state.setdefault(p, {}))
                for group in self.param_groups
                for p in group["params"]
                if (t := param_tensor(p)).grad is not None
            ]
            for t, _, group, state in todo:
                if not state:
                    self._init_state(t, group, state)
            if anyone_listening[0]:  # tell mf.compile's capture, if any, what it must know
                _capture.note_step(self)
            for t, grad, group, state in todo:
                self._update(t, grad, group, state)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        """Make the state of `param` before its first update (state kept in place only)."""

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define _update")

    def _stateful(self, group: dict[str, Any]) -> bool:
        """True if a step of this group rebinds per-parameter state (new tensors each step)."""
        return True

    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]}.

        Tensors in the state are copies, so later steps never change a saved dict.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {
            index[id(p)]: {k: self._saved(k, v) for k, v in s.items()}
            for p, s in self.state.items()
            if s
        }
        return {"state": state, "param_groups": groups}

    def _saved(self, name: str, value: Any) -> Any:
        """A state value as `state_dict` gives it: a copy of a tensor, a step count as an int."""
        if not isinstance(value, Tensor):
            return value
        if name in self._state_counts:  # kept on the device (Adam): saved as a number
            return round(float(value.item()))
        return value.clone()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyperparameters and per-parameter state saved by `state_dict`.

        The state is checked against the parameters first (ValueError: group sizes, state
        values that are not tensors, tensors of another shape or of a non-float dtype, bad
        step counts); a refused load
        leaves the optimizer as it was. Float state of another dtype is cast, as in PyTorch.
        """
        saved_groups = state_dict["param_groups"]
        by_index = self._match_groups(saved_groups)
        state: dict[ParamLike, dict[str, Any]] = {}
        for key, saved_state in state_dict["state"].items():
            if int(key) not in by_index:
                raise ValueError(f"loaded state dict has state for unknown parameter {key}")
            p = by_index[int(key)]
            state[p] = self._checked_state(int(key), saved_state, param_tensor(p))
        self.state = state
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            group.update({k: v for k, v in saved.items() if k != "params"})

    def _match_groups(self, saved_groups: list[dict[str, Any]]) -> dict[int, ParamLike]:
        """Each saved parameter index paired with this optimizer's parameter."""
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has a different number of parameter groups "
                f"({len(saved_groups)}) than the optimizer ({len(self.param_groups)})"
            )
        by_index: dict[int, ParamLike] = {}
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"loaded state dict contains a parameter group {i} of "
                    f"{len(saved['params'])} parameters, but the optimizer's group has "
                    f"{len(group['params'])}"
                )
            by_index.update(zip((int(k) for k in saved["params"]), group["params"], strict=True))
        return by_index

    def _checked_state(self, index: int, saved: dict[str, Any], param: Tensor) -> dict[str, Any]:
        """The saved state of parameter `index`, checked against it and cast to its dtype."""
        state: dict[str, Any] = {}
        for name, value in saved.items():
            if name in self._state_counts:
                state[name] = self._count(_checked_count(index, name, value), param)
            elif value is None and name in self._state_optional:
                state[name] = None
            else:
                if name in self._state_tensors or not _plain_value(value):
                    _check_state_tensor(index, name, value, param)
                state[name] = self._cast(value, param)
        return state

    def _count(self, count: int, param: Tensor) -> Any:
        """A step count as this optimizer keeps it (an int; Adam: a tensor on the device)."""
        return count

    @staticmethod
    def _cast(value: Any, param: Tensor) -> Any:
        """A saved state tensor as a fresh tensor of the parameter's dtype and device."""
        if not isinstance(value, Tensor):
            return value
        return value.detach().to(param.dtype).to(param.device).clone()

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {group[k]}" for k in sorted(group) if k != "params"]
        return "\n".join(lines) + "\n)"


def _plain_value(value: Any) -> bool:
    """True for a state value kept as it is: a number, a string, a bool or None."""
    return value is None or isinstance(value, numbers.Number | str)


def _checked_count(index: int, name: str, value: Any) -> int:
    """A saved step count, which must be an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(
            f"loaded state dict has {name!r} = {value!r} for parameter {index}: expected a "
            f"step count (an int >= 0)"
        )
    return int(value)


def _check_state_tensor(index: int, name: str, value: Any, param: Tensor) -> None:
    """Raise unless a saved state value is a float tensor of the parameter's shape."""
    if not isinstance(value, Tensor):
        raise ValueError(
            f"loaded state dict has {name!r} of type {type(value).__name__} for parameter "
            f"{index} of shape {tuple(param.shape)}: expected a tensor of that shape"
        )
    if value.shape != param.shape:
        raise ValueError(
            f"loaded state dict has {name!r} of shape {tuple(value.shape)} for parameter "
            f"{index} of shape {tuple(param.shape)}: it would broadcast at the next step"
        )
    if not value.dtype.is_floating_point and param.dtype.is_floating_point:
        raise ValueError(
            f"loaded state dict has {name!r} of dtype {value.dtype} for parameter {index} "
            f"of dtype {param.dtype}: expected a floating point tensor"
        )


__all__ = [
    "Optimizer",
    "ParamLike",
    "ascent",
    "check_lr",
    "check_range",
    "decayed",
    "param_tensor",
]
