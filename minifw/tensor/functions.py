"""Autograd Functions on tensors: each op's forward and backward, side by side.

Forwards act only through their inputs' methods (`_map`, `_zip`, `_reduce`, views),
so this file never imports `tensor.py`. Backwards are written in tensor operations
(`grad * b`): run under no_grad they launch plain kernels, and under `create_graph`
they are recorded, so gradients can be differentiated again. `Function.apply` runs
forward without recording, then attaches a `History` to the output if any input
needs a gradient. Backward returns one gradient per forward argument (None for plain
values); `sum_to_shape` then folds each back to its input's shape, the one place
where gradients of broadcast operands are un-broadcast. Layout Functions (view,
permute, indexing, cat, where) and reductions (sum, max) follow the arithmetic ones.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.autodiff import Context, History, _grad_mode, enable_grad
from minifw.core.hooks import anyone_listening
from minifw.core.tensor_data import index_view

if TYPE_CHECKING:
    from minifw.tensor.tensor import Tensor


def is_tensor(value: Any) -> bool:
    """True for a minifw Tensor (checked by a class flag, so no import of tensor.py)."""
    return getattr(value, "_is_minifw_tensor", False) is True


def view_history(t: Tensor) -> History | None:
    """The history of `t`, a view, first replayed on its source if that changed in place.

    A view shares its source's cells, so an in-place op on the source changes the view
    too: as in PyTorch, the view's gradient then flows through the source's new
    history (the view op is applied again to the source as it is now). Uses of the
    view made before keep the old history (`_retire_history`).
    """
    history = t.history
    if history is None or not isinstance(history.ctx, FunctionCtx):
        return history
    seen = history.ctx.input_histories
    args = history.inputs
    for i, source in enumerate(args):
        if is_tensor(source) and source._data.version is t._data.version and i < len(seen):
            now = source.history if source._base is None else view_history(source)
            if now is seen[i]:
                return history
            t._retire_history()
            with enable_grad():
                fresh = history.last_fn.apply(*args)
            t._attach(fresh.history)
            return fresh.history  # type: ignore[no-any-return]
    return history


class FunctionCtx(Context):
    """The `ctx` of a Function: saved tensors plus which inputs need a gradient.

    Saved tensors remember their version; if one is modified in place before
    backward, reading it raises PyTorch's error instead of giving a wrong gradient.
    `input_histories` records each input's history when the op ran, so a later
    in-place op on an input cannot redirect this node to the input's new history.
    A Function may save its own output (softmax does): the ctx then holds it weakly,
    since the output holds the ctx through its history.
    """

    __slots__ = ("needs_input_grad", "input_histories", "_versions", "_output", "__dict__")

    def __init__(self) -> None:
        self.saved_values: tuple[Any, ...] = ()  # Context's fields, set here: made per op
        self._freed = False
        self.needs_input_grad: tuple[bool, ...] = ()
        self.input_histories: tuple[History | None, ...] = ()
        self._versions: tuple[int, ...] = ()
        self._output: tuple[int, weakref.ref[Any]] | None = None

    if TYPE_CHECKING:  # Functions keep plain values on ctx too (ctx.dim = ...)

        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def save_for_backward(self, *values: Any) -> None:
        """Keep `values` (and their versions) for the backward pass; None is allowed."""
        self.saved_values = values
        self._versions = tuple(getattr(v, "_version", 0) for v in values)

    def hold_output_weakly(self, out: Any) -> None:
        """If `out` (the recorded output) is among the saved values, keep it by weak reference."""
        for i, value in enumerate(self.saved_values):
            if value is out:
                self._output = (i, weakref.ref(out))
                self.saved_values = self.saved_values[:i] + (None,) + self.saved_values[i + 1 :]
                return

    @property
    def saved_tensors(self) -> tuple[Tensor, ...]:
        """The saved tensors; raises if the graph was freed or one was modified in place."""
        self.check_alive()
        values = self.saved_values
        if self._output is not None:  # the output: alive, as the graph being run holds it
            at, ref = self._output
            values = values[:at] + (ref(),) + values[at + 1 :]
        for i, (value, version) in enumerate(zip(values, self._versions, strict=True)):
            if getattr(value, "_version", 0) != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: saved tensor {i} of shape {tuple(value.shape)} is "
                    f"at version {value._version}; expected version {version} instead."
                )
        return values


class Function:
    """An operation with a forward and a backward; subclasses define both.

    Subclass with static `forward(ctx, *args)` and `backward(ctx, grad_output)` and
    call `.apply(*args)`, as with `torch.autograd.Function`. Backward is written in
    tensor operations (`grad * b`, `Where.apply(...)`): the engine runs it under the
    grad mode of the pass, so the same code runs plain kernels for an ordinary
    backward and records a graph, which can be differentiated again, under
    `create_graph=True`.

    `fresh_grads = True` promises that backward returns only tensors it computed with
    its own launches, the incoming gradient, or views of that gradient, of the inputs
    or of saved tensors, and keeps no reference to them: a leaf may then keep a fresh
    gradient as its `.grad` uncopied (see `tensor_autograd.owned_gradients`).

    `once_differentiable = True` marks a backward that cannot be recorded (it runs its
    own backward pass, say): `create_graph=True` through it raises instead of giving a
    silently constant gradient.
    """

    fresh_grads: bool = False
    once_differentiable: bool = False

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        """Compute the result from the inputs, saving in `ctx` what backward needs."""
        raise NotImplementedError(f"{type(ctx).__name__}: a Function must define forward")

    @staticmethod
    def backward(ctx: FunctionCtx, grad_output: Any) -> Any:
        """Return d(loss)/d(input) for each forward argument, given d(loss)/d(output)."""
        raise NotImplementedError("a Function must define backward to be differentiated")

    @classmethod
    def apply(cls, *args: Any) -> Tensor:
        """Run forward; record the op for autograd when an input requires grad."""
        ctx = FunctionCtx()
        mode = _grad_mode.enabled
        recording = False
        if mode:
            needs: list[bool] = []
            histories: list[History | None] = []
            for a in args:
                if getattr(a, "_is_minifw_tensor", False) is True:
                    history = a.history if a._base is None else view_history(a)
                    needs.append(history is not None or a._requires_grad)
                    histories.append(history)
                else:
                    needs.append(False)
                    histories.append(None)
            ctx.needs_input_grad = tuple(needs)
            ctx.input_histories = tuple(histories)
            recording = True in needs
        else:  # nothing is recorded, so no input needs a gradient here
            ctx.needs_input_grad = (False,) * len(args)
        _grad_mode.enabled = False
        try:
            if anyone_listening[0]:  # a tool watches (core/hooks.py): tell it which Function
                out = hooks.run_function(cls.__name__, "forward", cls.forward, ctx, *args)
            else:
                out = cls.forward(ctx, *args)
        finally:
            _grad_mode.enabled = mode
        if getattr(out, "_is_minifw_tensor", False) is not True:
            raise TypeError(
                f"{cls.__name__}.forward must return one Tensor, got {type(out).__name__}"
            )
        for a in args:
            if out is a:
                out = out._alias()  # never rewrite an input's own history
                break
        if recording:
            out._attach(History(cls, ctx, args))
            for value in ctx.saved_values:
                if value is out:  # a Function that saves its own output (softmax)
                    ctx.hold_output_weakly(out)
                    break
        return out  # type: ignore[no-any-return]

    @classmethod
    def chain_rule(
        cls, ctx: FunctionCtx, inputs: Sequence[Any], grad: Tensor
    ) -> list[tuple[Any, Tensor]]:
        """Pair each input that requires grad with its gradient, shaped like the input.

        Backward runs under the caller's grad mode: recorded under `create_graph`.
        """
        ctx.check_alive()
        if cls.once_differentiable and _grad_mode.enabled:
            name = getattr(cls, "node_name", cls.__name__)
            raise RuntimeError(
                f"{name}Backward does not support create_graph=True: its backward cannot be "
                f"recorded, so the gradient of '{name}' cannot be differentiated again"
            )
        if anyone_listening[0]:
            grads = hooks.run_function(cls.__name__, "backward", cls.backward, ctx, grad)
        else:
            grads = cls.backward(ctx, grad)
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(inputs):
            raise RuntimeError(
                f"function {cls.__name__}Backward returned an incorrect number of "
                f"gradients (expected {len(inputs)}, got {len(grads)})"
            )
        pairs = []
        for i, (value, g) in enumerate(zip(inputs, grads, strict=True)):
            if g is None or not is_tensor(value) or not value.requires_grad:
                continue
            if not is_tensor(g):
                raise TypeError(f"{cls.__name__}.backward must return Tensors or None")
            if g.shape != value.shape:
                _check_grad_shape(cls.__name__, i, g.shape, value.shape)
                g = sum_to_shape(g, value.shape)
            pairs.append((value, g if g.dtype is value.dtype else g.to(value.dtype)))
        return pairs


def _check_grad_shape(name: str, i: int, got: tuple[int, ...], want: tuple[int, ...]) -> None:
    extra = len(got) - len(want)
    if extra < 0 or any(w not in (1, g) for g, w in zip(got[extra:], want, strict=True)):
        raise RuntimeError(
            f"Function {name}Backward returned an invalid gradient at index {i} - got "
            f"{list(got)} but expected shape compatible with {list(want)}"
        )


# BEGIN TASK 2.4


def sum_to_shape(grad: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum `grad` over the dims that broadcasting added or stretched; return it in `shape`.

    Leading dims that `shape` lacks and dims where `shape` has size 1 but `grad` not
    are summed; the result is reshaped to `shape`.
    """
    if grad.shape == shape:
        return grad
    extra = grad.dim() - len(shape)
    dims = list(range(extra))
    dims += [extra + i for i, s in enumerate(shape) if s == 1 and grad.shape[extra + i] != 1]
    if dims:
        grad = grad.sum(dim=tuple(dims), keepdim=True)
    return grad.reshape(shape)


