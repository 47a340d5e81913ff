"""nn.init and nn.utils: statistical checks of the initialisers (bounds, means,
spreads, orthogonality) against PyTorch's formulas, and gradient clipping against PyTorch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import minifw as mf
from minifw.nn import init

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.extra

GAINS = [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
    ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None),
]  # fmt: skip


@pytest.mark.parametrize(("nonlinearity", "param"), GAINS)
def test_calculate_gain_matches_torch(nonlinearity: str, param: float | None) -> None:
    expected = torch.nn.init.calculate_gain(nonlinearity, param)
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (4, 2, 3), (6, 2, 3, 3)])
def test_fans_match_torch(shape: tuple[int, ...]) -> None:
    expected = torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    assert init._calculate_fan_in_and_fan_out(mf.zeros(*shape)) == expected


def _fill(name: str, shape: tuple[int, ...], backend: Any, **kwargs: Any) -> np.ndarray:
    """Values written by init.`name` into a parameter (checked: same object, no history)."""
    param = mf.nn.Parameter(mf.zeros(*shape, backend=backend))
    out = getattr(init, name)(param, **kwargs)
    assert out is param and param.is_leaf and param.requires_grad
    return param.detach().numpy()


BOUNDED = [
    ("uniform_", {"a": -0.5, "b": 2.0}, -0.5, 2.0),
    ("xavier_uniform_", {"gain": 2.0}, None, None),
    ("kaiming_uniform_", {"a": math.sqrt(5)}, None, None),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}, None, None),
    ("trunc_normal_", {"mean": 0.5, "std": 2.0, "a": -1.0, "b": 1.5}, -1.0, 1.5),
]


def _torch_bound(name: str, shape: tuple[int, ...], kwargs: dict[str, Any]) -> float:
    """The largest |value| torch's own initialiser draws for these settings (from its math)."""
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    if name == "xavier_uniform_":
        return kwargs.get("gain", 1.0) * math.sqrt(6.0 / (fan_in + fan_out))
    fan = fan_out if kwargs.get("mode") == "fan_out" else fan_in
    gain = torch.nn.init.calculate_gain(
        kwargs.get("nonlinearity", "leaky_relu"), kwargs.get("a", 0)
    )
    return gain * math.sqrt(3.0 / fan)


@pytest.mark.parametrize(("name", "kwargs", "low", "high"), BOUNDED)
def test_bounded_initialisers_fill_their_range(
    backend: Any, name: str, kwargs: dict[str, Any], low: float | None, high: float | None
) -> None:
    shape = (64, 32, 3)
    mf.manual_seed(0)
    values = _fill(name, shape, backend, **kwargs)
    if low is None or high is None:
        high = _torch_bound(name, shape, kwargs)
        low = -high
    assert values.min() >= low and values.max() <= high
    width = high - low
    assert values.min() < low + 0.02 * width and values.max() > high - 0.02 * width
    if name != "trunc_normal_":  # a uniform draw: mean in the middle, spread width / sqrt(12)
        assert abs(values.mean() - (low + high) / 2) < 0.02 * width
        assert values.std() == pytest.approx(width / math.sqrt(12), rel=0.03)


NORMAL = [
    ("normal_", {"mean": 1.0, "std": 0.5}, 1.0, 0.5),
    ("xavier_normal_", {"gain": 1.5}, 0.0, 1.5 * math.sqrt(2.0 / (32 * 3 + 64 * 3))),
    ("kaiming_normal_", {"nonlinearity": "relu"}, 0.0, math.sqrt(2.0) / math.sqrt(32 * 3)),
    ("kaiming_normal_", {"mode": "fan_out", "a": 0.1}, 0.0,
     math.sqrt(2.0 / 1.01) / math.sqrt(64 * 3)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "kwargs", "mean", "std"), NORMAL)
def test_normal_initialisers_have_their_mean_and_spread(
    backend: Any, name: str, kwargs: dict[str, Any], mean: float, std: float
) -> None:
    mf.manual_seed(1)
    values = _fill(name, (64, 32, 3), backend, **kwargs)
    assert abs(values.mean() - mean) < 0.05 * std + 1e-12
    assert values.std() == pytest.approx(std, rel=0.03)


