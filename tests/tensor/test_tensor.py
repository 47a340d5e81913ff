"""Tensor forwards (task 2.3): the elementwise op table, promotion, matmul, conversions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt
from tests.hypothesis_profiles import fixture_ok

# Tensor comparisons return bool tensors, as in PyTorch.
COMPARISONS = {mf.operators.LT, mf.operators.GT, mf.operators.LE, mf.operators.GE}
COMPARISONS |= {mf.operators.EQ, mf.operators.NE}

task2_3 = pytest.mark.task2_3
# `backend` is function-scoped but returns the same built backend every time.
TOL = {"rtol": 1e-10, "atol": 1e-12}


def draw_args(data: st.DataObject, spec: mt.OpSpec, backend: TensorBackend) -> list[mf.Tensor]:
    """Arguments for `spec`: one drawn shape, or a broadcastable pair for binary ops."""
    shapes = data.draw(mt.broadcastable_shapes()) if spec.arity == 2 else [data.draw(mt.shapes())]
    return [
        data.draw(mt.tensors(shape=shape, backend=backend, elements=domain.elements()))
        for shape, domain in zip(shapes, spec.domain, strict=True)
    ]


@task2_3
@pytest.mark.parametrize("spec", mt.OPS, ids=lambda s: s.name)
@fixture_ok
@given(data=st.data())
def test_op_table_forward_matches_numpy(
    backend: TensorBackend, spec: mt.OpSpec, data: st.DataObject
) -> None:
    args = draw_args(data, spec, backend)
    out = spec.fn(*args)
    assert out.backend is backend
    assert out.dtype is (mf.bool if spec.code in COMPARISONS else mf.float64)
    mt.assert_close(out, spec.ref(*(a.numpy() for a in args)), **TOL)


@task2_3
@pytest.mark.parametrize(
    "spec", [s for s in mt.OPS if s.arity == 2 and s.name != "atan2"], ids=lambda s: s.name
)  # atan2 takes a tensor first, as in PyTorch
def test_binary_ops_take_python_numbers_on_either_side(spec: mt.OpSpec) -> None:
    values = np.array([[0.5, 1.5], [2.0, 3.0]])
    t = mf.tensor(values)
    mt.assert_close(spec.fn(t, 2.0), spec.ref(values, np.full_like(values, 2.0)))
    mt.assert_close(spec.fn(2.0, t), spec.ref(np.full_like(values, 2.0), values))


@task2_3
def test_module_level_functions_match_methods() -> None:
    t = mf.tensor([[0.5, 2.0], [1.5, 3.0]])
    for name in ["exp", "log", "sigmoid", "relu", "tanh", "sqrt", "abs"]:
        mt.assert_close(getattr(mf, name)(t), getattr(t, name)(), rtol=0, atol=0)
    mt.assert_close(mf.matmul(t, t), t @ t, rtol=0, atol=0)


@task2_3
def test_special_values_follow_numpy(backend: TensorBackend) -> None:
    """IEEE results as in numpy and PyTorch: no exception for x / 0 or log(0)."""
    t = mf.tensor([0.0, -1.0, 1000.0], backend=backend)
    mt.assert_close(t.log(), [-np.inf, np.nan, np.log(1000.0)])
    mt.assert_close(t.sqrt(), [0.0, np.nan, np.sqrt(1000.0)])
    mt.assert_close(t.exp(), [1.0, np.exp(-1.0), np.inf])
    mt.assert_close(t.sigmoid(), [0.5, 1 / (1 + np.e), 1.0])
    mt.assert_close(1.0 / mf.tensor([0.0, -0.0], backend=backend), [np.inf, -np.inf])
    mt.assert_close(mf.zeros(1, backend=backend) / 0.0, [np.nan])


# ---- dtypes and promotion ------------------------------------------------------------------


@pytest.mark.extra  # given code (dtypes, conversions, metadata, checks)
def test_dtype_inference_and_promotion() -> None:
    ints, floats = mf.tensor([1, 2, 3]), mf.tensor([1.0, 2.0, 3.0])
    assert ints.dtype is mf.int64 and mf.long is mf.int64
    assert floats.dtype is mf.float64 is mf.get_default_dtype()
    assert (ints + 1).dtype is mf.int64
    assert (ints + 0.5).dtype is mf.float64
    assert (ints + floats).dtype is mf.float64
    assert (ints / 2).dtype is mf.float64
    assert (ints / ints).tolist() == [1.0, 1.0, 1.0]
    assert (ints * ints).tolist() == [1, 4, 9]
    assert (floats.float() + 1.0).dtype is mf.float32
    assert (floats.float() + floats).dtype is mf.float64
    assert (ints**2).dtype is mf.int64 and (ints**0.5).dtype is mf.float64
    assert ints.exp().dtype is mf.float64 and ints.abs().dtype is mf.int64


@pytest.mark.extra  # given code (dtypes, conversions, metadata, checks)
def test_conversions() -> None:
    t = mf.tensor([1.7, -1.7])
    assert t.long().tolist() == [1, -1]
    assert t.float().dtype is mf.float32 and t.float().double().dtype is mf.float64
    assert t.to(mf.int64).dtype is mf.int64 and t.to("float32").dtype is mf.float32
    assert t.to(mf.tensor([1])).dtype is mf.int64
    assert t.to(dtype=mf.float64) is t
    assert t.to("cpu") is t and t.cpu() is t
    assert t.type_as(mf.tensor([1])).dtype is mf.int64
    with pytest.raises(TypeError, match="unsupported dtype"):
        t.to("int8")


@pytest.mark.extra  # given code (dtypes, conversions, metadata, checks)
def test_set_default_dtype_changes_new_float_tensors() -> None:
    try:
        mf.set_default_dtype(mf.float32)
        assert mf.tensor([1.0]).dtype is mf.float32
        assert mf.zeros(2).dtype is mf.float32
        assert (mf.tensor([1, 2]) / 2).dtype is mf.float32
        assert "dtype" not in repr(mf.tensor([1.0]))
    finally:
        mf.set_default_dtype(mf.float64)
    with pytest.raises(TypeError, match="only floating-point types"):
        mf.set_default_dtype(mf.int64)


@task2_3
def test_comparisons_return_bool_without_grad() -> None:
    a = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    result = a > 1.5
    assert result.dtype is mf.bool and result.tolist() == [False, True, True]
    assert not result.requires_grad
    assert (mf.tensor([1, 2]) == mf.tensor([1, 3])).tolist() == [True, False]
    assert (mf.tensor([1.0], dtype=mf.float32) < 2).dtype is mf.bool
    pred, y = mf.tensor([0, 1, 1, 2]), mf.tensor([0, 1, 2, 2])
    assert (pred == y).float().mean().item() == pytest.approx(0.75)
    assert (pred == y).sum().item() == 3
    assert (a != None) is True  # noqa: E711 - Python's fallback, as in PyTorch


# ---- matmul --------------------------------------------------------------------------------


@task2_3
@fixture_ok
@given(data=st.data())
def test_matmul_forms_on_drawn_layouts(backend: TensorBackend, data: st.DataObject) -> None:
    shape_a, shape_b = data.draw(mt.matmul_shapes())
    a = data.draw(mt.tensors(shape=shape_a, backend=backend))
    b = data.draw(mt.tensors(shape=shape_b, backend=backend))
    mt.assert_close(a @ b, np.matmul(a.numpy(), b.numpy()), **TOL)


@pytest.mark.extra  # given code (dtypes, conversions, metadata, checks)
def test_matmul_inner_dim_mismatch_names_shapes() -> None:
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(2x3 and 4x5\)"):
        mf.ones(2, 3) @ mf.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"operand shapes \(3,\) @ \(4,\)"):
        mf.ones(3) @ mf.ones(4)
    with pytest.raises(RuntimeError, match="at least 1D"):
        mf.tensor(2.0) @ mf.ones(2)


@task2_3
def test_matmul_of_ints_and_lists() -> None:
    a = mf.tensor([[1, 2], [3, 4]])
    assert (a @ a).tolist() == [[7, 10], [15, 22]] and (a @ a).dtype is mf.int64
    assert (a @ [1.0, 1.0]).tolist() == [3.0, 7.0]


# ---- conversion to Python and numpy --------------------------------------------------------


@pytest.mark.extra  # given code (dtypes, conversions, metadata, checks)
def test_numpy_shares_memory_and_refuses_grad() -> None:
    t = mf.tensor([[1.0, 2.0], [3.0, 4.0]])
    array = t.numpy()
    array[0, 0] = 10.0
    assert t[0, 0].item() == 10.0
    assert t.T.numpy().tolist() == [[10.0, 3.0], [2.0, 4.0]]
    assert np.shares_memory(t.T.numpy(), array)
    assert np.asarray(t).shape == (2, 2)
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        mf.ones(2, requires_grad=True).numpy()
    assert mf.ones(2, requires_grad=True).detach().numpy().tolist() == [1.0, 1.0]


@pytest.mark.extra  # given code (dtypes, conversions, metadata, checks)
def test_python_number_conversions() -> None:
    t = mf.tensor([[2.5]])
    assert t.item() == 2.5 and isinstance(t.item(), float)
    assert float(t) == 2.5 and int(t) == 2
    assert mf.tensor(3).item() == 3 and isinstance(mf.tensor(3).item(), int)
    assert mf.tensor([[1, 2]]).tolist() == [[1, 2]] and mf.tensor(1.5).tolist() == 1.5
    assert f"{mf.tensor(0.123456):.3f}" == "0.123"
    assert [1, 2, 3][mf.tensor(1)] == 2
    with pytest.raises(
        RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"
    ):
        mf.tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value"):
        bool(mf.tensor([1.0, 2.0]))
    assert bool(mf.tensor([0.0])) is False


@pytest.mark.extra  # given code (dtypes, conversions, metadata, checks)
def test_metadata() -> None:
    t = mf.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.size() == (2, 3, 4) and t.size(-1) == 4
    assert t.dim() == t.ndim == 3 and t.numel() == 24 and len(t) == 2
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12
    assert t.is_contiguous() and not t.transpose(0, 2).is_contiguous()
    assert (
        t.device == mf.device("cpu")
        and t.device.type == "cpu"
        and not t.is_cuda
        and t.is_floating_point()
    )
    assert isinstance(t.backend, TensorBackend)
    assert [row.shape for row in t] == [(3, 4), (3, 4)]
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.size(3)
    with pytest.raises(TypeError, match="len"):
        len(mf.tensor(1.0))


@task2_3
def test_pow_forms() -> None:
    t = mf.tensor([1.0, 2.0, 4.0])
    mt.assert_close(t**2, [1.0, 4.0, 16.0])
    mt.assert_close(t ** mf.tensor(0.5), [1.0, np.sqrt(2), 2.0])
    mt.assert_close(2**t, [2.0, 4.0, 16.0])
    mt.assert_close(t.pow(-1), [1.0, 0.5, 0.25])
    mt.assert_close(mf.tensor([-8.0]) ** (1 / 3), [np.nan])
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        mf.tensor([2]) ** -1
    mt.assert_close(t**t, [1.0, 4.0, 256.0])


@pytest.mark.extra  # given code (dtypes, conversions, metadata, checks)
def test_tensors_on_two_cpu_backends_mix() -> None:
    fast, simple = mf.tensor([1.0, 2.0], backend="fast"), mf.tensor([1.0, 1.0], backend="simple")
    assert (fast + simple).tolist() == [2.0, 3.0] and (fast + simple).backend.name == "fast"
    assert (simple * fast).backend.name == "simple"
