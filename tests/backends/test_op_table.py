"""The op table of operators.py: what is derived from it and that every backend
dispatches every one of its rows, refusing codes it does not have (task 2.3)."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifw as mf
from minifw.core import operators as ops
from minifw.core import scalar_math
from minifw.core.tensor_data import TensorData
from minifw.simple_ops import SimpleOps
from minifw.tensor.functions import ELEMENTWISE, elementwise
from minifw.tensor_ops import TensorBackend
from tests import strategies as mt

ROWS = list(ops.OP_TABLE.values())
UNARY_ROWS = [row for row in ROWS if row.arity == 1]
BINARY_ROWS = [row for row in ROWS if row.arity == 2]
# Samples cross the edges of the domains: 0 (log, inv, sqrt, derivatives), negatives.
XS = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 2.5]])
YS = np.array([[1.5, -1.0, 0.0], [2.0, 0.5, -3.0]])
UNKNOWN = 999


def expected(fn: Callable[..., float], *arrays: np.ndarray) -> np.ndarray:
    """The row's scalar function cell by cell, on numpy scalars as SimpleOps runs it."""
    with np.errstate(all="ignore"):
        rows = zip(*(a.flat for a in arrays), strict=True)
        cells = [fn(*(np.float64(v) for v in values)) for values in rows]
    return np.array(cells, dtype=np.float64).reshape(arrays[0].shape)


def layouts(backend: TensorBackend, values: np.ndarray) -> list[TensorData]:
    """`values` contiguous on backend, and the same values read through a transposed view."""
    contiguous = backend.from_numpy(values.copy())
    transposed = backend.from_numpy(np.ascontiguousarray(values.T)).permute(1, 0)
    return [contiguous, transposed]


def _name(row: ops.OpRow) -> str:
    return row.name


# ---- Given code: everything derived from the table agrees with it ----


@pytest.mark.extra  # the op table's machinery is given code
def test_names_codes_and_constants_are_derived_from_the_rows() -> None:
    assert {row.code: row.name for row in UNARY_ROWS} == ops.UNARY_NAMES
    assert {row.code: row.name for row in BINARY_ROWS} == ops.BINARY_NAMES
    assert len(ops.CODES) == len(ROWS)  # no name is used twice
    for row in ROWS:
        if row.code < ops.DERIVATIVE_CODES:  # the rules have no constant of their own
            assert getattr(ops, row.name.upper()) == row.code, row
        assert ops.CODES[row.name] == row.code
        assert (row.code < 100) == (row.arity == 1), row
        assert getattr(scalar_math, row.name) is row.function  # what the backends compile
    assert ops.ADD == 100 and ops.EXP == 2 and ops.DERIVATIVES[ops.EXP] == 202
    assert [row.name for row in ROWS] + ["unary", "binary"] == ops.KERNEL_FUNCTIONS
    for name in ops.KERNEL_FUNCTIONS:
        assert any(callable(vars(m).get(name)) for m in ops.KERNEL_MODULES), name


@pytest.mark.extra  # the op table's machinery is given code
def test_each_derivative_names_a_binary_op_and_only_unary_ops_have_one() -> None:
    assert set(ops.DERIVATIVES) == {row.code for row in ROWS if row.derivative is not None}
    assert {ops.EXP, ops.LOG, ops.TANH, ops.INV} <= set(ops.DERIVATIVES)
    for code, back in ops.DERIVATIVES.items():
        assert ops.OP_TABLE[code].arity == 1
        assert ops.BINARY_FUNCTIONS[back] is ops.OP_TABLE[code].derivative
    # one code per rule: the step functions share theirs
    assert ops.DERIVATIVES[ops.FLOOR] == ops.DERIVATIVES[ops.SIGN] == ops.DERIVATIVES[ops.ROUND]
    assert ops.BINARY_NAMES[ops.DERIVATIVES[ops.EXP]] == "exp_back"