# END TASK 2.4


class Elementwise(Function):
    """f(a) cell by cell for a unary op `op` of the op table; `gradient` is the row's.

    One subclass per differentiable unary row of `operators.OP_TABLE` is made below
    (named like PyTorch's op: its grad_fn reads "ExpBackward"), with the row's gradient
    rule: adding an op needs no edit here. Tensor methods call them through
    `elementwise(op, a)`.
    """

    fresh_grads = True

    op: int = ops.ID
    back: int = ops.ID

    # BEGIN TASK 2.3
    @classmethod
    def forward(cls, ctx: FunctionCtx, a: Tensor) -> Tensor:  # type: ignore[override]
        """Return f(a) cell by cell: one map of `cls.op` over a; save a for backward."""
        ctx.save_for_backward(a)
        return a._map(cls.op)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @classmethod
    def backward(cls, ctx: FunctionCtx, grad: Tensor) -> Tensor:  # type: ignore[override]
        """Return grad * f'(a): the op's rule `cls.gradient(a, grad)`, made of tensor ops."""
        (a,) = ctx.saved_tensors
        return cls.gradient(a, grad)

    # END TASK 2.4

    @staticmethod
    def gradient(a: Tensor, grad: Tensor) -> Tensor:
        """Return grad * f'(a) in tensor operations (each subclass has its op's rule)."""
        raise NotImplementedError("an Elementwise Function needs its op's gradient rule")


