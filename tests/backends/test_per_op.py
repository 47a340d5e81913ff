"""Kernels compiled per op code (`minifw/_jit.py`, `PerOp`): one copy per op, knowing only it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minifw import _jit, fast_ops
from minifw.backends import get_backend
from minifw.core import operators as ops

pytestmark = pytest.mark.extra  # how kernels are compiled is no course task


def qualname(kernel: object) -> str:
    """The qualified name of a compiled copy (a plain function under NUMBA_DISABLE_JIT)."""
    return str(getattr(kernel, "py_func", kernel).__qualname__)


def test_the_dispatch_source_of_one_op_has_only_its_branch() -> None:
    source = ops.dispatch_source([ops.EXP])
    assert "return exp(x)" in source and source.count("if op ==") == 1
    full = ops.dispatch_source()
    assert full.count("if op ==") == len(ops.OP_TABLE)


def test_dispatchers_for_one_op_give_nan_for_any_other() -> None:
    only = ops.dispatchers_for(ops.EXP)
    assert only["unary"](ops.EXP, 0.0) == 1.0
    assert math.isnan(only["unary"](ops.LOG, 1.0))
    assert math.isnan(only["binary"](ops.ADD, 1.0, 2.0))


def test_each_op_launches_a_copy_of_its_own() -> None:
    fast = get_backend("fast")
    x = fast.from_numpy(np.array([0.5, 1.5]))
    for op in (ops.EXP, ops.LOG):
        fast.map(op, x)
    tables = [table for table in _jit.PerOp.tables if table.copies]
    by_op = {op: copy for table in tables for op, copy in table.copies.items()}
    assert {ops.EXP, ops.LOG} <= set(by_op)
    names = {qualname(copy) for table in tables for copy in table.copies.values()}
    assert any(name.endswith(f"__op{ops.EXP}") for name in names)
    assert any(name.endswith(f"__op{ops.LOG}") for name in names)


def test_a_table_makes_each_copy_once_and_names_it_after_its_op() -> None:
    def helpers(op: int) -> dict[str, object]:
        return fast_ops._knowing_only(op)

    table = _jit.PerOp(fast_ops._map_serial, helpers)
    try:
        first = table[ops.NEG]
        assert table[ops.NEG] is first
        assert table[ops.EXP] is not first
        assert qualname(first) == f"_map_serial__op{ops.NEG}"
        out, a = np.empty(3), np.array([1.0, -2.0, 0.0])
        index = np.array([3], np.int64), np.array([1], np.int64)
        first(ops.NEG, out, *index, a, *index)
        np.testing.assert_array_equal(out, [-1.0, 2.0, -0.0])
    finally:
        _jit.PerOp.tables.remove(table)


def test_a_readable_copy_computes_only_its_op() -> None:
    readable = get_backend("readable")
    x = readable.from_numpy(np.array([0.0, 1.0, 4.0]))
    np.testing.assert_allclose(readable.to_numpy(readable.map(ops.SQRT, x)), [0.0, 1.0, 2.0])
    np.testing.assert_allclose(readable.to_numpy(readable.map(ops.EXP, x)), np.exp([0, 1, 4]))
