"""DataLoader worker processes: each reads whole batches; the main process puts them in order.

The main process walks the sampler and hands each batch's indices to the workers in
turn (at most `prefetch_factor` batches ahead per worker), each worker through its own
queue. A worker reads and collates the batch as the main process would, then sends it
back on one shared queue: every tensor in it travels as its numpy array (`Packed`) and
becomes a tensor again in the main process, which yields the batches in the sampler's
order whatever order they arrive in. An exception in a worker travels back as its
type and traceback text (`Failure`) and is raised again in the main process, at the
batch that failed. Loaded only when a DataLoader has workers, so `import minifw` does
not load multiprocessing.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import queue
import random
import signal
import sys
import traceback
from typing import Any

import numpy as np

from minifw._threads import set_num_threads
from minifw.core.random import manual_seed
from minifw.tensor.tensor import Tensor, tensor
from minifw.utils import data

POLL_SECONDS = 1.0  # how often a waiting process checks that the other side is alive
JOIN_SECONDS = 5.0  # how long shutdown waits for a worker before terminating it
_END = object()  # what the sampler's iterator gives once a pass has no more batches


class Packed:
    """A tensor on its way between processes: its values and its dtype's name."""

    __slots__ = ("array", "dtype")

    def __init__(self, array: np.ndarray, dtype: str) -> None:
        self.array, self.dtype = array, dtype

    def __reduce__(self) -> tuple[Any, ...]:
        return Packed, (self.array, self.dtype)


def pack(value: Any) -> Any:
    """`value` with every tensor in it (in tuples, lists, dicts) as a Packed array."""
    if isinstance(value, Tensor):
        return Packed(value.detach().cpu().numpy(), value.dtype.name)
    if isinstance(value, dict):
        return {key: pack(item) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(pack(item) for item in value))
    if isinstance(value, tuple | list):
        return type(value)(pack(item) for item in value)
    return value


def unpack(value: Any) -> Any:
    """The inverse of `pack`: each Packed array as a tensor of its dtype again."""
    if isinstance(value, Packed):
        return tensor(value.array, dtype=value.dtype)
    if isinstance(value, dict):
        return {key: unpack(item) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(unpack(item) for item in value))
    if isinstance(value, tuple | list):
        return type(value)(unpack(item) for item in value)
    return value


class Failure:
    """An exception raised in a worker: its type (if it can travel) and traceback text."""

    def __init__(self, error: BaseException, worker_id: int) -> None:
        kind: type[BaseException] | None = type(error)
        try:
            pickle.dumps(kind)
        except Exception:  # a class defined where the main process cannot find it
            kind = None
        self.kind, self.name = kind, type(error).__name__
        self.text = (
            f"Caught {self.name} in DataLoader worker process {worker_id}.\n"
            f"Original {''.join(traceback.format_exception(error))}"
        )

    def raise_again(self) -> None:
        """Raise the worker's exception (same type, its traceback in the message)."""
        if self.kind is KeyError:  # KeyError's str() would quote the whole text
            raise KeyError(_Message(self.text))
        try:
            error = self.kind(self.text) if self.kind is not None else None
        except Exception:
            error = None
        if error is None:
            raise RuntimeError(self.text)
        raise error


class _Message(str):
    """A KeyError message shown as it is (KeyError prints its argument's repr)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


class Job:
    """What one worker needs: the batch reader, the dataset, its id, count and seed."""

    def __init__(self, loader: data.DataLoader, worker_id: int, base_seed: int) -> None:
        self.fetch, self.dataset = data.Fetcher(loader), loader.dataset
        self.worker_id, self.num_workers = worker_id, loader.num_workers
        self.seed, self.init_fn = base_seed + worker_id, loader.worker_init_fn

    def start(self) -> Failure | None:
        """Seed this process, publish its WorkerInfo, run worker_init_fn; its failure."""
        set_num_threads(1)  # one thread per worker (as PyTorch): the cores are shared
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
        manual_seed(self.seed)
        random.seed(self.seed)
        np.random.seed(self.seed % (1 << 32))
        data._worker_info[0] = data.WorkerInfo(
            self.worker_id, self.num_workers, self.seed, self.dataset
        )
        try:
            if self.init_fn is not None:
                self.init_fn(self.worker_id)
        except Exception as error:
            return Failure(error, self.worker_id)
        return None

    def read(self, index: Any) -> bytes | Failure:
        """One batch, packed and pickled (or the failure reading it)."""
        try:
            return pickle.dumps(pack(self.fetch(index)), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:
            return Failure(error, self.worker_id)


def worker_loop(job: Job, tasks: Any, results: Any) -> None:
    """A worker's life: read the batches `tasks` (a pipe) names until told to stop (None)."""
    results.cancel_join_thread()  # at exit, never wait on batches nobody will read
    parent = os.getppid()
    failure = job.start()
    while True:
        try:
            if not tasks.poll(POLL_SECONDS):
                if os.getppid() != parent:  # the main process is gone
                    return
                continue
            task = tasks.recv()
        except (KeyboardInterrupt, EOFError, OSError):
            return
        if task is None:
            return
        epoch, number, index = task
        answer = failure if failure is not None else job.read(index)
        failure = None
        results.put((epoch, number, answer))


