"""Inputs PyTorch refuses are refused, not wrapped or cropped into a wrong result.

Python ints outside int64, unsigned 64-bit numpy arrays whose values int64 cannot hold,
and constant padding that crops more cells than a dim has.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np
import pytest

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's idiom

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.extra

TOP = 2**63 - 1


@pytest.mark.parametrize(
    "data",
    [[2**63], 2**63, [-(2**63) - 1], [2**64], [2**63, -1], [True, 2**63], [[1, 2], [3, 2**63]]],
    ids=["list", "scalar", "below", "2**64", "mixed-sign", "with-bool", "nested"],
)
def test_python_ints_beyond_int64_raise_pytorch_s_error(data: Any) -> None:
    with pytest.raises(ValueError, match="Overflow when unpacking long") as theirs:
        torch.tensor(data)
    with pytest.raises(type(theirs.value), match="Overflow when unpacking long.*int64"):
        mf.tensor(data)


@pytest.mark.parametrize("data", [[TOP], [-TOP - 1], [TOP, -TOP - 1, 0], [2.0**63, -1.0]])
def test_the_int64_range_itself_is_kept_exactly(data: list[Any]) -> None:
    assert mf.tensor(data).tolist() == torch.tensor(data).tolist()


@pytest.mark.parametrize(
    ("data", "dtype"),
    [([2**63, 2**64], "float64"), ([[1.5], [2**70]], None), ([1.5, 2**63], None)],
    ids=["float-dtype", "nested-with-a-float", "with-a-float"],
)
def test_a_float_tensor_takes_big_ints_as_pytorch_does(data: Any, dtype: str | None) -> None:
    ours = mf.tensor(data, dtype=dtype and getattr(mf, dtype))
    theirs = torch.tensor(data, dtype=dtype and getattr(torch, dtype))
    assert ours.dtype.is_floating_point and theirs.dtype.is_floating_point
    np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.double().numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "values", [[2**64 - 1, 2**63], [0, 2**63]], ids=["max-and-2**63", "one-too-big"]
)
def test_a_uint64_array_int64_cannot_hold_is_refused_naming_it(values: list[int]) -> None:
    array = np.array(values, dtype=np.uint64)
    with pytest.raises(ValueError, match=r"uint64.*9223372036854775808.*int64") as error:
        mf.tensor(array)
    assert "no unsigned 64-bit dtype" in str(error.value)
    with pytest.raises(ValueError, match="uint64"):
        mf.tensor(array[-1])  # a numpy scalar too


def test_a_uint64_array_that_fits_becomes_int64() -> None:
    t = mf.tensor(np.array([0, 7, TOP], dtype=np.uint64))
    assert t.dtype == mf.int64 and t.tolist() == [0, 7, TOP]
    assert mf.tensor(np.array([2**64 - 1], dtype=np.uint64), dtype=mf.float64).tolist() == [
        float(2**64 - 1)
    ]


@pytest.mark.parametrize(
    ("shape", "pad"),
    [
        ((2,), p)
        for p in itertools.product(range(-5, 3), repeat=2)  # every crop of a 2-cell dim
    ]
    + [((2, 3), (0, 0, -3, 0)), ((2, 3), (-4, 1, 1, 1)), ((2, 3), (-3, 0, -2, 0))],
)
def test_constant_pad_refuses_crops_beyond_the_dim_as_pytorch(
    shape: tuple[int, ...], pad: tuple[int, ...]
) -> None:
    source = np.arange(float(np.prod(shape))).reshape(shape)
    try:
        expected = torch.nn.functional.pad(torch.tensor(source), pad, value=-1.0)
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=re.escape(str(error))) as ours:
            F.pad(mf.tensor(source), pad, value=-1.0)
        assert "of an input of shape" in str(ours.value) and "cells" in str(ours.value)
        return
    got = F.pad(mf.tensor(source), pad, value=-1.0)
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(np.reshape(got.tolist(), expected.shape), expected.numpy())


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.full((2,), 2**63),
        lambda lib: lib.full((2,), 2**63, dtype=lib.int64),
        lambda lib: lib.full((1,), float("nan"), dtype=lib.int64),
        lambda lib: lib.full((1,), -1e19, dtype=lib.int64),
        lambda lib: lib.full_like(lib.ones(2, dtype=lib.int64), 2**63),
        lambda lib: lib.arange(2**63, 2**63 + 2),
        lambda lib: lib.arange(0, 2**63, 2**62),
    ],
    ids=["full", "full-int64", "full-nan", "full-below", "full_like", "arange", "arange-end"],
)
def test_int64_fills_and_ranges_beyond_int64_raise_pytorch_s_error(make: Any) -> None:
    with pytest.raises(RuntimeError, match="without overflow") as theirs:
        make(torch)
    with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
        make(mf)


@pytest.mark.parametrize(
    "bounds", [(2**60, 2**60 + 3), (TOP - 3, TOP - 1), (-(2**62), -(2**62) + 9, 4), (10, -3, -3)]
)
def test_int_ranges_are_exact_near_the_ends_of_int64(bounds: tuple[int, ...]) -> None:
    ours = mf.arange(*bounds)
    assert ours.dtype == mf.int64 and ours.tolist() == torch.arange(*bounds).tolist()