class KernelGradient(Function):
    """grad * f'(a) in one launch of the op table's derivative kernel `back`.

    For the ops whose derivative is constant almost everywhere (relu, abs, sign, floor,
    ...): the result is linear in grad, and its derivative in `a` is zero, so its own
    backward is this node again.
    """

    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, a: Tensor, grad: Tensor, back: int
    ) -> Tensor:
        """One zip of `back` over a and grad."""
        ctx.save_for_backward(a)
        ctx.back = back
        return a._zip(back, grad)

    @staticmethod
    def backward(ctx: FunctionCtx, gg: Tensor) -> tuple[None, Tensor, None]:
        """Nothing for a (f'' is 0 almost everywhere); back(a, gg) for grad."""
        (a,) = ctx.saved_tensors
        return None, KernelGradient.apply(a, gg, ctx.back), None


def _kernel_rule(back: int) -> ops.GradientRule:
    def rule(a: Any, g: Any) -> Any:
        return KernelGradient.apply(a, g, back)

    return rule


def _elementwise_function(row: ops.OpRow) -> type[Elementwise]:
    """The Elementwise Function of one differentiable unary row, named `row.title`.

    Its gradient is the row's: grad * f'(a) in tensor operations (recorded under
    create_graph), or, for a row marked KERNEL, one launch of its derivative kernel.
    """
    back = ops.DERIVATIVES[row.code]
    rule = _kernel_rule(back) if row.gradient == ops.KERNEL else row.gradient
    assert callable(rule), f"row {row.name!r}: the op table checks its gradient"
    how = f"{ops.BINARY_NAMES[back]}(a, grad)" if row.gradient == ops.KERNEL else "its row's"
    doc = f"{row.name}(a) cell by cell; its gradient is {how}."
    attributes = {"op": row.code, "back": back, "gradient": staticmethod(rule), "__doc__": doc}
    function = type(row.title, (Elementwise,), attributes)
    function.__module__ = __name__
    return function


