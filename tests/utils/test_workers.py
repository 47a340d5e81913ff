"""DataLoader's options and its worker processes, checked against torch.utils.data.

Workers must give the batches of `num_workers=0`, in the same order; a worker's
exception is raised again in the main process with its traceback. Every test uses a
small dataset and 2 workers, every wait has a timeout, and a fixture checks that no
worker process outlives its test.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.utils import data
from tests.parity import check_raises_like_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra
WAIT = 20  # seconds: the longest a test waits for a batch


@pytest.fixture(autouse=True)
def no_worker_outlives_its_test() -> Iterator[None]:
    yield
    deadline = time.monotonic() + WAIT  # a stopped worker may take a moment to be reaped
    while minifw_workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert minifw_workers() == [], f"worker processes left running: {minifw_workers()}"


def minifw_workers() -> list[Any]:
    """minifw's DataLoader workers still running (PyTorch's are its own business)."""
    return [p for p in multiprocessing.active_children() if p.name.startswith("minifw")]


class Items(data.Dataset):
    """Item i: a dict of a float32 row, an int label, a bool flag and a name."""

    def __init__(self, n: int = 11) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, Any]:
        row = mf.tensor([i, i * 0.5], dtype=mf.float32)
        return {"x": row, "y": i, "odd": bool(i % 2), "name": f"item{i}"}


class WhoReads(data.Dataset):
    """Item i: (i, the reading process's id, the worker info's fields, a random draw)."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        info = data.get_worker_info()
        assert info is not None and info.dataset is not None
        draw = mf.rand(1).item()
        return i, os.getpid(), info.id, info.num_workers, info.seed, mf.initial_seed(), draw


class FailsAt(data.Dataset):
    """Raises `error` when item `bad` is read."""

    def __init__(self, bad: int, error: BaseException) -> None:
        self.bad, self.error = bad, error

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> int:
        if i == self.bad:
            raise self.error
        return i