@pytest.mark.extra  # the op table's machinery is given code
def test_generated_dispatch_has_one_branch_per_row_and_matches_each_function() -> None:
    source = ops.dispatch_source()
    for row in ROWS:
        call = "x" if row.arity == 1 else "x, y"
        test = f"    if op == {row.code}:  # {row.name.upper()}\n"
        branch = test + f"        return {row.name}({call})\n"
        assert source.count(branch) == 1, row.name
    assert len(re.findall(r"if op == ", source)) == len(ROWS)
    for row in UNARY_ROWS:
        got = expected(lambda x, code=row.code: ops.unary(code, x), XS)
        mt.assert_close(got, expected(ops.UNARY_FUNCTIONS[row.code], XS), rtol=0, atol=0)
    for row in BINARY_ROWS:
        got = expected(lambda x, y, code=row.code: ops.binary(code, x, y), XS, YS)
        mt.assert_close(got, expected(ops.BINARY_FUNCTIONS[row.code], XS, YS), rtol=0, atol=0)


@pytest.mark.extra  # the op table's machinery is given code
def test_rows_refuse_a_taken_code_or_one_outside_their_range() -> None:
    size = len(ops.OP_TABLE)
    with pytest.raises(ValueError, match="code 2 of 'exp2' is taken by 'exp'"):
        ops.unary_op(ops.EXP, scalar_math.exp2)
    with pytest.raises(ValueError, match="code 50 of 'add' is outside its range"):
        ops.binary_op(50, scalar_math.add)
    with pytest.raises(ValueError, match="code 150 of 'exp' is outside its range"):
        ops.unary_op(150, scalar_math.exp)
    with pytest.raises(ValueError, match="'exp' has a row already"):
        ops.unary_op(99, scalar_math.exp)

    def twice(x: float) -> float:
        return 2.0 * x

    with pytest.raises(ValueError, match="row 'twice' needs scalar_math.twice"):
        ops.unary_op(98, twice)
    assert len(ops.OP_TABLE) == size


@pytest.mark.extra  # the op table's machinery is given code
def test_python_dispatch_names_the_code_it_does_not_know() -> None:
    assert ops.unary_function(ops.TANH) is scalar_math.tanh
    assert ops.binary_function(ops.POW) is scalar_math.pow
    with pytest.raises(ValueError, match=f"op code {UNKNOWN} is not a unary op"):
        ops.unary_function(UNKNOWN)
    with pytest.raises(ValueError, match="op code 100 is not a unary op .*binary op 'add'"):
        ops.unary_function(ops.ADD)
    with pytest.raises(ValueError, match="op code 2 is not a binary op .*unary op 'exp'"):
        ops.binary_function(ops.EXP)


# ---- Task 2.3: every backend dispatches every row, and refuses unknown codes ----


def drawn_matrix(data: st.DataObject, shape: tuple[int, int] | None = None) -> np.ndarray:
    """A drawn 2-D array of small floats (of `shape`, else of a drawn shape)."""
    rows, cols = shape or (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4)))
    cells = data.draw(st.lists(st.floats(-3.0, 3.0), min_size=rows * cols,
                               max_size=rows * cols), label="cells")  # fmt: skip
    return np.array(cells, dtype=np.float64).reshape(rows, cols)