# Unary op code -> its autograd Function: one per row of the table that has a derivative.
ELEMENTWISE: dict[int, type[Elementwise]] = {
    code: _elementwise_function(ops.OP_TABLE[code]) for code in ops.DERIVATIVES
}


def elementwise(op: int, a: Tensor) -> Tensor:
    """Apply the differentiable unary op `op` to every cell of `a`, recorded for autograd."""
    function = ELEMENTWISE.get(op)
    if function is None:
        raise ValueError(f"op code {op!r} is not a differentiable unary op of OP_TABLE")
    return function.apply(a)


class Neg(Function):
    """-a."""

    fresh_grads = True

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        """Return -a: one map of the NEG op."""
        return a._map(ops.NEG)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        """Return -grad."""
        return -grad

    # END TASK 2.4


class Add(Function):
    """a + b (broadcasting)."""

    fresh_grads = True

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """Return a + b: one zip of the ADD op (a and b broadcast)."""
        return a._zip(ops.ADD, b)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
        """Return (grad, grad): it flows unchanged to both (`chain_rule` un-broadcasts)."""
        return grad, grad

    # END TASK 2.4


class Sub(Function):
    """a - b (broadcasting)."""

    fresh_grads = True

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """Return a - b: one zip of the SUB op (a and b broadcast)."""
        return a._zip(ops.SUB, b)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
        """Return (grad, -grad)."""
        return grad, -grad

    # END TASK 2.4


class Mul(Function):
    """a * b (broadcasting)."""

    fresh_grads = True

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """Return a * b (one zip of MUL); save each operand only if the other needs its grad."""
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        return a._zip(ops.MUL, b)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """Return grad * b and grad * a."""
        a, b = ctx.saved_tensors
        return (
            grad * b if b is not None else None,
            grad * a if a is not None else None,
        )

    # END TASK 2.4


class Div(Function):
    """a / b (broadcasting)."""

    fresh_grads = True

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """Return a / b (one zip of DIV); save b, and a only if b needs its gradient."""
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        return a._zip(ops.DIV, b)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """Return grad / b and -grad * a / b^2."""
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad / b if need_a else None
        grad_b = -(grad * a) / (b * b) if need_b else None
        return grad_a, grad_b

    # END TASK 2.4


class Pow(Function):
    """a ** p for a number p."""

    fresh_grads = True

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, p: float) -> Tensor:
        """Return a ** p: one zip of POW with p as a 0-dim tensor (`a._scalar_like(p)`).

        Save a and p (as `ctx.p`) for backward.
        """
        ctx.save_for_backward(a)
        ctx.p = p
        return a._zip(ops.POW, a._scalar_like(p))

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Return grad * p * a^(p - 1) (0 when p is 0)."""
        (a,) = ctx.saved_tensors
        p = ctx.p
        if p == 0:
            return grad * 0.0, None
        return grad * (a ** (p - 1) * p), None

    # END TASK 2.4


class PowTensor(Function):
    """a ** b for two tensors (broadcasting), with a gradient for each side."""

    node_name = "Pow"

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """One zip of POW; save both operands."""
        ctx.save_for_backward(a, b)
        return a._zip(ops.POW, b)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """Grad * b * a^(b - 1) (0 where b is 0) and grad * a^b * log(a) (0 where a is 0 <= b).

        PyTorch's values at the edges: a zero base with a non-negative exponent has no
        exponent gradient, a zero exponent gives no base gradient.
        """
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        zero = grad._scalar_like(0)
        grad_a = grad_b = None
        if need_a:
            grad_a = Where.apply(b.detach() == 0, zero, grad * (b * a ** (b - 1)))
        if need_b:
            flat = (a.detach() == 0) & (b.detach() >= 0)
            grad_b = Where.apply(flat, zero, grad * (a**b * a.log()))
        return grad_a, grad_b


class MatMul(Function):
    """a @ b with PyTorch's 1-D, 2-D and batched rules."""

    fresh_grads = True

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        """Return a @ b from the backend's `matmul` launcher on the operands' `_data`.

        Save each operand only if the other one needs its gradient, and both dims.
        """
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        ctx.dims = (a.dim(), b.dim())
        return a._new(a.backend.matmul(a._data, b._data))

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """Return grad @ b^T and a^T @ grad, on the operands promoted to at least 2-D."""
        a, b = ctx.saved_tensors
        a_dim, b_dim = ctx.dims
        if a_dim == 1 and b_dim == 1:
            g = grad.reshape(1, 1)
        else:
            g = grad.unsqueeze(-2) if a_dim == 1 else grad
            g = g.unsqueeze(-1) if b_dim == 1 else g
        grad_a = grad_b = None
        if b is not None:
            b2 = b.unsqueeze(-1) if b_dim == 1 else b
            grad_a = g @ b2.transpose(-1, -2)
            grad_a = grad_a.squeeze(-2) if a_dim == 1 else grad_a
        if a is not None:
            a2 = a.unsqueeze(0) if a_dim == 1 else a
            grad_b = a2.transpose(-1, -2) @ g
            grad_b = grad_b.squeeze(-1) if b_dim == 1 else grad_b
        return grad_a, grad_b

    # END TASK 2.4


