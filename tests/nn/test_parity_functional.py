"""nn.functional activations, losses and normalisations against PyTorch.

Each case is one function written against both libraries; hypothesis draws the shape,
the dtype (float64 and float32) and the values (with exact zeros and large magnitudes
mixed in, where the kinks and the overflow guards sit), and `check_against_torch`
compares the values and the gradients of every float input, on every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch

pytestmark = pytest.mark.extra

few = at_most(10)
DTYPES = st.sampled_from(["float64", "float32"])
SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def values(shape: tuple[int, ...], seed: int, scale: float = 3.0) -> np.ndarray:
    """Normal draws times `scale`, about a fifth of them exactly 0 and one of them large."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * scale
    x[rng.random(shape) < 0.2] = 0.0
    if x.size > 2:
        x.flat[int(rng.integers(x.size))] = float(rng.choice([-60.0, 60.0]))
    return x


def F(lib: Any) -> Any:  # noqa: N802 - the functional module of either library
    """`lib.nn.functional`."""
    return lib.nn.functional


ACTIVATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "leaky_relu": lambda lib, x: F(lib).leaky_relu(x, 0.1),
    "elu": lambda lib, x: F(lib).elu(x, 0.7),
    "selu": lambda lib, x: F(lib).selu(x),
    "silu": lambda lib, x: F(lib).silu(x),
    "mish": lambda lib, x: F(lib).mish(x),
    "softplus": lambda lib, x: F(lib).softplus(x),
    "softplus_beta": lambda lib, x: F(lib).softplus(x, beta=2.0, threshold=5.0),
    "logsigmoid": lambda lib, x: F(lib).logsigmoid(x),
    "hardtanh": lambda lib, x: F(lib).hardtanh(x, -2.0, 1.5),
    "relu6": lambda lib, x: F(lib).relu6(x),
    "hardsigmoid": lambda lib, x: F(lib).hardsigmoid(x),
    "hardswish": lambda lib, x: F(lib).hardswish(x),
    "softsign": lambda lib, x: F(lib).softsign(x),
    "gelu_tanh": lambda lib, x: F(lib).gelu(x, approximate="tanh"),
    "gelu": lambda lib, x: F(lib).gelu(x),
    "LeakyReLU": lambda lib, x: lib.nn.LeakyReLU(0.2)(x),
    "GELU": lambda lib, x: lib.nn.GELU()(x),
    "ELU": lambda lib, x: lib.nn.ELU()(x),
    "SiLU": lambda lib, x: lib.nn.SiLU()(x),
    "Mish": lambda lib, x: lib.nn.Mish()(x),
    "Softplus": lambda lib, x: lib.nn.Softplus(beta=0.5)(x),
    "Hardtanh": lambda lib, x: lib.nn.Hardtanh()(x),
    "ReLU6": lambda lib, x: lib.nn.ReLU6()(x),
    "Identity": lambda lib, x: lib.nn.Identity(3, key=1)(x),
}


@few
@given(shape=SHAPES, dtype=DTYPES, seed=st.integers(0, 999))
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(
    backend: Any, name: str, shape: tuple[int, ...], dtype: str, seed: int
) -> None:
    check_against_torch(ACTIVATIONS[name], [values(shape, seed)], backend, dtype)


REDUCTIONS = st.sampled_from(["mean", "sum", "none"])

PAIRWISE: dict[str, Callable[..., Any]] = {
    "l1_loss": lambda lib, x, t, r: F(lib).l1_loss(x, t, reduction=r),
    "smooth_l1_loss": lambda lib, x, t, r: F(lib).smooth_l1_loss(x, t, reduction=r, beta=0.7),
    "smooth_l1_beta0": lambda lib, x, t, r: F(lib).smooth_l1_loss(x, t, reduction=r, beta=0.0),
    "huber_loss": lambda lib, x, t, r: F(lib).huber_loss(x, t, reduction=r, delta=1.3),
    "mse_loss": lambda lib, x, t, r: F(lib).mse_loss(x, t, reduction=r),
    "L1Loss": lambda lib, x, t, r: lib.nn.L1Loss(reduction=r)(x, t),
    "SmoothL1Loss": lambda lib, x, t, r: lib.nn.SmoothL1Loss(reduction=r)(x, t),
    "HuberLoss": lambda lib, x, t, r: lib.nn.HuberLoss(reduction=r, delta=0.5)(x, t),
}