def _context(choice: Any) -> Any:
    """The multiprocessing context to start workers with (a name, a context or None)."""
    if choice is None or isinstance(choice, str):
        return multiprocessing.get_context(choice)
    return choice


class WorkerIterator:
    """One pass over a DataLoader with worker processes (reset() starts another)."""

    def __init__(self, loader: data.DataLoader) -> None:
        if not loader.prefetch_factor:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"
            )
        # The loader's settings, not the loader: a persistent loader keeps its iterator,
        # and no cycle between the two may delay stopping the workers.
        self.sampler, self.prefetch = loader._index_sampler, loader.prefetch_factor
        self.persistent, self.timeout = loader.persistent_workers, loader.timeout
        self.closed, self.owner = False, os.getpid()
        context = _context(loader.multiprocessing_context)
        self.results = context.Queue()
        self.tasks: list[Any] = []
        self.workers: list[Any] = []
        base_seed = loader._draw_base_seed()
        for worker_id in range(loader.num_workers):
            # A pipe, not a Queue: a Queue's sending thread may already be finalized when
            # a loader collected as garbage stops its workers; a pipe sends at once.
            tasks, sender = context.Pipe(duplex=False)
            job = Job(loader, worker_id, base_seed)
            worker = context.Process(
                target=worker_loop,
                args=(job, tasks, self.results),
                name=f"minifw DataLoader worker {worker_id}",
                daemon=True,
            )
            worker.start()
            tasks.close()  # the worker's end
            self.tasks.append(sender)
            self.workers.append(worker)
        self.epoch = 0
        self.reset()

    def reset(self) -> None:
        """Start a new pass: a fresh walk of the sampler, `prefetch_factor` batches ahead."""
        self.epoch += 1
        self.indices = iter(self.sampler)
        self.sent = self.received = 0
        self.ready: dict[int, Any] = {}
        for _ in range(self.prefetch * len(self.workers)):
            self._send()

    def _send(self) -> None:
        """Hand the next batch's indices to the next worker (nothing once the pass ends)."""
        index = next(self.indices, _END)
        if index is _END:
            return
        self.tasks[self.sent % len(self.workers)].send((self.epoch, self.sent, index))
        self.sent += 1

    def __iter__(self) -> WorkerIterator:
        return self

    def __next__(self) -> Any:
        if self.closed or self.received == self.sent:
            if not self.persistent:
                self.shutdown()
            raise StopIteration
        while self.received not in self.ready:
            epoch, number, answer = self._wait()
            if epoch == self.epoch:  # a batch of a pass left early is dropped
                self.ready[number] = answer
        answer = self.ready.pop(self.received)
        self.received += 1
        if isinstance(answer, Failure):
            self.shutdown()
            answer.raise_again()
        self._send()
        return unpack(pickle.loads(answer))

    def _wait(self) -> tuple[int, int, Any]:
        """The next answer from any worker; raises if it takes over `timeout` or one died."""
        limit = self.timeout
        while True:
            try:
                return self.results.get(timeout=limit if limit > 0 else POLL_SECONDS)  # type: ignore[no-any-return]
            except queue.Empty:
                dead = [str(w.pid) for w in self.workers if not w.is_alive()]
                if not dead and limit <= 0:
                    continue
                self.shutdown()
                if dead:
                    raise RuntimeError(
                        f"DataLoader worker (pid(s) {', '.join(dead)}) exited unexpectedly"
                    ) from None
                raise RuntimeError(f"DataLoader timed out after {limit} seconds") from None

    def shutdown(self) -> None:
        """Stop the workers (those that do not stop in time are terminated); idempotent."""
        if self.closed or os.getpid() != self.owner:
            return
        self.closed = True
        for sender in self.tasks:
            with contextlib.suppress(OSError):  # that worker is gone already
                sender.send(None)
        for worker in self.workers:
            worker.join(timeout=JOIN_SECONDS)
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=JOIN_SECONDS)
        for sender in self.tasks:
            sender.close()
        self.results.cancel_join_thread()
        self.results.close()

    def __len__(self) -> int:
        return len(self.sampler)  # type: ignore[arg-type]

    def __del__(self) -> None:
        if sys is not None and not getattr(self, "closed", True):  # not at interpreter exit
            self.shutdown()
