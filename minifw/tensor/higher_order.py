"""Gradients as `torch.autograd.grad` computes them, and gradients of gradients.

`run_backward` is the engine behind `mf.autograd.grad`, `mf.autograd.backward` and
`Tensor.backward(create_graph=..., inputs=...)`: several outputs at once, gradients
handed back instead of accumulated, and, with `create_graph`, every backward step
recorded as ordinary ops so the gradients can be differentiated again. A plain
`t.backward()` still takes the Task 1.4 engine (`autodiff.backpropagate`), whose
Functions run their fast backward on raw launches; `create_graph` calls each
Function's `backward_graph` instead (see `functions.Function`).

Elementwise ops get their recorded derivative from one table, `SECOND_DERIVATIVES`,
keyed by the op's name in `operators.OP_TABLE`: f''(a) as tensor arithmetic (None
where f'' is zero almost everywhere).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.autodiff import enable_grad
from minifw.core.hooks import anyone_listening
from minifw.tensor.autograd import Gradient, owned_gradients, recorded_inputs
from minifw.tensor.functions import (
    ELEMENTWISE,
    Copy,
    Elementwise,
    Function,
    FunctionCtx,
    PowTensor,
    _check_grad_shape,
    is_tensor,
    sum_to_shape,
)

if TYPE_CHECKING:
    from minifw.tensor.tensor import Tensor

# ---- Recorded derivatives of elementwise ops -----------------------------------------------


def _unary(name: str, a: Tensor) -> Tensor:
    """The differentiable unary op `name` of the op table applied to `a` (recorded)."""
    return ELEMENTWISE[ops.CODES[name]].apply(a)


def _sigmoid_2(a: Tensor) -> Tensor:
    s = _unary("sigmoid", a)
    return s * (1.0 - s) * (1.0 - 2.0 * s)


def _tanh_2(a: Tensor) -> Tensor:
    t = _unary("tanh", a)
    return -2.0 * t * (1.0 - t * t)


def _tan_2(a: Tensor) -> Tensor:
    t = _unary("tan", a)
    return 2.0 * t * (1.0 + t * t)


def _asin_2(a: Tensor) -> Tensor:
    return a * (1.0 - a * a) ** -1.5


def _erf_2(a: Tensor) -> Tensor:
    return (-4.0 / math.sqrt(math.pi)) * a * _unary("exp", -(a * a))


# f''(a) for each differentiable unary op of the op table, by name; None: 0 almost everywhere.
# `tests/tensor/test_higher_order.py` checks that every such row of OP_TABLE is here.
SECOND_DERIVATIVES: dict[str, Callable[[Tensor], Tensor] | None] = {
    "exp": lambda a: _unary("exp", a),
    "log": lambda a: -1.0 / (a * a),
    "sigmoid": _sigmoid_2,
    "relu": None,
    "tanh": _tanh_2,
    "inv": lambda a: 2.0 / (a * a * a),
    "sqrt": lambda a: -0.25 / (a * _unary("sqrt", a)),
    "abs": None,
    "sin": lambda a: -_unary("sin", a),
    "cos": lambda a: -_unary("cos", a),
    "tan": _tan_2,
    "asin": _asin_2,
    "acos": lambda a: -_asin_2(a),
    "atan": lambda a: -2.0 * a / ((1.0 + a * a) * (1.0 + a * a)),
    "sinh": lambda a: _unary("sinh", a),
    "cosh": lambda a: _unary("cosh", a),
    "log1p": lambda a: -1.0 / ((1.0 + a) * (1.0 + a)),
    "expm1": lambda a: _unary("exp", a),
    "log2": lambda a: -1.0 / (a * a * math.log(2.0)),
    "log10": lambda a: -1.0 / (a * a * math.log(10.0)),
    "exp2": lambda a: _unary("exp2", a) * math.log(2.0) ** 2,
    "rsqrt": lambda a: 0.75 * _unary("rsqrt", a) / (a * a),
    "square": lambda a: a * 0.0 + 2.0,
    "erf": _erf_2,
    "sign": None,
    "floor": None,
    "ceil": None,
    "round": None,
    "trunc": None,
    "frac": None,
}


def second_derivative(function: type[Elementwise], a: Tensor) -> Tensor | None:
    """f''(a) of the Elementwise Function `function`, recorded; None where it is zero."""
    name = ops.OP_TABLE[function.op].name
    if name not in SECOND_DERIVATIVES:
        raise RuntimeError(
            f"{function.__name__}Backward: minifw has no second derivative of '{name}', so "
            f"create_graph=True cannot differentiate its gradient (add it to "
            f"higher_order.SECOND_DERIVATIVES)"
        )
    rule = SECOND_DERIVATIVES[name]
    return None if rule is None else rule(a)


class ElementwiseBackward(Function):
    """grad * f'(a) for an Elementwise Function f, as a node with gradients itself.

    Its value is the one the fast backward computes (the op's `back` rule), so a
    first-order gradient does not change when `create_graph` is on.
    """

    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, a: Tensor, grad: Tensor, function: type[Elementwise]
    ) -> Tensor:
        """One zip of the op's derivative rule over a and grad."""
        ctx.save_for_backward(a, grad)
        ctx.function = function
        return a._zip(function.back, grad)

    @staticmethod
    def backward(ctx: FunctionCtx, gg: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        """d/da = gg * grad * f''(a); d/dgrad = gg * f'(a) (this node again)."""
        a, grad = ctx.saved_tensors
        need_a, need_grad, _ = ctx.needs_input_grad
        grad_a = grad_grad = None
        if need_a:
            curvature = second_derivative(ctx.function, a)
            grad_a = a._zeros(a.shape) if curvature is None else gg * grad * curvature
        if need_grad:
            grad_grad = ElementwiseBackward.apply(a, gg, ctx.function)
        return grad_a, grad_grad, None

    backward_graph = backward  # made of recorded steps


class LinearBackward(Function):
    """The backward of an op linear in one input, as a node.

    `backward(fn_ctx, grad)` is that op's own (fast) backward, whose first result is
    kept; `again(g)` is the op itself, applied as a Function: the backward of a
    linear map's backward is the map.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx,
        grad: Tensor,
        backward: Callable[..., Any],
        fn_ctx: FunctionCtx,
        again: Callable[[Tensor], Tensor],
    ) -> Tensor:
        """The op's backward applied to grad."""
        ctx.again = again
        grads = backward(fn_ctx, grad)
        out: Tensor = grads[0] if isinstance(grads, tuple) else grads
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, gg: Tensor) -> tuple[Tensor, None, None, None]:
        """The op applied to gg."""
        return ctx.again(gg), None, None, None

    backward_graph = backward  # `again` applies a Function


# ---- Powers with tensor exponents -------------------------------------------------------


def tensor_power(base: Tensor, exponent: Tensor) -> Tensor:
    """The power base ** exponent for two tensors (broadcasting), differentiable in both.

    Integer operands stay integer (computed exactly on the host, as `Tensor._int_pow`);
    otherwise both are promoted as for `+` and one POW zip computes the result.
    """
    a, b = base._pair(exponent)
    if a.dtype.is_floating_point:
        return PowTensor.apply(a, b)
    if a.dtype.name == "bool":
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    return a._int_pow(b)


def number_power(base: Any, exponent: Tensor) -> Tensor:
    """The power number ** tensor, as PyTorch: any real base (negative and zero included).

    The base is a constant; the exponent gets the gradient base^e * log(base) (0 where
    the base is 0 and e >= 0, nan for a negative base).
    """
    if not isinstance(base, bool | int | float) and not _is_numpy_number(base):
        raise TypeError(
            f"unsupported operand type(s) for ** or pow(): '{type(base).__name__}' and 'Tensor'"
        )
    return tensor_power(exponent._operand(base), exponent)


def _is_numpy_number(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.ndim == 0


# ---- The engine ----------------------------------------------------------------------------


def graph_backward(fn: type[Function]) -> Callable[..., Any]:
    """The backward to run under create_graph: `backward_graph`, or a user's `backward`.

    minifw's own Functions without a `backward_graph` raise: their backward runs raw
    launches, whose result would be a silently constant gradient.
    """
    recorded = getattr(fn, "backward_graph", None)
    if recorded is not None:
        return recorded  # type: ignore[no-any-return]
    if fn.__module__.startswith("minifw."):
        name = getattr(fn, "node_name", fn.__name__)
        raise RuntimeError(
            f"{name}Backward does not support create_graph=True: minifw cannot "
            f"differentiate the gradient of '{name}' again (it has no backward_graph)"
        )
    return fn.backward


def graph_chain_rule(
    fn: type[Function], ctx: FunctionCtx, inputs: Sequence[Any], grad: Tensor
) -> list[tuple[Any, Tensor]]:
    """Like `Function.chain_rule`, but recording the backward so it can be differentiated."""
    ctx.check_alive()
    backward = graph_backward(fn)
    ctx.graph_inputs = tuple(inputs)
    try:
        with enable_grad():
            if anyone_listening[0]:
                grads = hooks.run_function(fn.__name__, "backward", backward, ctx, grad)
            else:
                grads = backward(ctx, grad)
            return _paired(fn.__name__, inputs, grads)
    finally:
        del ctx.graph_inputs


def _paired(name: str, inputs: Sequence[Any], grads: Any) -> list[tuple[Any, Tensor]]:
    """Each input needing a gradient with its gradient, shaped and typed like the input."""
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != len(inputs):
        raise RuntimeError(
            f"function {name}Backward returned an incorrect number of gradients (expected "
            f"{len(inputs)}, got {len(grads)})"
        )
    pairs = []
    for i, (value, g) in enumerate(zip(inputs, grads, strict=True)):
        if g is None or not is_tensor(value) or not value.requires_grad:
            continue
        if not is_tensor(g):
            raise TypeError(f"{name}.backward must return Tensors or None")
        if g.shape != value.shape:
            _check_grad_shape(name, i, g.shape, value.shape)
            g = sum_to_shape(g, value.shape)
        pairs.append((value, g if g.dtype is value.dtype else g.to(value.dtype)))
    return pairs


def _graph_order(roots: Sequence[Tensor]) -> list[Tensor]:
    """Every non-constant tensor the roots depend on, each after all tensors made from it."""
    post: list[Tensor] = []
    visited: set[int] = set()
    for root in roots:
        stack: list[tuple[Tensor, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                post.append(node)
                continue
            if id(node) in visited or node.is_constant():
                continue
            visited.add(id(node))
            stack.append((node, True))
            if node.history is not None:
                stack.extend((p, False) for p in node.parents if id(p) not in visited)
    post.reverse()
    return post


def _leading_to(order: list[Tensor], targets: set[int]) -> set[int]:
    """Ids of the nodes of `order` from which some target can be reached (targets too)."""
    reach = set()
    for node in reversed(order):  # inputs of an op come before the op here
        if id(node) in targets or (
            node.history is not None and any(id(p) in reach for p in node.parents)
        ):
            reach.add(id(node))
    return reach


class _Run:
    """One backward pass: where gradients go, and which path computes them."""

    def __init__(
        self, inputs: Sequence[Tensor] | None, capture: bool, retain: bool, create: bool
    ) -> None:
        self.targets = None if inputs is None else {id(t) for t in inputs}
        self.capture, self.retain, self.create = capture, retain, create
        self.captured: dict[int, Tensor] = {}
        self.reach: set[int] | None = None

    def add(self, mine: Any, theirs: Any) -> Any:
        """The sum of two gradients of one tensor."""
        if self.create:
            with enable_grad():
                return mine + theirs
        return (mine if isinstance(mine, Gradient) else Gradient(mine)) + theirs

    def store(self, node: Tensor, grad: Tensor) -> None:
        """Add `grad` (hooks already run) to `node.grad`, recorded under create_graph."""
        if not self.create:
            node._accumulate(grad)
            return
        with enable_grad():
            old = node._grad
            node._grad = Copy.apply(grad) if old is None else old + grad

    def leaf(self, node: Tensor, grad: Any) -> None:
        """Hand a leaf's total gradient to the caller or to its `.grad`."""
        if not self.capture and not self.create:
            node.accumulate_derivative(grad)  # hooks, and `.grad` kept uncopied when owned
            return
        tensor = node._run_hooks(grad.tensor if isinstance(grad, Gradient) else grad)
        if self.capture:
            self.captured[id(node)] = tensor
        else:
            self.store(node, tensor)

    def step(self, node: Tensor, grad: Any) -> list[tuple[Any, Any]]:
        """Run a non-leaf's hooks and backward; return its inputs with their gradients."""
        tensor = node._run_hooks(grad.tensor if isinstance(grad, Gradient) else grad)
        target = self.targets is not None and id(node) in self.targets
        if self.capture and target:
            self.captured[id(node)] = tensor
        if (target and not self.capture) or node._retains_grad:
            self.store(node, tensor)
        h = node.history
        assert h is not None and isinstance(h.ctx, FunctionCtx)
        inputs = recorded_inputs(h)
        if self.reach is not None and not any(
            is_tensor(x) and id(x) in self.reach for x in inputs
        ):
            return []  # nothing wanted lies further back
        if self.create:
            pairs: list[tuple[Any, Any]] = graph_chain_rule(h.last_fn, h.ctx, inputs, tensor)
        else:
            fast = h.last_fn.chain_rule(h.ctx, inputs, tensor)
            pairs = list(owned_gradients(h, inputs, tensor, fast))
        if not self.retain:
            h.ctx.release()
        return pairs


def run_backward(
    roots: Sequence[Tensor],
    seeds: Sequence[Tensor],
    inputs: Sequence[Tensor] | None = None,
    retain_graph: bool = False,
    create_graph: bool = False,
    capture: bool = False,
) -> list[Tensor | None]:
    """Backpropagate `seeds` from `roots` at once (each root visited once, in order).

    With `capture`, the gradients of `inputs` are returned (None for unreached ones) and
    no `.grad` changes; without, they accumulate into `.grad` of `inputs` (of every leaf,
    and retained non-leaf, when `inputs` is None). With `create_graph` each backward step
    is recorded, so the gradients themselves require grad.
    """
    run = _Run(inputs, capture, retain_graph, create_graph)
    order = _graph_order(roots)
    reach = run.reach = None if run.targets is None else _leading_to(order, run.targets)
    grads: dict[int, Any] = {}
    for root, seed in zip(roots, seeds, strict=True):
        key = id(root)
        grads[key] = run.add(grads[key], seed) if key in grads else seed
    for node in order:
        grad = grads.pop(id(node), None)
        if grad is None or (reach is not None and id(node) not in reach):
            continue
        if node.history is None:
            run.leaf(node, grad)
            continue
        for parent, g in run.step(node, grad):
            if parent.is_constant() or (reach is not None and id(parent) not in reach):
                continue
            key = id(parent)
            grads[key] = run.add(grads[key], g) if key in grads else g
    return [run.captured.get(id(t)) for t in inputs or ()]


def engine(*args: Any, **kwargs: Any) -> list[Tensor | None]:
    """`run_backward`, announced to the tools (core/hooks.py) when one listens."""
    if anyone_listening[0]:
        return hooks.run_backward(lambda: run_backward(*args, **kwargs))
    return run_backward(*args, **kwargs)


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
                    f"shape {out.shape}; pass a gradient for it or reduce it first, e.g. .sum())"
                )
            g = out._full(out.shape, 1.0)
        else:
            g = out._operand(g)
            g = g if create_graph else g.detach()
            if g.shape != out.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                    f"output[{i}] has a shape of {out.shape}."
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
    found = engine(outs, seeds, ins, retain, create_graph, capture=True)
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
    """
    outs = as_tensor_list(tensors, "autograd.backward tensors")
    ins = None
    if inputs is not None:
        ins = as_tensor_list(inputs, "backward inputs")
        if not ins:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    seeds = seeds_for(outs, grad_tensors, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    engine(outs, seeds, ins, retain, create_graph, capture=False)
