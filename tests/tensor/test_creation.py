"""Creating tensors (task 2.3): creation functions, dtypes, seeds, numpy sharing, repr."""

from __future__ import annotations

import numpy as np
import pytest

import minifw as mf

pytestmark = pytest.mark.extra  # creation and printing are given code


@pytest.mark.parametrize(
    ("make", "shape", "value"),
    [
        (lambda: mf.zeros(2, 3), (2, 3), 0.0),
        (lambda: mf.zeros((2, 3)), (2, 3), 0.0),
        (lambda: mf.ones([4]), (4,), 1.0),
        (lambda: mf.ones(()), (), 1.0),
        (lambda: mf.full((2, 2), 1.5), (2, 2), 1.5),
        (lambda: mf.full([3], 7), (3,), 7),
        (lambda: mf.empty(2, 1), (2, 1), None),
        (lambda: mf.zeros_like(mf.ones(2, 3, dtype=mf.float32)), (2, 3), 0.0),
        (lambda: mf.ones_like(mf.zeros(3, dtype=mf.int64)), (3,), 1),
        (lambda: mf.full_like(mf.zeros(2), 4.0), (2,), 4.0),
    ],
)
def test_filled_tensors(make, shape, value) -> None:  # type: ignore[no-untyped-def]
    t = make()
    assert t.shape == shape and t.is_leaf and not t.requires_grad
    if value is not None:
        assert np.all(t.numpy() == value)


def test_dtypes_of_creation_functions() -> None:
    assert mf.zeros(2).dtype is mf.float64
    assert mf.full((2,), 7).dtype is mf.int64 and mf.full((2,), 7.0).dtype is mf.float64
    assert mf.zeros(2, dtype=mf.float32).dtype is mf.float32
    assert mf.zeros_like(mf.ones(2, dtype=mf.float32)).dtype is mf.float32
    assert mf.ones_like(mf.zeros(2), dtype=mf.int64).dtype is mf.int64
    assert mf.arange(5).dtype is mf.int64 and mf.arange(5.0).dtype is mf.float64
    assert mf.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert mf.arange(2, 8, 3).tolist() == [2, 5]
    assert mf.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert mf.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]] and mf.eye(2, 3).shape == (2, 3)
    assert mf.rand(2, 3).dtype is mf.float64 and mf.randn(4, dtype=mf.float32).dtype is mf.float32
    ones = mf.ones(2, requires_grad=True)
    assert ones.requires_grad and ones.is_leaf
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require"):
        mf.zeros(2, dtype=mf.int64, requires_grad=True)
    with pytest.raises(TypeError, match="unexpected keyword"):
        mf.rand(2, colour="red")


def test_tensor_infers_dtype_like_pytorch() -> None:
    assert mf.tensor(3).dtype is mf.int64 and mf.tensor(3.0).dtype is mf.float64
    assert mf.tensor([1, 2.5]).dtype is mf.float64 and mf.tensor([True, False]).tolist() == [1, 0]
    assert mf.tensor(np.array([1, 2], dtype=np.int32)).dtype is mf.int64
    assert mf.tensor(np.ones(2, dtype=np.float32)).dtype is mf.float32
    assert mf.tensor([[1.0, 2.0], [3.0, 4.0]]).shape == (2, 2)
    assert mf.tensor([]).shape == (0,)
    assert mf.tensor([1, 2], dtype=mf.float32).dtype is mf.float32
    source = mf.tensor([1.0, 2.0], requires_grad=True)
    copy = mf.tensor(source)
    assert not copy.requires_grad and copy._data.base is not source._data.base
    with pytest.raises(ValueError, match="ragged"):
        mf.tensor([[1.0], [2.0, 3.0]])
    with pytest.raises(TypeError, match="can't build a tensor"):
        mf.tensor(["a", None])


