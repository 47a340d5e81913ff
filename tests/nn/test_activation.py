"""Task 4.4: max along a dim, softmax, log-softmax and dropout, against numpy.

No PyTorch needed: numpy computes the values and the gradients. The PyTorch
comparisons (never graded) are in test_functional.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom
from minifw.autograd import gradcheck
from tests.strategies import assert_close, shapes, small_floats

pytestmark = pytest.mark.task4_4

arrays = hnp.arrays(np.float64, shapes(min_dims=1, max_dims=3), elements=small_floats(-5, 5))


def np_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    shifted = x - x.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def check_drawn_max_along(values: np.ndarray, data: st.DataObject) -> None:
    """max_along of a drawn array: values, first indices, gradient (chosen tests run it too)."""
    dim = data.draw(st.integers(-values.ndim, values.ndim - 1))
    keepdim = data.draw(st.booleans())
    x = mf.tensor(values, requires_grad=True)
    out, indices = F.max_along(x, dim, keepdim)
    assert_close(out, values.max(axis=dim, keepdims=keepdim))
    want = np.argmax(values, axis=dim)
    want = np.expand_dims(want, dim) if keepdim else want
    assert indices.dtype is mf.int64
    assert indices.tolist() == want.tolist()
    grad = np.random.default_rng(0).standard_normal(out.shape)
    out.backward(mf.tensor(grad))
    expected = np.zeros_like(values)
    first = np.expand_dims(np.argmax(values, axis=dim), dim)
    np.put_along_axis(expected, first, grad if keepdim else np.expand_dims(grad, dim), dim)
    assert_close(x.grad, expected)


def check_drawn_dropout(values: np.ndarray, data: st.DataObject) -> None:
    """Dropout of a drawn array: survivors scaled by 1/(1-p), identity when not training."""
    p = data.draw(st.floats(0.1, 0.9), label="p")
    x = mf.tensor(values)
    out = F.dropout(x, p).numpy()
    kept = out != 0
    assert_close(out[kept], values[kept] / (1 - p))
    assert np.array_equal(F.dropout(x, p, training=False).numpy(), values)


@settings(deadline=None)
@given(arrays, st.data())
def test_max_along_gives_values_indices_and_routes_the_gradient(values, data):
    check_drawn_max_along(values, data)


@settings(max_examples=3, deadline=None)  # and a few drawn inputs
@given(arrays, st.data())
def test_max_along_by_hand_ties_and_names(values, data):
    check_drawn_max_along(values, data)
    x = mf.tensor([[1.0, 5.0, 5.0], [7.0, 2.0, 3.0]], requires_grad=True)
    result = F.max_along(x, 1)
    assert result.values.tolist() == [5.0, 7.0]
    assert result.indices.tolist() == [1, 0]  # the first of tied maxima
    result.values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]  # one cell per row
    kept = F.max_along(mf.tensor([[1.0, 2.0], [4.0, 3.0]]), 0, keepdim=True)
    assert kept.values.shape == (1, 2) and kept.indices.tolist() == [[1, 1]]
    with pytest.raises(IndexError):
        F.max_along(x, 2)


def check_drawn_softmax(values: np.ndarray, data: st.DataObject) -> None:
    """softmax and log_softmax of a drawn array against numpy (chosen tests run it too)."""
    dim = data.draw(st.integers(-values.ndim, values.ndim - 1))
    grad = np.random.default_rng(1).standard_normal(values.shape)
    s = np_softmax(values, dim)
    x = mf.tensor(values, requires_grad=True)
    out = F.softmax(x, dim)
    assert_close(out, s)
    out.backward(mf.tensor(grad))
    assert_close(x.grad, s * (grad - (grad * s).sum(axis=dim, keepdims=True)))
    x = mf.tensor(values, requires_grad=True)
    out = F.log_softmax(x, dim)
    assert_close(out, np_log_softmax(values, dim))
    out.backward(mf.tensor(grad))
    assert_close(x.grad, grad - s * grad.sum(axis=dim, keepdims=True))


@settings(deadline=None)
@given(arrays, st.data())
def test_softmax_and_log_softmax_match_numpy_with_gradients(values, data):
    check_drawn_softmax(values, data)


@settings(max_examples=3, deadline=None)  # and a few drawn inputs
@given(arrays, st.data())
def test_softmax_family_is_stable_for_huge_logits(values, data):
    check_drawn_max_along(values, data)
    logits = np.array([[1000.0, 0.0, -1000.0], [1000.0, 1000.0, 999.0]])
    soft = F.softmax(mf.tensor(logits), 1)
    assert_close(soft, np_softmax(logits, 1))
    log_soft = F.log_softmax(mf.tensor(logits), 1)
    assert np.isfinite(log_soft.numpy()).all()
    assert_close(log_soft, np_log_softmax(logits, 1))
    assert F.softmax(mf.tensor([-1000.0, -1000.0]), 0).tolist() == [0.5, 0.5]


@settings(max_examples=3, deadline=None)  # and a few drawn inputs
@given(arrays, st.data())
def test_softmax_gradcheck_dtypes_and_zero_dim(values, data):
    check_drawn_max_along(values, data)
    x = mf.tensor(np.random.default_rng(1).standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda t: F.log_softmax(t, 0), [x])
    assert gradcheck(lambda t: F.softmax(t, 1), [x])
    small = F.softmax(mf.tensor([1.0, 2.0], dtype=mf.float32), 0)
    assert small.dtype is mf.float32
    assert abs(sum(small.tolist()) - 1.0) < 1e-6
    assert F.log_softmax(mf.tensor([1, 2]), 0).dtype is mf.float64  # ints become floats
    assert F.softmax(mf.tensor(3.0), 0).item() == 1.0
    assert F.log_softmax(mf.tensor(3.0), 0).item() == 0.0


@settings(max_examples=3, deadline=None)  # and a few drawn inputs
@given(arrays, st.data())
def test_dropout_identity_when_not_training_or_p_zero(values, data):
    check_drawn_dropout(values, data)
    x = mf.randn(4, 5, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 1.0).tolist() == [[0.0] * 5] * 4
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, -0.1)


@settings(max_examples=3, deadline=None)  # and a few drawn inputs
@given(arrays, st.data())
def test_dropout_scales_survivors_and_is_reproducible(values, data):
    check_drawn_dropout(values, data)
    x = mf.ones(200, 50, requires_grad=True)
    mf.manual_seed(3)
    first = F.dropout(x, 0.3)
    mf.manual_seed(3)
    second = F.dropout(x, 0.3)
    assert first.tolist() == second.tolist()
    values = first.detach().numpy()
    kept = values != 0
    assert np.allclose(values[kept], 1 / 0.7)
    assert abs(kept.mean() - 0.7) < 0.02
    first.sum().backward()
    assert np.array_equal(x.grad.numpy(), values)
    third = F.dropout(x, 0.3)
    assert third.tolist() != first.tolist()


@settings(max_examples=3, deadline=None)  # and a few drawn inputs
@given(arrays, st.data())
def test_dropout_layer_follows_train_and_eval(values, data):
    check_drawn_dropout(values, data)
    layer = mf.nn.Dropout(0.5)
    x = mf.ones(20, 20)
    assert (layer(x).numpy() == 0).any()
    layer.eval()
    assert layer(x) is x
