"""Datasets and the DataLoader that cuts them into (shuffled) batches, as in PyTorch.

A `Dataset` answers `len(ds)` and `ds[i]`. `DataLoader` draws the order of the
indices from minifw's generator when `shuffle=True` (so `mf.manual_seed` makes it
reproducible) and stacks each batch's items into tensors. A `TensorDataset` takes
a fast path: each batch is gathered from the underlying arrays in one indexing
step instead of item by item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from minifw.core.random import generator
from minifw.tensor.creation import stack
from minifw.tensor.tensor import Tensor, tensor


class Dataset:
    """A map-style dataset: subclasses define `__getitem__(i)` and `__len__()`."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class TensorDataset(Dataset):
    """Item i is the tuple (t[i] for t in tensors); all tensors share their first dim."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [t.shape[0] if t.dim() else None for t in tensors]
        if None in sizes or len(set(sizes)) != 1:
            raise ValueError(
                "Size mismatch between tensors: every tensor needs the same first dim, got "
                f"shapes {[t.shape for t in tensors]}"
            )
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]  # type: ignore[no-any-return]


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


class DataLoader:
    """Iterate over a dataset in batches of `batch_size`, optionally shuffled.

    Args:
        dataset: a Dataset (or anything with `__getitem__` and `__len__`).
        batch_size: items per batch; the last batch may be smaller unless `drop_last`.
        shuffle: draw a new order of the items at the start of every pass.
        drop_last: skip a last, incomplete batch.
        collate_fn: turns a list of items into a batch (default: `default_collate`).
    """

    def __init__(
        self, dataset: Any, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
        collate_fn: Callable[[list[Any]], Any] | None = None,
    ) -> None:  # fmt: skip
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size should be a positive integer value, got {batch_size!r}")
        self.dataset, self.batch_size = dataset, batch_size
        self.shuffle, self.drop_last = shuffle, drop_last
        self.collate_fn = collate_fn or default_collate

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batches(self) -> Iterator[np.ndarray]:
        n = len(self.dataset)
        order = generator().permutation(n) if self.shuffle else np.arange(n)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            yield order[start : start + self.batch_size]

    def __iter__(self) -> Iterator[Any]:
        fast = isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate
        if fast:
            arrays = [(t, t.detach().cpu().numpy()) for t in self.dataset.tensors]
        for indices in self._batches():
            if fast:
                yield tuple(
                    tensor(a[indices], dtype=t.dtype, backend=t.backend) for t, a in arrays
                )
            else:
                yield self.collate_fn([self.dataset[int(i)] for i in indices])


__all__ = ["DataLoader", "Dataset", "TensorDataset", "default_collate"]
