"""In-place ops and index assignment (task 2.3): values, views, dtypes and their errors.

Their interplay with autograd is tested in test_autograd.py (task 2.4).
"""

from __future__ import annotations

from collections.abc import Callable
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
WRITABLE = ("contiguous", "permuted", "sliced")

CASES: list[tuple[str, Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = [
    ("add_", lambda t, o: t.add_(o), lambda a, o: a + o),
    ("add_alpha", lambda t, o: t.add_(o, alpha=-2.0), lambda a, o: a - 2.0 * o),
    ("sub_", lambda t, o: t.sub_(o), lambda a, o: a - o),
    ("mul_", lambda t, o: t.mul_(o), lambda a, o: a * o),
    ("div_", lambda t, o: t.div_(o), lambda a, o: a / o),
    ("copy_", lambda t, o: t.copy_(o), lambda a, o: np.broadcast_to(o, a.shape)),
]


def _iop(name: str) -> Callable[[Any, Any], Any]:
    def run(t: Any, o: Any) -> Any:
        if name == "+=":
            t += o
        elif name == "-=":
            t -= o
        elif name == "*=":
            t *= o
        else:
            t /= o
        return t

    return run


AUGMENTED = [
    ("+=", _iop("+="), np.add),
    ("-=", _iop("-="), np.subtract),
    ("*=", _iop("*="), np.multiply),
    ("/=", _iop("/="), np.divide),
]


@task2_3
@pytest.mark.parametrize(
    ("name", "op", "ref"), CASES + AUGMENTED, ids=[c[0] for c in CASES + AUGMENTED]
)
@fixture_ok
@given(data=st.data())
def test_inplace_ops_write_into_drawn_layouts(
    backend: TensorBackend, name: str, op: Any, ref: Any, data: st.DataObject
) -> None:
    shape, other_shape = data.draw(mt.broadcastable_shapes())
    shape = np.broadcast_shapes(shape, other_shape)
    t = data.draw(mt.tensors(shape=shape, backend=backend, layouts=WRITABLE))
    other = data.draw(
        mt.tensors(shape=other_shape, backend=backend, elements=mt.NONZERO.elements())
    )
    before, storage, version = t.numpy().copy(), t._data.base, t._version
    result = op(t, other)
    assert result is t and t._data.base is storage and t._version == version + 1
    mt.assert_close(t, ref(before, other.numpy()), rtol=1e-12, atol=1e-12)
    mt.assert_close(op(t.detach(), 2.0), ref(ref(before, other.numpy()), 2.0), rtol=1e-12)


@task2_3
def test_writes_through_views_reach_the_base() -> None:
    base = mf.zeros(3, 4)
    base[1:, ::2].add_(1.0)
    base.T[0] += 5.0
    column = base[:, 3]
    column.fill_(-1.0)
    expected = np.zeros((3, 4))
    expected[1:, ::2] += 1.0
    expected[:, 0] += 5.0
    expected[:, 3] = -1.0
    mt.assert_close(base, expected, rtol=0, atol=0)
    base.zero_()
    assert base.sum().item() == 0.0


@task2_3
def test_setitem_forms() -> None:
    t = mf.zeros(2, 3)
    t[0] = 1.0
    t[1, 2] = 5
    t[:, 1] = mf.tensor([7.0, 8.0])
    t[..., None][1, 0] = -1.0
    assert t.tolist() == [[1.0, 7.0, 1.0], [-1.0, 8.0, 5.0]]
    r = mf.arange(5.0)
    r[1:] = r[:-1].clone() * 0 + r[:-1]  # overlapping source and target
    assert r.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    s = mf.arange(5.0)
    s[1:] = s[:-1]
    assert s.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]


@pytest.mark.extra  # dtype rules of given in-place methods
def test_inplace_dtype_rules() -> None:
    ints = mf.tensor([1, 2, 3])
    ints += 2
    assert ints.tolist() == [3, 4, 5] and ints.dtype is mf.int64
    with pytest.raises(
        RuntimeError, match="result type Float can't be cast to the desired output"
    ):
        ints += 0.5
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        ints /= 2
    ints.copy_(mf.tensor([1.9, -1.9, 0.0]))
    assert ints.tolist() == [1, -1, 0]
    ints.fill_(7.9)
    assert ints.tolist() == [7, 7, 7]
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes"):
        ints[0] = 0.5
    single = mf.ones(2, dtype=mf.float32)
    single += mf.ones(2)  # a float64 operand is cast into the float32 tensor, as in PyTorch
    assert single.dtype is mf.float32 and single.tolist() == [2.0, 2.0]


@pytest.mark.extra  # the launcher's checks are given code
def test_inplace_shape_and_layout_errors() -> None:
    with pytest.raises(
        RuntimeError, match=r"output with shape \(3,\) doesn't match the broadcast"
    ):
        mf.zeros(3).add_(mf.zeros(2, 3))
    with pytest.raises(RuntimeError, match="refers to a single memory location"):
        mf.zeros(3, 1).expand(3, 2).add_(1.0)
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
        mf.zeros(3).fill_(mf.zeros(3))


@pytest.mark.extra  # profiler and in-place plumbing are given
def test_an_inplace_op_autograd_does_not_record_is_one_launch_into_the_tensor() -> None:
    w = mf.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    storage, version = w._data.base, w._version
    with mf.no_grad(), mf.profiler.profile() as prof:
        w -= mf.ones(2, 3) * 0.5
    assert [(e.name, e.kind) for e in prof.events] == [("mul", "zip"), ("sub", "zip_into")]
    assert w._data.base is storage and w._version == version + 1
    assert w.tolist() == (np.arange(6.0).reshape(2, 3) - 0.5).tolist()


@pytest.mark.extra  # the overlap copy is given code
def test_an_inplace_op_reads_an_overlapping_operand_before_writing() -> None:
    a = mf.arange(6.0)
    a[1:] += a[:-1]  # each cell adds the old value of its left neighbour, not a running sum
    assert a.tolist() == [0.0, 1.0, 3.0, 5.0, 7.0, 9.0]
    b = mf.arange(6.0)
    b[:-1].mul_(b[1:])
    assert b.tolist() == [0.0, 2.0, 6.0, 12.0, 20.0, 5.0]
