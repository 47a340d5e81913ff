"""Datasets, samplers and the DataLoader that cuts a dataset into batches, as in PyTorch.

A `Dataset` answers `len(ds)` and `ds[i]`; `Subset`, `ConcatDataset` and
`random_split` make new datasets of old ones. A sampler yields the indices of one pass
(`SequentialSampler`, `RandomSampler`, `WeightedRandomSampler`), a `BatchSampler`
groups them into batches. `DataLoader` reads the batches, collates each batch's items
into tensors and yields them in the sampler's order: in this process, or with
`num_workers > 0` in worker processes (minifw.utils._workers), with the same batches in
the same order. Random draws come from a `minifw.Generator` when given one, else from
minifw's default generator (so `mf.manual_seed` makes a pass reproducible).

A `TensorDataset` read with the default collate takes a fast path: each batch is
gathered from the underlying arrays in one indexing step instead of item by item.
"""

from __future__ import annotations

import bisect
import dataclasses
import importlib
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any

import numpy as np

from minifw.backends import cuda_available
from minifw.core.random import Generator, generator
from minifw.tensor.creation import stack
from minifw.tensor.tensor import Tensor, tensor

_SEED_BOUND = 1 << 63  # base seeds are drawn from [0, 2**63), as PyTorch's random_()


class Dataset:
    """A map-style dataset: subclasses define `__getitem__(i)` and `__len__()`."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def __add__(self, other: Any) -> ConcatDataset:
        """`a + b`: the items of a, then those of b."""
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Item i is the tuple (t[i] for t in tensors); all tensors share their first dim."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [t.shape[0] if t.dim() else None for t in tensors]
        if None in sizes or len(set(sizes)) != 1:
            raise ValueError(
                "Size mismatch between tensors: every tensor needs the same first dim, got "
                f"shapes {[tuple(t.shape) for t in tensors]}"
            )
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]  # type: ignore[no-any-return]


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The items of several datasets one after the other (`cumulative_sizes`: their ends)."""

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        ends, total = [], 0
        for part in self.datasets:
            total += len(part)
            ends.append(total)
        self.cumulative_sizes = ends

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        part = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[part - 1] if part else 0
        return self.datasets[part][index - start]


def _split_lengths(total: int, lengths: Sequence[float]) -> list[int]:
    """Fractions summing to 1 as item counts (the remainder one by one from the first)."""
    counts = []
    for i, fraction in enumerate(lengths):
        if not 0 <= fraction <= 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        counts.append(math.floor(total * fraction))
    for i in range(total - sum(counts)):
        counts[i % len(counts)] += 1
    for i, count in enumerate(counts):
        if count == 0:
            warnings.warn(
                f"Length of split at index {i} is 0. This might result in an empty dataset.",
                stacklevel=3,
            )
    return counts


def random_split(
    dataset: Any, lengths: Sequence[float], generator: Generator | None = None
) -> list[Subset]:
    """Split `dataset` at random into non-overlapping Subsets of the given lengths.

    Args:
        dataset: the dataset to split.
        lengths: item counts summing to len(dataset), or fractions summing to 1 (each
            split gets floor(fraction * len); the items left over go one each to the
            first splits).
        generator: the Generator to draw the permutation from (default: minifw's).

    Raises:
        ValueError: a fraction outside [0, 1], or counts that do not sum to the length.
    """
    total = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _split_lengths(total, lengths)
    if sum(lengths) != total:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    counts = [_as_count(n, "lengths") for n in lengths]
    order = _draw(generator).permutation(total).tolist()
    splits, start = [], 0
    for count in counts:
        splits.append(Subset(dataset, order[start : start + count]))
        start += count
    return splits


