"""Shape and indexing on tensors: views share storage (task 2.1); copies, cat, stack and
where run kernels (task 2.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt
from tests.hypothesis_profiles import fixture_ok

task2_1 = pytest.mark.task2_1
task2_3 = pytest.mark.task2_3


def shares_storage(a: mf.Tensor, b: mf.Tensor) -> bool:
    return a._data.base is b._data.base


# ---- 2.1: views ----------------------------------------------------------------------------


@pytest.mark.extra  # view and indexing are given code
def test_view_and_its_pytorch_error() -> None:
    t = mf.arange(6.0)
    v = t.view(2, 3)
    assert v.shape == (2, 3) and shares_storage(t, v)
    assert t.view(-1, 2).shape == (3, 2) and t.view((3, 2)).shape == (3, 2)
    assert t.view(2, 1, 3).stride() == (3, 3, 1)
    with pytest.raises(RuntimeError) as info:
        v.T.view(6)
    assert "view size is not compatible with input tensor's size and stride" in str(info.value)
    assert "Use .reshape(...) instead." in str(info.value)
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        t.view(4)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)


@task2_1
def test_views_share_storage_and_writes_show_through() -> None:
    t = mf.zeros(2, 3)
    for view in [t.view(6), t.T, t.permute(1, 0), t[0], t[:, 1:], t.unsqueeze(0), t[None]]:
        assert shares_storage(t, view)
    t.T._data.set((2, 0), 5.0)  # one cell written through the views (no kernel launch)
    t[1]._data.set((0,), 7.0)
    assert t.tolist() == [[0.0, 0.0, 5.0], [7.0, 0.0, 0.0]]


@task2_1
@pytest.mark.parametrize(
    ("method", "reference"),
    [
        (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
        (lambda t: t.permute((1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
        (lambda t: t.permute(-1, -2, -3), lambda a: a.transpose(2, 1, 0)),
        (lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
        (lambda t: t.transpose(-1, 1), lambda a: a.swapaxes(2, 1)),
        (lambda t: t.T, lambda a: a.T),
        (lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
        (lambda t: t.unsqueeze(1), lambda a: a[:, None]),
        (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
        (lambda t: t[:, :1].squeeze(1), lambda a: a[:, 0]),
        (lambda t: t[:1, :, :1].squeeze(), lambda a: a[0, :, 0]),
        (lambda t: t[:1].squeeze((0, 1)), lambda a: a[0]),
        (lambda t: t.expand(3, 2, 3, 4), lambda a: np.broadcast_to(a, (3, 2, 3, 4))),
        (lambda t: t[:, :1].expand(-1, 3, -1), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
        (lambda t: t[0, 1, 2], lambda a: a[0, 1, 2]),
        (lambda t: t[..., ::2], lambda a: a[..., ::2]),
        (lambda t: t[1:, None, -2:], lambda a: a[1:, None, -2:]),
        (lambda t: t[mf.tensor(1)], lambda a: a[1]),
    ],
)
@given(data=st.data())
def test_views_match_numpy_on_drawn_layouts(method, reference, data: st.DataObject) -> None:  # type: ignore[no-untyped-def]
    t = data.draw(mt.tensors(shape=(2, 3, 4)))
    out = method(t)
    assert shares_storage(t, out)
    mt.assert_close(out, reference(t.numpy()), rtol=0, atol=0)


@pytest.mark.extra  # view and indexing are given code
def test_indexing_gives_0_dim_tensors_and_errors() -> None:
    t = mf.arange(6).view(2, 3)
    assert t[1, 2].shape == () and t[1, 2].item() == 5
    assert t[-1].tolist() == [3, 4, 5]
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        t[2]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]


@task2_1
def test_bad_permutations_and_dims() -> None:
    t = mf.zeros(2, 3)
    with pytest.raises(
        RuntimeError, match="input.dim\\(\\) = 2 is not equal to len\\(dims\\) = 3"
    ):
        t.permute(0, 1, 2)
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        t.permute(1, 1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of"):
        t.transpose(0, 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.unsqueeze(3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.squeeze(2)
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match"):
        t.expand(2, 4)


# ---- 2.3: copies, cat, stack, where --------------------------------------------------------


@task2_3
@fixture_ok
@given(data=st.data())
def test_reshape_copies_only_when_needed(backend: TensorBackend, data: st.DataObject) -> None:
    t = data.draw(mt.tensors(shape=(2, 3, 2), backend=backend))
    flat = t.reshape(-1)
    if t.is_contiguous():
        assert shares_storage(t, flat)
        assert not shares_storage(t, t.transpose(0, 1).reshape(-1))
    mt.assert_close(flat, t.numpy().reshape(-1), rtol=0, atol=0)
    mt.assert_close(t.flatten(1), t.numpy().reshape(2, 6), rtol=0, atol=0)
    mt.assert_close(t.flatten(0, 1), t.numpy().reshape(6, 2), rtol=0, atol=0)
    c = t.contiguous()
    assert c.is_contiguous() and (c is t) == t.is_contiguous()
    mt.assert_close(c, t.numpy(), rtol=0, atol=0)
    clone = t.clone()
    assert not shares_storage(clone, t)
    mt.assert_close(clone, t.numpy(), rtol=0, atol=0)


@pytest.mark.extra  # flatten and reshape are given code
def test_flatten_and_reshape_edge_cases() -> None:
    assert mf.tensor(3.0).flatten().shape == (1,)
    assert mf.zeros(2, 0).reshape(0, 5).shape == (0, 5)
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        mf.zeros(2, 3).flatten(1, 0)


@task2_3
@fixture_ok
@given(data=st.data())
def test_cat_and_stack_match_numpy(backend: TensorBackend, data: st.DataObject) -> None:
    shape = data.draw(mt.shapes(min_dims=1, max_dims=3))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(data.draw(st.integers(1, 3))):
        own = list(shape)
        own[dim] = data.draw(st.integers(1, 3))
        parts.append(data.draw(mt.tensors(shape=tuple(own), backend=backend)))
    expected = np.concatenate([p.numpy() for p in parts], axis=dim)
    mt.assert_close(mf.cat(parts, dim), expected, rtol=0, atol=0)
    same = [data.draw(mt.tensors(shape=shape, backend=backend)) for _ in range(2)]
    for d in range(-len(shape) - 1, len(shape) + 1):
        mt.assert_close(mf.stack(same, d), np.stack([s.numpy() for s in same], d), rtol=0, atol=0)


@task2_3
def test_cat_and_stack_errors() -> None:
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        mf.cat([mf.zeros(2, 3), mf.zeros(2, 4)])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions"):
        mf.cat([mf.zeros(2, 3), mf.zeros(3)])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        mf.stack([mf.zeros(2), mf.zeros(3)])
    with pytest.raises(RuntimeError, match="non-empty"):
        mf.cat([])
    assert mf.cat([mf.tensor([1]), mf.tensor([0.5])]).tolist() == [1.0, 0.5]


@task2_3
@fixture_ok
@given(data=st.data())
def test_where_matches_numpy(backend: TensorBackend, data: st.DataObject) -> None:
    shape_c, shape_a = data.draw(mt.broadcastable_shapes())
    cond = data.draw(mt.tensors(shape=shape_c, backend=backend)) > 0
    a = data.draw(mt.tensors(shape=shape_a, backend=backend))
    b = data.draw(mt.tensors(shape=shape_c, backend=backend))
    expected = np.where(cond.numpy() != 0, a.numpy(), b.numpy())
    mt.assert_close(mf.where(cond, a, b), expected, rtol=0, atol=0)
    mt.assert_close(mf.where(cond, a, 0.0), np.where(cond.numpy() != 0, a.numpy(), 0.0))


@task2_3
def test_where_keeps_infinities_out_of_the_other_branch() -> None:
    x = mf.tensor([0.0, 1.0, 4.0])
    safe = mf.where(x > 0, x.log(), mf.tensor(-1.0))
    assert safe.tolist() == [-1.0, 0.0, np.log(4.0)]
    assert mf.where(x > 0, 1, 0).dtype is mf.int64
    assert mf.where(x > 0, 1.0, 0).tolist() == [0.0, 1.0, 1.0]
