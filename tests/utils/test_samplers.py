"""Subset, ConcatDataset, random_split and the samplers, checked against torch.utils.data.

Where no random draw is involved the answers must be torch's own; where one is, the
tests check what PyTorch promises (a permutation, the lengths, reproducibility with a
seeded Generator) since minifw's random stream is its own.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.utils import data
from tests.parity import check_raises_like_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra


def both(build: Any) -> tuple[Any, Any]:
    """build(lib's utils.data, lib) for minifw and for torch."""
    return build(data, mf), build(torch.utils.data, torch)


def test_subset_and_concat_like_torch() -> None:
    mine, theirs = both(lambda d, lib: d.Subset(range(10), [7, 2, 5]))
    assert len(mine) == len(theirs) == 3 and list(mine) == list(theirs) == [7, 2, 5]
    assert mine[-1] == theirs[-1] == 5
    mine, theirs = both(lambda d, lib: d.ConcatDataset([range(3), range(10, 14)]))
    assert mine.cumulative_sizes == theirs.cumulative_sizes == [3, 7]
    assert [mine[i] for i in range(-7, 7)] == [theirs[i] for i in range(-7, 7)]
    glued = data.TensorDataset(mf.zeros(2)) + data.TensorDataset(mf.ones(3))
    assert isinstance(glued, data.ConcatDataset) and len(glued) == 5
    assert glued[4][0].item() == 1.0 and glued[1][0].item() == 0.0


def test_subset_passes_a_list_of_indices_to_its_dataset() -> None:
    class Rows(data.Dataset):
        def __len__(self) -> int:
            return 6

        def __getitem__(self, index: Any) -> Any:
            return ("many", index) if isinstance(index, list) else index

    assert data.Subset(Rows(), [5, 3, 1])[[0, 2]] == ("many", [5, 1])


@pytest.mark.parametrize(
    "build",
    [
        lambda lib: lib.utils.data.ConcatDataset([]),
        lambda lib: lib.utils.data.ConcatDataset([range(3)])[-4],
        lambda lib: lib.utils.data.random_split(range(10), [3, 3]),
        lambda lib: lib.utils.data.random_split(range(10), [0.5, 0.6]),
        lambda lib: lib.utils.data.random_split(range(10), [0.5, -0.5, 1.0]),
    ],
    ids=["empty concat", "index past the start", "counts", "fractions", "negative fraction"],
)
def test_dataset_errors_like_torch(build: Any) -> None:
    check_raises_like_torch(build, [], match=".")


@pytest.mark.parametrize(
    ("n", "lengths"),
    [(10, [3, 7]), (10, [0.33, 0.33, 0.34]), (11, [0.25, 0.25, 0.5]), (5, [1.0]), (7, [0.5, 0.5])],
)
def test_random_split_lengths_like_torch(n: int, lengths: list[float]) -> None:
    mine = data.random_split(range(n), lengths, generator=mf.Generator().manual_seed(0))
    theirs = torch.utils.data.random_split(range(n), lengths)
    assert [len(s) for s in mine] == [len(s) for s in theirs]
    items = [i for split in mine for i in split]
    assert sorted(items) == list(range(n))  # a partition of the dataset


def test_random_split_warns_of_an_empty_split_and_is_reproducible() -> None:
    for lib in (mf, torch):
        with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
            lib.utils.data.random_split(range(10), [0.1, 0.0, 0.9])
    first = [list(s) for s in data.random_split(range(20), [5, 15], mf.Generator().manual_seed(4))]
    again = [list(s) for s in data.random_split(range(20), [5, 15], mf.Generator().manual_seed(4))]
    other = [list(s) for s in data.random_split(range(20), [5, 15], mf.Generator().manual_seed(5))]
    assert first == again and first != other
    mf.manual_seed(1)
    seeded = [list(s) for s in data.random_split(range(20), [5, 15])]
    mf.manual_seed(1)
    assert seeded == [list(s) for s in data.random_split(range(20), [5, 15])]


def test_sequential_and_batch_samplers_like_torch() -> None:
    for n, size, drop in [(5, 2, False), (5, 2, True), (6, 3, False), (1, 4, False), (3, 4, True)]:
        mine = data.BatchSampler(data.SequentialSampler(range(n)), size, drop)
        theirs = torch.utils.data.BatchSampler(
            torch.utils.data.SequentialSampler(range(n)), size, drop
        )
        assert list(mine) == list(theirs) and len(mine) == len(theirs)
    assert list(data.BatchSampler([4, 1, 3], 2, False)) == [[4, 1], [3]]
    assert isinstance(data.SequentialSampler([1]), data.Sampler)


def test_random_sampler_draws_like_torch() -> None:
    g = mf.Generator().manual_seed(3)
    sampler = data.RandomSampler(range(7), generator=g)
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == list(range(7)) and first != second
    assert len(sampler) == len(torch.utils.data.RandomSampler(range(7))) == 7
    g.manual_seed(3)
    assert list(sampler) == first  # the same Generator state, the same order
    longer = list(data.RandomSampler(range(5), num_samples=12, generator=g))
    assert len(longer) == 12 and sorted(longer[:5]) == sorted(longer[5:10]) == list(range(5))
    drawn = list(data.RandomSampler(range(3), replacement=True, num_samples=50, generator=g))
    assert len(drawn) == 50 and set(drawn) == {0, 1, 2}
    indices = list(data.SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(indices) == [10, 20, 30]


def test_weighted_random_sampler_follows_the_weights() -> None:
    g = mf.Generator().manual_seed(0)
    drawn = list(data.WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=g))
    counts = np.bincount(drawn, minlength=3)
    assert counts[0] == 0 and 0.7 < counts[2] / 4000 < 0.8
    once = list(data.WeightedRandomSampler(mf.tensor([1.0, 1.0, 5.0]), 3, replacement=False))
    assert sorted(once) == [0, 1, 2]
    assert len(data.WeightedRandomSampler([1, 2], 9)) == 9


@pytest.mark.parametrize(
    "build",
    [
        lambda d: d.RandomSampler(range(5), replacement=1),
        lambda d: d.RandomSampler(range(5), num_samples=0),
        lambda d: d.RandomSampler(range(5), num_samples=3.0),
        lambda d: d.RandomSampler([]),
        lambda d: d.BatchSampler(range(5), 0, False),
        lambda d: d.BatchSampler(range(5), True, False),
        lambda d: d.BatchSampler(range(5), 2, 1),
        lambda d: d.WeightedRandomSampler([1, 2], 0),
        lambda d: d.WeightedRandomSampler([1, 2], 2, replacement=1),
        lambda d: d.WeightedRandomSampler([[1, 2]], 2),
        lambda d: list(d.WeightedRandomSampler([1, 2], 3, replacement=False)),
        lambda d: list(d.WeightedRandomSampler([-1, 2], 3)),
        lambda d: list(d.WeightedRandomSampler([0, 0], 3)),
    ],
)
def test_sampler_errors_like_torch(build: Any) -> None:
    """PyTorch's exception class; minifw's message names the argument or the cause."""
    error = check_raises_like_torch(lambda lib: build(lib.utils.data), [], match=".")
    try:
        build(torch.utils.data)
    except (ValueError, TypeError, RuntimeError, AssertionError) as theirs:
        assert str(theirs).split(" ")[0] in str(error)  # the same argument or cause first


def test_sampler_messages_are_torchs() -> None:
    for build in (
        lambda d: d.RandomSampler(range(5), num_samples=0),
        lambda d: d.BatchSampler(range(5), 0, False),
        lambda d: d.WeightedRandomSampler([1, 2], 2, replacement=1),
    ):
        with pytest.raises(ValueError) as mine:
            build(data)
        with pytest.raises(ValueError) as theirs:
            build(torch.utils.data)
        assert str(mine.value) == str(theirs.value)


def test_sampler_base_class_needs_iter() -> None:
    with pytest.raises(NotImplementedError, match="__iter__"):
        iter(data.Sampler())


def test_get_worker_info_is_none_in_the_main_process() -> None:
    assert data.get_worker_info() is None and torch.utils.data.get_worker_info() is None


def test_no_warning_for_plain_splits() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data.random_split(range(4), [0.5, 0.5])


def test_worker_info_is_read_only_like_torchs() -> None:
    mine = data.WorkerInfo(id=1, num_workers=2, seed=7, dataset=None)
    theirs = torch.utils.data._utils.worker.WorkerInfo(id=1, num_workers=2, seed=7, dataset=None)
    assert (mine.id, mine.num_workers, mine.seed) == (theirs.id, theirs.num_workers, theirs.seed)
    assert repr(theirs).startswith(repr(mine)[:-1])  # PyTorch 2.13 adds rng and worker_method
    for info in (mine, theirs):
        with pytest.raises(AttributeError, match="cannot assign to field 'seed'"):
            info.seed = 3  # type: ignore[misc]
