"""Optimizers: SGD (momentum, Nesterov, weight decay) and Adam, as in PyTorch.

An optimizer holds `param_groups`, a list of dicts each with "params" and its own
hyperparameters ("lr", ...), and a per-parameter `state` (momentum buffers, Adam's
moments). `step()` updates the parameters in place under `no_grad`, following
PyTorch's formulas exactly, so the same seed gives the same run. `state_dict()`
names parameters by their position (0, 1, ...) across groups, like PyTorch, and
`load_state_dict` puts the state back so training resumes where it stopped.

Parameters may be `nn.Parameter`s (the optimizer reads `.value` at each step, so
it follows `module.to(...)`) or plain tensors that require grad.

Under `mf.compile` a step is captured and replayed when the state it keeps can be
updated in place: plain SGD (no state) and Adam/AdamW, whose moments are written in
place and whose step count is a 0-dim float64 tensor on the parameter's device, from
which the bias corrections are computed with tensor ops while a capture records them
(eager on the CPU, the count is read and written on the host and the corrections are
Python numbers, with the same values). Their state is made before the first update,
so the capture reads it as state kept across calls (`hooks.state`). SGD with momentum,
RMSprop and Adagrad rebind their state at every step: a capture of them runs eagerly.
`state_dict()` saves step counts as ints in every case.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.autodiff import no_grad
from minifw.core.hooks import Launch, anyone_listening
from minifw.core.tensor_data import TensorData
from minifw.nn.module import Parameter
from minifw.tensor.tensor import Tensor
from minifw.tensor_ops import unsafe_overlap

ParamLike = Parameter | Tensor

# The fused update kernels, an expert fast path: student repositories have no
# minifw/fast_paths/, and there an update takes one launch per operation.
_fused_update: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None
_fused_adam: Callable[..., None] | None
try:
    from minifw.fast_paths.fused_update import adam_in_place as _fused_adam
    from minifw.fast_paths.fused_update import update_in_place as _fused_update
except ImportError:  # pragma: no cover - only in student repositories
    _fused_update = _fused_adam = None


def _tensor(param: ParamLike) -> Tensor:
    """The tensor a Parameter wraps, or the tensor itself."""
    return param.value if isinstance(param, Parameter) else param  # type: ignore[no-any-return]


def _sub_scaled(param: Tensor, grad: Tensor, lr: float) -> None:
    """Subtract grad * lr from param in place (under no_grad), rounding as `sub_` does.

    When both are float tensors of one dtype, backend and shape, this goes straight to
    the backend (no autograd bookkeeping): on the CPU, with both contiguous and apart,
    one fused kernel reads grad and param and writes param (as `mf.compile` would fuse
    it); otherwise two launches, grad * lr, then param - that written into param. A
    capture (mf.compile) gets the two launches: it records them and fuses them itself.
    """
    if not _alike(param, (grad,)):
        param.sub_(grad * lr)
        return
    p, g = param._data, grad._data
    if _fused_update is not None and _fusable(param, (grad,)) and not unsafe_overlap(p, g):
        _fused_sub_scaled(param, grad, lr)  # it reads each cell before writing it
    else:
        backend = param.backend
        scaled = backend.zip(ops.MUL, g, grad._scalar_like(lr)._data)
        backend.zip(ops.SUB, p, scaled, out=p)
    param._bump_version()


def _alike(param: Tensor, others: tuple[Tensor, ...]) -> bool:
    """True when `param` is a float tensor and `others` have its dtype, backend and shape."""
    dtype = param.dtype
    return dtype.is_floating_point and all(
        t.dtype is dtype and t.backend is param.backend and t.shape == param.shape for t in others
    )


def _fusable(param: Tensor, others: tuple[Tensor, ...]) -> bool:
    """True when a fused update kernel may update `param` from `others` (gradient, state).

    Eager on the CPU (a capture records one launch per operation and fuses them itself),
    with every tensor alike (`_alike`) and contiguous: the kernels walk flat cells.
    """
    return (
        param.backend.device == "cpu"
        and not (anyone_listening[0] and hooks.recording())
        and _alike(param, others)
        and param._data.is_contiguous()
        and all(t._data.is_contiguous() for t in others)
    )


def _flat(data: TensorData) -> np.ndarray:
    """The cells of a contiguous CPU tensor as a flat array (no copy)."""
    return data.storage[: data.size]  # type: ignore[no-any-return]


def _apart(datas: tuple[TensorData, ...]) -> bool:
    """True when no two of `datas` may share memory."""
    bases = [data.base for data in datas]
    return not any(
        np.may_share_memory(bases[i], bases[j])
        for i in range(len(bases))
        for j in range(i + 1, len(bases))
    )


def _fused_sub_scaled(param: Tensor, grad: Tensor, lr: float) -> None:
    """Param -= grad * lr as one kernel on contiguous CPU cells, seen by the profiler."""
    assert _fused_update is not None
    update = _fused_update
    p, g = param._data, grad._data
    rate = np.full(1, lr, p.base.dtype)
    flat_p, flat_g = _flat(p), _flat(g)
    if not anyone_listening[0]:
        update(flat_p, flat_g, rate)
        return
    launch = Launch(
        param.backend, "fused", -1, (p,), (g, TensorData(rate, ()), p),
        name="fused[mul,sub]", fused_ops=(ops.MUL, ops.SUB),
        runner=lambda: update(flat_p, flat_g, rate),
    )  # fmt: skip
    hooks.launch(launch)


# What `fused_update.adam_step` evaluates per cell, in order (for the profiler's counts).
_ADAM_OPS = (ops.SUB, ops.MUL, ops.ADD, ops.MUL, ops.MUL, ops.MUL, ops.ADD, ops.SQRT, ops.DIV,
             ops.ADD, ops.DIV, ops.MUL, ops.SUB)  # fmt: skip


def _fused_adam_step(
    param: Tensor, grad: Tensor, m: Tensor, v: Tensor, hyper: tuple[float, ...]
) -> None:
    """One Adam step of `param` as one kernel on contiguous CPU cells, seen by the profiler.

    `hyper` holds `fused_update.ADAM_HYPER`'s values, rounded to param's dtype here as
    the unfused launches round their scalars.
    """
    assert _fused_adam is not None
    update = _fused_adam
    datas = (param._data, grad._data, m._data, v._data)
    scalars = np.array(hyper, datas[0].base.dtype)
    flat = [_flat(data) for data in datas]
    if not anyone_listening[0]:
        update(*flat, scalars)
    else:
        launch = Launch(
            param.backend, "fused", -1, (datas[0], datas[2], datas[3]),
            (*datas, TensorData(scalars, (len(hyper),))), name="fused[adam]",
            fused_ops=_ADAM_OPS, runner=lambda: update(*flat, scalars),
        )  # fmt: skip
        hooks.launch(launch)
    for tensor in (param, m, v):
        tensor._bump_version()


class Optimizer:
    """Base class: parameter groups, per-parameter state, zero_grad and state dicts.

    Args:
        params: parameters (or tensors), or dicts with "params" and overrides of `defaults`.
        defaults: the hyperparameters every group gets unless it sets its own.
    """

    # The per-parameter state a subclass keeps: tensors of the parameter's shape (those in
    # _state_optional may be None), and step counts.
    _state_tensors: tuple[str, ...] = ()
    _state_optional: tuple[str, ...] = ()
    _state_counts: tuple[str, ...] = ()

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
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
            t = _tensor(p)
            if not t.is_leaf:
                raise ValueError(f"can't optimize a non-leaf Tensor (param {i}, shape {t.shape})")
            if id(p) in seen:
                raise ValueError("some parameters appear in more than one parameter group")
            seen.add(id(p))
        group = {**self.defaults, **param_group, "params": params}
        for key, value in group.items():
            if key != "params" and isinstance(value, float) and value < 0:
                raise ValueError(f"Invalid {key} value: {value}")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (set it to None, or fill it with zeros)."""
        tensors = [_tensor(p) for group in self.param_groups for p in group["params"]]
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
                if (t := _tensor(p)).grad is not None
            ]
            for t, _, group, state in todo:
                if not state:
                    self._init_state(t, group, state)
            if anyone_listening[0]:  # tell mf.compile's capture, if any, what it must know
                self._note_capture()
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

    def _note_capture(self) -> None:
        """Under `mf.compile`: refuse a step that rebinds state; else report state and guards.

        A replay repeats the captured kernels, writing into the storages they wrote, so
        state rebound at every step (momentum buffers, RMSprop's averages) cannot replay.
        State updated in place (Adam's moments and step count) can: it is reported as
        kept across calls, and the replay looks it up again at every call. Either way the
        groups must hold the same parameters, hyperparameters and state tensors (a new lr
        or a `load_state_dict` captures again). All of this reaches the capture through
        the hooks registry (`minifw.core.hooks`).
        """
        if any(self._stateful(group) for group in self.param_groups):
            hooks.unreplayable(
                f"{type(self).__name__}.step keeps per-parameter state (momentum buffers, "
                "moments, step counts) that it replaces at every step, so a replay cannot "
                "update it"
            )
            return
        kept = [v for s in self.state.values() for v in s.values() if isinstance(v, Tensor)]
        if kept:
            hooks.state(kept)
        hooks.guard(self._settings)

    def _settings(self) -> list[Any]:
        """Each group's parameters (by identity) and hyperparameters, and the state tensors."""
        groups: list[Any] = [
            ([id(p) for p in group["params"]], {k: v for k, v in group.items() if k != "params"})
            for group in self.param_groups
        ]
        kept = [id(v) for s in self.state.values() for v in s.values() if isinstance(v, Tensor)]
        return [*groups, kept]

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
        tensors of another shape or of a non-float dtype, bad step counts); a refused load
        leaves the optimizer as it was. Float state of another dtype is cast, as in PyTorch.
        """
        saved_groups = state_dict["param_groups"]
        by_index = self._match_groups(saved_groups)
        state: dict[ParamLike, dict[str, Any]] = {}
        for key, saved_state in state_dict["state"].items():
            if int(key) not in by_index:
                raise ValueError(f"loaded state dict has state for unknown parameter {key}")
            p = by_index[int(key)]
            state[p] = self._checked_state(int(key), saved_state, _tensor(p))
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
                if name in self._state_tensors or isinstance(value, Tensor):
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
            f"{index} of shape {param.shape}: expected a tensor of that shape"
        )
    if value.shape != param.shape:
        raise ValueError(
            f"loaded state dict has {name!r} of shape {value.shape} for parameter {index} of "
            f"shape {param.shape}: it would broadcast at the next step"
        )
    if not value.dtype.is_floating_point and param.dtype.is_floating_point:
        raise ValueError(
            f"loaded state dict has {name!r} of dtype {value.dtype} for parameter {index} "
            f"of dtype {param.dtype}: expected a floating point tensor"
        )


def _ascent(grad: Tensor, group: dict[str, Any]) -> Tensor:
    """The gradient to descend: negated when the group maximizes its objective."""
    return -grad if group.get("maximize") else grad


def _decayed(grad: Tensor, param: Tensor, group: dict[str, Any]) -> Tensor:
    """Return grad + weight_decay * param (the L2 penalty of SGD, Adam, RMSprop and Adagrad)."""
    return grad + param * group["weight_decay"] if group["weight_decay"] else grad


def _check_range(name: str, value: float, low: float = 0.0) -> None:
    """PyTorch's ValueError unless low <= value."""
    if not low <= value:
        raise ValueError(f"Invalid {name} value: {value}")


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov and weight decay.

    Per step: g = grad + weight_decay * p; buf = momentum * buf + (1 - dampening) * g
    (buf = g on the first step); g = g + momentum * buf if nesterov else buf;
    p -= lr * g.
    """

    _state_tensors = _state_optional = ("momentum_buffer",)

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
        dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, *,
        maximize: bool = False,
    ) -> None:  # fmt: skip
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr, "momentum": momentum, "dampening": dampening,
            "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
        }  # fmt: skip
        super().__init__(params, defaults)

    def _stateful(self, group: dict[str, Any]) -> bool:
        """Only momentum keeps state."""
        return bool(group["momentum"])

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One SGD step for one parameter."""
        grad = _decayed(_ascent(grad, group), param, group)
        momentum, dampening = group["momentum"], group["dampening"]
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.clone()
            else:
                buf = buf * momentum + (grad * (1.0 - dampening) if dampening else grad)
            state["momentum_buffer"] = buf
            grad = grad + buf * momentum if group["nesterov"] else buf
        _sub_scaled(param, grad, group["lr"])


