"""The autograd side of a Tensor: the backward pass, grad_fn, hooks, in-place history.

`backward` and `grad` (PyTorch's `torch.autograd.backward` and `.grad`, and what
`Tensor.backward` calls) hand the graph to the one engine, `autodiff.backpropagate`:
each tensor of the graph is seen there through a `_Step`, which runs its hooks and its
Function's backward (`chain_rule`) and, at a leaf, writes `.grad` under a lock or hands
the gradient back to the caller. The pass runs under grad mode `create_graph`: off,
backwards launch plain kernels; on, they are recorded, so gradients can be
differentiated again.
"""

# Mixin methods take `self: Tensor`; mypy cannot see that Tensor subclasses the mixin
# (its "erased type of self" check, error code misc), so that check is off here.
# mypy: disable-error-code="misc"

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.autodiff import (
    History,
    Roots,
    backpropagate,
    is_leaf,
    no_grad,
    set_grad_enabled,
    topological_sort,
)
from minifw.core.hooks import anyone_listening
from minifw.tensor.functions import Copy, FunctionCtx, is_tensor, view_history

if TYPE_CHECKING:
    from minifw.tensor.tensor import Tensor

_NOT_LEAF = (
    "you can only change requires_grad flags of leaf variables. If you want to use a "
    "computed variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach()."
)


class Gradient:
    """A gradient on its way through backpropagation, and whether only the engine holds it.

    `owned` is True for a tensor that a kernel made during this backward pass and that
    nothing else refers to: a leaf may keep it as its `.grad` without a copy. The sum
    of two gradients (a value used twice) is a new, owned one.
    """

    __slots__ = ("tensor", "owned")

    def __init__(self, tensor: Tensor, owned: bool = False) -> None:
        self.tensor = tensor
        self.owned = owned

    def __add__(self, other: Any) -> Gradient:
        """The sum, a new gradient the engine alone holds."""
        mine = self.tensor
        theirs = other.tensor if isinstance(other, Gradient) else other
        if mine.shape == theirs.shape and mine.dtype is theirs.dtype:
            return Gradient(mine._zip(ops.ADD, theirs), owned=True)
        with no_grad():
            return Gradient(mine + theirs, owned=True)


def owned_gradients(
    history: History, inputs: Sequence[Any], grad: Tensor, pairs: list[tuple[Any, Tensor]]
) -> list[tuple[Any, Gradient]]:
    """Wrap the gradients a node's backward returned, marking those a leaf may keep as is.

    Owned: the Function promises `fresh_grads`, the input is a leaf, and the tensor is
    the whole of its storage, which is not the storage of the incoming gradient, of an
    input, of a saved tensor, or of another returned gradient.
    """
    if not history.last_fn.fresh_grads or all(v.history is not None for v, _ in pairs):
        return [(value, Gradient(g)) for value, g in pairs]
    ctx = history.ctx
    saved = ctx.saved_values if isinstance(ctx, FunctionCtx) else ()
    held = {id(grad._data.base)}
    held.update(id(v._data.base) for v in (*inputs, *saved) if is_tensor(v))
    bases = [id(g._data.base) for _, g in pairs]
    wrapped = []
    for (value, g), base in zip(pairs, bases, strict=True):
        alone = base not in held and bases.count(base) == 1
        owned = alone and value.history is None and _spans_its_storage(g)
        wrapped.append((value, Gradient(g, owned)))
    return wrapped


def _spans_its_storage(t: Tensor) -> bool:
    """True when `t` is the row-major view of all of its storage, from cell 0."""
    data = t._data
    cells = getattr(data.base, "size", None)
    if cells is None:
        cells = len(data.base)
    return data.offset == 0 and data.size == cells and data.is_contiguous()


def recorded_inputs(history: History) -> list[Any]:
    """The inputs of a recorded op as they were when it ran.

    An input later modified in place got a new history; the op still needs the
    value it read, which the in-place op kept in the input's `_replaced` table.
    """
    recorded = getattr(history.ctx, "input_histories", ())
    if len(recorded) != len(history.inputs):
        return list(history.inputs)
    out = []
    for value, seen in zip(history.inputs, recorded, strict=True):
        if is_tensor(value) and value.history is not seen:
            # None: a constant then (a leaf requiring grad cannot be changed in place).
            value = value.detach() if seen is None else _replacement(value, seen)
        out.append(value)
    return out


