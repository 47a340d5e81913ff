"""`mf.cuda`: whether the CUDA backend can run here, its GPU, and its streams and events.

With a GPU (or Numba's CUDA simulator) streams and events are Numba's (`numba.cuda`).
minifw uses one GPU and launches its kernels on the default stream: a `Stream` made
here orders copies and events the user records on it, and `with mf.cuda.stream(s)` only
changes what `current_stream()` answers. Without a GPU, `is_available()` is False,
`device_count()` is 0, and the rest raises what PyTorch's CPU build raises: an
AssertionError for the device queries, a RuntimeError for streams, events and entering
a device. numba.cuda is imported only once one of them is used with a GPU.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from minifw.backends import cuda_available
from minifw.core.device import device as as_device

NO_GPU = (
    "minifw's CUDA backend is not available: no GPU was found (Numba's simulator runs "
    "with NUMBA_ENABLE_CUDASIM=1)"
)
_current: list[Stream | None] = [None]  # the stream `with stream(s)` made current
_default: list[Stream] = []  # the default stream, wrapped once


def _numba_cuda() -> Any:
    """numba.cuda, after checking that a GPU is there (AssertionError, as PyTorch, if not)."""
    if not cuda_available():
        raise AssertionError(NO_GPU)
    return importlib.import_module("numba.cuda")


def is_available() -> bool:
    """True when a CUDA GPU (or Numba's CUDA simulator) is usable."""
    return cuda_available()


def device_count() -> int:
    """The number of GPUs minifw can use: 1 when CUDA is available (no multi-GPU), else 0."""
    return 1 if cuda_available() else 0


def current_device() -> int:
    """The index of the GPU in use: always 0 (minifw uses one GPU)."""
    _numba_cuda()
    return 0


def _check_device(device: Any) -> None:
    """Refuse any GPU but the first: minifw uses one GPU."""
    index = getattr(device, "index", device)
    if isinstance(index, str):
        index = int(index.rpartition(":")[2]) if ":" in index else None
    if index not in (None, 0, -1):
        raise RuntimeError(f"minifw uses one GPU (index 0): device {device!r} is not available")


def synchronize(device: Any = None) -> None:
    """Wait until every kernel and copy queued on the GPU has finished."""
    cuda = _numba_cuda()
    _check_device(device)
    cuda.synchronize()


def get_device_name(device: Any = None) -> str:
    """The GPU's name (`NVIDIA H100 80GB HBM3`)."""
    cuda = _numba_cuda()
    _check_device(device)
    name = getattr(cuda.current_context().device, "name", None) or "Numba's CUDA simulator"
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The GPU's compute capability (major, minor)."""
    cuda = _numba_cuda()
    _check_device(device)
    major, minor = cuda.current_context().device.compute_capability
    return int(major), int(minor)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: minifw has no bfloat16 dtype (PyTorch's CPU build also answers False)."""
    del including_emulation
    return False


class Stream:
    """A CUDA stream: Numba's `numba.cuda.stream()`, or its default stream.

    Raises:
        RuntimeError: without a GPU (PyTorch's CPU build raises it too).
    """

    def __init__(self, device: Any = None, priority: int = 0) -> None:
        if not cuda_available():
            raise RuntimeError(f"minifw.cuda.Stream requires CUDA support: {NO_GPU}")
        _check_device(device)
        self.priority, self.device = priority, as_device("cuda", 0)
        self.cuda_stream = _numba_cuda().stream()

    @classmethod
    def wrapping(cls, numba_stream: Any) -> Stream:
        """A Stream for one of Numba's streams (its default stream)."""
        made = cls.__new__(cls)
        made.priority, made.device, made.cuda_stream = 0, as_device("cuda", 0), numba_stream
        return made

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished."""
        self.cuda_stream.synchronize()

    def query(self) -> bool:
        """True if all work queued on this stream has finished."""
        probe = Event()
        probe.record(self)
        return probe.query()

    def record_event(self, event: Event | None = None) -> Event:
        """Record `event` (a new one if None) on this stream; returns it."""
        event = event if event is not None else Event()
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for `event`."""
        event.wait(self)

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on this stream wait for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.cuda_stream is self.cuda_stream

    def __hash__(self) -> int:
        return hash(id(self.cuda_stream))

    def __repr__(self) -> str:
        return f"<minifw.cuda.Stream device=cuda:0 cuda_stream={self.cuda_stream!r}>"


class Event:
    """A CUDA event: Numba's `numba.cuda.event()`, to order streams and time GPU work.

    Raises:
        RuntimeError: without a GPU (PyTorch's CPU build raises it too).
    """

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        if not cuda_available():
            raise RuntimeError(f"minifw.cuda.Event requires CUDA support: {NO_GPU}")
        if interprocess:
            raise NotImplementedError(
                "interprocess events are out of scope in minifw (one process, one GPU)"
            )
        self.enable_timing, self.blocking = enable_timing, blocking
        cuda = _numba_cuda()
        try:
            self.cuda_event = cuda.event(timing=enable_timing)
        except TypeError:  # Numba's simulator: events without options (and no timing)
            self.cuda_event = cuda.event()

    def record(self, stream: Stream | None = None) -> None:
        """Mark the point reached by `stream` (the current stream if None)."""
        chosen = stream if stream is not None else current_stream()
        self.cuda_event.record(chosen.cuda_stream)

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on `stream` (the current stream if None) wait for this event."""
        chosen = stream if stream is not None else current_stream()
        self.cuda_event.wait(chosen.cuda_stream)

    def query(self) -> bool:
        """True once the work before this event's record has finished."""
        query = getattr(self.cuda_event, "query", None)
        return True if query is None else bool(query())  # the simulator runs synchronously

    def synchronize(self) -> None:
        """Wait until the work before this event's record has finished."""
        self.cuda_event.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event's record to `end_event`'s (both enable_timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time needs both events created with enable_timing=True")
        return float(self.cuda_event.elapsed_time(end_event.cuda_event))


def default_stream(device: Any = None) -> Stream:
    """The GPU's default stream (where minifw's kernels run)."""
    cuda = _numba_cuda()
    _check_device(device)
    if not _default:  # Numba's simulator has no default stream: a stream of its own
        _default.append(Stream.wrapping(getattr(cuda, "default_stream", cuda.stream)()))
    return _default[0]


def current_stream(device: Any = None) -> Stream:
    """The stream made current by `with mf.cuda.stream(s)`, else the default stream."""
    _numba_cuda()
    _check_device(device)
    return _current[0] if _current[0] is not None else default_stream()


@contextmanager
def stream(chosen: Stream | None) -> Iterator[None]:
    """Within the block, `current_stream()` is `chosen` (None: nothing changes)."""
    if chosen is None:
        yield
        return
    before, _current[0] = _current[0], chosen
    try:
        yield
    finally:
        _current[0] = before


class device:  # noqa: N801 - PyTorch's name torch.cuda.device
    """A context manager that selects a GPU: minifw's one GPU (index 0), or nothing (-1)."""

    def __init__(self, device: Any) -> None:
        index = getattr(device, "index", device)
        self.idx = -1 if index is None else int(index)

    def __enter__(self) -> None:
        if self.idx == -1:
            return
        if not cuda_available():
            raise RuntimeError(f"minifw.cuda.device({self.idx}) needs CUDA: {NO_GPU}")
        _check_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        return None


def manual_seed(seed: int) -> None:
    """Accepted for PyTorch programs; minifw draws every random number on the host."""
    del seed


def manual_seed_all(seed: int) -> None:
    """Accepted for PyTorch programs; minifw draws every random number on the host."""
    del seed
