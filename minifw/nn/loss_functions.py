"""Loss functions, as in `torch.nn.functional`, and the autograd Functions behind them.

mse_loss, nll_loss, cross_entropy, binary_cross_entropy, ...; the loss Modules that
call them are in losses.py.

Class-index targets pick one log-probability per sample with a 0/1 mask built on the
host by comparing the targets with `arange(C)` (a gather that every backend can run
and autograd differentiates); while `mf.compile` captures, kernels build that mask
where the targets lie, so that a replay reads no values on the host. Without class
weights, a "mean" or "sum" loss is one `MaskedSum` node: the mask holds -1 (or
-1/count) at each picked cell, so the loss is one product and one reduction.
`reduction` is "mean", "sum" or "none", as in PyTorch. On the fast backend, a small
batch's cross_entropy over class indices is `SoftmaxCrossEntropy`: one kernel forward and
one backward (`fast_paths/fused_loss.py`), where the composed ops take fourteen.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from minifw._jit import PARALLEL_FROM
from minifw.backends import fast_path
from minifw.core import hooks
from minifw.core import operators as ops
from minifw.core.tensor_data import TensorData
from minifw.nn.activation import log_softmax, logsigmoid, softmax
from minifw.tensor.creation import arange
from minifw.tensor.functions import Function, FunctionCtx, Where
from minifw.tensor.kernel_api import cells, flat, reduce_op, scalar, wrap, zip_op
from minifw.tensor.tensor import Tensor, tensor

REDUCTIONS = ("mean", "sum", "none")

# The one-kernel softmax cross-entropy is an expert fast path, reached through
# `fast_path("fused_loss")`: student repositories have no minifw/fast_paths/, and there
# cross_entropy is log_softmax then nll_loss, op by op.


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    """Apply `reduction` to per-element losses."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (mean, sum or none)")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:  # noqa: A002
    """(input - target)^2, reduced; shapes broadcast (with PyTorch's warning if they differ)."""
    _check_reduction(reduction)
    if input.shape != target.shape:
        warnings.warn(
            f"Using a target size ({tuple(target.shape)}) that is different to the input size "
            f"({tuple(input.shape)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=2,
        )
    diff = input - target
    return _reduce(diff * diff, reduction)


def _check_target_shape(input: Tensor, target: Tensor) -> None:  # noqa: A002
    """Raise unless `target` has `input`'s shape without the class dim."""
    expected = input.shape[:1] + input.shape[2:] if input.dim() > 1 else ()
    if target.shape != expected:
        raise ValueError(
            f"Expected target of shape {tuple(expected)} for input of shape "
            f"{tuple(input.shape)} (classes along dim {min(1, input.dim() - 1)}), got target "
            f"of shape {tuple(target.shape)}"
        )


class _ClassValues:
    """A check of class-index targets for an input of a given shape (a replay repeats it)."""

    def __init__(self, input: Tensor, target: Tensor, ignore_index: int) -> None:  # noqa: A002
        self.shape, self.target_dtype, self.target_shape = input.shape, target.dtype, target.shape
        self.classes = input.shape[1] if input.dim() > 1 else input.shape[0]
        self.ignore_index = ignore_index

    def __call__(self, values: np.ndarray) -> None:
        """Raise unless the host `values` are class indices (or ignored)."""
        if self.target_dtype.is_floating_point:
            if not np.all(values == np.round(values)):
                raise ValueError(
                    f"class-index targets must hold whole numbers (got a {self.target_dtype} "
                    f"target with fractional values, shape {self.target_shape})"
                )
        elif values.size and values.view(f"u{values.itemsize}").max() < self.classes:
            return  # one pass: read as unsigned, a negative index exceeds every class
        classes = self.classes
        if values.size and (values.min() < 0 or values.max() >= classes):
            bad = values[(values != self.ignore_index) & ((values < 0) | (values >= classes))]
            if bad.size:
                raise IndexError(
                    f"Target {int(bad.flat[0])} is out of bounds (expected 0 <= target < "
                    f"{classes} for input of shape {tuple(self.shape)})."
                )