def plain(batch: Any) -> Any:
    """A batch as nested Python values (tensors as lists) to compare two runs."""
    if isinstance(batch, mf.Tensor):
        return (batch.dtype.name, batch.tolist())
    if isinstance(batch, dict):
        return {key: plain(value) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return [plain(value) for value in batch]
    return batch


def passes(loader: data.DataLoader, seed: int | None = None) -> list[Any]:
    if seed is not None:
        mf.manual_seed(seed)
    return [plain(batch) for batch in loader]


TENSORS = data.TensorDataset(
    mf.arange(26, dtype=mf.float32).reshape(13, 2), mf.arange(13), mf.arange(13) % 3 == 0
)


@pytest.mark.parametrize(
    "options",
    [
        {"batch_size": 3},
        {"batch_size": 4, "drop_last": True},
        {"batch_size": 3, "shuffle": True},
        {"batch_size": None},
        {"batch_sampler": [[3, 1], [0], [7, 8, 9]]},
        {"sampler": [5, 0, 2, 9], "batch_size": 2},
        {"batch_size": 2, "collate_fn": lambda items: len(items)},
    ],
    ids=["batches", "drop_last", "shuffle", "no batching", "batch_sampler", "sampler", "collate"],
)
@pytest.mark.parametrize("dataset", [Items(), TENSORS], ids=["items", "tensors"])
def test_workers_give_the_batches_of_the_main_process(dataset: Any, options: Any) -> None:
    alone = passes(data.DataLoader(dataset, **options), seed=7)
    loader = data.DataLoader(dataset, num_workers=2, timeout=WAIT, **options)
    with_workers = passes(loader, seed=7)
    assert with_workers == alone and len(alone) == len(loader)


def test_batches_arrive_as_tensors_of_their_dtypes() -> None:
    x, y, flag = next(iter(data.DataLoader(TENSORS, batch_size=4, num_workers=2, timeout=WAIT)))
    assert (x.dtype, y.dtype, flag.dtype) == (mf.float32, mf.int64, mf.bool)
    assert x.shape == (4, 2) and y.tolist() == [0, 1, 2, 3] and flag.tolist()[0] is True
    batch = next(iter(data.DataLoader(Items(), batch_size=2, num_workers=2, timeout=WAIT)))
    assert batch["x"].dtype is mf.float32 and batch["name"] == ["item0", "item1"]


def test_a_seeded_generator_gives_the_same_order_with_or_without_workers() -> None:
    def order(workers: int) -> list[int]:
        loader = data.DataLoader(
            range(10), batch_size=3, shuffle=True, num_workers=workers,
            generator=mf.Generator().manual_seed(11), **({"timeout": WAIT} if workers else {}),
        )  # fmt: skip
        return [i for batch in loader for i in batch.tolist()]

    assert order(0) == order(2) and sorted(order(0)) == list(range(10))


def test_workers_are_processes_that_know_their_id_and_seed() -> None:
    mf.manual_seed(0)
    rows = list(data.DataLoader(WhoReads(), batch_size=None, num_workers=2, timeout=WAIT))
    pids = {row[1] for row in rows}
    assert os.getpid() not in pids and len(pids) == 2
    assert [row[2] for row in rows] == [0, 1, 0, 1, 0, 1]  # batches go to workers in turn
    assert all(row[3] == 2 for row in rows)
    seeds = {row[2]: row[4] for row in rows}
    assert seeds[1] == seeds[0] + 1 and all(row[5] == row[4] for row in rows)
    assert len({row[6] for row in rows}) == 6  # each worker draws its own numbers
    mf.manual_seed(0)
    again = list(data.DataLoader(WhoReads(), batch_size=None, num_workers=2, timeout=WAIT))
    assert [row[6] for row in again] == [row[6] for row in rows]  # seeded: reproducible


def test_worker_init_fn_runs_in_each_worker_first() -> None:
    def init(worker_id: int) -> None:
        info = data.get_worker_info()
        assert info is not None and info.id == worker_id
        mf.manual_seed(100 + worker_id)

    loader = data.DataLoader(WhoReads(), batch_size=None, num_workers=2, worker_init_fn=init,
                             timeout=WAIT)  # fmt: skip
    rows = list(loader)
    g = mf.Generator().manual_seed(100)
    assert rows[0][6] == pytest.approx(mf.rand(1, generator=g).item())


def test_a_workers_exception_is_raised_again_with_its_traceback() -> None:
    """PyTorch's text: "Caught ValueError in DataLoader worker process 0.", "Original
    Traceback (most recent call last):", the frames, the error. (PyTorch itself is not
    run here: its workers take seconds to stop after an error.)
    """
    failing = FailsAt(5, ValueError("bad item 5"))
    loader = data.DataLoader(failing, batch_size=2, num_workers=2, timeout=WAIT)
    got = []
    with pytest.raises(ValueError) as caught:
        got.extend(int(i) for batch in loader for i in batch)
    message = str(caught.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 0.\n")
    assert "Original Traceback (most recent call last):" in message
    assert "in __getitem__" in message and message.rstrip().endswith("ValueError: bad item 5")
    assert got == [0, 1, 2, 3]  # the batches before the failing one came first


def test_key_errors_and_init_failures_are_raised_again() -> None:
    with pytest.raises(KeyError) as caught:
        list(data.DataLoader(FailsAt(0, KeyError("nope")), num_workers=2, timeout=WAIT))
    assert "Caught KeyError in DataLoader worker process 0." in str(caught.value)
    assert "KeyError: 'nope'" in str(caught.value)

    def broken_init(worker_id: int) -> None:
        raise OSError(f"no disk for worker {worker_id}")

    with pytest.raises(OSError, match="(?s)Caught OSError.*in broken_init.*no disk for worker"):
        list(data.DataLoader(range(4), num_workers=2, worker_init_fn=broken_init, timeout=WAIT))


def test_timeout_raises_pytorchs_error() -> None:
    class Slow(data.Dataset):
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> int:
            time.sleep(1.0)
            return i

    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        list(data.DataLoader(Slow(), num_workers=1, timeout=0.2))


def test_a_worker_that_dies_is_reported() -> None:
    class Dies(data.Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> int:
            if i == 1:
                os._exit(3)
            return i

    with pytest.raises(RuntimeError, match=r"worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(data.DataLoader(Dies(), num_workers=2))


def test_persistent_workers_serve_every_pass() -> None:
    loader = data.DataLoader(WhoReads(), batch_size=2, num_workers=2, persistent_workers=True,
                             timeout=WAIT)  # fmt: skip
    first = iter(loader)
    pids = {int(p) for batch in first for p in batch[1]}
    second = iter(loader)
    assert second is first and {int(p) for batch in second for p in batch[1]} == pids
    half = iter(loader)
    next(half)  # a pass left early: the next pass still starts from the first batch
    assert [batch[0].tolist() for batch in iter(loader)] == [[0, 1], [2, 3], [4, 5]]
    del loader, first, second, half  # the last reference: the workers stop


def test_leaving_a_pass_early_stops_its_workers() -> None:
    loader = data.DataLoader(range(40), batch_size=2, num_workers=2, prefetch_factor=3,
                             timeout=WAIT)  # fmt: skip
    for batch in loader:
        assert batch.tolist() == [0, 1]
        break


def test_pin_memory_warns_without_a_gpu_like_torch() -> None:
    if mf.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("the warning is for machines without a GPU")
    for d in (data, torch.utils.data):
        with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no"):
            batches = list(d.DataLoader(range(3), batch_size=2, pin_memory=True))
        assert [b.tolist() for b in batches] == [[0, 1], [2]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(data.DataLoader(range(3), batch_size=2))


@pytest.mark.parametrize(
    "options",
    [
        {"num_workers": -1},
        {"timeout": -1},
        {"prefetch_factor": 2},
        {"persistent_workers": True},
        {"num_workers": 1, "prefetch_factor": -1},
        {"sampler": [0, 1], "shuffle": True},
        {"batch_sampler": [[0]], "batch_size": 3},
        {"batch_sampler": [[0]], "drop_last": True},
        {"batch_sampler": [[0]], "shuffle": True},
        {"batch_size": None, "drop_last": True},
        {"batch_size": 0},
        {"batch_size": 2.0},
    ],
)
def test_option_errors_like_torch(options: dict[str, Any]) -> None:
    """PyTorch's exception class and message for clashing or bad options."""
    error = check_raises_like_torch(lambda lib: lib.utils.data.DataLoader(range(4), **options), [])
    with pytest.raises(type(error)) as theirs:
        torch.utils.data.DataLoader(range(4), **options)
    assert str(error) == str(theirs.value)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # torch's __del__
def test_zero_prefetch_is_refused_when_iterating_like_torch() -> None:
    for d in (data, torch.utils.data):
        with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
            iter(d.DataLoader(range(4), num_workers=1, prefetch_factor=0))


def test_loader_attributes_like_torch() -> None:
    for lib in (mf, torch):
        loader = lib.utils.data.DataLoader(range(7), batch_size=3, num_workers=1)
        assert (loader.batch_size, loader.drop_last, loader.prefetch_factor) == (3, False, 2)
        assert isinstance(loader.sampler, lib.utils.data.SequentialSampler)
        assert isinstance(loader.batch_sampler, lib.utils.data.BatchSampler) and len(loader) == 3
        shuffled = lib.utils.data.DataLoader(range(7), shuffle=True)
        assert isinstance(shuffled.sampler, lib.utils.data.RandomSampler)
        given = lib.utils.data.DataLoader(range(7), batch_sampler=[[0, 1]])
        assert given.batch_size is None and given.batch_sampler == [[0, 1]]


def test_numpy_items_without_batching_become_tensors() -> None:
    items = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    for lib in (mf, torch):
        out = list(lib.utils.data.DataLoader(items, batch_size=None))
        assert isinstance(out[0], lib.Tensor) and out[1].tolist() == [3.0, 4.0]


def test_a_loader_collected_as_garbage_stops_its_workers() -> None:
    loader = data.DataLoader(range(6), batch_size=2, num_workers=2, persistent_workers=True,
                             timeout=WAIT)  # fmt: skip
    loader.itself = loader  # type: ignore[attr-defined]  # a cycle: only gc frees it
    assert len(list(loader)) == 3
    workers = list(loader._iterator.workers)
    del loader
    gc.collect()
    assert [w.exitcode for w in workers] == [0, 0]  # stopped when told, not terminated


def test_more_workers_than_cpus_warns_like_torch() -> None:
    too_many = len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else None
    if too_many is None or too_many > 4:
        pytest.skip("kept to small machines: one worker more than the CPUs")
    said = []
    for d in (data, torch.utils.data):
        with pytest.warns(UserWarning, match=f"will create {too_many} worker processes") as got:
            assert list(d.DataLoader(range(2), num_workers=too_many, timeout=WAIT)) != []
        said.append({str(w.message) for w in got if "worker processes" in str(w.message)})
    assert said[0] == said[1]
