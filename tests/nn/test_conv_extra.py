"""Convolution and pooling against PyTorch, and their argument checks (never graded).

The graded task tests (numpy references) are in test_conv.py. Each PyTorch comparison
skips on its own, with the reason, where PyTorch is not installed.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw.tools.profiler import profile
from tests.nn.test_conv import POOL_CASES, conv_case, rand
from tests.strategies import assert_close, compare_with_torch

pytestmark = pytest.mark.extra

run_both = partial(compare_with_torch, tolerances=(1e-9, 1e-10), grad_tolerances=(1e-9, 1e-10))


@pytest.fixture
def torch() -> Any:
    """PyTorch, the oracle; the test skips (saying why) where it is not installed."""
    return pytest.importorskip("torch", reason="PyTorch, the oracle of this test, is missing")


@settings(max_examples=15, deadline=None)
@given(case=conv_case(1), with_bias=st.booleans(), seed=st.integers(0, 2**16))
def test_conv1d_matches_torch(torch, case, with_bias, seed):
    x_shape, w_shape, stride, padding = case
    arrays = [rand(*x_shape, seed=seed), rand(*w_shape, seed=seed + 1)]
    if with_bias:
        arrays.append(rand(w_shape[0], seed=seed + 2))
    run_both(
        lambda *t: F.conv1d(*t, stride=stride, padding=padding),
        lambda *t: torch.nn.functional.conv1d(*t, stride=stride, padding=padding),
        arrays,
        seed,
    )


@settings(max_examples=15, deadline=None)
@given(case=conv_case(2), with_bias=st.booleans(), seed=st.integers(0, 2**16))
def test_conv2d_matches_torch(torch, case, with_bias, seed):
    x_shape, w_shape, stride, padding = case
    arrays = [rand(*x_shape, seed=seed), rand(*w_shape, seed=seed + 1)]
    if with_bias:
        arrays.append(rand(w_shape[0], seed=seed + 2))
    run_both(
        lambda *t: F.conv2d(*t, stride=stride, padding=padding),
        lambda *t: torch.nn.functional.conv2d(*t, stride=stride, padding=padding),
        arrays,
        seed,
    )


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("kernel,stride,padding", POOL_CASES)
def test_pooling_matches_torch(torch, name, kernel, stride, padding):
    run_both(
        lambda t: getattr(F, name)(t, kernel, stride, padding),
        lambda t: getattr(torch.nn.functional, name)(t, kernel, stride, padding),
        [rand(2, 3, 6, 5)],
    )


def test_conv2d_and_pooling_in_float32_match_torch(torch):
    x, w = rand(2, 2, 6, 6).astype(np.float32), rand(3, 2, 3, 3, seed=1).astype(np.float32)
    ours = [mf.tensor(x, requires_grad=True), mf.tensor(w, requires_grad=True)]
    theirs = [torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)]
    tf = torch.nn.functional
    out = F.max_pool2d(F.conv2d(*ours, stride=1, padding=1), 2)
    ref = tf.max_pool2d(tf.conv2d(*theirs, stride=1, padding=1), 2)
    assert_close(out, ref, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    ref.sum().backward()
    for mine, want in zip(ours, theirs, strict=True):
        assert_close(mine.grad, want.grad, rtol=1e-4, atol=1e-4)


def test_conv_errors_name_the_shapes():
    x, w = mf.zeros(1, 2, 5), mf.zeros(3, 4, 2)
    with pytest.raises(RuntimeError, match=r"to have 4 channels, but got 2"):
        F.conv1d(x, w)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        F.conv1d(mf.zeros(1, 2, 2), mf.zeros(3, 2, 4))
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv1d(mf.zeros(1, 2, 5), mf.zeros(3, 2, 2, dtype=mf.float32))
    with pytest.raises(RuntimeError, match=r"expected bias of shape \(3,\)"):
        F.conv1d(mf.zeros(1, 2, 5), mf.zeros(3, 2, 2), mf.zeros(2))
    with pytest.raises(RuntimeError, match="1 strides and paddings"):
        F.unfold(mf.zeros(1, 1, 10), (3,), (2, 2), (0,))
    with pytest.raises(RuntimeError, match="and a 4-D weight"):
        F.conv2d(mf.zeros(1, 1, 4, 4), mf.zeros(1, 1, 3))
    with pytest.raises(RuntimeError, match=r"expected a 3-D \(unbatched\) or 4-D"):
        F.conv2d(mf.zeros(4, 4), mf.zeros(1, 1, 3, 3))
    with pytest.raises(ValueError, match="stride must be an int or a tuple of 2"):
        F.conv2d(mf.zeros(1, 1, 4, 4), mf.zeros(1, 1, 3, 3), stride=(1, 1, 1))


def test_pooling_errors():
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(mf.zeros(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="expected a 3-D or 4-D floating-point input"):
        F.avg_pool2d(mf.zeros(4, 4), 2)
    with pytest.raises(RuntimeError, match="of dtype minifw.int64"):
        F.max_pool2d(mf.zeros(1, 4, 4, dtype=mf.int64), 2)


@pytest.mark.parametrize("dilation", [1, 2])  # 1: conv.max_pool2d; 2: pooling.max_pool
def test_max_pool_without_a_gradient_finds_no_argmax_and_gives_the_same_values(dilation):
    x = rand(2, 3, 7, 6)
    x[0, 1, 2, 3] = np.nan  # a window holding nan gives nan, with or without a gradient
    pool = partial(F.max_pool2d, kernel_size=2, stride=2, padding=1, dilation=dilation)
    want = pool(mf.tensor(x, requires_grad=True))
    with mf.no_grad(), profile() as launches:
        got = pool(mf.tensor(x))
    np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
    reductions = [e for e in launches.events if e.name.startswith("reduce")]
    assert [e.name for e in reductions] == ["reduce_max"], "one max per window, no argmax"