def _class_indices(
    input: Tensor,  # noqa: A002
    target: Tensor,
    ignore_index: int,
) -> np.ndarray:
    """`target` checked against `input` (N, C, ...) and returned as host class indices."""
    _check_target_shape(input, target)
    values = target.detach().cpu().numpy()
    _ClassValues(input, target, ignore_index)(values)
    return values


def _check_classes(input: Tensor, target: Tensor, ignore_index: int) -> None:  # noqa: A002
    """Raise unless `target` holds class indices of `input`; a capture's replay checks too.

    While `mf.compile` captures, the check goes through `hooks.check`: the recorder
    makes it now and the replay repeats it on its own targets (no host read recorded).
    """
    _check_target_shape(input, target)
    if not hooks.recording():
        _class_indices(input, target, ignore_index)
        return
    hooks.check(cells(target), target.backend, _ClassValues(input, target, ignore_index))


def _picked_on_device(input: Tensor, target: Tensor, ignore_index: int) -> Tensor:  # noqa: A002
    """The bool mask of the cells nll_loss picks, computed by kernels where `target` lies.

    What `mf.compile` captures (no host read): the targets' values are only checked on
    the host (`hooks.check`), and a replay repeats that check on its own targets.
    """
    _check_classes(input, target, ignore_index)
    cls = 1 if input.dim() > 1 else 0
    shape = [1] * input.dim()
    shape[cls] = input.shape[cls]
    classes = arange(input.shape[cls], dtype=target.dtype, device=input.device).view(*shape)
    picked = target.unsqueeze(cls) if input.dim() > 1 else target.view(1)
    return (picked == classes) & (picked != ignore_index)


class MaskedSum(Function):
    """sum(x * mask) over every cell, for a constant mask: nll_loss's "mean" and "sum"."""

    node_name = "NllLoss"
    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, x: Tensor, mask: Tensor, empty: bool
    ) -> Tensor:
        """Picked cells times the mask, summed over its cells viewed 1-D; nan if `empty`.

        Cells the mask does not pick are read as 0 (SELECT), not multiplied by 0: a
        masked -inf logit would give -inf * 0 = nan.
        """
        ctx.mask = mask
        if empty:  # a mean over no targets, as PyTorch: nan (and zero gradients)
            return scalar(x, float("nan"))
        picked = zip_op(ops.SELECT, mask, x)
        total = reduce_op(ops.ADD, flat(zip_op(ops.MUL, picked, mask)), 0)
        cell = cells(total).view(())
        assert cell is not None
        return wrap(cell, total)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None]:
        """Grad * mask (the 0-dim grad broadcast over the mask)."""
        return grad * ctx.mask, None, None


class SoftmaxCrossEntropy(Function):
    """cross_entropy of (N, C) logits and int64 class indices in one kernel each way.

    `fast_paths/fused_loss.py` holds the kernels; `cross_entropy` picks this on the fast
    CPU backend for small contiguous float batches without class weights or label
    smoothing. Both kernels read and write tensor storage only (the labels stay where
    they are), so `mf.compile` records each as one step and replays it.
    """

    node_name = "NllLoss"
    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, x: Tensor, labels: Tensor, ignore_index: int, reduction: str
    ) -> Tensor:
        """The losses per row ("none"), their sum, or their mean over the rows not ignored."""
        rows, cols = x.shape
        stats = TensorData(np.empty(2 * rows + 2, x.dtype.numpy), (2 * rows + 2,))
        hooks.launch_fused(
            x.backend, "fused[cross_entropy]", (stats,), (cells(x), cells(labels)),
            _cross_entropy_forward(cols, ignore_index, reduction == "mean"), (ops.EXP,),
        )  # fmt: skip
        ctx.save_for_backward(x)
        ctx.labels, ctx.ignore_index = labels, ignore_index
        ctx.stats = wrap(stats, x)
        if reduction == "none":
            return wrap(TensorData(stats.base, (rows,), (1,), rows), x)
        return wrap(TensorData(stats.base, (), (), 2 * rows), x)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None]:
        """(softmax(x) - one_hot(labels)) times the incoming gradient of each row.

        One fused kernel, as a node of its own (`CrossEntropyGrad`).
        """
        (x,) = ctx.saved_tensors
        return CrossEntropyGrad.apply(x, grad, ctx), None, None, None