def _step_count(param: Tensor) -> Tensor:
    """A step count of 0 as Adam keeps it: a 0-dim float64 tensor on the parameter's device."""
    backend = param.backend
    return Tensor(backend.full((), 0.0, np.float64), backend)


def _advance(step: Tensor) -> float | None:
    """Add one to a step count kept on the device; return the new count when eager on the CPU.

    Eager on the CPU the cell is read and written on the host (no launch). Under a
    capture (or on a GPU) it is one launch, `step += 1`, and None is returned: the
    caller then computes what depends on the count with tensor ops, which a replay
    repeats on the count it finds.
    """
    if step.backend.device != "cpu" or (anyone_listening[0] and hooks.recording()):
        step.add_(1.0)
        return None
    data = step._data
    host = step.backend.ops.to_numpy(data.base)  # the storage itself on the CPU
    host[data.offset] += 1.0
    step._bump_version()
    return float(host[data.offset])


def _bias_corrections(step: Tensor, group: dict[str, Any], dtype: Any) -> tuple[Any, Any]:
    """Count one more step t; return lr / (1 - b1^t) and sqrt(1 - b2^t).

    Python numbers when `_advance` gives the count, else 0-dim tensors of `dtype`
    computed in float64 from the count on the device (the same values: the kernels'
    pow, sqrt and division round as Python's, and a float32 result is rounded once).
    """
    beta1, beta2 = group["betas"]
    count = _advance(step)
    if count is not None:
        return group["lr"] / (1.0 - beta1**count), math.sqrt(1.0 - beta2**count)
    step_size = group["lr"] / (1.0 - beta1**step)
    root = (1.0 - beta2**step).sqrt()
    return _as_dtype(step_size, dtype), _as_dtype(root, dtype)