def _as_count(value: Any, name: str) -> int:
    """`value` as an int, or a TypeError naming `name` and the value."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be ints (or fractions summing to 1), got {value!r}")
    return int(value)


def _draw(chosen: Generator | None) -> np.random.Generator:
    """The numpy generator behind `chosen` (the default generator's when None)."""
    return generator(chosen)


def _check_positive(name: str, value: Any, error: type[Exception] = ValueError) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise error(f"{name} should be a positive integer value, but got {name}={value}")


def _check_bool(name: str, value: Any, error: type[Exception]) -> None:
    if not isinstance(value, bool):
        raise error(f"{name} should be a boolean value, but got {name}={value}")


class Sampler:
    """Yields the indices (or batches of indices) of one pass; subclasses define __iter__."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in a random order: a new permutation each pass, or draws with replacement.

    Args:
        data_source: the dataset (only its length is read).
        replacement: draw each index independently (repeats possible).
        num_samples: how many indices a pass yields (default len(data_source)); without
            replacement, more than the length chains whole permutations.
        generator: the Generator to draw from (default: minifw's).
    """

    def __init__(
        self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:  # fmt: skip
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        _check_bool("replacement", replacement, TypeError)
        _check_positive("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        """Indices per pass: the dataset's length unless set."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, rng = len(self.data_source), _draw(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order each pass."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        for i in _draw(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`.

    Args:
        weights: one non-negative weight per index (a 1-D sequence or tensor).
        num_samples: indices per pass.
        replacement: draw with replacement (default); without it, no index repeats.
        generator: the Generator to draw from (default: minifw's).
    """

    def __init__(
        self, weights: Sequence[float], num_samples: int, replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:  # fmt: skip
        _check_positive("num_samples", num_samples)
        _check_bool("replacement", replacement, ValueError)
        values = weights.numpy() if isinstance(weights, Tensor) else weights
        self.weights = np.asarray(values, dtype=np.float64)
        if self.weights.ndim != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape "
                f"{tuple(self.weights.shape)}"
            )
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def _probabilities(self) -> np.ndarray:
        w = self.weights
        if not np.isfinite(w).all() or (w < 0).any():
            bad = "encountering probability entry < 0" if (w < 0).any() else "inf or nan"
            raise RuntimeError(f"invalid multinomial distribution ({bad})")
        if w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > len(w):
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                f"({self.num_samples} samples, {len(w)} weights)"
            )
        if not self.replacement and self.num_samples > np.count_nonzero(w):
            raise RuntimeError(
                "invalid multinomial distribution (with replacement=False, not enough "
                f"non-negative category to sample): {np.count_nonzero(w)} non-zero weights"
            )
        return np.asarray(w / w.sum())

    def __iter__(self) -> Iterator[int]:
        p = self._probabilities()
        rng = _draw(self.generator)
        yield from rng.choice(len(p), self.num_samples, self.replacement, p).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size` (the last one may be short)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        _check_positive("batch_size", batch_size)
        _check_bool("drop_last", drop_last, ValueError)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What a DataLoader worker process knows of itself (`get_worker_info()`); read-only."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: list[WorkerInfo | None] = [None]  # set in a worker process only


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker: its id, the number of workers, its seed, its dataset copy.

    None in the main process. A dataset can use it to split its work between workers.
    """
    return _worker_info[0]


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of items into one batch: tensors, numbers, arrays, tuples, dicts."""
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(list(batch))
    if isinstance(first, bool | int | float | np.number | np.ndarray):
        return tensor(np.stack([np.asarray(x) for x in batch]))
    if isinstance(first, dict):
        return {key: default_collate([item[key] for item in batch]) for key in first}
    if isinstance(first, tuple | list):
        if any(len(item) != len(first) for item in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return type(first)(default_collate(list(column)) for column in zip(*batch, strict=True))
    if isinstance(first, str):
        return list(batch)
    raise TypeError(f"default_collate: batch must contain tensors, numbers, arrays, dicts or "
                    f"lists; found {type(first).__name__}")  # fmt: skip


def default_convert(data: Any) -> Any:
    """One item as it is, with numpy arrays (also inside tuples, lists, dicts) as tensors."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        return tensor(data)
    if isinstance(data, dict):
        return {key: default_convert(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(default_convert(value) for value in data))
    if isinstance(data, tuple | list):
        return type(data)(default_convert(value) for value in data)
    return data


class Fetcher:
    """Reads and collates the items of one batch (or one item), in any process.

    A TensorDataset with the default collate is read by array indexing.
    """

    def __init__(self, loader: DataLoader) -> None:
        self.dataset, self.collate_fn = loader.dataset, loader.collate_fn
        self.batched = loader.batch_sampler is not None
        fast = isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate
        self.arrays = (
            [(t, t.detach().cpu().numpy()) for t in self.dataset.tensors]
            if fast and self.batched
            else None
        )

    def __call__(self, index: Any) -> Any:
        if not self.batched:
            return self.collate_fn(self.dataset[index])
        if self.arrays is not None:
            rows = np.asarray(index, dtype=np.int64)
            return tuple(tensor(a[rows], dtype=t.dtype, backend=t.backend) for t, a in self.arrays)
        return self.collate_fn([self.dataset[i] for i in index])


def _warn_pin_memory() -> None:
    if not cuda_available():
        warnings.warn(
            "'pin_memory' argument is set as true but no accelerator is found, then device "
            "pinned memory won't be used.",
            UserWarning,
            stacklevel=3,
        )


def _warn_many_workers(num_workers: int) -> None:
    """PyTorch's warning when a loader starts more workers than this process has CPUs."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if cpus and num_workers > cpus:
        warnings.warn(
            f"This DataLoader will create {num_workers} worker processes in total. Our "
            f"suggested max number of worker in current system is {cpus}, which is smaller "
            "than what this DataLoader is going to create. Please be aware that excessive "
            "worker creation might get DataLoader running slow or even freeze, lower the "
            "worker number to avoid potential slowness/freeze if necessary.",
            UserWarning,
            stacklevel=3,
        )


def _single_process(loader: DataLoader) -> Iterator[Any]:
    """The batches of one pass, read in this process."""
    indices = iter(loader._index_sampler)
    loader._draw_base_seed()  # drawn as with workers: a seeded pass gives the same order
    fetch = Fetcher(loader)
    for index in indices:
        yield fetch(index)


class DataLoader:
    """Iterate over a dataset in batches, in this process or in worker processes.

    Args:
        dataset: a Dataset (or anything with `__getitem__` and `__len__`).
        batch_size: items per batch; None yields the items one by one, uncollated.
        shuffle: a new random order each pass (a RandomSampler).
        sampler: the indices of a pass (instead of `shuffle`).
        batch_sampler: the batches of indices of a pass (instead of batch_size, shuffle,
            sampler and drop_last).
        num_workers: worker processes reading batches (0: read them in this process).
            The batches and their order are the same either way.
        collate_fn: turns a list of items into a batch (default: `default_collate`).
        pin_memory: accepted; minifw has no pinned memory (without a GPU it warns, as
            PyTorch does).
        drop_last: skip a last, incomplete batch.
        timeout: seconds to wait for a worker's batch before raising (0: no limit).
        worker_init_fn: called in each worker with its id, after seeding and before reading.
        multiprocessing_context: a start method name or context (default: the platform's).
        generator: the Generator drawing the order and the workers' base seed.
        prefetch_factor: batches each worker reads ahead (default 2 with workers).
        persistent_workers: keep the workers alive from one pass to the next.
    """

    def __init__(
        self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
        sampler: Iterable[Any] | None = None, batch_sampler: Iterable[Any] | None = None,
        num_workers: int = 0, collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None, multiprocessing_context: Any = None,
        generator: Generator | None = None, *, prefetch_factor: int | None = None,
        persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True,
    ) -> None:  # fmt: skip
        self.dataset, self.num_workers, self.timeout = dataset, num_workers, timeout
        self.prefetch_factor = _check_workers(num_workers, timeout, prefetch_factor)
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.in_order = in_order
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.generator, self.persistent_workers = generator, persistent_workers
        self.sampler, self.batch_sampler = _samplers(
            dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator
        )
        batched = self.batch_sampler is not None
        self.batch_size = None if batch_sampler is not None else batch_size
        self.drop_last = drop_last if batch_sampler is None else False
        self.collate_fn = collate_fn or (default_collate if batched else default_convert)
        self._iterator: Any = None

    @property
    def _index_sampler(self) -> Iterable[Any]:
        """What one pass iterates: the batch sampler, or the sampler without batching."""
        chosen: Iterable[Any] = (
            self.batch_sampler if self.batch_sampler is not None else self.sampler
        )
        return chosen

    def _draw_base_seed(self) -> int:
        """One draw from the loader's generator per pass: the workers' base seed."""
        return int(_draw(self.generator).integers(0, _SEED_BOUND))

    def __len__(self) -> int:
        return len(self._index_sampler)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        if self.pin_memory:
            _warn_pin_memory()
        if self.num_workers == 0:
            return _single_process(self)
        workers = importlib.import_module("minifw.utils._workers")
        if self._iterator is None:
            _warn_many_workers(self.num_workers)
        if not self.persistent_workers:
            return workers.WorkerIterator(self)  # type: ignore[no-any-return]
        if self._iterator is None:
            self._iterator = workers.WorkerIterator(self)
        else:
            self._iterator.reset()
        return self._iterator  # type: ignore[no-any-return]

    def __del__(self) -> None:
        if getattr(self, "_iterator", None) is not None:
            self._iterator.shutdown()


def _check_workers(num_workers: int, timeout: float, prefetch_factor: int | None) -> int | None:
    """The prefetch factor to use (2 with workers unless given), after PyTorch's checks."""
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to disable "
            "multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing.let "
            "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if num_workers > 0 and prefetch_factor is None:
        return 2
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    return prefetch_factor


def _samplers(
    dataset: Any, batch_size: int | None, shuffle: bool | None, sampler: Any,
    batch_sampler: Any, drop_last: bool, chosen: Generator | None,
) -> tuple[Any, Any]:  # fmt: skip
    """(sampler, batch_sampler) from DataLoader's arguments, refusing clashing ones."""
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                "sampler, and drop_last"
            )
        return SequentialSampler(dataset), batch_sampler
    if batch_size is None and drop_last:
        raise ValueError(
            "batch_size=None option disables auto-batching and is mutually exclusive with "
            "drop_last"
        )
    if sampler is None:
        sampler = (
            RandomSampler(dataset, generator=chosen) if shuffle else SequentialSampler(dataset)
        )
    if batch_size is None:
        return sampler, None
    return sampler, BatchSampler(sampler, batch_size, drop_last)


__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "RandomSampler", "Sampler",
    "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info",
    "random_split",
]  # fmt: skip