class CrossEntropyGrad(Function):
    """The gradient of `SoftmaxCrossEntropy` in its logits: one fused kernel, differentiable.

    Its backward, in tensor operations, serves gradients of gradients (create_graph).
    """

    node_name = "NllLossBackward"
    fresh_grads = True

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: FunctionCtx, x: Tensor, grad: Tensor, loss: FunctionCtx
    ) -> Tensor:
        """(softmax(x) * kept - one_hot(labels)) * scale * grad, in one kernel."""
        ctx.save_for_backward(x, grad)
        ctx.loss = loss
        rows, cols = x.shape
        out = TensorData(np.empty(rows * cols, x.dtype.numpy), (rows, cols))
        inputs = (cells(x), cells(loss.labels), cells(loss.stats), cells(grad))
        hooks.launch_fused(
            x.backend, "fused[cross_entropy_backward]", (out,), inputs,
            _cross_entropy_backward(cols, loss.ignore_index), (ops.EXP,),
        )  # fmt: skip
        return wrap(out, x)

    @staticmethod
    def backward(ctx: FunctionCtx, gg: Tensor) -> tuple[Tensor, Tensor, None]:
        """Softmax's Jacobian applied to gg * kept * scale * grad, and gg's share of grad."""
        x, grad = ctx.saved_tensors
        loss = ctx.loss
        rows, cols = x.shape
        classes = arange(cols, dtype=loss.labels.dtype, device=x.device)
        kept = (loss.labels != loss.ignore_index).unsqueeze(1).to(x.dtype)
        one_hot = (loss.labels.unsqueeze(1) == classes).to(x.dtype) * kept
        scale = loss.stats.detach()[2 * rows + 1]
        p = softmax(x, 1)
        weighted = (p * kept - one_hot) * scale * gg
        grad_grad = weighted.sum(1) if grad.dim() else weighted.sum()
        v = gg * kept * scale * (grad.reshape(rows, 1) if grad.dim() else grad)
        return p * (v - (v * p).sum(1, keepdim=True)), grad_grad, None


def _cross_entropy_forward(cols: int, ignore: int, mean: bool) -> Any:
    """The forward kernel as a function of (stats, x, labels) TensorData (a replay's too)."""
    kernels = fast_path("fused_loss")
    assert kernels is not None

    def run(stats: TensorData, x: TensorData, labels: TensorData) -> None:
        kernels.cross_entropy_forward(
            x.storage, cols, labels.base, labels.offset, labels.strides[0], ignore, mean,
            stats.storage,
        )  # fmt: skip

    return run


def _cross_entropy_backward(cols: int, ignore: int) -> Any:
    """The backward kernel as a function of (grad, x, labels, stats, g) TensorData."""
    kernels = fast_path("fused_loss")
    assert kernels is not None

    def run(
        out: TensorData, x: TensorData, labels: TensorData, stats: TensorData, g: TensorData
    ) -> None:
        kernels.cross_entropy_backward(
            x.storage, cols, labels.base, labels.offset, labels.strides[0], ignore,
            stats.storage, g.base, g.offset, g.strides[0] if g.shape else 0, out.storage,
        )  # fmt: skip

    return run


def _fused_cross_entropy_fits(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None,
    label_smoothing: float,
) -> bool:
    """True when `SoftmaxCrossEntropy` computes this cross_entropy (see its docstring)."""
    return (
        fast_path("fused_loss") is not None
        and weight is None
        and not label_smoothing
        and input.dim() == 2
        and input.dtype.is_floating_point
        and target.dtype.numpy == np.int64
        and input.backend.name == "fast"
        and target.backend is input.backend
        and 0 < cells(input).size < PARALLEL_FROM
        and cells(input).is_contiguous()
    )