def _as_dtype(value: Tensor, dtype: Any) -> Tensor:
    """`value` with `dtype`, converted by one kernel on its device (no host round trip)."""
    if value.dtype is dtype:
        return value
    return value._zip(ops.ADD, value._scalar_like(0.0), dtype.numpy)


def _max_into(target: Tensor, other: Tensor) -> Tensor:
    """Write max(target, other) into target's cells (one launch) and return target."""
    target.backend.zip(ops.MAX, target._data, other._data, out=target._data)
    target._bump_version()
    return target


class Adam(Optimizer):
    """Adam: per-parameter steps scaled by running averages of the gradient and its square.

    Per step t: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2 (with amsgrad, v is
    replaced by its running maximum); p -= lr / (1 - b1^t) * m / (sqrt(v) /
    sqrt(1 - b2^t) + eps), with g = grad + weight_decay * p (L2 penalty, as
    torch.optim.Adam), or, with `decoupled_weight_decay`, p *= 1 - lr * weight_decay
    first (AdamW). The moments are updated in place and t is a 0-dim tensor on the
    device (`state["step"]`, saved as an int by `state_dict`), so `mf.compile` can
    capture and replay a step.
    """

    _state_tensors = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    _state_counts = ("step",)

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
        maximize: bool = False, decoupled_weight_decay: bool = False,
    ) -> None:  # fmt: skip
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        if lr < 0.0 or eps < 0.0:
            raise ValueError(f"Invalid learning rate {lr} or epsilon {eps}")
        _check_range("weight_decay", weight_decay)
        defaults = {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "amsgrad": amsgrad, "maximize": maximize,
            "decoupled_weight_decay": decoupled_weight_decay,
        }  # fmt: skip
        super().__init__(params, defaults)

    def _stateful(self, group: dict[str, Any]) -> bool:
        """Adam updates its state in place: a replay can follow it."""
        return False

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        """Step count 0 and zero moments, as torch.optim.Adam starts."""
        state["step"] = _step_count(param)
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group.get("amsgrad") else [])
        for name in names:
            state[name] = param.detach()._zeros(param.shape)

    def _count(self, count: int, param: Tensor) -> Any:
        """A loaded step count as Adam keeps it: a 0-dim tensor on the parameter's device."""
        step = _step_count(param)
        step.add_(float(count))
        return step

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One Adam step for one parameter (state updated in place)."""
        beta1, beta2 = group["betas"]
        grad = _ascent(grad, group)
        if group.get("decoupled_weight_decay"):
            if group["weight_decay"]:
                param.mul_(1.0 - group["lr"] * group["weight_decay"])
        else:
            grad = _decayed(grad, param, group)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        if (
            _fused_adam is not None
            and not group.get("amsgrad")
            and _fusable(param, (grad, m, v))
            and _apart((param._data, grad._data, m._data, v._data))
        ):
            step_size, root = _bias_corrections(state["step"], group, param.dtype)
            hyper = (1.0 - beta1, beta2, 1.0 - beta2, root, group["eps"], step_size)
            _fused_adam_step(param, grad, m, v, hyper)
            return
        m.add_((grad - m) * (1.0 - beta1))
        v.mul_(beta2).add_(grad * grad * (1.0 - beta2))
        if group.get("amsgrad"):
            v = _max_into(state["max_exp_avg_sq"], v)
        step_size, root = _bias_corrections(state["step"], group, param.dtype)
        denom = v.sqrt() / root + group["eps"]
        param.sub_(m / denom * step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before each Adam step."""

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
        maximize: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
            decoupled_weight_decay=True,
        )  # fmt: skip


