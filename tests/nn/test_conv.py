"""conv1d, conv2d (unfold + matmul) and pooling against PyTorch, forward and backward."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw.autograd import gradcheck
from tests.strategies import assert_close, compare_with_torch

torch = pytest.importorskip("torch")
TF = torch.nn.functional


run_both = partial(compare_with_torch, tolerances=(1e-9, 1e-10), grad_tolerances=(1e-9, 1e-10))


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


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


@pytest.mark.task4_1
@settings(max_examples=15, deadline=None)
@given(conv_case(1), st.booleans(), st.integers(0, 2**16))
def test_conv1d_matches_torch(case, with_bias, seed):
    x_shape, w_shape, stride, padding = case
    arrays = [rand(*x_shape, seed=seed), rand(*w_shape, seed=seed + 1)]
    if with_bias:
        arrays.append(rand(w_shape[0], seed=seed + 2))
    run_both(
        lambda *t: F.conv1d(*t, stride=stride, padding=padding),
        lambda *t: TF.conv1d(*t, stride=stride, padding=padding),
        arrays,
        seed,
    )


@pytest.mark.task4_1
def test_conv1d_unbatched_and_gradcheck():
    x, w, b = rand(2, 5), rand(3, 2, 2, seed=1), rand(3, seed=2)
    run_both(lambda *t: F.conv1d(*t, padding=1), lambda *t: TF.conv1d(*t, padding=1), [x, w, b])
    tiny = [mf.tensor(rand(1, 2, 4, seed=3), requires_grad=True),
            mf.tensor(rand(2, 2, 3, seed=4), requires_grad=True),
            mf.tensor(rand(2, seed=5), requires_grad=True)]  # fmt: skip
    assert gradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), tiny)


@pytest.mark.task4_1
def test_conv1d_errors_name_the_shapes():
    x, w = mf.zeros(1, 2, 5), mf.zeros(3, 4, 2)
    with pytest.raises(RuntimeError, match=r"to have 4 channels, but got 2"):
        F.conv1d(x, w)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        F.conv1d(mf.zeros(1, 2, 2), mf.zeros(3, 2, 4))
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv1d(mf.zeros(1, 2, 5), mf.zeros(3, 2, 2, dtype=mf.float32))
    with pytest.raises(RuntimeError, match=r"expected bias of shape \(3,\)"):
        F.conv1d(mf.zeros(1, 2, 5), mf.zeros(3, 2, 2), mf.zeros(2))


@pytest.mark.task4_1
def test_unfold_is_a_strided_window_copy():
    x = mf.arange(10.0).view(1, 1, 10)
    windows = F.unfold(x, (3,), (2,), (0,))
    assert windows.shape == (1, 1, 3, 4)
    assert windows.is_contiguous()
    assert windows[0, 0].tolist() == [[0, 2, 4, 6], [1, 3, 5, 7], [2, 4, 6, 8]]
    with pytest.raises(RuntimeError, match="1 strides and paddings"):
        F.unfold(x, (3,), (2, 2), (0,))


@pytest.mark.task4_2
@settings(max_examples=15, deadline=None)
@given(conv_case(2), st.booleans(), st.integers(0, 2**16))
def test_conv2d_matches_torch(case, with_bias, seed):
    x_shape, w_shape, stride, padding = case
    arrays = [rand(*x_shape, seed=seed), rand(*w_shape, seed=seed + 1)]
    if with_bias:
        arrays.append(rand(w_shape[0], seed=seed + 2))
    run_both(
        lambda *t: F.conv2d(*t, stride=stride, padding=padding),
        lambda *t: TF.conv2d(*t, stride=stride, padding=padding),
        arrays,
        seed,
    )


@pytest.mark.task4_2
def test_conv2d_lenet_shapes_and_permuted_input():
    x, w, b = rand(4, 3, 8, 8), rand(5, 3, 3, 3, seed=1), rand(5, seed=2)
    run_both(lambda *t: F.conv2d(*t, padding=1), lambda *t: TF.conv2d(*t, padding=1), [x, w, b])
    # A non-contiguous (permuted) input gives the same result as its contiguous copy.
    base = mf.tensor(rand(4, 8, 8, 3, seed=3))
    permuted = base.permute(0, 3, 1, 2)
    weight = mf.tensor(w)
    assert_close(F.conv2d(permuted, weight), F.conv2d(permuted.contiguous(), weight))


@pytest.mark.task4_2
def test_conv2d_gradcheck_and_errors():
    tiny = [mf.tensor(rand(1, 2, 3, 4, seed=3), requires_grad=True),
            mf.tensor(rand(2, 2, 2, 2, seed=4), requires_grad=True),
            mf.tensor(rand(2, seed=5), requires_grad=True)]  # fmt: skip
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1), tiny)
    with pytest.raises(RuntimeError, match="and a 4-D weight"):
        F.conv2d(mf.zeros(1, 1, 4, 4), mf.zeros(1, 1, 3))
    with pytest.raises(RuntimeError, match=r"expected a 3-D \(unbatched\) or 4-D"):
        F.conv2d(mf.zeros(4, 4), mf.zeros(1, 1, 3, 3))
    with pytest.raises(ValueError, match="stride must be an int or a tuple of 2"):
        F.conv2d(mf.zeros(1, 1, 4, 4), mf.zeros(1, 1, 3, 3), stride=(1, 1, 1))


POOL_CASES = [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 1)), (3, 1, 0)]


@pytest.mark.task4_3
@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("kernel,stride,padding", POOL_CASES)
def test_pooling_matches_torch(name, kernel, stride, padding):
    x = rand(2, 3, 6, 5)
    run_both(
        lambda t: getattr(F, name)(t, kernel, stride, padding),
        lambda t: getattr(TF, name)(t, kernel, stride, padding),
        [x],
    )


@pytest.mark.task4_3
def test_max_pool_routes_gradient_to_the_max_only():
    x = mf.tensor([[[[1.0, 5.0], [2.0, 3.0]]]], requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad.tolist() == [[[[0.0, 1.0], [0.0, 0.0]]]]
    avg = mf.tensor(rand(1, 1, 4, 4), requires_grad=True)
    assert gradcheck(lambda t: F.avg_pool2d(t, 2, 1, 1), [avg])


@pytest.mark.task4_3
def test_pooling_errors_and_unbatched():
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(mf.zeros(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="expected a 3-D or 4-D floating-point input"):
        F.avg_pool2d(mf.zeros(4, 4), 2)
    with pytest.raises(RuntimeError, match="of dtype minifw.int64"):
        F.max_pool2d(mf.zeros(1, 4, 4, dtype=mf.int64), 2)
    x = rand(3, 4, 4)
    assert_close(F.max_pool2d(mf.tensor(x), 2), TF.max_pool2d(torch.tensor(x), 2))


@pytest.mark.task4_2
def test_conv2d_and_pooling_in_float32():
    x, w = rand(2, 2, 6, 6).astype(np.float32), rand(3, 2, 3, 3, seed=1).astype(np.float32)
    ours = [mf.tensor(x, requires_grad=True), mf.tensor(w, requires_grad=True)]
    theirs = [torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)]
    out = F.max_pool2d(F.conv2d(*ours, stride=1, padding=1), 2)
    ref = TF.max_pool2d(TF.conv2d(*theirs, stride=1, padding=1), 2)
    assert out.dtype is mf.float32
    assert_close(out, ref, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    ref.sum().backward()
    for mine, want in zip(ours, theirs, strict=True):
        assert mine.grad.dtype is mf.float32
        assert_close(mine.grad, want.grad, rtol=1e-4, atol=1e-4)