def nll_loss(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """-input[n, target[n]] (times weight[target[n]]), averaged over the weights for "mean".

    `input` holds log-probabilities (N, C), (C,) or (N, C, d1, ...); `target` holds class
    indices (int64, or floats holding whole numbers); targets equal to `ignore_index`
    contribute nothing.
    """
    _check_reduction(reduction)
    if input.dim() == 0:
        raise ValueError(
            f"nll_loss: expected an input with a class dim, got shape {tuple(input.shape)}"
        )
    if hooks.recording() and weight is None and reduction != "none":
        return _nll_on_device(input, target, ignore_index, reduction)
    values = _class_indices(input, target, ignore_index)
    cls = 1 if input.dim() > 1 else 0
    shape = [1] * input.dim()
    shape[cls] = input.shape[cls]
    # The 0/1 mask is built from the host copy of the targets: one upload, no launches.
    # Ignored targets become -1, which matches no class.
    picked = np.where(values == ignore_index, -1, values)[(slice(None),) * cls + (None,)]
    onehot = picked == np.arange(input.shape[cls]).reshape(shape)
    if weight is not None and weight.shape != (input.shape[cls],):
        raise ValueError(
            f"weight should have one entry per class ({input.shape[cls]}), got "
            f"{tuple(weight.shape)}"
        )
    count = np.count_nonzero(onehot)
    fold = reduction != "none" and input.dtype.is_floating_point
    if fold and (weight is None or (reduction == "mean" and not count)):
        # One node, three launches: the -1 (and 1 / count for "mean") folded into the mask.
        # A mean over no targets is nan with zero gradients, as in PyTorch.
        scale = -1.0 / count if reduction == "mean" and count else -1.0
        host = np.multiply(onehot, scale, dtype=input.dtype.numpy)
        mask = wrap(input.backend.from_numpy(host), input)
        return MaskedSum.apply(input, mask, reduction == "mean" and not count)
    # Unpicked cells read as 0, never multiplied by 0 (a -inf logit: -inf * 0 = nan).
    hits = tensor(onehot, dtype=input.dtype, backend=input.backend)
    chosen = Where.apply(hits, input, scalar(input, 0))
    if weight is not None:
        mask = hits * weight.to(input.dtype).view(*shape)
        losses = -(chosen * mask).sum(cls)
        if reduction == "mean":
            return losses.sum() / mask.sum()
        return _reduce(losses, reduction)
    # -(x * m) summed equals (x * -m) summed exactly (negation never rounds).
    negated = tensor(-onehot.astype(input.dtype.numpy), backend=input.backend)
    losses = (chosen * negated).sum(cls)
    if reduction == "mean":
        return losses.sum() / float(count)
    return _reduce(losses, reduction)


def _nll_on_device(
    input: Tensor,  # noqa: A002
    target: Tensor,
    ignore_index: int,
    reduction: str,
) -> Tensor:
    """nll_loss's "mean" or "sum" with its mask built by kernels (while mf.compile captures).

    The same mask values and launches as the host-built mask: -1 (or -1/count) at each
    picked cell. Unlike PyTorch, a "mean" over no targets (all ignored) gives nan
    gradients, not zeros: whether any target counts is known only on the device here.
    """
    picked = _picked_on_device(input, target, ignore_index).to(input.dtype)
    mask = picked * (-1.0 / picked.sum()) if reduction == "mean" else -picked
    return MaskedSum.apply(input, mask, False)


def cross_entropy(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    *,
    label_smoothing: float = 0.0,
) -> Tensor:
    """log_softmax over the class dim followed by nll_loss (numerically stable).

    `target` holds class indices, or (a float tensor of input's shape) class probabilities.
    With `label_smoothing` s, the target becomes (1 - s) one-hot + s / classes.
    """
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if _fused_cross_entropy_fits(input, target, weight, label_smoothing):
        _check_classes(input, target, ignore_index)
        return SoftmaxCrossEntropy.apply(input, target, ignore_index, reduction)
    cls = 1 if input.dim() > 1 else 0
    logp = log_softmax(input, cls)
    shape = [1] * input.dim()
    shape[cls] = input.shape[cls]
    if target.dtype.is_floating_point and target.shape == input.shape:
        probs = target.to(logp.dtype)
        if label_smoothing:
            probs = probs * (1.0 - label_smoothing) + label_smoothing / input.shape[cls]
        terms = logp * probs
        if weight is not None:
            terms = terms * weight.to(logp.dtype).view(*shape)
        return _reduce(-terms.sum(cls), reduction)
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return nll
    smooth = _smoothing_term(logp, target, weight, ignore_index, reduction, shape)
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / input.shape[cls])