def test_tensor_copies_its_numpy_input_but_from_numpy_shares() -> None:
    array = np.array([1.0, 2.0, 3.0])
    copied, shared = mf.tensor(array), mf.from_numpy(array)
    array[0] = 10.0
    assert copied[0].item() == 1.0 and shared[0].item() == 10.0
    shared[1] = 20.0
    assert array[1] == 20.0
    assert shared.numpy() is not array and np.shares_memory(shared.numpy(), array)
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    view = mf.from_numpy(strided)
    assert view.stride() == (4, 2) and view.tolist() == strided.tolist()
    view[0, 1] = -1.0
    assert strided[0, 1] == -1.0
    assert mf.from_numpy(np.arange(3)).dtype is mf.int64
    with pytest.raises(TypeError, match="can't convert np.ndarray of type int32"):
        mf.from_numpy(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        mf.from_numpy([1.0, 2.0])  # type: ignore[arg-type]


def test_manual_seed_makes_draws_reproducible() -> None:
    mf.manual_seed(3)
    first = (mf.rand(3).tolist(), mf.randn(2, 2).tolist(), mf.randint(0, 10, (4,)).tolist())
    mf.manual_seed(3)
    second = (mf.rand(3).tolist(), mf.randn(2, 2).tolist(), mf.randint(0, 10, (4,)).tolist())
    assert first == second
    assert mf.rand(1000).max().item() < 1.0 and mf.rand(1000).min().item() >= 0.0
    noise = mf.randn(2000)
    assert abs(noise.mean().item()) < 0.15 and abs(noise.std().item() - 1.0) < 0.15
    assert sorted(mf.randperm(5).tolist()) == [0, 1, 2, 3, 4]
    drawn = mf.randint(3, (50,))
    assert drawn.dtype is mf.int64 and drawn.min().item() >= 0 and drawn.max().item() < 3


def test_backend_and_device_options() -> None:
    simple = mf.zeros(2, backend="simple")
    assert simple.backend.name == "simple"
    assert mf.zeros_like(simple).backend is simple.backend
    assert mf.tensor([1.0], device="cpu").device.type == "cpu"
    with pytest.raises(ValueError, match="unknown backend"):
        mf.zeros(2, backend="quantum")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        mf.zeros(2, device="tpu")


@pytest.mark.parametrize(
    ("make", "text"),
    [
        (lambda: mf.tensor([1.0, 2.0]), "tensor([1., 2.])"),
        (lambda: mf.tensor([1.5, 2.25]), "tensor([1.5000, 2.2500])"),
        (lambda: mf.tensor([[1, 2], [3, 40]]), "tensor([[ 1,  2],\n        [ 3, 40]])"),
        (lambda: mf.tensor(2.5), "tensor(2.5000)"),
        (lambda: mf.tensor([0.001, 10.0]), "tensor([1.0000e-03, 1.0000e+01])"),
        (lambda: mf.tensor([1.0, 2.0], requires_grad=True),
         "tensor([1., 2.], requires_grad=True)"),
        (lambda: mf.tensor([1.0, 2.0], requires_grad=True) * 2,
         "tensor([2., 4.], grad_fn=<MulBackward>)"),
        (lambda: mf.ones(2, dtype=mf.float32), "tensor([1., 1.], dtype=minifw.float32)"),
        (lambda: mf.zeros(0, 3), "tensor([], size=(0, 3))"),
        (lambda: mf.tensor([float("nan"), float("inf"), 1.0]), "tensor([nan, inf, 1.])"),
        (lambda: mf.zeros(2, 1, 2), "tensor([[[0., 0.]],\n\n        [[0., 0.]]])"),
    ],
)  # fmt: skip
def test_repr_looks_like_pytorch(make, text: str) -> None:  # type: ignore[no-untyped-def]
    assert repr(make()) == text


def test_repr_wraps_and_summarizes_like_pytorch() -> None:
    long_row = repr(mf.arange(30.0))  # 14 cells of width 3 (+ ", ") fit in 80 columns
    assert [len(line.split(",")) - 1 for line in long_row.splitlines()] == [14, 14, 1]
    assert all(line.startswith("        ") for line in long_row.splitlines()[1:])
    big = repr(mf.arange(2000.0))
    assert big == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])"
    )
