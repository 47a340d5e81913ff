"""Numbers as PyTorch computes them (NaN, -inf, -0., integer powers).

Each test runs on every backend the `backend` fixture offers. The task tests compare with
numpy's IEEE values, which are PyTorch's (no PyTorch needed); the `extra` tests compare
with PyTorch itself and skip, saying why, where it is not installed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import minifw as mf
import minifw.nn.functional as F  # noqa: N812 - PyTorch's name
from minifw.core import scalar_math as ops

try:
    import torch
except ImportError:  # the extra tests that need it skip one by one
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch, this test's oracle, is missing")

NAN, INF = math.nan, math.inf
BASES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 10.0, -10.0, INF, -INF, NAN, 3.0, -8.0]
EXPONENTS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, 2.5, -2.5, 1 / 3, INF,
             -INF, NAN, 400.0, 401.0, -401.0, 1e300]  # fmt: skip


def pytorch_pow(x: Any, y: float) -> Any:
    """x ** y as PyTorch computes it: C's pow, but sqrt for y = 0.5 and 1 / sqrt for -0.5."""
    with np.errstate(all="ignore"):
        x = np.asarray(x, dtype=np.float64)
        if y == 0.5:
            return np.sqrt(x)
        if y == -0.5:
            return 1.0 / np.sqrt(x)
        return x ** np.float64(y)


def same_number(got: float, want: float) -> bool:
    """Equal as IEEE values: nan matches nan, zeros and infinities keep their sign."""
    if math.isnan(want):
        return math.isnan(got)
    if want == 0.0 or math.isinf(want):
        return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)
    return math.isclose(got, want, rel_tol=1e-15)


@pytest.mark.task0_1
def test_scalar_max_and_min_propagate_nan() -> None:
    for x in [NAN, 1.0, -INF, INF]:
        for y in [NAN, 1.0, -INF, INF]:
            want_max = float(np.maximum(x, y))  # nan wins, as in torch.maximum
            want_min = float(np.minimum(x, y))
            assert same_number(ops.max(x, y), want_max), (x, y)
            assert same_number(ops.min(x, y), want_min), (x, y)


@pytest.mark.task0_1
def test_scalar_abs_of_negative_zero_is_positive_zero() -> None:
    for x in [-0.0, 0.0, -2.5, 2.5, NAN, -INF]:
        assert same_number(ops.abs(x), float(np.abs(x))), x


@pytest.mark.task0_1
def test_scalar_pow_gives_pytorchs_special_values() -> None:
    for x in BASES:
        for y in EXPONENTS:
            want = float(pytorch_pow(x, y))
            assert same_number(ops.pow(x, y), want), (x, y, ops.pow(x, y), want)


@pytest.mark.task2_3
@pytest.mark.parametrize("values", [[NAN, 1.0, 2.0], [1.0, 2.0, NAN, 3.0, NAN]])
def test_max_min_and_their_indices_propagate_nan(backend: Any, values: list[float]) -> None:
    x = mf.tensor(values, backend=backend)
    first_nan = next(i for i, v in enumerate(values) if math.isnan(v))
    assert math.isnan(x.max().item()) and math.isnan(x.min().item())
    assert x.argmax().item() == x.argmin().item() == first_nan
    for got in (x.max(0), x.min(0)):
        assert math.isnan(got.values.item())
        assert got.indices.item() == first_nan


@pytest.mark.task2_3
@pytest.mark.parametrize("dim", [0, 1])
def test_max_along_a_dim_propagates_nan_in_long_rows(backend: Any, dim: int) -> None:
    values = np.random.default_rng(0).standard_normal((6, 37))
    values[1, 5] = values[1, 30] = values[4, 0] = values[2, 36] = NAN
    x = mf.tensor(values, backend=backend)
    for name in ("max", "min"):
        got = getattr(x, name)(dim)
        # numpy, like torch, lets a nan win and points at the first nan of a slice
        want = getattr(np, name)(values, axis=dim)
        index = getattr(np, "arg" + name)(values, axis=dim)
        np.testing.assert_array_equal(got.values.numpy(), want)
        np.testing.assert_array_equal(got.indices.numpy(), index)
        np.testing.assert_array_equal(getattr(x, "arg" + name)(dim).numpy(), index)


@pytest.mark.task2_4
def test_the_gradient_of_a_nan_max_goes_to_the_nans(backend: Any) -> None:
    values = [1.0, NAN, 2.0, NAN]
    x = mf.tensor(values, backend=backend, requires_grad=True)
    x.max().backward()  # the nans share the gradient, as in PyTorch
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.0, 0.5])
    x.grad = None
    x.max(0).values.backward()  # all of it to the index of the max: the first nan
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0, 0.0])


