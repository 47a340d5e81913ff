"""Shape and creation functions against PyTorch: values, dtypes, gradients.

Each case is one function written against the shared API (tests/parity.py), run on
minifw (every backend) and on torch with the same drawn (a, b, c) array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import minifw as mf
from minifw.tensor_ops import TensorBackend
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch

pytestmark = pytest.mark.extra

few = at_most(5)
Case = Callable[..., Any]


@st.composite
def cube(draw: st.DrawFn) -> np.ndarray:
    """An (a, b, c) array of standard normal values, sides 1..4."""
    shape = tuple(draw(st.integers(1, 4)) for _ in range(3))
    return np.random.default_rng(draw(st.integers(0, 2**16))).standard_normal(shape)


# Cases valid for every (a, b, c) shape; `x` is 3-D.
CASES: dict[str, Case] = {
    "flatten": lambda lib, x: lib.flatten(x, 1),
    "unflatten": lambda lib, x: lib.unflatten(x.reshape(-1), 0, (x.shape[0], -1)),
    "broadcast_to": lambda lib, x: lib.broadcast_to(x[:, :1], (2, *x.shape)),
    "broadcast_tensors": lambda lib, x: lib.broadcast_tensors(x, x[0, :, :1]),
    "movedim": lambda lib, x: lib.movedim(x, (0, -1), (2, 0)),
    "moveaxis": lambda lib, x: x.moveaxis(1, 0),
    "swapaxes": lambda lib, x: lib.swapaxes(x, 0, 2),
    "swapdims": lambda lib, x: x.swapdims(-1, 1),
    "roll one dim": lambda lib, x: lib.roll(x, 1, 2),
    "roll dims": lambda lib, x: x.roll((-1, 5), (0, 2)),
    "roll flattened": lambda lib, x: x.roll(3),
    "flip": lambda lib, x: lib.flip(x, (0, 2)),
    "flip method": lambda lib, x: x.flip(-1),
    "fliplr": lambda lib, x: lib.fliplr(x),
    "flipud": lambda lib, x: x.flipud(),
    "repeat": lambda lib, x: x.repeat(2, 1, 1, 2),
    "tile": lambda lib, x: lib.tile(x, (2,)),
    "repeat_interleave int": lambda lib, x: x.repeat_interleave(2, dim=1),
    "repeat_interleave flat": lambda lib, x: lib.repeat_interleave(x, 2),
    "repeat_interleave tensor": lambda lib, x: x.repeat_interleave(
        lib.tensor([i % 3 for i in range(x.shape[0])]), dim=0
    ),
    "diag of vector": lambda lib, x: lib.diag(x[0, 0], 1),
    "diag of matrix": lambda lib, x: x[0].diag(-1),
    "diagonal": lambda lib, x: lib.diagonal(x, 1, 0, 2),
    "diagonal method": lambda lib, x: x.diagonal(-1, -1, 1),
    "diag_embed": lambda lib, x: lib.diag_embed(x, 1, 0, 2),
    "tril": lambda lib, x: lib.tril(x, 1),
    "triu": lambda lib, x: x.triu(-1),
    "narrow": lambda lib, x: lib.narrow(x, 2, -1, 1),
    "select": lambda lib, x: lib.select(x, 1, -1),
    "split size": lambda lib, x: lib.split(x, 2, 2),
    "split sections": lambda lib, x: x.split([1, x.shape[1] - 1], 1),
    "chunk": lambda lib, x: lib.chunk(x, 3, 2),
    "tensor_split sections": lambda lib, x: lib.tensor_split(x, 3, 1),
    "tensor_split indices": lambda lib, x: x.tensor_split([1, -1], 2),
    "unbind": lambda lib, x: lib.unbind(x, 1),
    "hstack": lambda lib, x: lib.hstack([x, x[:, :1]]),
    "vstack": lambda lib, x: lib.vstack([x[0, 0], x[0, 0]]),
    "dstack": lambda lib, x: lib.dstack([x[0], x[-1]]),
    "concat": lambda lib, x: lib.concat([x, x], 1),
    "squeeze dims": lambda lib, x: x[:, :1, None].squeeze((1, 2)),
    "unsqueeze_": lambda lib, x: (x * 1).unsqueeze_(1),
    "squeeze_": lambda lib, x: (x[:, :1] * 1).squeeze_(1),
    "t_": lambda lib, x: (x[0] * 1).t_(),
    "transpose_": lambda lib, x: (x * 1).transpose_(0, 2),
}
# Cases that also run on int64 values (no gradient).
INT_CASES = ("flip", "roll dims", "repeat", "repeat_interleave tensor", "diag_embed", "tril")


@pytest.mark.parametrize("name", sorted(CASES))
@few
@given(x=cube(), dtype=st.sampled_from(["float64", "float32"]))
def test_matches_torch(backend: TensorBackend, name: str, x: np.ndarray, dtype: str) -> None:
    """Values, dtype, shape and gradients agree with PyTorch."""
    case = CASES[name]
    if name not in TUPLE_CASES:
        check_against_torch(case, [x], backend, dtype)
        return
    check_against_torch(case, [x], backend, dtype, grad=False)  # each piece's shape
    check_against_torch(lambda lib, x: _joined(lib, case(lib, x)), [x], backend, dtype)


TUPLE_CASES = ("broadcast_tensors", "split size", "split sections", "chunk", "unbind")
TUPLE_CASES += ("tensor_split sections", "tensor_split indices")


def _joined(lib: Any, pieces: tuple[Any, ...]) -> Any:
    """The pieces flattened and joined (parity.py sends gradients through one tensor)."""
    return lib.cat([p.reshape(-1) * (i + 1) for i, p in enumerate(pieces)])


@pytest.mark.parametrize("name", INT_CASES)
@few
@given(x=cube())
def test_int64_matches_torch(backend: TensorBackend, name: str, x: np.ndarray) -> None:
    """Integer tensors keep int64 through the shape functions."""
    check_against_torch(CASES[name], [np.round(x * 3).astype(np.int64)], backend)


VIEWS: dict[str, Case] = {
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(0, 2),
    "diagonal": lambda x: x.diagonal(1),
    "split": lambda x: x.split(3, 1)[1],
    "chunk": lambda x: x.chunk(2, 0)[0],
    "unbind": lambda x: x.unbind(1)[2],
    "movedim": lambda x: x.movedim(0, 1),
    "swapaxes": lambda x: x.swapaxes(0, 1),
    "unflatten": lambda x: x.unflatten(1, (2, 2)),
    "tensor_split": lambda x: x.tensor_split([1], 1)[1],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_storage(backend: TensorBackend, name: str) -> None:
    """Where PyTorch returns a view, writes through it reach the source's cells."""
    x = mf.zeros(3, 4, backend=backend)
    view = VIEWS[name](x)
    view.fill_(1.0)
    assert x.sum().item() == view.numel() > 0
    wide = mf.broadcast_to(x[0], (2, 4))
    x[0, 0] = 7.0
    assert wide[:, 0].tolist() == [7.0, 7.0]