def _smoothing_term(
    logp: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    reduction: str,
    shape: list[int],
) -> Tensor:
    """-(sum over classes of weight * logp), 0 at ignored targets, reduced as nll_loss is.

    "mean" divides by the total weight of the targets not ignored, as PyTorch does.
    """
    cls = 1 if logp.dim() > 1 else 0
    terms = logp if weight is None else logp * weight.to(logp.dtype).view(*shape)
    values = target.detach().cpu().numpy()
    kept = values != ignore_index
    per_target = -terms.sum(cls) * tensor(kept, dtype=logp.dtype, backend=logp.backend)
    if reduction != "mean":
        return _reduce(per_target, reduction)
    if weight is None:
        total = float(np.count_nonzero(kept))
    else:
        total = float(weight.detach().cpu().numpy()[values[kept].astype(np.int64)].sum())
    if not total:  # every target ignored: nan, with zero gradients, as PyTorch
        return per_target.sum() * 0.0 + float("nan")
    return per_target.sum() / total


class BinaryCrossEntropy(Function):
    """-(t log x + (1 - t) log(1 - x)) with each log clamped at -100, as PyTorch does."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, t: Tensor) -> Tensor:  # type: ignore[override]
        """The per-cell loss."""
        ctx.save_for_backward(x, t)
        floor = scalar(x, -100.0)
        log_x = zip_op(ops.MAX, x.log(), floor)
        log_1mx = zip_op(ops.MAX, (1.0 - x).log(), floor)
        return -(t * log_x + (1.0 - t) * log_1mx)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """d/dx = (x - t) / max(x (1 - x), 1e-12); d/dt = log(1 - x) - log(x) (clamped)."""
        x, t = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        grad_x = grad_t = None
        if need_x:
            grad_x = grad * (x - t) / _at_least(x * (1.0 - x), 1e-12)
        if need_t:
            grad_t = grad * (_at_least((1.0 - x).log(), -100.0) - _at_least(x.log(), -100.0))
        return grad_x, grad_t


def _at_least(value: Tensor, floor: float) -> Tensor:
    """max(value, floor), picked with `where` (the gradient goes to the value picked)."""
    bound = scalar(value, floor)
    return Where.apply(value.detach() >= floor, value, bound)


def _check_probabilities(name: str, t: Tensor) -> None:
    """PyTorch's RuntimeError unless every cell of `t` lies in [0, 1] (nan does not)."""
    x = t.detach()
    outside = t.numel() - ((x >= 0.0) * (x <= 1.0)).sum().item()
    if outside:
        raise RuntimeError(
            f"all elements of {name} should be between 0 and 1 ({int(outside)} of the "
            f"{t.numel()} cells of the {name} of shape {tuple(t.shape)} are not, nan included)"
        )