@pytest.mark.task4_3
def test_max_pool2d_propagates_nan(backend: Any) -> None:
    values = np.arange(16.0).reshape(1, 1, 4, 4)
    values[0, 0, 1, 0] = NAN
    got = F.max_pool2d(mf.tensor(values, backend=backend), 2)
    np.testing.assert_array_equal(got.numpy(), [[[[NAN, 7.0], [13.0, 15.0]]]])


@pytest.mark.extra
def test_the_fused_kernels_scalar_max_and_min_propagate_nan() -> None:
    from minifw.compiler import fusion

    assert math.isnan(fusion.SCALAR.max(NAN, 1.0)) and math.isnan(fusion.SCALAR.max(1.0, NAN))
    assert math.isnan(fusion.SCALAR.min(NAN, 1.0)) and math.isnan(fusion.SCALAR.min(1.0, NAN))
    assert fusion.SCALAR.abs(-0.0) == 0.0 and math.copysign(1.0, fusion.SCALAR.abs(-0.0)) > 0


@pytest.mark.extra  # losses are given code
@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_with_masked_logits(backend: Any, reduction: str, weighted: bool) -> None:
    logits = [[-INF, 0.0], [0.0, -INF], [1.0, 2.0]]
    target = [1, 0, 1]
    weight = [1.0, 3.0] if weighted else None
    x = mf.tensor(logits, backend=backend, requires_grad=True)
    w = mf.tensor(weight, backend=backend) if weight else None
    loss = F.cross_entropy(x, mf.tensor(target, backend=backend), w, reduction=reduction)
    tx = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(weight, dtype=torch.float64) if weight else None
    want = torch.nn.functional.cross_entropy(tx, torch.tensor(target), tw, reduction=reduction)
    np.testing.assert_allclose(loss.detach().numpy(), want.detach().numpy(), atol=1e-12)
    loss.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)


@pytest.mark.extra
@needs_torch
@pytest.mark.parametrize(
    ("probs", "target", "name"),
    [([NAN, 0.5], [1.0, 0.0], "input"), ([1.5], [1.0], "input"), ([-0.5], [1.0], "input"),
     ([0.5], [1.5], "target"), ([0.5], [NAN], "target")],
)  # fmt: skip
def test_binary_cross_entropy_refuses_values_outside_0_1(
    probs: list[float], target: list[float], name: str
) -> None:
    message = f"all elements of {name} should be between 0 and 1"
    with pytest.raises(RuntimeError, match=message):
        torch.nn.functional.binary_cross_entropy(torch.tensor(probs), torch.tensor(target))
    with pytest.raises(RuntimeError, match=message):
        F.binary_cross_entropy(mf.tensor(probs), mf.tensor(target))


@pytest.mark.extra
@needs_torch
@pytest.mark.parametrize(("base", "exponent"), [(3, 39), (3, 41), (-2, 63), (0, 0), (7, 0),
                                                (-3, 5), (2**31, 2), (5, 1)])  # fmt: skip
def test_integer_powers_are_exact(backend: Any, base: int, exponent: int) -> None:
    got = mf.tensor([base, base + 1], backend=backend) ** exponent
    want = torch.tensor([base, base + 1]) ** exponent
    assert got.dtype is mf.int64
    assert got.tolist() == want.tolist()


@pytest.mark.extra
@needs_torch
def test_integer_powers_refuse_negative_exponents_as_pytorch(backend: Any) -> None:
    for base in (3, 1):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            torch.tensor(base) ** -1
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            mf.tensor(base, backend=backend) ** -1
    assert (mf.tensor([3], backend=backend) ** -1.0).tolist() == pytest.approx([1 / 3])


@pytest.mark.task2_3
def test_float_powers_give_ieee_values(backend: Any) -> None:
    x = mf.tensor(BASES, backend=backend)
    for y in EXPONENTS:
        got = (x**y).numpy()
        want = pytorch_pow(BASES, y)
        for b, g, w in zip(BASES, got, want, strict=True):
            assert same_number(float(g), float(w)), (b, y, g, w)


@pytest.mark.task2_3
def test_abs_of_negative_zero_is_positive_zero(backend: Any) -> None:
    got = mf.tensor([-0.0, 0.0, -1.5], backend=backend).abs().numpy()
    assert got.tolist() == [0.0, 0.0, 1.5]
    assert np.signbit(got).tolist() == [False, False, False]