def test_flip_and_roll_copy(backend: TensorBackend) -> None:
    """flip and roll return new storage, as in PyTorch."""
    x = mf.arange(6.0, backend=backend).view(2, 3)
    for y in (x.flip(0), x.roll(1, 1), x.roll(0, 1)):
        y.fill_(-1)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_inplace_view_ops_change_self(backend: TensorBackend) -> None:
    """unsqueeze_, squeeze_, t_ and transpose_ return self with new metadata."""
    x = mf.arange(6.0, backend=backend).view(2, 3)
    assert x.t_() is x and x.shape == (3, 2) and x[0].tolist() == [0.0, 3.0]
    assert x.unsqueeze_(0) is x and x.shape == (1, 3, 2)
    assert x.squeeze_() is x and x.shape == (3, 2)
    assert x.transpose_(0, 1).tolist() == [[0, 1, 2], [3, 4, 5]]
    leaf = mf.zeros(2, requires_grad=True, backend=backend)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.unsqueeze_(0)


ERRORS: dict[str, tuple[Case, type[Exception], str]] = {
    "narrow past the end": (lambda lib, x: x.narrow(1, 2, 2), RuntimeError, r"start \(2\)"),
    "narrow start": (lambda lib, x: x.narrow(1, 4, 1), IndexError, "start out of range"),
    "select index": (lambda lib, x: x.select(0, 5), IndexError, "index 5 out of range"),
    "split sizes": (lambda lib, x: x.split([1, 1], 1), RuntimeError, "sum exactly to 3"),
    "chunk zero": (lambda lib, x: x.chunk(0), RuntimeError, "greater than 0"),
    "diagonal dims": (lambda lib, x: x.diagonal(0, 0, 0), RuntimeError, "cannot be identical"),
    "diag 3-D": (lambda lib, x: lib.diag(x[None]), RuntimeError, "Got 3D"),
    "tril 1-D": (lambda lib, x: x[0].tril(), RuntimeError, "at least 2 dimensions"),
    "repeat too few": (lambda lib, x: x.repeat(2), RuntimeError, "can not be smaller"),
    "roll align": (lambda lib, x: x.roll((1, 2), (0,)), RuntimeError, "shifts: 2, dims:1"),
    "flip repeated": (lambda lib, x: x.flip((0, 0)), RuntimeError, "multiple times"),
    "fliplr 1-D": (lambda lib, x: x[0].fliplr(), RuntimeError, ">= 2-d"),
    "movedim repeated": (lambda lib, x: x.movedim((0, 0), (1, 0)), RuntimeError, "repeated dim"),
    "movedim lengths": (lambda lib, x: x.movedim((0, 1), (1,)), RuntimeError, "same number"),
    "unflatten sizes": (lambda lib, x: x.unflatten(1, (2, 2)), RuntimeError, r"sizes \[2, 2\]"),
    "broadcast_to": (lambda lib, x: lib.broadcast_to(x, (3, 3)), RuntimeError, "must match"),
    "broadcast_shapes": (lambda lib, x: lib.broadcast_shapes((2, 1), (3, 4)), RuntimeError, "3"),
    "repeat_interleave size": (
        lambda lib, x: x.repeat_interleave(lib.tensor([1, 2, 3]), dim=0),
        RuntimeError,
        "same size as input along dim",
    ),  # fmt: skip
    "repeat_interleave negative": (
        lambda lib, x: x.repeat_interleave(lib.tensor([1, -1]), dim=0),
        RuntimeError,
        "can not be negative",
    ),  # fmt: skip
    "unbind dim": (lambda lib, x: x.unbind(2), IndexError, "Dimension out of range"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_like_torch(backend: TensorBackend, name: str) -> None:
    """Bad arguments: PyTorch's exception class, a message naming what is wrong."""
    fn, kind, match = ERRORS[name]
    error = check_raises_like_torch(fn, [np.zeros((2, 3))], backend, match=match)
    assert isinstance(error, kind)


CREATION: dict[str, Case] = {
    "arange int": lambda lib: lib.arange(5),
    "arange float start": lambda lib: lib.arange(0.0, 5),
    "arange float step": lambda lib: lib.arange(1, 2.5, 0.5),
    "arange negative step": lambda lib: lib.arange(5, 0, -2),
    "arange dtype": lambda lib: lib.arange(4, dtype=lib.float32),
    "arange tensor bound": lambda lib: lib.arange(lib.tensor(3)),
    "linspace": lambda lib: lib.linspace(-1, 1, 5),
    "linspace one": lambda lib: lib.linspace(0, 1, 1),
    "linspace int64": lambda lib: lib.linspace(0, 10, 5, dtype=lib.int64),
    "logspace": lambda lib: lib.logspace(0, 2, 3),
    "logspace base": lambda lib: lib.logspace(0, 3, 4, base=2),
    "eye": lambda lib: lib.eye(3),
    "eye rectangular int": lambda lib: lib.eye(2, 3, dtype=lib.int64),
    "zeros size": lambda lib: lib.zeros(lib.zeros(2, 3).shape),
    "ones tuple dtype": lambda lib: lib.ones((2,), dtype=lib.int64),
    "full int": lambda lib: lib.full((2,), 3),
    "empty shape": lambda lib: lib.empty(2, 3).shape,
    "zeros_like dtype": lambda lib: lib.zeros_like(lib.ones(2), dtype=lib.int64),
    "empty_like": lambda lib: lib.empty_like(lib.ones(2, 2)).shape,
    "new_zeros": lambda lib: lib.ones(2, dtype=lib.float32).new_zeros(2, 3),
    "new_ones": lambda lib: lib.ones(2, dtype=lib.int64).new_ones((2,)),
    "new_full": lambda lib: lib.ones(2, dtype=lib.float32).new_full((2,), 3),
    "new_empty": lambda lib: lib.ones(2).new_empty((1, 2)).shape,
    "new_tensor": lambda lib: lib.ones(2, dtype=lib.float32).new_tensor([1, 2]),
    "as_tensor": lambda lib: lib.as_tensor([1, 2]),
    "as_tensor dtype": lambda lib: lib.as_tensor(lib.tensor([1, 2]), dtype=lib.float64),
    "numel": lambda lib: lib.numel(lib.zeros(2, 3)),
    "clone": lambda lib: lib.clone(lib.arange(3)),
    "tril_indices": lambda lib: lib.tril_indices(3, 3),
    "triu_indices": lambda lib: lib.triu_indices(3, 4, 1),
    "broadcast_shapes": lambda lib: lib.broadcast_shapes((2, 1), (3,), 1),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation_matches_torch(name: str) -> None:
    """Creation functions: the values and the default dtypes of PyTorch."""
    check_against_torch(lambda lib: _float64_default(lib, CREATION[name]), [])


def _float64_default(lib: Any, case: Case) -> Any:
    """Run `case(lib)` with float64 as the default dtype (minifw's, on purpose)."""
    if lib is mf:
        return case(lib)
    before = lib.get_default_dtype()
    lib.set_default_dtype(lib.float64)
    try:
        return case(lib)
    finally:
        lib.set_default_dtype(before)


CREATION_ERRORS: dict[str, Case] = {
    "arange zero step": lambda lib: lib.arange(0, 5, 0),
    "arange wrong sign": lambda lib: lib.arange(0, 5, -1),
    "arange infinite": lambda lib: lib.arange(float("inf")),
    "linspace negative steps": lambda lib: lib.linspace(0, 1, -1),
    "eye negative": lambda lib: lib.eye(-1),
}


@pytest.mark.parametrize("name", sorted(CREATION_ERRORS))
def test_creation_errors_like_torch(name: str) -> None:
    """Creation refuses what PyTorch refuses, with its exception class."""
    check_raises_like_torch(lambda lib: CREATION_ERRORS[name](lib), [])


def test_creation_on_backend_and_device(backend: TensorBackend) -> None:
    """`new_*` and `*_like` keep the source's backend; `device=` takes device objects."""
    x = mf.ones(2, backend=backend)
    assert x.new_zeros(3).backend is backend and mf.rand_like(x).backend is backend
    assert mf.randn_like(x).shape == (2,) and x.new_tensor([1.0]).backend is backend
    made = mf.zeros(2, device=mf.device(backend.device))
    assert made.device == x.device
