"""The 21 Tensor Puzzles (puzzles.py) under minifw and under PyTorch, against loop specs."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.hypothesis_profiles import at_most
from tests.pytorch_programs.programs import HERE, load

pytestmark = pytest.mark.extra
NO_TORCH = importlib.util.find_spec("torch") is None
LIBS = ["minifw", pytest.param("torch", marks=pytest.mark.skipif(NO_TORCH, reason="no torch"))]
few = at_most(8)


@pytest.fixture(scope="module", params=LIBS)
def solved(request: pytest.FixtureRequest) -> tuple[dict[str, Any], Any]:
    """The puzzles' namespace under one library, and that library."""
    namespace = load(HERE / "puzzles.py", request.param)
    return namespace, namespace["torch"]


def ints(size: int, low: int = -5, high: int = 5) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(low, high), min_size=size, max_size=size)


def spec_diff(a: list[int]) -> list[int]:
    return [a[0]] + [a[k] - a[k - 1] for k in range(1, len(a))]


def spec_compress(g: list[bool], v: list[int], i: int) -> list[int]:
    kept = [x for keep, x in zip(g, v, strict=True) if keep][:i]
    return kept + [0] * (i - len(kept))


def spec_bincount(a: list[int], j: int) -> list[int]:
    return [a.count(k) for k in range(j)]


def spec_scatter_add(values: list[int], link: list[int], j: int) -> list[int]:
    out = [0] * j
    for v, k in zip(values, link, strict=True):
        out[k] += v
    return out


def spec_heaviside(a: list[int], b: list[int]) -> list[int]:
    return [(0 if x < 0 else 1 if x > 0 else y) for x, y in zip(a, b, strict=True)]


def spec_bucketize(v: list[int], bounds: list[int]) -> list[int]:
    return [sum(1 for b in bounds if b <= x) for x in v]


def check(got: Any, want: Any) -> None:
    got_values = np.asarray(got.tolist() if hasattr(got, "tolist") else got)
    np.testing.assert_allclose(got_values, np.asarray(want, dtype=float), rtol=1e-6, atol=1e-9)


def test_shapes_and_creation(solved):
    ns, torch = solved
    check(ns["ones"](4), [1, 1, 1, 1])
    check(ns["eye"](3), np.eye(3))
    check(ns["triu"](4), np.triu(np.ones((4, 4))))
    check(ns["linspace"](2, 5, 4), np.linspace(2, 5, 4))
    check(ns["linspace"](2, 5, 1), [2])


@few
@given(a=ints(5), b=ints(4))
def test_products_and_sums(solved, a, b):
    ns, torch = solved
    ta, tb = torch.tensor(a), torch.tensor(b)
    check(ns["sum"](ta), [np.sum(a)])
    check(ns["outer"](ta, tb), np.outer(a, b))
    check(ns["cumsum"](ta), np.cumsum(a))
    check(ns["diff"](ta, 5), spec_diff(a))
    check(ns["vstack"](ta, ta * 2), [a, [2 * x for x in a]])
    check(ns["roll"](ta, 5), np.roll(a, -1))
    check(ns["flip"](ta, 5), a[::-1])
    check(ns["repeat"](ta, 3), [a] * 3)


@few
@given(square=st.lists(ints(4), min_size=4, max_size=4), i=st.integers(1, 4), j=st.integers(1, 4))
def test_indexing(solved, square, i, j):
    ns, torch = solved
    t = torch.tensor(square)
    check(ns["diag"](t), np.diag(square))
    check(ns["flatten"](t[:i, :j], i, j), np.asarray(square)[:i, :j].reshape(-1))
    check(ns["pad_to"](t[0], 4, j), (square[0] + [0] * 4)[:j])


@few
@given(g=st.lists(st.booleans(), min_size=5, max_size=5), v=ints(5), i=st.integers(1, 6))
def test_compress(solved, g, v, i):
    ns, torch = solved
    check(ns["compress"](torch.tensor(g), torch.tensor(v), i), spec_compress(g, v, i))


@few
@given(values=st.lists(ints(4), min_size=3, max_size=3), length=ints(3, 0, 4))
def test_sequence_mask(solved, values, length):
    ns, torch = solved
    want = [
        [x if k < n else 0 for k, x in enumerate(row)]
        for row, n in zip(values, length, strict=True)
    ]
    check(ns["sequence_mask"](torch.tensor(values), torch.tensor(length)), want)


@few
@given(a=ints(6, 0, 3), values=ints(6))
def test_counting(solved, a, values):
    ns, torch = solved
    check(ns["bincount"](torch.tensor(a), 4), spec_bincount(a, 4))
    check(ns["scatter_add"](torch.tensor(values), torch.tensor(a), 4),
          spec_scatter_add(values, a, 4))  # fmt: skip


@few
@given(a=ints(5, -2, 2), b=ints(5), bounds=st.lists(st.integers(-5, 5), min_size=3, max_size=3))
def test_thresholds(solved, a, b, bounds):
    ns, torch = solved
    check(ns["heaviside"](torch.tensor(a), torch.tensor(b)), spec_heaviside(a, b))
    bounds = sorted(bounds)
    check(ns["bucketize"](torch.tensor(b), torch.tensor(bounds)), spec_bucketize(b, bounds))


def test_every_puzzle_is_checked():
    import re

    defined = set(re.findall(r"^def (\w+)\(", (HERE / "puzzles.py").read_text(), re.MULTILINE))
    checked = set(re.findall(r'ns\["(\w+)"\]', Path(__file__).read_text()))
    assert len(defined) == 21
    assert defined == checked