class RMSprop(Optimizer):
    """Divide each step by a running root mean square of the gradient.

    Per step: g = grad + weight_decay * p; s = alpha s + (1 - alpha) g^2; with `centered`,
    a = alpha a + (1 - alpha) g and the divisor is sqrt(s - a^2) + eps, else sqrt(s) + eps;
    with momentum, b = momentum b + g / divisor and p -= lr b, else p -= lr g / divisor.
    """

    _state_tensors = ("square_avg", "momentum_buffer", "grad_avg")
    _state_counts = ("step",)

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
        weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
        maximize: bool = False,
    ) -> None:  # fmt: skip
        for name, value in (("learning rate", lr), ("epsilon", eps), ("momentum", momentum)):
            _check_range(name, value)
        _check_range("weight_decay", weight_decay)
        _check_range("alpha", alpha)
        defaults = {
            "lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
            "momentum": momentum, "centered": centered, "maximize": maximize,
        }  # fmt: skip
        super().__init__(params, defaults)

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One RMSprop step for one parameter."""
        alpha, momentum = group["alpha"], group["momentum"]
        grad = _decayed(_ascent(grad, group), param, group)
        if not state:
            state["step"] = 0
            state["square_avg"] = grad * 0.0
            if momentum > 0:
                state["momentum_buffer"] = grad * 0.0
            if group["centered"]:
                state["grad_avg"] = grad * 0.0
        state["step"] += 1
        square = state["square_avg"] = state["square_avg"] * alpha + grad * grad * (1.0 - alpha)
        if group["centered"]:
            avg = state["grad_avg"] = state["grad_avg"] + (grad - state["grad_avg"]) * (1 - alpha)
            square = square - avg * avg
        divisor = square.sqrt() + group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"] = state["momentum_buffer"] * momentum + grad / divisor
            param.sub_(buf * group["lr"])
        else:
            param.sub_(grad / divisor * group["lr"])


class Adagrad(Optimizer):
    """Divide each step by the root of the sum of all squared gradients so far.

    Per step t: g = grad + weight_decay * p; s += g^2; p -= lr / (1 + (t - 1) lr_decay) *
    g / (sqrt(s) + eps), with s starting at `initial_accumulator_value`.
    """

    _state_tensors = ("sum",)
    _state_counts = ("step",)

    def __init__(
        self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
        weight_decay: float = 0.0, initial_accumulator_value: float = 0.0, eps: float = 1e-10,
        *, maximize: bool = False,
    ) -> None:  # fmt: skip
        for name, value in (("learning rate", lr), ("lr_decay", lr_decay), ("epsilon", eps)):
            _check_range(name, value)
        _check_range("weight_decay", weight_decay)
        _check_range("initial_accumulator_value", initial_accumulator_value)
        defaults = {
            "lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value, "maximize": maximize,
        }  # fmt: skip
        super().__init__(params, defaults)

    def _update(
        self, param: Tensor, grad: Tensor, group: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One Adagrad step for one parameter."""
        grad = _decayed(_ascent(grad, group), param, group)
        if not state:
            state["step"] = 0
            state["sum"] = param.detach() * 0.0 + group["initial_accumulator_value"]
        state["step"] += 1
        rate = group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"])
        total = state["sum"] = state["sum"] + grad * grad
        param.sub_(grad / (total.sqrt() + group["eps"]) * rate)


def __getattr__(name: str) -> Any:
    """`minifw.optim.lr_scheduler`, loaded on first use (as `torch.optim.lr_scheduler`)."""
    if name == "lr_scheduler":
        import importlib

        return importlib.import_module("minifw.optim.lr_scheduler")
    raise AttributeError(f"module 'minifw.optim' has no attribute {name!r}")


__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
