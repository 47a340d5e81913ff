"""Memory safety and sizes.

Shapes whose cells overflow int64, negative strides, non-integer sizes, writes into
read-only numpy memory and max/argmax over tensors with an empty other dim. Reproducers
that crashed or hung the process run in a subprocess, with a timeout.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import minifw as mf
from minifw.core import operators as ops
from minifw.core.tensor_data import TensorData

pytestmark = pytest.mark.extra

BIG = 2**40


def run_isolated(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh Python (a segfault or hang stays there)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@pytest.mark.parametrize(
    "make",
    [
        lambda: mf.ones(1, 1, 1).expand(2**24, 1, BIG),
        lambda: mf.ones(1).expand(2**62, 4),
        lambda: mf.ones(1).expand(2**62, 2),
        lambda: mf.ones(0).view(BIG, BIG, 0),
        lambda: mf.ones(0).reshape(BIG, BIG, 0),
        lambda: mf.zeros(BIG, BIG, 0),
        lambda: mf.ones(2**62, 4),
        lambda: mf.full((2**62, 4), 1.0),
        lambda: mf.empty(2**62, 4),
        lambda: mf.rand(2**62, 4),
        lambda: mf.randn(2**62, 4),
        lambda: TensorData(np.zeros(1), (2**62, 4), (0, 0)),
    ],
)
def test_shapes_whose_cells_overflow_int64_are_refused(make: Callable[[], Any]) -> None:
    with pytest.raises(RuntimeError, match=r"overflow.*(4611686018427387904|1099511627776)"):
        make()


def test_pytorch_refuses_the_same_shapes() -> None:
    with pytest.raises(RuntimeError, match="overflow"):
        torch.ones(1).expand(2**62, 4)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(BIG, BIG, 0)


def test_the_largest_expand_that_fits_is_accepted() -> None:
    assert mf.ones(1).expand(2**63 - 1).shape == (2**63 - 1,)


def test_the_matmul_and_sum_reproducers_fail_cleanly() -> None:
    result = run_isolated(
        """
        import minifw as mf
        for backend in ("simple", "fast"):
            mf.set_default_backend(backend)
            for make in (
                lambda: mf.ones(1, 1, 1).expand(2**24, 1, 2**40)
                @ mf.ones(1, 1, 1).expand(2**24, 2**40, 1),
                lambda: mf.ones(1).expand(2**62, 4).sum(0),
            ):
                try:
                    make()
                except RuntimeError as error:
                    print("refused:", error)
                else:
                    print("accepted")
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("refused: numel: integer multiplication overflow") == 4


def test_matmul_refuses_operands_whose_packed_copy_overflows(backend: Any) -> None:
    """A (1, 16, 2**56) view broadcast over a batch of 16 packs 2**64 cells (2**67 bytes)."""
    a = backend.full((1, 1, 1), 1.0, np.float64).expand((1, 16, 2**56))
    b = backend.full((1, 1, 1), 1.0, np.float64).expand((16, 2**56, 1))
    with pytest.raises(RuntimeError, match=r"overflowed with sizes=\[16, 16, 72057594037927936\]"):
        backend.matmul(a, b)


def test_the_launcher_refuses_storage_beyond_int64_bytes(backend: Any) -> None:
    with pytest.raises(
        RuntimeError, match=r"Storage size calculation overflowed.*2305843009213693952"
    ):
        backend.empty((2**61, 2), np.float64)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        backend.full((2**60, 2), 0.0, np.float64)


def test_negative_strides_are_refused_at_construction() -> None:
    with pytest.raises(RuntimeError, match=r"Negative strides are not supported.*\[-1\]"):
        TensorData(np.zeros(6), (3,), (-1,), offset=2)
    with pytest.raises(RuntimeError, match=r"Negative strides.*\[2, -1\]"):
        TensorData(np.zeros(6), (2, 3), (2, -1), offset=2)
    with pytest.raises(RuntimeError, match="Negative strides"):
        torch.ones(6).as_strided((3,), (-1,), 2)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("zeros", lambda lib: lib.zeros(2.5)),
        ("ones", lambda lib: lib.ones((2.5,))),
        ("empty", lambda lib: lib.empty(2, 2.5)),
        ("full", lambda lib: lib.full((2.5,), 1.0)),
        ("rand", lambda lib: lib.rand(2.5)),
        ("randn", lambda lib: lib.randn([2.5])),
        ("zeros(bool)", lambda lib: lib.zeros(True)),
        ("view", lambda lib: lib.ones(3).view(2.5)),
        ("expand", lambda lib: lib.ones(1).expand(2.5)),
        ("reshape", lambda lib: lib.ones(3).reshape(2.5)),
    ],
)
def test_non_integer_sizes_raise_type_error(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError, match="float|bool"):
        call(mf)


def test_integer_like_sizes_are_accepted() -> None:
    assert mf.zeros(np.int64(2), mf.tensor(3)).shape == (2, 3)
    assert mf.zeros((2, 3)).shape == (2, 3)


def _read_only_arrays() -> list[np.ndarray]:
    frozen = np.arange(6.0).reshape(2, 3)
    frozen.flags.writeable = False
    return [frozen, np.broadcast_to(np.arange(3.0), (2, 3))]


@pytest.mark.parametrize("which", [0, 1], ids=["read-only", "broadcast_to"])
@pytest.mark.parametrize(
    "write",
    [
        lambda t: t.add_(1),
        lambda t: t.mul_(2.0),
        lambda t: t.sub_(1, alpha=2.0),
        lambda t: t.zero_(),
        lambda t: t.fill_(3.0),
        lambda t: t.copy_(mf.ones(2, 3)),
        lambda t: t.__iadd__(1.0),
        lambda t: t.__setitem__(0, 1.0),
    ],
)
def test_writing_into_read_only_numpy_memory_raises(
    which: int, write: Callable[[mf.Tensor], Any]
) -> None:
    array = _read_only_arrays()[which]
    before = array.copy()
    t = mf.from_numpy(array)
    with pytest.raises(RuntimeError, match="read-only"):
        write(t)
    np.testing.assert_array_equal(array, before)
    assert (t + 1).tolist() == (before + 1).tolist()  # reading it still works


def test_the_launcher_refuses_to_write_into_read_only_memory(backend: Any) -> None:
    if backend.device != "cpu":
        pytest.skip("read-only memory is a numpy array: CPU backends only")
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    out = TensorData(frozen, (3,))
    with pytest.raises(RuntimeError, match="read-only memory"):
        backend.zip(ops.ADD, out, out, out=out)
    with pytest.raises(RuntimeError, match="read-only memory"):
        backend.map(ops.NEG, backend.full((3,), 1.0, np.float64), out)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_along_a_dim_of_a_tensor_with_an_empty_other_dim(
    backend: Any, name: str
) -> None:
    x, want = mf.zeros(0, 3, backend=backend), torch.zeros(0, 3)
    got, expect = getattr(x, name)(1), getattr(want, name)(1)
    assert got.values.shape == tuple(expect.values.shape) == (0,)
    assert got.indices.shape == (0,) and got.indices.dtype is mf.int64
    arg = getattr(x, "arg" + name)(1, keepdim=True)
    assert arg.shape == tuple(getattr(want, "arg" + name)(1, keepdim=True).shape) == (0, 1)
    for call in (lambda t: getattr(t, name)(1), lambda t: getattr(t, "arg" + name)(1)):
        with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
            call(torch.zeros(3, 0))
        with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
            call(mf.zeros(3, 0, backend=backend))
