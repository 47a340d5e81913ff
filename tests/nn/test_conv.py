"""conv1d (4.1), conv2d (4.2) and pooling (4.3) against numpy loops, forward and backward.

These task tests need no PyTorch: the reference is a plain numpy loop over the window
positions, and its gradient is the same loop run backwards. The PyTorch comparisons and
the argument checks (given code) live in test_conv_torch.py and test_conv_checks.py.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw.autograd import gradcheck
from tests.strategies import assert_close


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _pad(x, padding, fill):
    widths = [(0, 0), (0, 0)] + [(p, p) for p in padding]
    return np.pad(x, widths, constant_values=fill)


def _positions(size, kernel, stride):
    """Every window position (tuple of output indices) and the slices of its window."""
    outs = [(s - k) // st_ + 1 for s, k, st_ in zip(size, kernel, stride, strict=True)]
    for pos in itertools.product(*(range(o) for o in outs)):
        window = tuple(
            slice(o * st_, o * st_ + k) for o, st_, k in zip(pos, stride, kernel, strict=True)
        )
        yield outs, pos, (slice(None), slice(None), *window)


def conv_reference(x, w, b, stride, padding, grad_out=None):
    """out = cross-correlation of x (N, C, *S) with w (OC, C, *K); with grad_out, the grads."""
    nd = w.ndim - 2
    xp = _pad(x, padding, 0.0)
    axes = list(range(1, 2 + nd))
    out = grad_x = grad_w = None
    grad_xp, grad_w = np.zeros_like(xp), np.zeros_like(w)
    for outs, pos, window in _positions(xp.shape[2:], w.shape[2:], stride):
        if out is None:
            out = np.zeros((x.shape[0], w.shape[0], *outs))
        cell = (slice(None), slice(None), *pos)
        out[cell] = np.tensordot(xp[window], w, axes=(axes, axes))
        if grad_out is not None:
            g = grad_out[cell]  # (N, OC)
            grad_w += np.tensordot(g, xp[window], axes=([0], [0]))
            grad_xp[window] += np.tensordot(g, w, axes=([1], [0]))
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    if grad_out is None:
        return out
    kept = (slice(p, p + s) for p, s in zip(padding, x.shape[2:], strict=True))
    inner = (slice(None), slice(None), *kept)
    grad_x = grad_xp[inner]
    grad_b = grad_out.sum(axis=(0, *range(2, 2 + nd)))
    return out, grad_x, grad_w, grad_b


def pool_reference(x, kernel, stride, padding, kind, grad_out=None):
    """Max or mean (padding counted as zeros) of each 2-D window; with grad_out, the grad."""
    xp = _pad(x, padding, -math.inf if kind == "max" else 0.0)
    grad_xp = np.zeros_like(xp)
    out = None
    for outs, pos, window in _positions(xp.shape[2:], kernel, stride):
        if out is None:
            out = np.zeros(x.shape[:2] + tuple(outs))
        cells = xp[window].reshape(x.shape[:2] + (-1,))
        cell = (slice(None), slice(None), *pos)
        if kind == "max":
            out[cell] = cells.max(axis=2)
        else:
            out[cell] = cells.mean(axis=2)
        if grad_out is not None:
            g = grad_out[cell]
            if kind == "max":
                hits = (cells == cells.max(axis=2, keepdims=True)).astype(float)
                share = hits * g[..., None]
            else:
                share = np.repeat(g[..., None] / cells.shape[2], cells.shape[2], axis=2)
            grad_xp[window] += share.reshape(xp[window].shape)
    if grad_out is None:
        return out
    h, w = x.shape[2:]
    return out, grad_xp[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w]


@st.composite
def conv_case(draw, dims):
    n, c, oc = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    padding = tuple(draw(st.integers(0, k - 1)) for k in kernel)
    size = tuple(
        draw(st.integers(max(1, k - 2 * p), 6)) for k, p in zip(kernel, padding, strict=True)
    )
    return (n, c, *size), (oc, c, *kernel), stride, padding


def check_conv(fn, case, with_bias, seed):
    """fn's values and gradients (x, w, bias) equal the numpy loop's."""
    x_shape, w_shape, stride, padding = case
    x, w = rand(*x_shape, seed=seed), rand(*w_shape, seed=seed + 1)
    b = rand(w_shape[0], seed=seed + 2) if with_bias else None
    tx, tw = mf.tensor(x, requires_grad=True), mf.tensor(w, requires_grad=True)
    tb = None if b is None else mf.tensor(b, requires_grad=True)
    out = fn(tx, tw, tb, stride=stride, padding=padding)
    grad_out = rand(*out.shape, seed=seed + 3)
    want, grad_x, grad_w, grad_b = conv_reference(x, w, b, stride, padding, grad_out)
    assert out.shape == want.shape
    assert_close(out, want)
    out.backward(mf.tensor(grad_out))
    assert_close(tx.grad, grad_x)
    assert_close(tw.grad, grad_w)
    if tb is not None:
        assert_close(tb.grad, grad_b)


# ---- 4.1: unfold and conv1d ------------------------------------------------------------------


@pytest.mark.task4_1
@settings(max_examples=3, deadline=None)  # and a few drawn convolutions
@given(conv_case(1), st.booleans(), st.integers(0, 2**16))
def test_unfold_is_a_strided_window_copy(case, with_bias, seed):
    check_conv(F.conv1d, case, with_bias, seed)
    x = mf.arange(10.0).view(1, 1, 10)
    windows = F.unfold(x, (3,), (2,), (0,))
    assert windows.shape == (1, 1, 3, 4)
    assert windows.is_contiguous()
    assert windows[0, 0].tolist() == [[0, 2, 4, 6], [1, 3, 5, 7], [2, 4, 6, 8]]


@pytest.mark.task4_1
@settings(max_examples=3, deadline=None)  # and a few drawn convolutions
@given(conv_case(1), st.booleans(), st.integers(0, 2**16))
def test_unfold_pads_with_the_fill_and_folds_gradients_back(case, with_bias, seed):
    check_conv(F.conv1d, case, with_bias, seed)
    x = mf.tensor([[[1.0, 2.0, 3.0]]], requires_grad=True)
    windows = F.unfold(x, (2,), (1,), (1,), fill=-7.0)
    assert windows[0, 0].tolist() == [[-7.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, -7.0]]
    windows.sum().backward()
    assert x.grad.tolist() == [[[2.0, 2.0, 2.0]]]  # each cell sits in two windows


@pytest.mark.task4_1
@settings(max_examples=15, deadline=None)
@given(conv_case(1), st.booleans(), st.integers(0, 2**16))
def test_conv1d_matches_the_numpy_loop(case, with_bias, seed):
    check_conv(F.conv1d, case, with_bias, seed)


@pytest.mark.task4_1
@settings(max_examples=3, deadline=None)  # and a few drawn convolutions
@given(conv_case(1), st.booleans(), st.integers(0, 2**16))
def test_conv1d_by_hand_unbatched_and_gradcheck(case, with_bias, seed):
    check_conv(F.conv1d, case, with_bias, seed)
    x = mf.tensor([[1.0, 2.0, 3.0, 4.0]])
    w = mf.tensor([[[1.0, -1.0]]])
    assert F.conv1d(x, w).tolist() == [[-1.0, -1.0, -1.0]]
    assert F.conv1d(x, w, mf.tensor([10.0]), stride=2, padding=1).tolist() == [[9.0, 9.0, 14.0]]
    tiny = [mf.tensor(rand(1, 2, 4, seed=3), requires_grad=True),
            mf.tensor(rand(2, 2, 3, seed=4), requires_grad=True),
            mf.tensor(rand(2, seed=5), requires_grad=True)]  # fmt: skip
    assert gradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), tiny)


@pytest.mark.task4_1
@settings(max_examples=3, deadline=None)  # and a few drawn convolutions
@given(conv_case(1), st.booleans(), st.integers(0, 2**16))
def test_conv1d_layer_uses_conv1d(case, with_bias, seed):
    check_conv(F.conv1d, case, with_bias, seed)
    mf.manual_seed(0)
    layer = mf.nn.Conv1d(2, 3, 2, padding=1)
    x = rand(2, 2, 5)
    want = conv_reference(
        x, layer.weight.detach().numpy(), layer.bias.detach().numpy(), (1,), (1,)
    )
    assert_close(layer(mf.tensor(x)), want)


# ---- 4.2: conv2d -----------------------------------------------------------------------------


@pytest.mark.task4_2
@settings(max_examples=15, deadline=None)
@given(conv_case(2), st.booleans(), st.integers(0, 2**16))
def test_conv2d_matches_the_numpy_loop(case, with_bias, seed):
    check_conv(F.conv2d, case, with_bias, seed)


@pytest.mark.task4_2
@settings(max_examples=3, deadline=None)  # and a few drawn convolutions
@given(conv_case(2), st.booleans(), st.integers(0, 2**16))
def test_conv2d_lenet_shapes_and_permuted_input(case, with_bias, seed):
    check_conv(F.conv2d, case, with_bias, seed)
    x, w, b = rand(4, 3, 8, 8), rand(5, 3, 3, 3, seed=1), rand(5, seed=2)
    out = F.conv2d(mf.tensor(x), mf.tensor(w), mf.tensor(b), padding=1)
    assert out.shape == (4, 5, 8, 8)
    assert_close(out, conv_reference(x, w, b, (1, 1), (1, 1)))
    # A non-contiguous (permuted) input gives the same result as its contiguous copy.
    base = mf.tensor(rand(4, 8, 8, 3, seed=3))
    permuted = base.permute(0, 3, 1, 2)
    weight = mf.tensor(w)
    assert_close(F.conv2d(permuted, weight), F.conv2d(permuted.contiguous(), weight))


@pytest.mark.task4_2
@settings(max_examples=3, deadline=None)  # and a few drawn convolutions
@given(conv_case(2), st.booleans(), st.integers(0, 2**16))
def test_conv2d_unbatched_and_gradcheck(case, with_bias, seed):
    check_conv(F.conv2d, case, with_bias, seed)
    x, w = rand(2, 4, 4), rand(3, 2, 2, 2, seed=1)
    out = F.conv2d(mf.tensor(x), mf.tensor(w), stride=2)
    assert out.shape == (3, 2, 2)
    assert_close(out, conv_reference(x[None], w, None, (2, 2), (0, 0))[0])
    tiny = [mf.tensor(rand(1, 2, 3, 4, seed=3), requires_grad=True),
            mf.tensor(rand(2, 2, 2, 2, seed=4), requires_grad=True),
            mf.tensor(rand(2, seed=5), requires_grad=True)]  # fmt: skip
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1), tiny)


@pytest.mark.task4_2
@settings(max_examples=3, deadline=None)  # and a few drawn convolutions
@given(conv_case(2), st.booleans(), st.integers(0, 2**16))
def test_conv2d_keeps_float32(case, with_bias, seed):
    check_conv(F.conv2d, case, with_bias, seed)
    x, w = rand(2, 2, 6, 6).astype(np.float32), rand(3, 2, 3, 3, seed=1).astype(np.float32)
    ours = [mf.tensor(x, requires_grad=True), mf.tensor(w, requires_grad=True)]
    out = F.conv2d(*ours, padding=1)
    assert out.dtype is mf.float32
    grad_out = np.ones(out.shape)
    want, grad_x, grad_w, _ = conv_reference(x.astype(float), w.astype(float), None, (1, 1),
                                             (1, 1), grad_out)  # fmt: skip
    assert_close(out, want, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    for mine, expected in zip(ours, (grad_x, grad_w), strict=True):
        assert mine.grad.dtype is mf.float32
        assert_close(mine.grad, expected, rtol=1e-4, atol=1e-4)


# ---- 4.3: pooling ----------------------------------------------------------------------------


def _pair(value):
    return (value, value) if isinstance(value, int) else value


def _pair(value):
    return (value, value) if isinstance(value, int) else value


POOL_CASES = [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 1)), (3, 1, 0)]


def check_drawn_pooling(data: st.DataObject) -> None:
    """Max and average pooling of a drawn input with drawn windows, forward and backward.

    Every test of chosen inputs checks one too, so pooling fitted to them does not pass.
    """
    k = (data.draw(st.integers(1, 3), label="kh"), data.draw(st.integers(1, 3), label="kw"))
    s = (data.draw(st.integers(1, 3), label="sh"), data.draw(st.integers(1, 3), label="sw"))
    p = tuple(data.draw(st.integers(0, side // 2), label="pad") for side in k)
    h, w = (data.draw(st.integers(side, side + 3), label="size") for side in k)
    x = rand(data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)), h, w,
             seed=data.draw(st.integers(0, 2**16), label="seed"))  # fmt: skip
    for kind in ("max", "avg"):
        t = mf.tensor(x, requires_grad=True)
        out = getattr(F, f"{kind}_pool2d")(t, k, s, p)
        grad_out = rand(*out.shape, seed=1)
        want, grad_x = pool_reference(x, k, s, p, kind, grad_out)
        assert_close(out, want)
        out.backward(mf.tensor(grad_out))
        assert_close(t.grad, grad_x)


@pytest.mark.task4_3
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("kernel,stride,padding", POOL_CASES)
@given(data=st.data())
def test_pooling_matches_the_numpy_loop(kind, kernel, stride, padding, data):
    check_drawn_pooling(data)
    x = rand(2, 3, 6, 5)
    k, p = _pair(kernel), _pair(padding)
    s = k if stride is None else _pair(stride)
    t = mf.tensor(x, requires_grad=True)
    out = getattr(F, f"{kind}_pool2d")(t, kernel, stride, padding)
    grad_out = rand(*out.shape, seed=1)
    want, grad_x = pool_reference(x, k, s, p, kind, grad_out)
    assert_close(out, want)
    out.backward(mf.tensor(grad_out))
    assert_close(t.grad, grad_x)


@pytest.mark.task4_3
@given(data=st.data())
def test_max_pool_routes_gradient_to_the_max_only(data):
    check_drawn_pooling(data)
    x = mf.tensor([[[[1.0, 5.0], [2.0, 3.0]]]], requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad.tolist() == [[[[0.0, 1.0], [0.0, 0.0]]]]
    avg = mf.tensor(rand(1, 1, 4, 4), requires_grad=True)
    assert gradcheck(lambda t: F.avg_pool2d(t, 2, 1, 1), [avg])


@pytest.mark.task4_3
@given(data=st.data())
def test_pooling_unbatched_and_layers(data):
    check_drawn_pooling(data)
    x = rand(3, 4, 4)
    assert_close(F.max_pool2d(mf.tensor(x), 2), pool_reference(x[None], (2, 2), (2, 2), (0, 0),
                                                               "max")[0])  # fmt: skip
    assert_close(mf.nn.AvgPool2d(2)(mf.tensor(x[None])),
                 pool_reference(x[None], (2, 2), (2, 2), (0, 0), "avg"))  # fmt: skip
    assert mf.nn.MaxPool2d(2)(mf.tensor(rand(2, 3, 8, 8))).shape == (2, 3, 4, 4)