@few
@given(shape=SHAPES, dtype=DTYPES, seed=st.integers(0, 999), reduction=REDUCTIONS)
@pytest.mark.parametrize("name", sorted(PAIRWISE))
def test_pointwise_loss(
    backend: Any, name: str, shape: tuple[int, ...], dtype: str, seed: int, reduction: str
) -> None:
    x = values(shape, seed, 1.0)
    t = np.where(
        np.random.default_rng(seed + 1).random(shape) < 0.3, x, values(shape, seed + 2, 1.0)
    )
    check_against_torch(
        lambda lib, a, b: PAIRWISE[name](lib, a, b, reduction), [x, t], backend, dtype
    )


def _probabilities(shape: tuple[int, ...], seed: int) -> np.ndarray:
    e = np.exp(np.random.default_rng(seed).standard_normal(shape))
    return e / e.sum(axis=-1, keepdims=True)


@few
@given(
    shape=SHAPES, dtype=DTYPES, seed=st.integers(0, 999),
    reduction=st.sampled_from(["mean", "sum", "none", "batchmean"]), log_target=st.booleans(),
)  # fmt: skip
def test_kl_div(
    backend: Any, shape: tuple[int, ...], dtype: str, seed: int, reduction: str, log_target: bool
) -> None:
    logp = np.log(_probabilities(shape, seed))
    target = _probabilities(shape, seed + 1)
    target = np.log(target) if log_target else target

    def kl(lib: Any, x: Any, t: Any) -> Any:
        if reduction == "mean":
            with pytest.warns(UserWarning) if lib.__name__ == "torch" else _nothing():
                return F(lib).kl_div(x, t, reduction=reduction, log_target=log_target)
        return lib.nn.KLDivLoss(reduction=reduction, log_target=log_target)(x, t)

    check_against_torch(kl, [logp, target], backend, dtype)


class _nothing:  # noqa: N801 - a do-nothing context manager
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@few
@given(
    shape=SHAPES, dtype=DTYPES, seed=st.integers(0, 999), reduction=REDUCTIONS,
    weighted=st.booleans(), positive=st.booleans(),
)  # fmt: skip
def test_binary_cross_entropy_with_logits(
    backend: Any, shape: tuple[int, ...], dtype: str, seed: int, reduction: str,
    weighted: bool, positive: bool,
) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    logits = values(shape, seed, 4.0)
    target = rng.random(shape)
    weight = rng.random(shape) + 0.5 if weighted else None
    pos = rng.random(shape[-1:]) * 3 if positive else None

    def bce(lib: Any, x: Any, t: Any, w: Any, pw: Any) -> Any:
        # PyTorch has no gradient for weight and pos_weight
        w, pw = (None if v is None else v.detach() for v in (w, pw))
        loss = lib.nn.BCEWithLogitsLoss(weight=w, reduction=reduction, pos_weight=pw)
        return loss(x, t)

    check_against_torch(bce, [logits, target, weight, pos], backend, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_bce_with_logits_is_finite_for_huge_logits(backend: Any, dtype: str) -> None:
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    t = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    check_against_torch(
        lambda lib, a, b: F(lib).binary_cross_entropy_with_logits(a, b, reduction="none"),
        [x, t], backend, dtype,
    )  # fmt: skip


@few
@given(
    n=st.integers(1, 4), c=st.integers(2, 4), dtype=DTYPES, seed=st.integers(0, 999),
    reduction=REDUCTIONS, smoothing=st.sampled_from([0.0, 0.1, 0.5]), weighted=st.booleans(),
    ignore=st.booleans(),
)  # fmt: skip
def test_cross_entropy_label_smoothing(
    backend: Any, n: int, c: int, dtype: str, seed: int, reduction: str, smoothing: float,
    weighted: bool, ignore: bool,
) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, c)) * 2
    target = rng.integers(0, c, size=n)
    if ignore and n > 1:
        target[0] = 1
    weight = rng.random(c) + 0.5 if weighted else None

    def ce(lib: Any, x: Any, t: Any, w: Any) -> Any:
        w = None if w is None else w.detach()
        loss = lib.nn.CrossEntropyLoss(
            weight=w, ignore_index=1 if ignore else -100, reduction=reduction,
            label_smoothing=smoothing,
        )  # fmt: skip
        return loss(x, t)

    check_against_torch(ce, [logits, target, weight], backend, dtype)