def check_drawn_row(backend: TensorBackend, row: ops.OpRow, data: st.DataObject) -> None:
    """The row through map or zip on drawn values, in both layouts, cell by cell.

    Every test of the chosen samples checks one too, so a kernel fitted to them fails.
    """
    xs = drawn_matrix(data)
    if row.arity == 1:
        want = expected(ops.UNARY_FUNCTIONS[row.code], xs)
        got = [backend.map(row.code, a) for a in layouts(backend, xs)]
    else:
        ys = drawn_matrix(data, xs.shape)
        want = expected(ops.BINARY_FUNCTIONS[row.code], xs, ys)
        pairs = zip(layouts(backend, xs), layouts(backend, ys), strict=True)
        got = [backend.zip(row.code, a, b) for a, b in pairs]
    for out in got:
        mt.assert_close(backend.to_numpy(out), want, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_3
@pytest.mark.parametrize("row", UNARY_ROWS, ids=_name)
@settings(max_examples=2)  # one more small map per row: a couple of draws are enough
@given(data=st.data())
def test_every_unary_row_runs_through_map(
    backend: TensorBackend, row: ops.OpRow, data: st.DataObject
) -> None:
    check_drawn_row(backend, row, data)
    want = expected(ops.UNARY_FUNCTIONS[row.code], XS)
    assert not np.isnan(want).all(), "samples must show a missing branch (nan)"
    for data in layouts(backend, XS):
        got = backend.to_numpy(backend.map(row.code, data))
        mt.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.task2_3
@pytest.mark.parametrize("row", BINARY_ROWS, ids=_name)
@settings(max_examples=2)
@given(data=st.data())
def test_every_binary_row_runs_through_zip(
    backend: TensorBackend, row: ops.OpRow, data: st.DataObject
) -> None:
    check_drawn_row(backend, row, data)
    want = expected(ops.BINARY_FUNCTIONS[row.code], XS, YS)
    assert not np.isnan(want).all(), "samples must show a missing branch (nan)"
    for a, b in zip(layouts(backend, XS), layouts(backend, YS), strict=True):
        got = backend.to_numpy(backend.zip(row.code, a, b))
        mt.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.extra  # the launcher's checks are given code
def test_launcher_refuses_a_code_that_is_not_of_its_kind(backend: TensorBackend) -> None:
    a = backend.from_numpy(XS.copy())
    with pytest.raises(ValueError, match=f"map: op code {UNKNOWN} is not a unary op"):
        backend.map(UNKNOWN, a)
    with pytest.raises(ValueError, match="map: op code 100 is not a unary op"):
        backend.map(ops.ADD, a)
    with pytest.raises(ValueError, match=f"zip: op code {UNKNOWN} is not a binary op"):
        backend.zip(UNKNOWN, a, a)
    with pytest.raises(ValueError, match="zip: op code 2 is not a binary op"):
        backend.zip(ops.EXP, a, a)
    with pytest.raises(ValueError, match=f"op {UNKNOWN} is not a reduction"):
        backend.reduce(UNKNOWN, a, 0)


@pytest.mark.task2_3
def test_simple_kernels_raise_for_an_unknown_code_instead_of_writing_nan() -> None:
    a = mf.get_backend("simple").from_numpy(XS.copy())
    out = np.zeros(a.size)
    raw = (out, a.shape, a.strides)
    with pytest.raises(ValueError, match=f"op code {UNKNOWN} is not a unary op"):
        SimpleOps.map(UNKNOWN, *raw, *a.tuple())
    with pytest.raises(ValueError, match=f"op code {UNKNOWN} is not a binary op"):
        SimpleOps.zip(UNKNOWN, *raw, *a.tuple(), *a.tuple())
    folded = np.zeros(3)
    with pytest.raises(ValueError, match=f"op code {UNKNOWN} is not a binary op"):
        SimpleOps.reduce(UNKNOWN, folded, (1, 3), (3, 1), *a.tuple(), 0)
    assert not out.any() and not folded.any()  # nothing written


@pytest.mark.task2_3
def test_each_differentiable_row_has_its_function_named_like_pytorch() -> None:
    assert set(ELEMENTWISE) == set(ops.DERIVATIVES)
    x = mf.tensor([0.5, 2.0], requires_grad=True, backend=mf.get_backend("simple"))
    for code, function in ELEMENTWISE.items():
        row = ops.OP_TABLE[code]
        assert function.op == code and function.back == ops.DERIVATIVES[code]
        y = elementwise(code, x)
        assert y.grad_fn is not None and y.grad_fn.name() == f"{row.title}Backward"
        values = [ops.UNARY_FUNCTIONS[code](v) for v in (0.5, 2.0)]
        mt.assert_close(y, np.array(values), rtol=1e-15, atol=0)
    assert x.exp().grad_fn.name() == "ExpBackward"  # type: ignore[union-attr]
    assert x.reciprocal().grad_fn.name() == "ReciprocalBackward"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="op code 1 is not a differentiable unary op"):
        elementwise(ops.NEG, x)