def binary_cross_entropy(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy of probabilities `input` in [0, 1] against `target` (same shape)."""
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({tuple(target.shape)}) that is different to the input size "
            f"({tuple(input.shape)}) is deprecated. Please ensure they have the same size."
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"binary_cross_entropy: expected a float input, got {input.dtype}")
    for name, values in (("input", input), ("target", target)):
        _check_probabilities(name, values)
    loss = BinaryCrossEntropy.apply(input, target.to(input.dtype))
    if weight is not None:
        loss = loss * weight.to(input.dtype)
    return _reduce(loss, reduction)


def _paired(name: str, input: Tensor, target: Tensor) -> None:  # noqa: A002
    """PyTorch's ValueError when `target`'s shape differs from `input`'s."""
    if target.shape != input.shape:
        raise ValueError(
            f"{name}: Target size ({tuple(target.shape)}) must be the same as input size "
            f"({tuple(input.shape)})"
        )


def _broadcast_warning(input: Tensor, target: Tensor) -> None:  # noqa: A002
    """PyTorch's UserWarning when a pointwise loss broadcasts input against target."""
    if input.shape != target.shape:
        warnings.warn(
            f"Using a target size ({tuple(target.shape)}) that is different to the input size "
            f"({tuple(input.shape)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:  # noqa: A002
    """|input - target|, reduced."""
    _check_reduction(reduction)
    _broadcast_warning(input, target)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0,  # noqa: A002
) -> Tensor:  # fmt: skip
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target), reduced."""
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta ({beta})")
    _broadcast_warning(input, target)
    diff = input - target
    if beta == 0.0:
        return _reduce(diff.abs(), reduction)
    size = diff.abs()
    quadratic = diff * diff * (0.5 / beta)
    return _reduce(Where.apply(size < beta, quadratic, size - 0.5 * beta), reduction)


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,  # noqa: A002
) -> Tensor:  # fmt: skip
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target), reduced."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta ({delta})")
    _broadcast_warning(input, target)
    diff = input - target
    size = diff.abs()
    linear = (size - 0.5 * delta) * delta
    return _reduce(Where.apply(size < delta, diff * diff * 0.5, linear), reduction)


def kl_div(
    input: Tensor,  # noqa: A002
    target: Tensor,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """KL(target || exp(input)) cell by cell: target (log target - input), reduced.

    `input` holds log-probabilities; `target` probabilities (or log-probabilities with
    `log_target`). "batchmean" divides the sum by the batch size (input.shape[0]), which is
    the true KL divergence; "mean" divides by the number of cells, as PyTorch does.
    """
    if reduction not in (*REDUCTIONS, "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        terms = target.exp() * (target - input)
    else:
        zero = target == 0.0
        safe = Where.apply(zero, scalar(target, 1.0), target)
        entropy = Where.apply(zero, scalar(target, 0.0), target * safe.log())
        terms = entropy - target * input
    if reduction == "batchmean":
        return terms.sum() / (input.shape[0] if input.dim() else 1)
    return _reduce(terms, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,  # noqa: A002
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy of sigmoid(input) against `target`, computed from the logits.

    (1 - t) x + (1 + (pos_weight - 1) t) log(1 + e^-x), with log(1 + e^-x) evaluated
    stably, so logits of +-1000 give finite losses and gradients. `pos_weight`
    (broadcast along the last dim) weighs the positive term; `weight` each cell.
    """
    _check_reduction(reduction)
    _paired("binary_cross_entropy_with_logits", input, target)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"binary_cross_entropy_with_logits: expected a float input, got {input.dtype}"
        )
    t = target.to(input.dtype)
    softplus_neg = logsigmoid(input)
    if pos_weight is None:
        loss = (1.0 - t) * input - softplus_neg
    else:
        log_weight = (pos_weight.to(input.dtype) - 1.0) * t + 1.0
        loss = (1.0 - t) * input - log_weight * softplus_neg
    if weight is not None:
        loss = loss * weight.to(input.dtype)
    return _reduce(loss, reduction)


__all__ = [
    "REDUCTIONS",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "mse_loss",
    "nll_loss",
    "smooth_l1_loss",
]
