"""Choosing backends and devices, and the error for mixing devices (given code)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.backends import cuda_available, get_backend, set_default_backend
from minifw.tensor_ops import SimpleOps, TensorBackend

# the backend registry, devices and the launcher's checks are given code: no task teaches them
pytestmark = pytest.mark.extra


def test_backends_are_built_once_and_named() -> None:
    simple = get_backend("simple")
    assert simple is get_backend("simple") and get_backend(simple) is simple
    assert (
        simple.ops is SimpleOps
        and simple.device == "cpu"
        and repr(simple) == "TensorBackend(simple)"
    )
    assert get_backend("fast").ops is mf.FastOps and get_backend("fast").device == "cpu"
    assert mf.SimpleOps is SimpleOps and mf.TensorBackend is TensorBackend
    with pytest.raises(ValueError, match="unknown backend 'gpu': expected one of simple, fast, "):
        get_backend("gpu")


def test_fast_is_the_default_cpu_backend_and_can_be_changed() -> None:
    assert mf.zeros(1).backend.name == "fast"
    set_default_backend("simple")
    try:
        assert mf.zeros(1).backend.name == "simple"
        assert mf.tensor([1.0]).backend.name == "simple"
        assert (mf.ones(2) + 1).backend.name == "simple"
    finally:
        set_default_backend("fast")
    assert mf.tensor([1.0], backend="simple").backend.name == "simple"
    with pytest.raises(ValueError, match="backend simple runs on cpu, not cuda"):
        mf.tensor([1.0], backend="simple", device="cuda")


def test_importing_minifw_does_not_touch_numba_cuda() -> None:
    code = "import sys, minifw; print('numba.cuda' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.skipif(cuda_available(), reason="checks the message shown when CUDA is absent")
def test_cuda_backend_explains_why_it_is_unavailable() -> None:
    assert not mf.cuda.is_available()
    with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
        mf.zeros(2).to("cuda")
    with pytest.raises(RuntimeError, match="needs an NVIDIA GPU"):
        mf.zeros(2, device="cuda")


class DeviceStorage:
    """Host memory posing as device memory: indexable, with a dtype and copy_to_host."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.dtype = array.dtype

    def __getitem__(self, key: Any) -> Any:
        item = self.array[key]
        return DeviceStorage(item) if isinstance(key, slice) else item

    def __setitem__(self, key: Any, value: Any) -> None:
        self.array[key] = value

    def __len__(self) -> int:
        return len(self.array)

    def copy_to_host(self) -> np.ndarray:
        return self.array.copy()


class SecondDeviceOps(SimpleOps):
    """SimpleOps on a pretend second device, so device mixing is testable without a GPU."""

    device = "cuda"

    @staticmethod
    def empty(size: int, dtype: Any) -> Any:
        return DeviceStorage(np.empty(size, dtype=dtype))

    @staticmethod
    def from_numpy(array: np.ndarray) -> Any:
        return DeviceStorage(np.array(array).reshape(-1))

    @staticmethod
    def to_numpy(storage: Any) -> np.ndarray:
        return storage.copy_to_host()  # type: ignore[no-any-return]


SECOND = TensorBackend(SecondDeviceOps, "second-device")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "mix",
    [
        lambda cpu, dev: cpu + dev,
        lambda cpu, dev: dev * cpu,
        lambda cpu, dev: cpu @ dev,
        lambda cpu, dev: mf.cat([cpu, dev]),
        lambda cpu, dev: mf.where(cpu > 0, dev, cpu),
        lambda cpu, dev: cpu.add_(dev),
        lambda cpu, dev: (cpu.requires_grad_() * 2).backward(dev),
    ],
)
def test_mixing_devices_names_both(mix: Any) -> None:
    cpu = mf.tensor([1.0, 2.0])
    on_device = mf.tensor([3.0, 4.0], backend=SECOND)
    assert on_device.device.type == "cuda" and on_device.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError) as info:
        mix(cpu, on_device)
    message = str(info.value)
    assert "Expected all tensors to be on the same device" in message
    assert "cpu" in message and "cuda" in message


def test_launcher_refuses_storage_of_another_device() -> None:
    cpu = get_backend("simple")
    on_device = SECOND.from_numpy(np.ones(2))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        cpu.map(0, on_device)
    with pytest.raises(RuntimeError, match="found at least two devices, cuda and cpu"):
        SECOND.zip(100, SECOND.from_numpy(np.ones(2)), cpu.from_numpy(np.ones(2)))


@pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1")
def test_mixing_a_real_cuda_tensor_with_a_cpu_tensor() -> None:
    gpu = mf.tensor([1.0, 2.0], device="cuda")
    assert gpu.device.type == "cuda" and gpu.is_cuda and gpu.cpu().tolist() == [1.0, 2.0]
    with pytest.raises(
        RuntimeError, match="same device, but found at least two devices, cpu and cuda"
    ):
        mf.tensor([1.0, 2.0]) + gpu
    moved = mf.tensor([1.0, 2.0], requires_grad=True)
    (moved.cuda() * 3.0).sum().backward()
    assert moved.grad is not None and moved.grad.device.type == "cpu"
    assert moved.grad.tolist() == [3.0, 3.0]
