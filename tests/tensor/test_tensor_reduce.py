"""Reductions on tensors (task 2.3): sum, mean, var, std, max, min, argmax, argmin."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt
from tests.hypothesis_profiles import fixture_ok

task2_3 = pytest.mark.task2_3
TOL = {"rtol": 1e-10, "atol": 1e-12}


@st.composite
def dims_of(draw: st.DrawFn, ndim: int) -> Any:
    """None, an int (maybe negative) or a tuple of distinct dims of an ndim-dim tensor."""
    if ndim == 0:
        return draw(st.sampled_from([None, 0, -1]))
    single = st.integers(-ndim, ndim - 1)
    several = st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)
    return draw(st.one_of(st.none(), single, several.map(tuple)))


def _axis(dim: Any, ndim: int) -> Any:
    if ndim == 0 or dim is None:
        return None
    return dim


@task2_3
@fixture_ok
@given(data=st.data(), keepdim=st.booleans())
def test_sum_mean_var_std_match_numpy(
    backend: TensorBackend, data: st.DataObject, keepdim: bool
) -> None:
    t = data.draw(mt.tensors(backend=backend))
    dim = data.draw(dims_of(t.dim()))
    values, axis = t.numpy(), _axis(dim, t.dim())
    mt.assert_close(t.sum(dim, keepdim), np.sum(values, axis=axis, keepdims=keepdim), **TOL)
    mt.assert_close(mf.sum(t, dim=dim, keepdim=keepdim), t.sum(dim=dim, keepdim=keepdim))
    mt.assert_close(t.mean(dim, keepdim), np.mean(values, axis=axis, keepdims=keepdim), **TOL)
    count = (
        values.size if axis is None else np.prod([values.shape[d] for d in np.atleast_1d(axis)])
    )
    if count > 1:
        expected = np.var(values, axis=axis, keepdims=keepdim, ddof=1)
        mt.assert_close(t.var(dim, keepdim=keepdim), expected, rtol=1e-8, atol=1e-10)
        mt.assert_close(t.std(dim, keepdim=keepdim), np.sqrt(expected), rtol=1e-8, atol=1e-8)
    biased = np.var(values, axis=axis, keepdims=keepdim)
    mt.assert_close(t.var(dim, keepdim=keepdim, unbiased=False), biased, rtol=1e-8, atol=1e-10)


@task2_3
@fixture_ok
@given(data=st.data(), keepdim=st.booleans())
def test_max_min_argmax_along_a_dim(
    backend: TensorBackend, data: st.DataObject, keepdim: bool
) -> None:
    elements = st.sampled_from([-1.0, 0.0, 0.5, 2.0])  # ties: the first index wins
    t = data.draw(mt.tensors(shape=data.draw(mt.shapes(min_dims=1)), backend=backend,
                             elements=elements))  # fmt: skip
    dim = data.draw(st.integers(-t.dim(), t.dim() - 1))
    values = t.numpy()
    top, where = t.max(dim, keepdim)
    assert where.dtype is mf.int64
    mt.assert_close(top, np.max(values, axis=dim, keepdims=keepdim), rtol=0, atol=0)
    mt.assert_close(where, np.argmax(values, axis=dim, keepdims=keepdim), rtol=0, atol=0)
    low = t.min(dim, keepdim)
    mt.assert_close(low.values, np.min(values, axis=dim, keepdims=keepdim), rtol=0, atol=0)
    mt.assert_close(low.indices, np.argmin(values, axis=dim, keepdims=keepdim), rtol=0, atol=0)
    mt.assert_close(t.argmax(dim, keepdim), np.argmax(values, axis=dim, keepdims=keepdim))
    mt.assert_close(t.argmin(dim), np.argmin(values, axis=dim))
    mt.assert_close(mf.max(t, dim)[1], np.argmax(values, axis=dim), rtol=0, atol=0)


@task2_3
@fixture_ok
@given(data=st.data())
def test_reductions_over_everything(backend: TensorBackend, data: st.DataObject) -> None:
    t = data.draw(mt.tensors(backend=backend))
    values = t.numpy()
    assert t.max().shape == () and t.argmax().shape == ()
    mt.assert_close(t.max(), np.max(values), rtol=0, atol=0)
    mt.assert_close(t.min(), np.min(values), rtol=0, atol=0)
    mt.assert_close(mf.max(t), np.max(values), rtol=0, atol=0)
    assert t.argmax().item() == int(np.argmax(values))
    assert t.argmax(keepdim=True).shape == (1,) * t.dim()


@task2_3
def test_integer_reductions() -> None:
    t = mf.tensor([[1, 5, 2], [7, 0, 7]])
    assert t.sum().item() == 22 and t.sum().dtype is mf.int64
    assert t.max(1).values.tolist() == [5, 7] and t.max(1).indices.tolist() == [1, 0]
    assert t.min().item() == 0 and t.argmax(1).tolist() == [1, 0]
    assert t.float().mean().item() == pytest.approx(22 / 6)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        t.mean()


@pytest.mark.extra  # the reductions' argument checks are given code
def test_reduction_errors() -> None:
    t = mf.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of"):
        t.sum(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.max(-3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        t.sum((0, 0))
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        mf.zeros(0).max()
    with pytest.raises(TypeError, match="dim must be an int"):
        t.max(mf.zeros(2, 3))
    assert mf.zeros(0, 3).sum(0).tolist() == [0.0, 0.0, 0.0]


@task2_3
def test_zero_dim_reductions() -> None:
    t = mf.tensor(2.5)
    assert t.sum().item() == 2.5 and t.sum(0).item() == 2.5 and t.mean(-1).item() == 2.5
    assert t.max(0).values.item() == 2.5 and t.max(0).indices.item() == 0
    assert np.isnan(mf.tensor([1.0]).var().item())