class Adjoint(Function):
    """The backward of an op linear in its input, as a node that can be differentiated.

    `kernel(grad)` computes the backward (raw launches: one fused kernel, a scatter);
    `again(gg)` applies the op itself, which is the backward of that backward: the
    adjoint of a linear map's adjoint is the map.
    """

    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx,
        grad: Tensor,
        kernel: Callable[[Tensor], Tensor],
        again: Callable[[Tensor], Tensor],
    ) -> Tensor:
        """The op's backward applied to grad."""
        ctx.again = again
        return kernel(grad)

    @staticmethod
    def backward(ctx: FunctionCtx, gg: Tensor) -> tuple[Tensor, None, None]:
        """The op applied to gg."""
        return ctx.again(gg), None, None


# ---- Views and copies ----------------------------------------------------------------------


VIEW_ERROR = (
    "view size is not compatible with input tensor's size and stride (at least one "
    "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
)


class View(Function):
    """The same cells under a new shape (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A view with `shape`; strides must allow it."""
        ctx.shape = a.shape
        view = a._data.view(shape)
        if view is None:
            raise RuntimeError(
                f"{VIEW_ERROR} (input shape {tuple(a.shape)}, strides {a.stride()}, "
                f"requested shape {shape})"
            )
        return a._view_of(view)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Grad reshaped back."""
        return grad.reshape(ctx.shape), None


class Permute(Function):
    """Dims reordered (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, order: tuple[int, ...]) -> Tensor:
        """New dim i is old dim order[i]."""
        ctx.order = order
        return a._view_of(a._data.permute(*order))

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Return grad permuted by the inverse of `ctx.order`, and None for the order."""
        inverse = [0] * len(ctx.order)
        for i, d in enumerate(ctx.order):
            inverse[d % len(inverse)] = i
        return grad.permute(*inverse), None

    # END TASK 2.4


class Expand(Function):
    """Size-1 dims repeated by stride 0 (no copy)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A broadcast view."""
        return a._view_of(a._data.expand(shape))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """grad, summed back to the input's shape by `chain_rule`."""
        return grad, None