def _replacement(value: Tensor, seen: History) -> Tensor:
    found = (value._replaced or {}).get(id(seen))
    return value if found is None else found  # type: ignore[no-any-return]


# `.grad` is read, added to and written back under this lock, so that backward passes
# running in several threads at once lose no gradient (as PyTorch's AccumulateGrad).
_GRAD_LOCK = threading.Lock()


class _Run:
    """One backward pass: where gradients go (`.grad` or the caller), and how far back."""

    __slots__ = ("targets", "capture", "create", "reach", "captured")

    def __init__(self, targets: Sequence[Tensor] | None, capture: bool, create: bool) -> None:
        self.targets = None if targets is None else {id(t) for t in targets}
        self.capture, self.create = capture, create
        self.reach: set[int] | None = None  # with targets: the nodes that lead to one
        self.captured: dict[int, Tensor] = {}

    def keep(self, node: Tensor, grad: Tensor, owned: bool = False) -> None:
        """Hand `grad` (hooks already run) to the caller, or add it to `node.grad`."""
        if self.capture:
            self.captured[id(node)] = grad
        else:
            self.store(node, grad, owned)

    def store(self, node: Tensor, grad: Tensor, owned: bool = False) -> None:
        """Add `grad` to `node.grad` (recorded under create_graph), under the lock."""
        with _GRAD_LOCK:
            old = node._grad
            if not self.create:
                node._accumulate(grad, owned)
            elif old is None:  # recorded: the new .grad is a function of the inputs
                node._grad = Copy.apply(grad)
            else:
                node._grad = old + grad
        if anyone_listening[0] and not self.create and node.history is None:
            hooks.leaf_grad(node, old is not None)


class _Step:
    """A tensor as the engine sees it in one pass (the `Variable` protocol of autodiff)."""

    __slots__ = ("tensor", "run", "unique_id", "history", "inputs", "steps")

    def __init__(self, tensor: Tensor, run: _Run) -> None:
        self.tensor, self.run = tensor, run
        self.unique_id = id(tensor)  # the engine's key for the tensor
        self.history: History | None = tensor.history
        self.inputs: list[Any] | None = None  # the op's inputs as they were when it ran
        self.steps: dict[int, _Step] = {}  # the steps of its tensor inputs, by id

    def is_constant(self) -> bool:
        """True when no gradient is wanted here: none needed, or no target lies behind."""
        reach = self.run.reach
        return not self.tensor.requires_grad or (reach is not None and self.unique_id not in reach)

    @property
    def parents(self) -> list[_Step]:
        """The tensor inputs of the op that made the tensor, as they were then."""
        run = self.run
        self.inputs = inputs = recorded_inputs(self.history)  # type: ignore[arg-type]
        self.steps = {id(x): _Step(x, run) for x in inputs if is_tensor(x)}
        return list(self.steps.values())

    def chain_rule(self, d_output: Any) -> list[tuple[_Step, Any]]:
        """Run the tensor's hooks and its Function's backward; pair inputs with gradients."""
        node, run, history = self.tensor, self.run, self.history
        grad = d_output.tensor if isinstance(d_output, Gradient) else d_output
        if node._hooks:
            grad = node._run_hooks(grad)
        target = run.targets is not None and self.unique_id in run.targets
        if target and run.capture:
            run.captured[self.unique_id] = grad
        if (target and not run.capture) or node._retains_grad:
            run.store(node, grad)
        assert history is not None and isinstance(history.ctx, FunctionCtx)
        inputs = recorded_inputs(history) if self.inputs is None else self.inputs
        if run.reach is not None and not any(is_tensor(x) and id(x) in run.reach for x in inputs):
            return []  # nothing wanted lies further back
        pairs: list[tuple[Any, Any]] = history.last_fn.chain_rule(history.ctx, inputs, grad)
        if not run.create:
            pairs = owned_gradients(history, inputs, grad, pairs)
        steps = self.steps  # made by `parents` when the engine sorted the graph
        return [(steps.get(id(value)) or _Step(value, run), g) for value, g in pairs]

    def accumulate_derivative(self, x: Any) -> None:
        """A leaf's total gradient: through its hooks to `.grad` or to the caller."""
        node = self.tensor
        grad = x.tensor if isinstance(x, Gradient) else x
        if node._hooks:
            self.run.keep(node, node._run_hooks(grad))
        else:
            self.run.keep(node, grad, isinstance(x, Gradient) and x.owned)