def test_constant_fills_and_identity(backend: Any) -> None:
    assert np.all(_fill("constant_", (2, 3), backend, val=0.25) == 0.25)
    assert np.all(_fill("ones_", (3,), backend) == 1.0)
    assert np.all(_fill("zeros_", (3,), backend) == 0.0)
    assert np.array_equal(_fill("eye_", (2, 3), backend), np.eye(2, 3))
    weight = _fill("dirac_", (2, 2, 3), backend)
    assert np.array_equal(weight, torch.nn.init.dirac_(torch.empty(2, 2, 3)).numpy())


@pytest.mark.parametrize("shape", [(6, 4), (3, 8), (4, 2, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(backend: Any, shape: tuple[int, ...]) -> None:
    mf.manual_seed(2)
    q = _fill("orthogonal_", shape, backend, gain=2.0).reshape(shape[0], -1)
    small = min(q.shape)
    gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-10)


def test_initialisers_are_reproducible_under_manual_seed() -> None:
    mf.manual_seed(7)
    first = _fill("kaiming_uniform_", (4, 4), None)
    mf.manual_seed(7)
    assert np.array_equal(first, _fill("kaiming_uniform_", (4, 4), None))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [(lambda lib: lib.nn.init.xavier_uniform_(lib.zeros(3)), ValueError, "fewer than 2"),
     (lambda lib: lib.nn.init.kaiming_normal_(lib.zeros(1, 3), mode="fan_mid"), ValueError,
      "fan_mid"),
     (lambda lib: lib.nn.init.calculate_gain("swish"), ValueError, "Unsupported nonlinearity"),
     (lambda lib: lib.nn.init.eye_(lib.zeros(3)), ValueError, "2 dimensions"),
     (lambda lib: lib.nn.init.orthogonal_(lib.zeros(3)), ValueError, "2 or more"),
     (lambda lib: lib.nn.init.sparse_(lib.zeros(3, 3), 0.5), NotImplementedError, "sparse")],
)  # fmt: skip
def test_bad_arguments_raise_like_torch(call: Any, error: type[Exception], match: str) -> None:
    if error is ValueError:
        with pytest.raises(ValueError):
            call(torch)
    with pytest.raises(error, match=match):
        call(mf)


# ---- nn.utils: clipping and vectors -------------------------------------------------------


def _grads_of_both(seed: int, scale: float) -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(seed)
    shapes = [(3, 2), (4,), (1, 1)]
    grads = [rng.standard_normal(s) * scale for s in shapes]
    ours = [mf.zeros(*s, requires_grad=True) for s in shapes]
    theirs = [torch.zeros(s, dtype=torch.float64, requires_grad=True) for s in shapes]
    for p, q, g in zip(ours, theirs, grads, strict=True):
        p.grad, q.grad = mf.tensor(g), torch.tensor(g)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize(("scale", "max_norm"), [(1.0, 0.5), (0.01, 10.0)])
def test_clip_grad_norm_matches_torch(norm_type: float, scale: float, max_norm: float) -> None:
    ours, theirs = _grads_of_both(0, scale)
    total = mf.nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.shape == () and total.item() == pytest.approx(expected.item(), rel=1e-12)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_refuses_a_non_finite_norm_when_asked() -> None:
    ours, _ = _grads_of_both(1, 1.0)
    ours[1].grad = mf.tensor([1.0, float("inf"), 0.0, 0.0])
    before = ours[0].grad.numpy().copy()
    with pytest.raises(RuntimeError, match="non-finite"):
        mf.nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    assert np.array_equal(ours[0].grad.numpy(), before)


def test_clip_grad_value_and_vectors_match_torch() -> None:
    ours, theirs = _grads_of_both(2, 2.0)
    mf.nn.utils.clip_grad_value_(ours, 0.7)
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    vec = mf.nn.utils.parameters_to_vector(ours)
    assert vec.shape == (11,)
    mf.nn.utils.vector_to_parameters(mf.arange(11).to(mf.float64), ours)
    assert ours[1].detach().tolist() == [6.0, 7.0, 8.0, 9.0]
    assert ours[0].requires_grad