class Index(Function):
    """a[key] for ints, slices, None and Ellipsis (a view)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, key: Any) -> Tensor:
        """The indexed view."""
        ctx.shape, ctx.key = a.shape, key
        return a._view_of(index_view(a._data, key))

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None]:
        """Grad written into the indexed cells of zeros (its own gradient: grad[key])."""
        out = grad._zeros(ctx.shape)
        out[ctx.key] = grad
        return out, None


class Copy(Function):
    """A contiguous copy."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        """Row-major copy of a."""
        return a._copy()

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        """Grad unchanged."""
        return grad


class Cast(Function):
    """a converted to another dtype or backend/device."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dtype: Any, backend: Any) -> Tensor:
        """The converted copy."""
        ctx.dtype, ctx.backend = a.dtype, a.backend
        return a._convert(dtype, backend)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Grad converted back."""
        return Cast.apply(grad, ctx.dtype, ctx.backend), None, None


class Cat(Function):
    """Tensors joined along `dim`."""

    @staticmethod
    def forward(ctx: FunctionCtx, dim: int, *tensors: Tensor) -> Tensor:
        """Copy each tensor into its slice of the output."""
        first = tensors[0]
        sizes = [t.shape[dim] for t in tensors]
        ctx.dim, ctx.sizes = dim, sizes
        shape = first.shape[:dim] + (sum(sizes),) + first.shape[dim + 1 :]
        out = first._empty(shape)
        start = 0
        for t, size in zip(tensors, sizes, strict=True):
            part = out._data.narrow(dim, slice(start, start + size))
            out.backend.copy_into(part, t._data)
            start += size
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Any, ...]:
        """Each input gets its slice of grad."""
        grads: list[Any] = [None]
        start = 0
        for size in ctx.sizes:
            grads.append(
                Index.apply(grad, (slice(None),) * ctx.dim + (slice(start, start + size),))
            )
            start += size
        return tuple(grads)


class Where(Function):
    """a where cond != 0 else b (broadcasting)."""

    @staticmethod
    def forward(ctx: FunctionCtx, cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
        """Pick a's cell where cond is nonzero, else b's (no 0 * inf surprises)."""
        mask = cond._zip(ops.NE, cond._scalar_like(0))
        ctx.save_for_backward(mask)
        return a._select_where(mask, b)

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[None, Tensor, Tensor]:
        """Return (None, grad where cond holds else 0, 0 where cond holds else grad)."""
        (mask,) = ctx.saved_tensors
        zero = grad._scalar_like(0)
        return None, Where.apply(mask, grad, zero), Where.apply(mask, zero, grad)

    # END TASK 2.4


# ---- Reductions ----------------------------------------------------------------------------


def _drop_dims(t: Tensor, dims: tuple[int, ...]) -> Tensor:
    """A view of contiguous `t` without `dims` (each of size 1)."""
    view = t._data.view(tuple(size for i, size in enumerate(t.shape) if i not in dims))
    assert view is not None, "reduction outputs are contiguous"
    return t._new(view)


class Sum(Function):
    """Sum over `dims`; they stay with size 1 if `keepdim`, else they are dropped."""

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
        """Return the sum over `dims`: one ADD reduce per dim, each leaving size 1 there.

        Drop the summed dims unless `keepdim` (`_drop_dims`); never return `a` itself (a
        sum over no dims is a copy). Save the input and the kept shapes for backward.
        """
        ctx.shape = a.shape
        out = a
        for d in dims:
            out = out._reduce(ops.ADD, d)
        out = out if out is not a else a._copy()
        ctx.kept = out.shape
        return out if keepdim else _drop_dims(out, dims)

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Return grad reshaped to the kept shape and expanded back to the input's shape."""
        return grad.reshape(ctx.kept).expand(*ctx.shape), None, None

    # END TASK 2.4


class MaxAlong(Function):
    """The values of `a` at `indices` along `dim` (the max), with PyTorch's keepdim."""

    node_name = "Max"

    # BEGIN TASK 2.3
    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, dim: int, indices: Tensor, keepdim: bool) -> Tensor:
        """Return the max along `dim`: one MAX reduce, dropping `dim` unless `keepdim`.

        Save a and `indices` (where the max is, computed by the caller) for backward.
        """
        ctx.save_for_backward(a, indices)
        ctx.dim = dim
        out = a._reduce(ops.MAX, dim)
        return out if keepdim else _drop_dims(out, (dim,))

    # END TASK 2.3

    # BEGIN TASK 2.4
    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None]:
        """Return grad at the max's index along dim, 0 elsewhere (`a._one_hot_along`)."""
        a, indices = ctx.saved_tensors
        grad = grad.reshape(indices.shape)
        return grad * a._one_hot_along(ctx.dim, indices), None, None, None

    # END TASK 2.4


class MaxAll(Function):
    """The largest value of `a` (0-dim); ties share the gradient evenly, as in PyTorch."""

    node_name = "Max"

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        """Reduce with MAX over every cell."""
        out = a.contiguous()._flat()._reduce(ops.MAX, 0).view(())
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        """Grad / (number of maxima) at each maximum (at each nan if the max is nan)."""
        a, out = ctx.saved_tensors
        values = a.detach()
        mask = values == out.detach()
        if a.dtype.is_floating_point:  # a nan max: a holds nans, and only they count
            mask = mask | (values != values)
        return mask * (grad / mask.sum())
