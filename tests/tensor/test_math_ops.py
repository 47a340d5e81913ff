"""Elementwise math against PyTorch: the new op-table rows, division modes,
clamp, lerp, alpha, comparisons by name, in-place variants and the `mf.` functions.

Values, dtypes, shapes and gradients are compared with torch (tests/parity.py) on every
backend, in float64 and float32, with hypothesis-drawn shapes; int64 cases check that
integer division and remainders stay exact and refuse a zero divisor as torch does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minifw as mf
from minifw.core import operators as ops
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch

pytestmark = pytest.mark.extra

FEW = at_most(10)
DTYPES = ["float64", "float32"]
SMALL = {"max_dims": 3, "max_side": 4}
# Every op of the op table beyond the course's (codes from SIN on), and maximum / minimum.
NEW_NAMES = [spec.name for spec in mt.TABLE_OPS if spec.code is not None and spec.code >= ops.SIN]
NEW_NAMES += ["maximum", "minimum"]
NEW_OPS = [mt.OPS_BY_NAME[name] for name in NEW_NAMES]
NEW_UNARY = [spec for spec in NEW_OPS if spec.arity == 1]
NEW_BINARY = [spec for spec in NEW_OPS if spec.arity == 2]
NO_TORCH_GRAD = {"floor_divide"}  # torch: "derivative for aten::floor_divide is not implemented"


def drawn(data: st.DataObject, shape: tuple[int, ...], domain: mt.Domain) -> np.ndarray:
    """A float64 array of `shape` with values from `domain`."""
    return data.draw(hnp.arrays(np.float64, shape, elements=domain.elements()))


# ---- The op-table rows: forward and gradient against torch ----------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec", NEW_UNARY, ids=lambda s: s.name)
@FEW
@given(data=st.data())
def test_unary_op_matches_torch(
    backend: TensorBackend, spec: mt.OpSpec, dtype: str, data: st.DataObject
) -> None:
    a = drawn(data, data.draw(mt.shapes(**SMALL)), spec.domain[0])
    check_against_torch(lambda lib, x: spec.fn(x), [a], backend, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec", NEW_BINARY, ids=lambda s: s.name)
@FEW
@given(data=st.data())
def test_binary_op_broadcasts_like_torch(
    backend: TensorBackend, spec: mt.OpSpec, dtype: str, data: st.DataObject
) -> None:
    shape_a, shape_b = data.draw(mt.broadcastable_shapes(**SMALL))
    a, b = drawn(data, shape_a, spec.domain[0]), drawn(data, shape_b, spec.domain[1])
    if spec.name in ("maximum", "minimum"):  # ties split the gradient in halves
        ties = st.sampled_from([-1.0, 0.0, 0.5])
        a = data.draw(hnp.arrays(np.float64, shape_a, elements=ties))
        b = data.draw(hnp.arrays(np.float64, shape_b, elements=ties))
    grad = spec.name not in NO_TORCH_GRAD
    check_against_torch(lambda lib, x, y: spec.fn(x, y), [a, b], backend, dtype, grad=grad)


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 800.0])


@pytest.mark.parametrize("spec", NEW_UNARY, ids=lambda s: s.name)
def test_unary_special_values_match_torch(backend: TensorBackend, spec: mt.OpSpec) -> None:
    check_against_torch(lambda lib, x: spec.fn(x), [SPECIAL], backend, grad=False)


@pytest.mark.parametrize("spec", NEW_BINARY, ids=lambda s: s.name)
def test_binary_special_values_match_torch(backend: TensorBackend, spec: mt.OpSpec) -> None:
    a, b = np.meshgrid(SPECIAL[:8], np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0, -3.0]))
    check_against_torch(lambda lib, x, y: spec.fn(x, y), [a, b], backend, grad=False)


MATH_ROWS = [
    row
    for row in ops.OP_TABLE.values()
    if 10 <= row.code < 60 or 115 <= row.code < 160 or 210 <= row.code < 260
]


@pytest.mark.parametrize("row", MATH_ROWS, ids=lambda row: row.name)
def test_dispatchers_run_each_math_row_like_its_function(row: ops.OpRow) -> None:
    function = row.function
    dispatch = ops.unary if row.arity == 1 else ops.binary
    for values in [(x,) if row.arity == 1 else (x, y) for x in SPECIAL for y in SPECIAL[:8]]:
        with np.errstate(all="ignore"):  # inf * 0 and the like: nan, as in the kernels
            got, want = dispatch(row.code, *values), function(*values)
        assert got == want or (got != got and want != want), (row.name, values)


# ---- int64: dtypes kept or promoted as torch, exact division --------------------------------

BIG = np.array([2**53 + 1, -(2**53) - 3, 7, -7, 0, 12, -1], dtype=np.int64)
DIVISORS = np.array([3, 3, -2, -2, 5, 4, 1], dtype=np.int64)
INT_CASES = {
    "floor_divide": lambda lib, a, b: a // b,
    "remainder": lambda lib, a, b: a % b,
    "fmod": lambda lib, a, b: lib.fmod(a, b),
    "div_trunc": lambda lib, a, b: a.div(b, rounding_mode="trunc"),
    "div_floor": lambda lib, a, b: lib.div(a, b, rounding_mode="floor"),
    "number_floor_divide": lambda lib, a, b: a // 3,
    "number_remainder": lambda lib, a, b: a % -3,
    "reversed_floor_divide": lambda lib, a, b: 7 // b,
    "reversed_remainder": lambda lib, a, b: -7 % b,
    "float_number_promotes": lambda lib, a, b: (b // 2.5).double(),
    "sign": lambda lib, a, b: a.sign(),
    "square": lambda lib, a, b: b.square(),
    "floor_copies": lambda lib, a, b: lib.floor(a),
    "round_copies": lambda lib, a, b: a.round(),
    "trunc_copies": lambda lib, a, b: a.trunc(),
    "ceil_copies": lambda lib, a, b: a.ceil(),
    "clamp": lambda lib, a, b: b.clamp(-1, 3),
    "clamp_float_promotes": lambda lib, a, b: b.clamp(min=0.5).double(),
    "maximum": lambda lib, a, b: lib.maximum(b, -b),
    "add_alpha": lambda lib, a, b: b.add(b, alpha=3),
}


@pytest.mark.parametrize("name", list(INT_CASES))
def test_int64_ops_match_torch_exactly(backend: TensorBackend, name: str) -> None:
    check_against_torch(INT_CASES[name], [BIG, DIVISORS], backend, grad=False)


@pytest.mark.parametrize("name", ["sin", "erf", "log1p", "rsqrt", "exp2", "atan"])
def test_transcendental_ops_promote_int64_to_the_default_float(name: str) -> None:
    t = mf.tensor([1, 2, 3])
    result = getattr(t, name)()
    assert result.dtype == mf.get_default_dtype()
    np.testing.assert_allclose(result.numpy(), getattr(t.double(), name)().numpy())


INT_ERRORS = {
    "floor_divide": lambda lib, a, b: a // b,
    "remainder": lambda lib, a, b: a % b,
    "fmod": lambda lib, a, b: a.fmod(b),
    "div_trunc": lambda lib, a, b: a.div(b, rounding_mode="trunc"),
}


@pytest.mark.parametrize("name", list(INT_ERRORS))
def test_int64_division_by_zero_raises_like_torch(backend: TensorBackend, name: str) -> None:
    zeros = np.array([1, 0, 2], dtype=np.int64)
    check_raises_like_torch(INT_ERRORS[name], [BIG[:3], zeros], backend, match="ZeroDivision")


# ---- clamp, lerp, alpha, rounding modes and the other methods ---------------------------------

X = np.array([[-2.5, -0.75, 0.0], [0.3, 1.25, 3.0]])
LO = np.array([-1.0, 0.5, -0.25])
HI = np.array([[1.0], [0.2]])
W = np.array([0.1, 0.5, 0.9])
CASES = {
    "clamp_numbers": lambda lib, x, lo, hi, w: x.clamp(-1.0, 1.0),
    "clamp_min_only": lambda lib, x, lo, hi, w: lib.clamp(x, min=0.0),
    "clamp_max_only": lambda lib, x, lo, hi, w: x.clamp(max=0.5),
    "clamp_tensors": lambda lib, x, lo, hi, w: x.clamp(lo, hi),
    "clamp_min_above_max": lambda lib, x, lo, hi, w: x.clamp(lo + 1.0, hi - 1.0),
    "clip": lambda lib, x, lo, hi, w: lib.clip(x, lo, hi),
    "clamp_min": lambda lib, x, lo, hi, w: x.clamp_min(lo),
    "clamp_max": lambda lib, x, lo, hi, w: lib.clamp_max(x, 1.0),
    "lerp_number_low": lambda lib, x, lo, hi, w: x.lerp(lo * 2.0, 0.25),
    "lerp_number_high": lambda lib, x, lo, hi, w: lib.lerp(x, lo, 0.75),
    "lerp_tensor": lambda lib, x, lo, hi, w: x.lerp(hi, w),
    "add_alpha": lambda lib, x, lo, hi, w: x.add(lo, alpha=2.5),
    "sub_alpha": lambda lib, x, lo, hi, w: lib.sub(x, hi, alpha=-0.5),
    "subtract": lambda lib, x, lo, hi, w: x.subtract(lo),
    "mul": lambda lib, x, lo, hi, w: lib.mul(x, hi),
    "multiply": lambda lib, x, lo, hi, w: x.multiply(2.0),
    "div": lambda lib, x, lo, hi, w: lib.div(x, w),
    "divide_floor": lambda lib, x, lo, hi, w: x.divide(lo, rounding_mode="floor"),
    "div_trunc": lambda lib, x, lo, hi, w: lib.div(x, lo, rounding_mode="trunc"),
    "true_divide": lambda lib, x, lo, hi, w: lib.true_divide(x, hi),
    "neg": lambda lib, x, lo, hi, w: lib.neg(x),
    "negative": lambda lib, x, lo, hi, w: x.negative(),
    "pow_number_base": lambda lib, x, lo, hi, w: lib.pow(2.0, x),
    "pow": lambda lib, x, lo, hi, w: lib.pow(x, 2),
    "round_decimals": lambda lib, x, lo, hi, w: (x * 1.2345).round(decimals=2),
    "round_negative_decimals": lambda lib, x, lo, hi, w: lib.round(x * 123.0, decimals=-1),
    "fix": lambda lib, x, lo, hi, w: lib.fix(x * 1.5),
    "arctan2": lambda lib, x, lo, hi, w: lib.arctan2(x, w),
    "reversed_remainder": lambda lib, x, lo, hi, w: 2.5 % (x.detach() + 5.0),
    "reversed_floor_divide": lambda lib, x, lo, hi, w: 2.5 // (x.detach() + 5.0),
    "chain": lambda lib, x, lo, hi, w: lib.erf(x).sin().clamp(-0.5, 0.5).square().rsqrt(),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_method_matches_torch(backend: TensorBackend, name: str, dtype: str) -> None:
    check_against_torch(CASES[name], [X, LO, HI, W], backend, dtype)


COMPARISONS = [
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
]


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparison_methods_and_functions_match_torch(backend: TensorBackend, name: str) -> None:
    def method(lib: Any, x: Any, y: Any) -> Any:
        return getattr(x, name)(y).double()

    def function(lib: Any, x: Any, y: Any) -> Any:
        return getattr(lib, name)(x, 0.3).double()

    a, b = np.array([[0.3, 1.0, -2.0]]), np.array([[0.3], [2.0]])
    check_against_torch(method, [a, b], backend, grad=False)
    check_against_torch(function, [a, b], backend, grad=False)


ERRORS = {
    "clamp_without_bounds": (lambda lib, x: x.clamp(), "At least one of 'min' or 'max'"),
    "bad_rounding_mode": (lambda lib, x: x.div(2.0, rounding_mode="up"), "rounding_mode"),
    "lerp_dtypes_differ": (lambda lib, x: x.lerp(x.float(), 0.5), "expected dtype"),
    "frac_of_int64": (lambda lib, x: x.long().frac(), "frac"),
    "alpha_float_for_int64": (lambda lib, x: x.long().add(x.long(), alpha=0.5), "alpha"),
    "float_in_place_on_int64": (lambda lib, x: x.long().sin_(), "can't be cast"),
    "in_place_on_leaf": (lambda lib, x: x.requires_grad_().exp_(), "leaf Variable"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_bad_input_raises_like_torch(backend: TensorBackend, name: str) -> None:
    fn, match = ERRORS[name]
    check_raises_like_torch(fn, [X], backend, match=match)


# ---- In-place variants ---------------------------------------------------------------------

IN_PLACE = {
    **{f"{spec.name}_": () for spec in NEW_UNARY},
    "relu_": (), "exp_": (), "log_": (), "sigmoid_": (), "tanh_": (), "sqrt_": (),
    "abs_": (), "neg_": (), "negative_": (), "reciprocal_": (), "pow_": (3,),
    "clamp_": (-0.5, 0.5), "clip_": (None, 0.7), "clamp_min_": (0.2,), "clamp_max_": (0.6,),
    "remainder_": (0.4,), "fmod_": (-0.4,), "fix_": (),
}  # fmt: skip
POSITIVE = np.array([[0.2, 0.45, 0.9], [0.05, 0.7, 0.6]])


@pytest.mark.parametrize("name", list(IN_PLACE))
def test_in_place_variant_matches_torch(backend: TensorBackend, name: str) -> None:
    def fn(lib: Any, x: Any) -> Any:
        y = x * 1.0  # a non-leaf, so autograd records the in-place op
        assert getattr(y, name)(*IN_PLACE[name]) is y
        return y

    check_against_torch(fn, [POSITIVE], backend)


def test_in_place_operators_and_tensor_arguments(backend: TensorBackend) -> None:
    def floats(lib: Any, x: Any) -> Any:
        y = x * 3.0
        y %= 0.7
        y.atan2_(x + 1.0)
        return y.round_(decimals=1)

    def ints(lib: Any, n: Any) -> Any:
        m = n.clone()
        m //= 4
        m %= 1000
        return m.floor_divide_(-2)

    check_against_torch(floats, [POSITIVE], backend)
    check_against_torch(ints, [BIG], backend)


# ---- The mf. functions are the methods ------------------------------------------------------

UNARY_FUNCTIONS = [spec.name for spec in NEW_UNARY] + ["fix", "neg", "negative"]
BINARY_FUNCTIONS = [
    "atan2", "arctan2", "remainder", "fmod", "floor_divide", "maximum", "minimum", "clamp_min",
    "clamp_max", "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
]  # fmt: skip


@pytest.mark.parametrize("name", UNARY_FUNCTIONS + BINARY_FUNCTIONS)
def test_function_form_equals_method_form(name: str) -> None:
    x = mf.tensor(POSITIVE)
    args = [mf.tensor(0.5)] if name in BINARY_FUNCTIONS else []
    expected = getattr(x, name)(*args).numpy()
    np.testing.assert_array_equal(getattr(mf, name)(x, *args).numpy(), expected)
    assert name in mf.__all__