def _reaching(root: Roots | _Step, targets: set[int]) -> set[int]:
    """Ids of the nodes behind `root` from which some target can be reached (targets too)."""
    reach: set[int] = set()
    for node in reversed(topological_sort(root)):  # a value's inputs come before it here
        key = node.unique_id
        if key in targets or (
            not is_leaf(node) and any(p.unique_id in reach for p in node.parents)
        ):
            reach.add(key)
    return reach


def run_backward(
    outputs: Sequence[Tensor],
    seeds: Sequence[Tensor],
    inputs: Sequence[Tensor] | None = None,
    retain_graph: bool = False,
    create_graph: bool = False,
    capture: bool = False,
) -> list[Tensor | None]:
    """Backpropagate `seeds` from `outputs` at once, in one pass of the engine.

    With `capture`, the gradients of `inputs` are returned (None for unreached ones) and
    no `.grad` changes; without, they accumulate into `.grad` of `inputs` (of every
    leaf, and retained non-leaf, when `inputs` is None). Grad mode is `create_graph`
    during the pass: with it, each backward step is recorded.
    """
    run = _Run(inputs, capture, create_graph)
    for out in outputs:
        if out._base is not None:
            view_history(out)  # a view whose source changed in place: bring it up to date
    wrapped = [s if create_graph else Gradient(s) for s in seeds]
    steps = [_Step(o, run) for o in outputs]
    root: Roots | _Step = steps[0] if len(steps) == 1 else Roots(steps, wrapped)
    seed = wrapped[0] if len(steps) == 1 else wrapped  # Roots hands out each output's own
    if run.targets is not None:
        run.reach = _reaching(root, run.targets)
    with set_grad_enabled(create_graph):
        if anyone_listening[0]:  # a tool watches (core/hooks.py): tell it a backward runs
            hooks.run_backward(backpropagate, root, seed, retain_graph)
        else:
            backpropagate(root, seed, retain_graph)
    return [run.captured.get(id(t)) for t in inputs or ()]


# ---- The API: torch.autograd.grad and torch.autograd.backward ------------------------------


def as_tensor_list(values: Any, what: str) -> list[Any]:
    """`values` (one tensor or a sequence of them) as a list."""
    if is_tensor(values):
        return [values]
    if isinstance(values, list | tuple):
        return list(values)
    raise TypeError(f"{what}: expected a Tensor or a sequence of Tensors, got {type(values)}")


