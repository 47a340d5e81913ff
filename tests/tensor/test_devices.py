"""`mf.device`, `mf.Size` and moving tensors and modules between devices.

Devices and sizes are compared with torch's own objects where the behaviour is
PyTorch's (equality, hashing, printing, errors); minifw prints `minifw.Size`.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.tensor_ops import TensorBackend
from tests.parity import check_raises_like_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra

DEVICE_ARGS = [("cpu",), ("cuda",), ("cuda:0",), ("cuda", 0), ("cuda:1",), ("cuda", 2), ("cpu", 0)]


@pytest.mark.parametrize("args", DEVICE_ARGS)
def test_device_like_torch(args: tuple[Any, ...]) -> None:
    """type, index, str and repr as torch.device's."""
    mine, theirs = mf.device(*args), torch.device(*args)
    assert (mine.type, mine.index, str(mine), repr(mine)) == (
        theirs.type,
        theirs.index,
        str(theirs),
        repr(theirs),
    )
    assert mf.device(mine) == mine and pickle.loads(pickle.dumps(mine)) == mine


@pytest.mark.parametrize("a", DEVICE_ARGS)
@pytest.mark.parametrize("b", DEVICE_ARGS)
def test_device_equality_and_hash_like_torch(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    """Devices are equal exactly when torch's are; equal devices hash alike."""
    mine = mf.device(*a) == mf.device(*b)
    assert mine == (torch.device(*a) == torch.device(*b))
    assert (mf.device(*a) != mf.device(*b)) is not mine
    if mine:
        assert hash(mf.device(*a)) == hash(mf.device(*b))
    assert (mf.device(*a) == str(mf.device(*a))) == (torch.device(*a) == str(torch.device(*a)))


@pytest.mark.parametrize(
    "args", [("gpu",), ("cuda:x",), ("cuda:-1",), ("cpu", -1), ("cuda:0", 1), ("cuda", "x")]
)
def test_bad_devices_raise_like_torch(args: tuple[Any, ...]) -> None:
    """PyTorch's exception class, a message naming the bad part."""
    check_raises_like_torch(lambda lib: lib.device(*args), [], match=".")


def test_size_like_torch() -> None:
    """mf.Size is a tuple: equality, hashing, slicing and numel as torch.Size."""
    shape = mf.zeros(2, 3, 4).shape
    theirs = torch.zeros(2, 3, 4).shape
    assert isinstance(shape, mf.Size) and isinstance(shape, tuple)
    assert shape == theirs == (2, 3, 4) and hash(shape) == hash((2, 3, 4))
    assert shape.numel() == theirs.numel() == 24
    assert isinstance(shape[1:], mf.Size) and shape[1:] == (3, 4) and shape[-1] == 4
    assert isinstance(shape + (5,), mf.Size) and shape + (5,) == theirs + (5,)
    assert repr(shape) == str(shape) == "minifw.Size([2, 3, 4])"
    assert repr(mf.Size()) == "minifw.Size([])" and mf.Size([np.int64(2)]) == (2,)
    assert copy.deepcopy(shape) == shape and pickle.loads(pickle.dumps(shape)) == shape
    assert mf.zeros(2, 3).size() == (2, 3) and isinstance(mf.zeros(2).size(), mf.Size)
    assert mf.zeros(2, 3).size(-1) == 3 and type(mf.zeros(2, 3).size(0)) is int


def test_size_formats_as_its_str_like_torch() -> None:
    """f-strings and format() print a Size as str() does; a format spec is a TypeError."""
    mine, theirs = mf.Size([3, 4]), torch.Size([3, 4])
    assert f"{theirs}" == format(theirs) == str(theirs) == "torch.Size([3, 4])"
    assert f"{mine}" == format(mine) == str(mine) == "minifw.Size([3, 4])"
    assert f"{mf.zeros(2, 1).shape}" == "minifw.Size([2, 1])"
    assert f"{mf.Size()}" == "minifw.Size([])"
    check_raises_like_torch(lambda lib: format(lib.Size([3]), ">9"), [], match="format string")


def test_size_rejects_non_ints() -> None:
    """torch.Size's TypeError for a float size."""
    check_raises_like_torch(lambda lib: lib.Size([2.0]), [], match="item 0 is 'float'")


def test_tensor_device_object(backend: TensorBackend) -> None:
    """t.device is a device; to/cpu/cuda and creation accept device objects and strings."""
    x = mf.ones(2, backend=backend)
    kind = backend.device
    expected = mf.device("cpu") if kind == "cpu" else mf.device("cuda", 0)
    assert x.device == expected and str(x.device) in ("cpu", "cuda:0")
    assert x.to(x.device) is x and x.to(mf.device(kind)) is x and x.to(kind) is x
    assert x.to(mf.ones(1, backend=backend)) is x
    assert x.cpu().device == mf.device("cpu")
    made = mf.zeros(2, device=mf.device(kind))
    assert made.device == x.device and mf.tensor([1.0], device=x.device).device == x.device
    assert (x.is_cuda) is (kind == "cuda")


def test_module_to_device() -> None:
    """model.to(device) with a device object, as PyTorch tutorials write it."""
    device = mf.device("cuda" if mf.cuda.is_available() else "cpu")
    model = mf.nn.Linear(2, 3)
    assert model.to(device) is model
    assert all(p.device.type == device.type for p in model.parameters())
    assert model.to(mf.device("cpu"), mf.float32).weight.dtype is mf.float32


def test_cuda_module_functions() -> None:
    """mf.cuda.device_count() follows is_available(); the seeding calls are accepted."""
    assert mf.cuda.device_count() == (1 if mf.cuda.is_available() else 0)
    if mf.cuda.is_available():
        assert mf.cuda.current_device() == 0
    mf.cuda.manual_seed(0)
    mf.cuda.manual_seed_all(0)
    assert mf.cuda.is_bf16_supported() is False  # no bfloat16 dtype (torch's CPU build: False)


NO_GPU_CALLS = {
    "current_device": lambda lib: lib.cuda.current_device(),
    "synchronize": lambda lib: lib.cuda.synchronize(),
    "get_device_name": lambda lib: lib.cuda.get_device_name(0),
    "get_device_capability": lambda lib: lib.cuda.get_device_capability(),
    "current_stream": lambda lib: lib.cuda.current_stream(),
    "default_stream": lambda lib: lib.cuda.default_stream(),
    "Stream": lambda lib: lib.cuda.Stream(),
    "Event": lambda lib: lib.cuda.Event(enable_timing=True),
    "enter device(0)": lambda lib: lib.cuda.device(0).__enter__(),
    "pin_memory": lambda lib: lib.zeros(3).pin_memory(),
}


@pytest.mark.skipif(mf.cuda.is_available(), reason="the CPU-only answers")
@pytest.mark.parametrize("call", list(NO_GPU_CALLS), ids=list(NO_GPU_CALLS))
def test_cuda_without_a_gpu_raises_like_torchs_cpu_build(call: str) -> None:
    """Without a GPU: PyTorch's CPU build's exception class, a message naming the cause."""
    if torch.cuda.is_available():
        pytest.skip("the oracle must be a CPU-only torch")
    check_raises_like_torch(NO_GPU_CALLS[call], [], match="(?i)CUDA|GPU|accelerator")


def test_cuda_no_ops_without_a_gpu_like_torch() -> None:
    """What PyTorch's CPU build accepts: stream(None), device(-1), is_pinned."""
    for lib in (torch, mf):
        with lib.cuda.stream(None):
            pass
        with lib.cuda.device(-1):
            pass
        assert lib.zeros(2).is_pinned() is False
        assert isinstance(lib.cuda.device(0), lib.cuda.device)  # entering it is what fails


def test_cpu_namespace_like_torch() -> None:
    """mf.cpu: streams, events and synchronize are no-ops; counts and names as torch.cpu."""
    for name in ("is_available", "device_count", "current_device"):
        assert getattr(mf.cpu, name)() == getattr(torch.cpu, name)()
    assert mf.cpu.synchronize() is None and mf.cpu.synchronize("cpu") is None
    stream = mf.cpu.Stream()
    assert stream.wait_stream(stream) is None and stream.wait_event(mf.cpu.Event()) is None
    assert isinstance(stream.record_event(), mf.cpu.Event) and mf.cpu.Event().query()
    assert isinstance(mf.cpu.current_stream(), mf.cpu.Stream)
    before = mf.cpu.current_stream()
    with mf.cpu.stream(stream):
        assert mf.cpu.current_stream() is stream
    assert mf.cpu.current_stream() is before
    assert sorted(set(dir(torch.cpu.Stream())) - set(dir(mf.cpu.Stream()))) == []


@pytest.mark.skipif(not mf.cuda.is_available(), reason="needs CUDA or NUMBA_ENABLE_CUDASIM=1")
def test_cuda_streams_and_events_on_a_gpu() -> None:
    """Streams and events are Numba's; events order and time the work."""
    numba_cuda = pytest.importorskip("numba.cuda")
    stream = mf.cuda.Stream()
    assert isinstance(stream.cuda_stream, type(numba_cuda.stream()))
    start, end = mf.cuda.Event(enable_timing=True), mf.cuda.Event(enable_timing=True)
    start.record(stream)
    with mf.cuda.stream(stream):
        assert mf.cuda.current_stream() == stream
        x = (mf.ones(64, device="cuda") * 2).sum()
        end.record()
    end.synchronize()
    assert x.item() == 128.0 and end.query() and start.elapsed_time(end) >= 0.0
    assert mf.cuda.current_stream() == mf.cuda.default_stream()
    other = mf.cuda.Stream()
    other.wait_stream(stream)
    other.synchronize()
    mf.cuda.synchronize()
    assert isinstance(mf.cuda.get_device_name(), str) and mf.cuda.get_device_name()
    assert len(mf.cuda.get_device_capability()) == 2
    assert mf.zeros(2).pin_memory().tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="one GPU"):
        mf.cuda.synchronize(1)


@pytest.mark.skipif(not mf.cuda.is_available(), reason="needs CUDA or NUMBA_ENABLE_CUDASIM=1")
def test_move_to_cuda_and_back() -> None:
    """cuda(), to(device) and cpu() move values and keep gradients flowing."""
    x = mf.tensor([1.0, 2.0], requires_grad=True)
    on_gpu = x.to(mf.device("cuda:0"))
    assert on_gpu.device == mf.device("cuda", 0) and on_gpu.is_cuda
    assert x.cuda(0).device == on_gpu.device and "device='cuda:0'" in repr(on_gpu)
    (on_gpu * 3).sum().backward()
    assert x.grad is not None and x.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="must be cuda device"):
        x.cuda("cpu")


def test_assigning_data_takes_its_dtype_and_device(backend: TensorBackend) -> None:
    param = mf.nn.Parameter(mf.zeros(3))
    param.data = mf.tensor([1.0, 2.0], dtype=mf.float32, backend=backend)
    assert param.dtype == mf.float32 and param.shape == (2,)
    assert param.device.type == backend.device
    assert param.requires_grad
    doubled = param * 2.0  # runs on the new device, with no mix of devices
    np.testing.assert_array_equal(doubled.detach().cpu().numpy(), [2.0, 4.0])
