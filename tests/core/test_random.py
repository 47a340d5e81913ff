"""mf.Generator, mf.manual_seed / initial_seed / seed, generator= and set_num_threads.

The API (defaults, return values, errors) is checked against torch; the numbers are
minifw's own stream, so the tests check what PyTorch promises of them: the same seed
gives the same numbers, and a Generator's numbers do not depend on the global seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minifw as mf
from tests.parity import check_raises_like_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra

DRAWS = {
    "rand": lambda lib, g: lib.rand(2, 3, generator=g),
    "randn": lambda lib, g: lib.randn(4, generator=g),
    "randint": lambda lib, g: lib.randint(0, 100, (5,), generator=g),
    "randint(high)": lambda lib, g: lib.randint(7, (5,), generator=g),
    "randperm": lambda lib, g: lib.randperm(9, generator=g),
    "rand_like": lambda lib, g: lib.rand_like(lib.zeros(3), generator=g),
    "randn_like": lambda lib, g: lib.randn_like(lib.zeros(3), generator=g),
    "init.uniform_": lambda lib, g: lib.nn.init.uniform_(lib.zeros(4), generator=g),
    "init.normal_": lambda lib, g: lib.nn.init.normal_(lib.zeros(4), generator=g),
}


def test_a_new_generator_like_torchs() -> None:
    mine, theirs = mf.Generator(), torch.Generator()
    assert mine.initial_seed() == theirs.initial_seed() == 67280421310721
    assert str(mine.device) == str(theirs.device) == "cpu"
    assert mine.manual_seed(5) is mine and theirs.manual_seed(5) is theirs
    assert mine.initial_seed() == theirs.initial_seed() == 5
    assert mf.Generator(device="cpu").initial_seed() == 67280421310721


@pytest.mark.parametrize("seed", [0, 1, -1, 2**63 - 1, 2**64 - 1, -(2**63)])
def test_seeds_are_stored_as_torch_stores_them(seed: int) -> None:
    mine = mf.Generator().manual_seed(seed).initial_seed()
    assert mine == torch.Generator().manual_seed(seed).initial_seed()


@pytest.mark.parametrize(
    "seed", [2**64, -(2**63) - 1, 1.5, "3", True], ids=["big", "small", "float", "str", "bool"]
)
def test_bad_seeds_raise_like_torch(seed: Any) -> None:
    check_raises_like_torch(lambda lib: lib.Generator().manual_seed(seed), [], match=".")


def test_seed_draws_a_fresh_seed_and_reports_it() -> None:
    g = mf.Generator()
    first = g.seed()
    assert isinstance(first, int) and g.initial_seed() == first and g.seed() != first
    assert isinstance(mf.seed(), int) and mf.initial_seed() != 67280421310721


@pytest.mark.parametrize("draw", list(DRAWS), ids=list(DRAWS))
def test_a_seeded_generator_repeats_itself_whatever_the_global_seed(draw: str) -> None:
    make = DRAWS[draw]
    mf.manual_seed(1)
    first = make(mf, mf.Generator().manual_seed(42)).tolist()
    mf.manual_seed(2)
    mf.rand(10)  # the default generator moves on; the Generator does not care
    again = make(mf, mf.Generator().manual_seed(42)).tolist()
    other = make(mf, mf.Generator().manual_seed(43)).tolist()
    assert first == again and first != other
    theirs = make(torch, torch.Generator().manual_seed(42))
    mine = make(mf, mf.Generator().manual_seed(42))
    assert mine.shape == theirs.shape  # each library's default float dtype, or int64
    assert mine.dtype.is_floating_point == theirs.dtype.is_floating_point


@pytest.mark.parametrize("draw", list(DRAWS), ids=list(DRAWS))
def test_drawing_from_a_generator_leaves_the_default_one_alone(draw: str) -> None:
    mf.manual_seed(8)
    expected = mf.rand(3).tolist()
    mf.manual_seed(8)
    DRAWS[draw](mf, mf.Generator())
    assert mf.rand(3).tolist() == expected


def test_two_generators_are_independent() -> None:
    a, b = mf.Generator().manual_seed(1), mf.Generator().manual_seed(1)
    first = mf.rand(4, generator=a).tolist()
    assert mf.rand(4, generator=b).tolist() == first  # b did not move when a drew
    mf.rand(100, generator=b)
    fresh = mf.rand(8, generator=mf.Generator().manual_seed(1)).tolist()
    assert mf.rand(4, generator=a).tolist() == fresh[4:]  # a did not move when b drew


def test_get_state_and_set_state_resume_a_stream() -> None:
    g = mf.Generator().manual_seed(9)
    mf.rand(5, generator=g)
    state = g.get_state()
    ahead = mf.randn(6, generator=g).tolist()
    assert mf.randn(6, generator=g).tolist() != ahead
    assert g.set_state(state) is g and mf.randn(6, generator=g).tolist() == ahead
    copy = mf.Generator().set_state(state)
    assert copy.initial_seed() == 9 and mf.randn(6, generator=copy).tolist() == ahead
    assert mf.Generator().set_state(mf.tensor(state.astype(np.int64))).initial_seed() == 9


@pytest.mark.parametrize(
    ("bad", "error"), [([1, 2], TypeError), (np.zeros(3, dtype=np.uint8), RuntimeError)]
)
def test_set_state_refuses_what_get_state_did_not_give(bad: Any, error: type) -> None:
    with pytest.raises(error, match="state"):
        mf.Generator().set_state(bad)


def test_manual_seed_returns_the_default_generator_like_torch() -> None:
    for lib in (mf, torch):
        returned = lib.manual_seed(123)
        assert isinstance(returned, lib.Generator) and returned is lib.default_generator
        assert lib.initial_seed() == 123


def test_a_generator_that_is_not_one_is_refused_like_torch() -> None:
    check_raises_like_torch(lambda lib: lib.rand(2, generator=3), [], match="Generator")
    check_raises_like_torch(lambda lib: lib.randperm(3, generator="g"), [], match="Generator")


def test_set_and_get_num_threads_like_torch() -> None:
    before = mf.get_num_threads()
    try:
        for count in (1, 2, 64):
            torch_before = torch.get_num_threads()
            torch.set_num_threads(count)
            mf.set_num_threads(count)
            assert mf.get_num_threads() == torch.get_num_threads() == count
            torch.set_num_threads(torch_before)
        mf.set_num_threads(1)
        assert mf._threads.parallel_threads() == 1  # every kernel runs its serial twin
        x = mf.ones(100_000)
        assert (x * 2).sum().item() == 200_000.0
    finally:
        mf.set_num_threads(before)
    for bad in (0, -1, 1.5, True):
        check_raises_like_torch(lambda lib: lib.set_num_threads(bad), [], match="set_num_threads")  # noqa: B023