def seeds_for(outputs: list[Any], grad_outputs: Any, create_graph: bool) -> list[Tensor]:
    """The gradient each output starts from: given, or ones for a one-element output."""
    given = [None] * len(outputs) if grad_outputs is None else as_tensor_list(grad_outputs, "")
    if len(given) != len(outputs):
        raise RuntimeError(
            f"grad_outputs has {len(given)} entries but there are {len(outputs)} outputs "
            f"(give one gradient, or None, per output)"
        )
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, given, strict=True)):
        if not is_tensor(out):
            raise TypeError(f"output {i} is a {type(out).__name__}, not a Tensor")
        if not out.requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (output {i} has "
                    f"shape {tuple(out.shape)}; pass a gradient for it or reduce it first, "
                    "e.g. .sum())"
                )
            g = out._full(out.shape, 1.0)
        else:
            g = out._operand(g)
            g = g if create_graph else g.detach()
            if g.shape != out.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} and "
                    f"output[{i}] has a shape of {tuple(out.shape)}."
                )
            g = g if g.dtype is out.dtype else g.to(out.dtype)
        seeds.append(g)
    return seeds


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of `outputs` with respect to `inputs`, as `torch.autograd.grad`.

    `grad_outputs` weighs each output (ones for one-element outputs if None). No `.grad`
    changes. An input the outputs do not depend on raises unless `allow_unused` (then its
    gradient is None, or zeros with `materialize_grads`). With `create_graph` the
    gradients are recorded, so they can be differentiated again (Hessian-vector
    products, gradient penalties). The graph is freed unless `retain_graph` (which
    defaults to `create_graph`).
    """
    if is_grads_batched:
        raise NotImplementedError(
            "autograd.grad(is_grads_batched=True) needs vmap, which minifw lacks"
        )
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    outs = as_tensor_list(outputs, "autograd.grad outputs")
    ins = as_tensor_list(inputs, "autograd.grad inputs")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for i, t in enumerate(ins):
        if not is_tensor(t) or not t.requires_grad:
            raise RuntimeError(
                f"One of the differentiated Tensors does not require grad (input {i})"
            )
    seeds = seeds_for(outs, grad_outputs, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    found = run_backward(outs, seeds, ins, retain, create_graph, capture=True)
    results: list[Tensor | None] = []
    for i, (t, g) in enumerate(zip(ins, found, strict=True)):
        if g is None and not (allow_unused or materialize_grads):
            raise RuntimeError(
                f"The differentiated Tensor at index {i} appears to not have been used in the "
                f"graph. Set allow_unused=True if this is the desired behavior."
            )
        if g is None and materialize_grads:
            g = t._zeros(t.shape)
        results.append(g)
    return tuple(results)


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Accumulate into `.grad` the gradients of `tensors`, as `torch.autograd.backward`.

    Every leaf (and retained non-leaf) they depend on gets its share, or only `inputs`
    when given (leaves or not). With `create_graph` the new `.grad` values are recorded.
    The graph is freed unless `retain_graph` (which defaults to `create_graph`).
    """
    outs = as_tensor_list(tensors, "autograd.backward tensors")
    ins = None
    if inputs is not None:
        ins = as_tensor_list(inputs, "backward inputs")
        if not ins:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    seeds = seeds_for(outs, grad_tensors, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    run_backward(outs, seeds, ins, retain, create_graph, capture=False)


class Node:
    """A step of the backward graph (what `grad_fn` returns)."""

    __slots__ = ("_history",)

    def __init__(self, history: History) -> None:
        self._history = history

    def name(self) -> str:
        """The op's name, like "MulBackward"."""
        fn = self._history.last_fn
        return f"{getattr(fn, 'node_name', fn.__name__)}Backward"

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """The nodes of this op's inputs: grad_fns, AccumulateGrad for leaves, else None."""
        nodes: list[tuple[Any, int]] = []
        for value in recorded_inputs(self._history):
            if not is_tensor(value):
                continue
            if value.history is not None:
                nodes.append((value.grad_fn, 0))
            elif value.requires_grad:
                nodes.append((value._accumulator(), 0))
            else:
                nodes.append((None, 0))
        return tuple(nodes)

    def __repr__(self) -> str:
        return f"<{self.name()}>"


class AccumulateGrad:
    """The node that writes a leaf's `.grad`."""

    __slots__ = ("variable",)
    next_functions: tuple[Any, ...] = ()

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    def name(self) -> str:
        """Always "AccumulateGrad"."""
        return "AccumulateGrad"

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


class RemovableHook:
    """A handle whose `remove()` unregisters a hook."""

    def __init__(self, hooks: list[Any], hook: Any) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        """Unregister the hook (again is fine)."""
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def check_hook_result(hook: Any, grad: Tensor, result: Any) -> None:
    """Raise PyTorch's error if a gradient hook returned other than a tensor like `grad`."""
    if not is_tensor(result):
        raise TypeError(
            f"expected Variable, but hook returned '{type(result).__name__}' (a gradient "
            f"hook returns None or a tensor of the gradient's shape {tuple(grad.shape)})"
        )
    name = getattr(hook, "__name__", type(hook).__name__)
    if result.shape != grad.shape:
        raise RuntimeError(
            f"hook '{name}' has changed the size of value (was {tuple(grad.shape)}, got "
            f"{tuple(result.shape)})"
        )
    if result.dtype is not grad.dtype or result.device != grad.device:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {grad.device} {grad.dtype}, "
            f"got {result.device} {result.dtype})"
        )


def check_assigned_grad(t: Tensor, grad: Any) -> None:
    """Raise PyTorch's error if `grad` (not None) cannot be `t.grad`."""
    if not is_tensor(grad):
        raise TypeError(
            f"assigned grad expected to be a Tensor or None but got grad of type "
            f"{type(grad).__name__}"
        )
    if grad is t:
        raise RuntimeError("can't assign Variable as its own grad")
    if grad.dtype is not t.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{grad.dtype.name}' to a tensor with "
            f"grad_dtype '{t.dtype.name}'. The gradient must match the tensor's dtype"
        )
    if grad.device != t.device:
        raise RuntimeError(
            f"attempting to assign a gradient with device type '{grad.device}' to a tensor "
            f"with device type '{t.device}'. Please ensure that the gradient and the tensor "
            f"are on the same device"
        )
    if grad.shape != t.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(grad.shape)}' to a tensor of "
            f"size '{list(t.shape)}'. Please ensure that the gradient and the tensor are the "
            f"same size"
        )
