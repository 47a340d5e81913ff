"""Graph capture and kernel fusion: `f2 = mf.compile(f)`, also usable as `@mf.compile`.

What happens
    The first call with a given *signature* (see Guards) runs `f` eagerly while
    recording every kernel it launches (the capture). Later calls with the same
    signature replay the recording: the kernels run straight on the kernel set,
    without Tensor objects, checks or autograd bookkeeping in between, and each
    maximal group of elementwise map/zip ops of one shape (operands from outside
    the group may broadcast) runs as ONE generated Numba kernel that reads every
    operand once and writes only the values still needed. Reductions and matmuls
    run as they are. `mf.compile(f, mode="replay")` replays without fusing;
    `mode="eager"` just calls `f` (for comparisons).

Autograd
    Gradients flow through compiled functions: when the result requires grad,
    the replay rebuilds the captured autograd graph node by node over the new
    buffers, each node keeping its Function's backward, so `loss.backward()` runs
    the backward eagerly, op by op, and gives the same gradients as eager. The
    forward is fused, the backward is not; the intermediates backward needs are
    written by the fused kernels.

Capture semantics (the tracing pitfalls)
    - Python control flow is frozen at capture: `if`, loops and Python numbers
      computed in `f` take the values they had on the first call.
    - Guards: tensor arguments' shape, strides, offset, dtype, backend and
      requires_grad (and which of them share storage), the values of non-tensor
      arguments (numbers, strings, None, tuples/lists/dicts of these; other
      hashable objects, such as a Module passed as `self`, by equality, which is
      identity for most objects; floats by value and sign, so `f(x, 0.0)` and
      `f(x, -0.0)` are two captures), grad mode and the default dtype. A call that
      differs in any of them captures again.
    - Guards on what `f` reads without receiving it (`minifw.compiler.guards`):
      the training mode of every Module it reaches (through its globals, closure,
      defaults, `self` or its arguments), and the identity of every tensor it reads
      there by reference: `d["w"] = other`, a rebound global or closure variable,
      or a new Parameter assigned to a module captures again instead of replaying
      the old tensor. Captures are kept per guarded state (up to MAX_VARIANTS per
      signature), so switching between `train()` and `eval()` replays each; the
      first time a guard of a given kind changes, a `CompileWarning` says which.
    - Tensors that `f` reads without receiving them (parameters of a model, other
      closed-over tensors) are read by storage at every call, so in-place updates
      (optimizer steps) are seen. Those in the autograd graph (parameters that
      require grad) are looked up again at every call, so `p.data = ...` is seen
      too; a new shape or requires_grad of one of them captures again.
    - Tensors `f` makes without a kernel (`zeros`, `ones`, `full`, `empty`, and
      those inside `cat`, `stack`, conv's padding and the backward of slicing and
      unfolding) may be written in place: the replay makes each one again, filled
      as at capture, before its first use ("fill" in `explain()`).
    - A capture that cannot be replayed faithfully falls back to eager, with a
      `CompileWarning` that says why (once), and that signature stays eager:
      reading values on the host (`.item()`, `float(t)`, `.tolist()`, `.numpy()`,
      printing, and so dtype casts other than to and from bool), random numbers
      (`rand`, dropout), writing in place into a tensor the traced ops did not
      compute (state outside `f`, a tensor made from numpy data; parameters and
      optimizer state are the exceptions, below), an optimizer step that replaces
      its per-parameter state at every step (SGD with momentum, RMSprop, Adagrad),
      hooks on intermediates, or arguments of other types. Never a wrong answer.
    - A whole training step can be captured: when `f` calls `loss.backward()`,
      the backward's kernels are captured (and fused) too, and each replay sets
      the `.grad` of the leaves it reached (arguments or parameters `f` reads).
      Their `.grad` must be None when `f` is called, or `f` must clear them first
      (`optimizer.zero_grad()`); a call where one is set otherwise runs eagerly,
      so the gradients accumulate as usual. The tensors such an `f` returns come
      back without autograd history.
    - The update can be part of the step: after its backward, `f` may write in
      place into those leaves (`p -= lr * p.grad` under `no_grad`, or
      `optimizer.step()` of SGD without momentum, Adam or AdamW) and set their
      `.grad` to None; each update runs as fused kernels writing the parameter's
      cells. Adam's state (moments, and the step count, a 0-dim tensor from which
      the bias corrections are computed on the device) is written in place, and
      the replay looks it up on the optimizer's tensors at every call, so eager
      and replayed steps can alternate. The optimizer's groups, hyperparameters
      (lr, weight decay, betas) and state tensors are guarded: a scheduler's new
      lr, or a `load_state_dict`, captures again rather than replaying the old.
    - The checks a loss makes on class-index labels (in range) are repeated by
      every replay, on an argument or on a tensor `f` reads by reference.
    - The first call's result is the eager result itself.
    - numpy data that `f` turns into tensors is frozen at capture.
    - Calls made while another compiled function is being captured run eagerly
      (so the outer capture sees, and fuses, their ops).

Backends
    Fusion needs CPU storage (the "fast" and "simple" backends). On "cuda" (or
    its simulator) the capture is replayed without fusion.

Generated kernels are Python files named by the hash of their source, written
under `minifw.compiler.fusion.cache_dir()` (NUMBA_CACHE_DIR/minifw-fused or
~/.cache/minifw/fused) and compiled with `cache=True`, so a second process loads
them from disk.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from minifw.backends import default_backend
from minifw.compiler.capture import Recorder, UnsupportedError, analyse, capturing, recording
from minifw.compiler.guards import Guards, find
from minifw.compiler.replay import Plan, RecaptureError, RunEagerError
from minifw.core.autodiff import is_grad_enabled
from minifw.core.dtypes import get_default_dtype
from minifw.tensor.functions import is_tensor
from minifw.tensor.kernel_api import cells
from minifw.tensor.tensor import Tensor

MODES = ("default", "replay", "eager")
MAX_GRAPHS = 8  # signatures kept per compiled function; the oldest goes first
MAX_VARIANTS = 4  # captures kept per signature, for different guarded state (train/eval)
Variant = tuple[Guards, "Plan | None"]  # a capture's guards, and its plan (None: eager)


class CompileWarning(UserWarning):
    """A compiled function could not be captured and runs eagerly."""


class CompiledFunction:
    """`fn` with graph capture, replay and fusion (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], mode: str = "default") -> None:
        if mode not in MODES:
            raise ValueError(f"mf.compile: unknown mode {mode!r}; expected one of {MODES}")
        if not callable(fn):
            raise TypeError(f"mf.compile expects a callable, got {type(fn).__name__}")
        self.fn = fn
        self.mode = mode
        self.stats = {"captures": 0, "replays": 0, "eager_calls": 0, "fallbacks": 0}
        self._plans: OrderedDict[Any, list[Variant]] = OrderedDict()
        self._lock = threading.Lock()
        self._warned_arguments = False
        self._warned_guards: set[str] = set()  # the kinds of changed guards already told
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<compiled {_name(self.fn)} mode={self.mode!r}>"

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        """As a method decorator: bind `obj` as the first argument (guarded by identity)."""
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Replay the capture of this call's signature (capturing it first if new)."""
        if self.mode == "eager" or capturing():
            return self._eager(args, kwargs)
        try:
            key, inputs = signature(args, kwargs)
        except UnsupportedError as problem:
            if not self._warned_arguments:
                self._warned_arguments = True
                _warn(f"{_name(self.fn)} gets {problem}; it runs eagerly")
            return self._eager(args, kwargs)
        variants = self._plans.get(key)  # one lookup: atomic without the lock
        if variants is None:
            return self._capture(key, inputs, args, kwargs, self._zero_sign_changed(key))
        chosen, changed = _choose(variants)
        if chosen is None:
            return self._capture(key, inputs, args, kwargs, changed)
        plan = variants[chosen][1]
        if plan is None:
            return self._eager(args, kwargs)
        try:
            result = plan.run(inputs)
        except RecaptureError:
            changed = ("state", "an optimizer's settings or state tensors, or the shape, "
                       "dtype or requires_grad of a tensor it reads, changed")  # fmt: skip
            return self._capture(key, inputs, args, kwargs, changed, chosen)
        except RunEagerError:
            return self._eager(args, kwargs)
        with self._lock:
            self.stats["replays"] += 1
        return result

    def _eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with self._lock:
            self.stats["eager_calls"] += 1
        return self.fn(*args, **kwargs)

    def _capture(
        self,
        key: Any,
        inputs: list[Tensor],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        changed: tuple[str, str] | None,
        replace: int | None = None,
    ) -> Any:
        """Capture a call; `changed` is the guard whose change made it, `replace` its slot."""
        if changed is not None and changed[0] not in self._warned_guards:
            self._warned_guards.add(changed[0])
            _warn(f"{_name(self.fn)} captures again: {changed[1]} (told once per kind of "
                  "change)")  # fmt: skip
        recorder = Recorder(inputs)
        with recording(recorder):
            result = self.fn(*args, **kwargs)
        problems = list(dict.fromkeys(recorder.problems))
        plan: Plan | None = None
        if not problems:
            try:
                fuse = self.mode == "default"
                plan = Plan(analyse(recorder, result), fuse, f"compiled {_name(self.fn)}")
            except UnsupportedError as problem:
                problems.append(str(problem))
        guards = find(self.fn, args, kwargs, _read_by_reference(plan))
        self._keep(key, (guards if plan is not None else guards.modes_only(), plan), replace)
        with self._lock:
            self.stats["captures"] += 1
            if plan is None:
                self.stats["fallbacks"] += 1
        if plan is None:
            shapes = ", ".join(str(tuple(t.shape)) for t in inputs) or "no tensors"
            _warn(f"could not capture {_name(self.fn)} for inputs of shapes {shapes}: "
                  f"{'; '.join(problems)}. It runs eagerly for these inputs.")  # fmt: skip
        return result

    def _keep(self, key: Any, variant: Variant, replace: int | None) -> None:
        """File a capture under its signature (a new list: readers never see one change)."""
        with self._lock:
            variants = list(self._plans.get(key, ()))
            if replace is not None and replace < len(variants):
                variants[replace] = variant
            else:
                variants = [variant, *variants][:MAX_VARIANTS]
            self._plans[key] = variants
            self._plans.move_to_end(key)
            while len(self._plans) > MAX_GRAPHS:
                self._plans.popitem(last=False)

    def _zero_sign_changed(self, key: Any) -> tuple[str, str] | None:
        """Whether a new signature differs from a captured one only by a zero's sign."""
        loose = _loose(key)
        with self._lock:
            seen = [k for k in self._plans if _loose(k) == loose]
        if not seen:
            return None
        return "zero", "a float argument is a zero of the other sign (x / 0.0 is not x / -0.0)"

    def plans(self) -> list[Plan]:
        """The captured programs, one per signature and guarded state seen (oldest first)."""
        with self._lock:
            return [p for variants in self._plans.values() for _, p in variants if p is not None]

    def explain(self) -> str:
        """What was captured: each signature's kernels, fused groups marked `fused[...]`."""
        text = [plan.describe() for plan in self.plans()]
        return "\n".join(text) if text else f"{_name(self.fn)}: nothing captured yet"

    def reset(self) -> None:
        """Forget every capture (the next call captures again)."""
        with self._lock:
            self._plans.clear()


