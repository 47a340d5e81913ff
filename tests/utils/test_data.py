"""Dataset, TensorDataset and DataLoader: batching, shuffling, drop_last, reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

import minifw as mf
from minifw.utils.data import DataLoader, Dataset, TensorDataset, default_collate

pytestmark = pytest.mark.extra  # given code: no task teaches it


def make_dataset(n=10):
    x = mf.tensor(np.arange(n * 2, dtype=np.float64).reshape(n, 2))
    y = mf.tensor(np.arange(n))
    return TensorDataset(x, y)


def test_tensor_dataset_items_and_length():
    ds = make_dataset()
    assert len(ds) == 10
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(mf.zeros(3, 2), mf.zeros(4))


def test_batches_in_order_with_last_partial_batch():
    loader = DataLoader(make_dataset(), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2) and batches[0][0].dtype is mf.float64
    assert batches[0][1].dtype is mf.int64
    dropped = DataLoader(make_dataset(), batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[1].tolist() for b in dropped] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_is_a_permutation_reproducible_with_manual_seed():
    loader = DataLoader(make_dataset(), batch_size=3, shuffle=True)
    mf.manual_seed(5)
    first = [i for _, y in loader for i in y.tolist()]
    second = [i for _, y in loader for i in y.tolist()]
    mf.manual_seed(5)
    again = [i for _, y in loader for i in y.tolist()]
    assert sorted(first) == list(range(10))
    assert first == again and first != second and first != list(range(10))
    mf.manual_seed(5)
    for x, y in loader:  # rows stay paired with their labels
        assert x[:, 0].tolist() == [2.0 * i for i in y.tolist()]


def test_map_style_dataset_uses_default_collate():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": mf.tensor([float(i)]), "y": i * i, "name": f"item{i}"}

    batches = list(DataLoader(Squares(), batch_size=2))
    assert batches[0]["x"].shape == (2, 1)
    assert batches[1]["y"].tolist() == [4, 9] and batches[1]["y"].dtype is mf.int64
    assert batches[2]["name"] == ["item4"]
    pairs = default_collate([(np.ones(2), 1.5), (np.zeros(2), 2.5)])
    assert pairs[0].shape == (2, 2) and pairs[1].tolist() == [1.5, 2.5]
    with pytest.raises(NotImplementedError, match="must define __getitem__"):
        Dataset()[0]


def test_bad_batch_size_and_unsupported_items():
    with pytest.raises(ValueError, match="positive integer"):
        DataLoader(make_dataset(), batch_size=0)
    with pytest.raises(TypeError, match="found object"):
        default_collate([object()])