@few
@given(n=st.integers(1, 4), c=st.integers(2, 4), dtype=DTYPES, seed=st.integers(0, 999))
def test_cross_entropy_probability_targets_with_smoothing(
    backend: Any, n: int, c: int, dtype: str, seed: int
) -> None:
    logits = np.random.default_rng(seed).standard_normal((n, c))
    target = _probabilities((n, c), seed + 1)
    check_against_torch(
        lambda lib, x, t: F(lib).cross_entropy(x, t, label_smoothing=0.2),
        [logits, target], backend, dtype,
    )  # fmt: skip


@few
@given(
    shape=st.lists(st.integers(1, 4), min_size=2, max_size=3).map(tuple), dtype=DTYPES,
    seed=st.integers(0, 999), p=st.sampled_from([1.0, 2.0, 3.0]),
)  # fmt: skip
def test_normalize_and_cosine_similarity(
    backend: Any, shape: tuple[int, ...], dtype: str, seed: int, p: float
) -> None:
    a = values(shape, seed, 1.0)
    b = values(shape, seed + 1, 1.0)
    a[0] = 0.0  # a zero slice: norm 0, gradient 0 (not nan)
    check_against_torch(lambda lib, x: F(lib).normalize(x, p=p, dim=-1), [a], backend, dtype)
    check_against_torch(
        lambda lib, x, y: lib.nn.CosineSimilarity(dim=1)(x, y), [a + 0.5, b], backend, dtype
    )


@few
@given(
    n=st.integers(2, 4), groups=st.sampled_from([1, 2]), spatial=st.integers(1, 3),
    dtype=DTYPES, seed=st.integers(0, 999),
)  # fmt: skip
def test_group_norm(
    backend: Any, n: int, groups: int, spatial: int, dtype: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4, spatial, 2))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    check_against_torch(
        lambda lib, a, ww, bb: F(lib).group_norm(a, groups, ww, bb, eps=1e-5),
        [x, w, b], backend, dtype,
    )  # fmt: skip


BAD_INPUTS: list[tuple[str, Callable[..., Any], list[Any], str]] = [
    ("bce logits shapes", lambda lib, x, t: F(lib).binary_cross_entropy_with_logits(x, t),
     [np.zeros((2, 3)), np.zeros((3, 2))], "Target size"),
    ("smoothing out of range", lambda lib, x, t: F(lib).cross_entropy(x, t, label_smoothing=1.5),
     [np.zeros((2, 3)), np.array([0, 1])], "label_smoothing"),
    ("group_norm groups", lambda lib, x: F(lib).group_norm(x, 3),
     [np.zeros((2, 4, 2))], "divisible by num_groups"),
    ("bad gelu mode", lambda lib, x: F(lib).gelu(x, approximate="fast"), [np.zeros(3)],
     "approximate"),
    ("bad kl reduction", lambda lib, x, t: F(lib).kl_div(x, t, reduction="avg"),
     [np.zeros(3), np.zeros(3)], "reduction"),
    ("hardtanh range", lambda lib, x: F(lib).hardtanh(x, 1.0, -1.0), [np.zeros(3)], "min_val"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "fn", "arrays", "match"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS]
)
def test_bad_input_raises_like_torch(
    backend: Any, name: str, fn: Callable[..., Any], arrays: list[Any], match: str
) -> None:
    check_raises_like_torch(fn, arrays, backend, match=match)