def compile(  # noqa: A001 - PyTorch's name (torch.compile)
    fn: Callable[..., Any] | None = None, *, mode: str = "default"
) -> Any:
    """Capture `fn`'s kernels on its first call and replay them, fused, on later calls.

    Use as `f2 = mf.compile(f)`, `@mf.compile` or `@mf.compile(mode="replay")`.
    `mode` is "default" (capture, fuse, replay), "replay" (capture and replay
    without fusing) or "eager" (call `fn` unchanged). See the module docstring
    for what is frozen at capture and when a function falls back to eager.
    """
    if fn is None:
        return lambda f: CompiledFunction(f, mode)
    return CompiledFunction(fn, mode)


def signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Tensor]]:
    """The guard key of a call, and its tensor arguments in order."""
    inputs: list[Tensor] = []
    bases: dict[int, int] = {}
    key = (
        is_grad_enabled(),
        str(get_default_dtype()),
        default_backend("cpu").name,
        _key(args, inputs, bases),
        _key(kwargs, inputs, bases),
    )
    return key, inputs


def _key(value: Any, inputs: list[Tensor], bases: dict[int, int]) -> Any:
    if is_tensor(value):
        data = cells(value)
        alias = bases.setdefault(id(data.base), len(inputs))
        inputs.append(value)
        return ("T", data.shape, data.strides, data.offset, str(value.dtype),
                value.backend.name, value.requires_grad, alias)  # fmt: skip
    if type(value) in (tuple, list):
        return (type(value).__name__, tuple(_key(v, inputs, bases) for v in value))
    if type(value) is dict:
        return ("dict", tuple((k, _key(v, inputs, bases)) for k, v in value.items()))
    if isinstance(value, float | np.floating) and not isinstance(value, bool):
        number = float(value)  # 0.0 == -0.0 and nan != nan: the key tells zeros apart, not nans
        if number != number:
            return ("float", "nan", 1.0)
        return ("float", number, math.copysign(1.0, number))
    if value is None or isinstance(value, bool | int | str):
        return (type(value).__name__, value)
    try:
        hash(value)
    except TypeError:
        pass
    else:  # a module, a function, ...: guarded by equality (identity for most objects)
        return ("object", type(value).__qualname__, value)
    raise UnsupportedError(f"an argument of type {type(value).__name__} (pass tensors and plain "
                      "Python values)")  # fmt: skip


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _choose(variants: list[Variant]) -> tuple[int | None, tuple[str, str] | None]:
    """The first capture whose guards hold, else None and what changed for the newest."""
    changed = None
    for i, (guards, _) in enumerate(variants):
        failed = guards.failed()
        if failed is None:
            return i, None
        changed = changed or failed
    return None, changed


def _read_by_reference(plan: Plan | None) -> set[int]:
    """The ids of the storages a plan reads from outside its arguments (a guarded read)."""
    if plan is None:
        return set()
    graph = plan.graph
    read = {id(b.storage) for b in graph.buffers if b.origin == "const" and b.storage is not None}
    return read | {id(cells(t).base) for t, _, _ in graph.objects}


def _loose(key: Any) -> Any:
    """A signature with its floats' signs of zero dropped (0.0 and -0.0 alike)."""
    if type(key) is tuple:
        if len(key) == 3 and key[0] == "float":
            return ("float", key[1])
        return tuple(_loose(k) for k in key)
    return key


def _warn(message: str) -> None:
    warnings.warn(f"mf.compile: {message}", CompileWarning, stacklevel=4)


__all__ = ["CompileWarning", "CompiledFunction", "MODES", "compile", "signature"]
