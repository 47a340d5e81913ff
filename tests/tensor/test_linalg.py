"""Linear algebra against PyTorch: mm, bmm, mv, dot, outer/ger, addmm, einsum
and meshgrid, with values, dtypes, gradients and PyTorch's errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

from minifw.tensor_ops import TensorBackend
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch

pytestmark = pytest.mark.extra

few = at_most(3)
Case = Callable[..., Any]
FLOATS = st.sampled_from(["float64", "float32"])


@st.composite
def sizes(draw: st.DrawFn) -> dict[str, int]:
    """Sizes 1..4 for the letters b, h, i, j, k; and a seed."""
    drawn = {x: draw(st.integers(1, 4)) for x in "bhijk"}
    drawn["seed"] = draw(st.integers(0, 2**16))
    return drawn


# Each case: the shapes of its operands (from the drawn sizes) and the call.
Shapes = Callable[[dict[str, int]], list[tuple[int, ...]]]
CASES: dict[str, tuple[Shapes, Case]] = {
    "mm": (lambda s: [(s["i"], s["j"]), (s["j"], s["k"])], lambda lib, a, b: lib.mm(a, b)),
    "mm method": (lambda s: [(s["i"], s["j"]), (s["j"], s["i"])], lambda lib, a, b: a.mm(b)),
    "bmm": (
        lambda s: [(s["b"], s["i"], s["j"]), (s["b"], s["j"], s["k"])],
        lambda lib, a, b: lib.bmm(a, b),
    ),
    "mv": (lambda s: [(s["i"], s["j"]), (s["j"],)], lambda lib, a, v: a.mv(v)),
    "dot": (lambda s: [(s["i"],), (s["i"],)], lambda lib, a, b: lib.dot(a, b)),
    "outer": (lambda s: [(s["i"],), (s["j"],)], lambda lib, a, b: lib.outer(a, b)),
    "ger": (lambda s: [(s["i"],), (s["j"],)], lambda lib, a, b: a.ger(b)),
    "addmm": (
        lambda s: [(s["i"], s["k"]), (s["i"], s["j"]), (s["j"], s["k"])],
        lambda lib, c, a, b: lib.addmm(c, a, b),
    ),
    "addmm beta alpha bias": (
        lambda s: [(s["k"],), (s["i"], s["j"]), (s["j"], s["k"])],
        lambda lib, c, a, b: c.addmm(a, b, beta=0.5, alpha=-2.0),
    ),
    "addmm beta 0": (
        lambda s: [(s["i"], 1), (s["i"], s["j"]), (s["j"], s["k"])],
        lambda lib, c, a, b: lib.addmm(c * np.nan, a, b, beta=0),
    ),
    "einsum matmul": (
        lambda s: [(s["i"], s["j"]), (s["j"], s["k"])],
        lambda lib, a, b: lib.einsum("ij,jk->ik", a, b),
    ),
    "einsum batched": (
        lambda s: [(s["b"], s["i"], s["j"]), (s["b"], s["j"], s["k"])],
        lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b),
    ),
    "einsum dot": (lambda s: [(s["i"],), (s["i"],)], lambda lib, a, b: lib.einsum("i,i->", a, b)),
    "einsum transpose": (lambda s: [(s["i"], s["j"])], lambda lib, a: lib.einsum("ij->ji", a)),
    "einsum diagonal": (lambda s: [(s["i"], s["i"])], lambda lib, a: lib.einsum("ii->i", a)),
    "einsum trace": (lambda s: [(s["i"], s["i"])], lambda lib, a: lib.einsum("ii", a)),
    "einsum attention": (
        lambda s: [(s["b"], s["h"], s["i"], s["k"]), (s["b"], s["h"], s["j"], s["k"])],
        lambda lib, q, k: lib.einsum("bhqd,bhkd->bhqk", q, k),
    ),
    "einsum implicit": (
        lambda s: [(s["i"], s["j"]), (s["j"], s["k"])],
        lambda lib, a, b: lib.einsum("ij,jk", a, b),
    ),
    "einsum implicit order": (lambda s: [(s["i"], s["j"])], lambda lib, a: lib.einsum("ba", a)),
    "einsum ellipsis": (
        lambda s: [(s["b"], 1, s["i"], s["j"]), (s["h"], s["j"], s["k"])],
        lambda lib, a, b: lib.einsum("...ij,...jk->...ik", a, b),
    ),
    "einsum ellipsis summed": (
        lambda s: [(s["b"], s["i"], s["j"])],
        lambda lib, a: lib.einsum("...ij->j", a),
    ),
    "einsum outer": (
        lambda s: [(s["i"],), (s["j"],)],
        lambda lib, a, b: lib.einsum("i, j -> ij", a, b),
    ),
    "einsum broadcast size 1": (
        lambda s: [(s["i"], s["j"]), (1, s["j"])],
        lambda lib, a, b: lib.einsum("ij,ij->ij", a, b),
    ),
    "einsum three operands": (
        lambda s: [(s["i"], s["j"]), (s["j"], s["k"]), (s["k"],)],
        lambda lib, a, b, c: lib.einsum("ij,jk,k->i", [a, b, c]),
    ),
    "einsum sum all": (
        lambda s: [(s["i"], s["j"], s["k"])],
        lambda lib, a: lib.einsum("ijk->", a),
    ),
    "einsum batch kept": (
        lambda s: [(s["b"], s["i"]), (s["b"], s["j"])],
        lambda lib, a, b: lib.einsum("bi,bj->bij", a, b),
    ),
    "meshgrid ij": (
        lambda s: [(s["i"],), (s["j"],), (s["k"],)],
        lambda lib, a, b, c: lib.meshgrid(a, b, c, indexing="ij")[1] * 2,
    ),
    "meshgrid xy": (
        lambda s: [(s["i"],), (s["j"],)],
        lambda lib, a, b: lib.stack(lib.meshgrid([a, b], indexing="xy")),
    ),
}


def _arrays(shapes: list[tuple[int, ...]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


@pytest.mark.parametrize("name", list(CASES))
@few
@given(drawn=sizes(), dtype=FLOATS)
def test_linalg_matches_torch(
    backend: TensorBackend, name: str, drawn: dict[str, int], dtype: str
) -> None:
    shapes, fn = CASES[name]
    check_against_torch(fn, _arrays(shapes(drawn), drawn["seed"]), backend, dtype)


INT_CASES: dict[str, tuple[Shapes, Case]] = {
    "mm int": CASES["mm"],
    "dot int": CASES["dot"],
    "outer int": CASES["outer"],
    "einsum int": CASES["einsum batched"],
    "einsum int diagonal": CASES["einsum diagonal"],
    "meshgrid int": (
        lambda s: [(s["i"],), (s["j"],)],
        lambda lib, a, b: lib.meshgrid(a, b, indexing="ij")[0],
    ),
}


@pytest.mark.parametrize("name", list(INT_CASES))
@few
@given(drawn=sizes())
def test_int64_linalg_matches_torch(
    backend: TensorBackend, name: str, drawn: dict[str, int]
) -> None:
    shapes, fn = INT_CASES[name]
    arrays = [(a * 3).astype(np.int64) for a in _arrays(shapes(drawn), drawn["seed"])]
    check_against_torch(fn, arrays, backend)


def _mat(*shape: int) -> np.ndarray:
    return np.arange(float(np.prod(shape))).reshape(shape)


ERRORS: dict[str, tuple[Case, list[Any], str]] = {
    "mm of a vector": (lambda lib, a, b: lib.mm(a, b), [_mat(3), _mat(3, 2)], "matrix"),
    "mm shapes": (lambda lib, a, b: a.mm(b), [_mat(2, 3), _mat(2, 3)], "2x3"),
    "mm dtypes": (lambda lib, a, b: lib.mm(a, b.float()), [_mat(2, 3), _mat(3, 2)], "dtype"),
    "bmm of matrices": (lambda lib, a, b: lib.bmm(a, b), [_mat(2, 3), _mat(3, 2)], "3D"),
    "bmm batch sizes": (lambda lib, a, b: a.bmm(b), [_mat(2, 2, 3), _mat(3, 3, 4)], r"\[2, 3\]"),
    "mv sizes": (lambda lib, a, v: a.mv(v), [_mat(2, 3), _mat(2)], "size mismatch"),
    "dot sizes": (lambda lib, a, b: lib.dot(a, b), [_mat(3), _mat(4)], r"\[3\].*\[4\]"),
    "dot of matrices": (lambda lib, a, b: a.dot(b), [_mat(2, 2), _mat(2)], "1D"),
    "outer of a matrix": (lambda lib, a, b: lib.outer(a, b), [_mat(2, 2), _mat(2)], "1-D"),
    "addmm bias": (lambda lib, c, a, b: c.addmm(a, b), [_mat(3), _mat(2, 2), _mat(2, 4)], "4"),
    "einsum subscripts": (lambda lib, a: lib.einsum("ijk->i", a), [_mat(2, 3)], r"\(3\)"),
    "einsum extra operand": (lambda lib, a, b: lib.einsum("i->i", a, b), [_mat(2)] * 2, "more"),
    "einsum fewer operands": (lambda lib, a: lib.einsum("i,i->", a), [_mat(2)], "fewer"),
    "einsum output letter": (lambda lib, a: lib.einsum("ij->k", a), [_mat(2, 2)], "k"),
    "einsum output twice": (lambda lib, a: lib.einsum("ij->ii", a), [_mat(2, 2)], "than once"),
    "einsum sizes": (
        lambda lib, a, b: lib.einsum("ij,ij->i", a, b), [_mat(2, 3), _mat(3, 4)], "size 3"
    ),
    "einsum diagonal sizes": (lambda lib, a: lib.einsum("ii->i", a), [_mat(2, 3)], "3 != 2"),
    "einsum bad letter": (lambda lib, a: lib.einsum("i1->i", a), [_mat(2)], r"a-zA-Z"),
    "meshgrid indexing": (lambda lib, a: lib.meshgrid(a, indexing="ab"), [_mat(2)], "ab"),
    "meshgrid of a matrix": (lambda lib, a: lib.meshgrid(a, indexing="ij"), [_mat(2, 2)], "1D"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(ERRORS))
def test_bad_input_raises_like_torch(backend: TensorBackend, name: str) -> None:
    fn, arrays, match = ERRORS[name]
    check_raises_like_torch(fn, arrays, backend, match=match)


def test_einsum_without_operands_raises_like_torch() -> None:
    check_raises_like_torch(lambda lib: lib.einsum("i->i"), [], match="at least one operand")
