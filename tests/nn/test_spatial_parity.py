"""Padding, pooling (1-D, 2-D, ceil_mode, dilation, adaptive), convolution options and
interpolation against PyTorch: values and gradients on every backend, float64 and float32."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from tests.hypothesis_profiles import at_most
from tests.parity import check_against_torch, check_raises_like_torch

pytestmark = pytest.mark.extra

few = at_most(10)
DTYPES = st.sampled_from(["float64", "float32"])


def values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


@few
@given(
    mode=st.sampled_from(["constant", "reflect", "replicate", "circular"]),
    pads=st.lists(st.integers(-1, 2), min_size=2, max_size=4).filter(lambda p: len(p) % 2 == 0),
    dtype=DTYPES,
    seed=st.integers(0, 99),
)
def test_pad_modes(backend, mode, pads, dtype, seed):
    if mode != "constant":  # PyTorch pads 2 dims of a 4-D input in these modes
        pads = [abs(p) for p in (pads * 2)[:4]]
    x = values((2, 3, 4, 3), seed)
    value = 0.5 if mode == "constant" else None
    check_against_torch(
        lambda lib, t: lib.nn.functional.pad(t, pads, mode, value), [x], backend, dtype
    )


POOL_SETTINGS = st.tuples(
    st.integers(1, 3),
    st.sampled_from([None, 1, 2]),
    st.integers(0, 1),
    st.integers(1, 2),
    st.booleans(),
)  # kernel, stride, padding, dilation, ceil_mode


@few
@given(setting=POOL_SETTINGS, dims=st.sampled_from([1, 2]), dtype=DTYPES, seed=st.integers(0, 99))
def test_max_pool(backend, setting, dims, dtype, seed):
    k, s, p, d, ceil = setting
    if 2 * p > d * (k - 1) + 1:
        p = 0
    shape = (2, 2, 7) if dims == 1 else (2, 2, 6, 5)
    name = f"max_pool{dims}d"
    check_against_torch(
        lambda lib, t: getattr(lib.nn.functional, name)(t, k, s, p, d, ceil),
        [values(shape, seed)], backend, dtype,
    )  # fmt: skip


@few
@given(
    setting=POOL_SETTINGS, include=st.booleans(), dims=st.sampled_from([1, 2]), dtype=DTYPES,
    seed=st.integers(0, 99),
)  # fmt: skip
def test_avg_pool(backend, setting, include, dims, dtype, seed):
    k, s, p, _, ceil = setting
    p = min(p, k // 2)
    shape = (2, 2, 7) if dims == 1 else (2, 2, 6, 5)
    name = f"avg_pool{dims}d"
    check_against_torch(
        lambda lib, t: getattr(lib.nn.functional, name)(t, k, s, p, ceil, include),
        [values(shape, seed)], backend, dtype,
    )  # fmt: skip


def test_avg_pool_divisor_override(backend):
    check_against_torch(
        lambda lib, t: lib.nn.functional.avg_pool2d(t, 2, 1, 1, True, True, 3),
        [values((1, 2, 4, 4), 0)], backend,
    )  # fmt: skip


@few
@given(
    size=st.sampled_from([1, 2, 3, 4, 7, (3, None), (2, 5)]),
    kind=st.sampled_from(["avg", "max"]),
    dtype=DTYPES,
    seed=st.integers(0, 99),
)
def test_adaptive_pool(backend, size, kind, dtype, seed):
    check_against_torch(
        lambda lib, t: getattr(lib.nn.functional, f"adaptive_{kind}_pool2d")(t, size),
        [values((2, 3, 5, 6), seed)], backend, dtype,
    )  # fmt: skip
    if isinstance(size, int):
        check_against_torch(
            lambda lib, t: getattr(lib.nn.functional, f"adaptive_{kind}_pool1d")(t, size),
            [values((2, 3, 5), seed)], backend, dtype,
        )  # fmt: skip


@few
@given(
    groups=st.sampled_from([1, 2, 4]),
    stride=st.integers(1, 2),
    padding=st.sampled_from([0, 1, "same", "valid"]),
    dilation=st.integers(1, 2),
    dtype=DTYPES,
    seed=st.integers(0, 99),
)
def test_conv_options(backend, groups, stride, padding, dilation, dtype, seed):
    if padding == "same":
        stride = 1
    x, w, b = values((2, 4, 6, 5), seed), values((4, 4 // groups, 3, 2), seed + 1), values((4,), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns about 'same' with even kernels
        check_against_torch(
            lambda lib, x, w, b: lib.nn.functional.conv2d(
                x, w, b, stride, padding, dilation, groups
            ),
            [x, w, b], backend, dtype,
        )  # fmt: skip
        check_against_torch(
            lambda lib, x, w: lib.nn.functional.conv1d(
                x, w, None, stride, padding, dilation, groups
            ),
            [x[:, :, 0], w[:, :, :, 0]], backend, dtype,
        )  # fmt: skip


@few
@given(
    target=st.sampled_from([{"size": 7}, {"size": 3}, {"scale_factor": 2}, {"scale_factor": 0.6}]),
    mode=st.sampled_from(["nearest", "linear"]),
    align=st.booleans(),
    dims=st.sampled_from([1, 2]),
    dtype=DTYPES,
    seed=st.integers(0, 99),
)
def test_interpolate(backend, target, mode, align, dims, dtype, seed):
    if mode == "linear" and dims == 2:
        mode = "bilinear"
    corners = align if mode != "nearest" else None
    shape = (2, 2, 5) if dims == 1 else (1, 2, 4, 5)
    check_against_torch(
        lambda lib, t: lib.nn.functional.interpolate(
            t, mode=mode, align_corners=corners, **target
        ),
        [values(shape, seed)], backend, dtype,
    )  # fmt: skip


LAYERS = [
    ("MaxPool1d", (3, 2, 1, 1, False, True), (2, 2, 7)),
    ("MaxPool2d", (3, 2, 1, 2, False, True), (1, 2, 7, 7)),
    ("AvgPool1d", (3, 2, 1, True, False), (2, 2, 7)),
    ("AvgPool2d", (3, 2, 1, True, False), (1, 2, 6, 5)),
    ("AdaptiveAvgPool2d", ((2, 3),), (1, 2, 5, 7)),
    ("AdaptiveMaxPool1d", (3,), (1, 2, 7)),
    ("ZeroPad2d", ((1, 0, 2, 1),), (1, 2, 3, 3)),
    ("ConstantPad1d", (2, 1.5), (1, 2, 3)),
    ("ReflectionPad2d", (2,), (1, 2, 3, 4)),
    ("ReplicationPad1d", ((1, 3),), (1, 2, 3)),
    ("CircularPad2d", (1,), (1, 2, 3, 3)),
    ("Upsample", (None, 2, "bilinear", False), (1, 2, 3, 3)),
    ("UpsamplingNearest2d", (None, 3), (1, 1, 2, 3)),
    ("UpsamplingBilinear2d", ((5, 4),), (1, 1, 2, 3)),
]


@pytest.mark.parametrize(("name", "args", "shape"), LAYERS, ids=[c[0] for c in LAYERS])
def test_layers(backend, name, args, shape):
    check_against_torch(
        lambda lib, t: getattr(lib.nn, name)(*args)(t), [values(shape, 3)], backend
    )


def test_layer_reprs():
    torch = pytest.importorskip("torch")
    for name, args, _ in LAYERS:
        if name.startswith("Upsampling"):
            continue  # PyTorch warns that they are deprecated
        assert repr(getattr(mf.nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))
    conv = ("Conv2d", (4, 8, 3), {"padding": "same", "dilation": 2, "groups": 2})
    assert repr(mf.nn.Conv2d(*conv[1], **conv[2])) == repr(torch.nn.Conv2d(*conv[1], **conv[2]))


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv_layer_options(backend, padding_mode):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Conv2d(4, 6, 3, 1, 1, 2, 2, True, padding_mode).double()
    ours = mf.nn.Conv2d(4, 6, 3, 1, 1, 2, 2, True, padding_mode)
    ours.weight.data = mf.tensor(theirs.weight.detach().numpy(), backend=backend)
    ours.bias.data = mf.tensor(theirs.bias.detach().numpy(), backend=backend)
    x = values((2, 4, 6, 6), 4)
    got = ours(mf.tensor(x, backend=backend))
    want = theirs(torch.tensor(x))
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-10)


ERRORS = [
    ("reflect pad too big", lambda lib, t: lib.nn.functional.pad(t, (4, 0), "reflect"), "pad"),
    ("odd pad length", lambda lib, t: lib.nn.functional.pad(t, (1, 0, 1)), "divisible by 2"),
    ("groups", lambda lib, t: lib.nn.functional.conv2d(t, t[:3, :1], groups=2), "groups=2"),
    ("same and stride", lambda lib, t: lib.nn.functional.conv2d(t, t, stride=2, padding="same"),
     "strided"),
    ("pool pad", lambda lib, t: lib.nn.functional.max_pool1d(t[0], 2, 1, 2), "half"),
    ("both size and factor",
     lambda lib, t: lib.nn.functional.interpolate(t, size=3, scale_factor=2), "only one"),
    ("align_corners with nearest",
     lambda lib, t: lib.nn.functional.interpolate(t, size=3, align_corners=True), "align_corners"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "fn", "match"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(backend, name, fn, match):
    check_raises_like_torch(fn, [values((4, 4, 3, 3), 0)], backend, match=match)


@pytest.mark.parametrize(
    ("fn", "feature"),
    [
        (lambda t: mf.nn.functional.max_pool2d(t, 2, return_indices=True), "return_indices"),
        (lambda t: mf.nn.functional.interpolate(t, scale_factor=2, mode="bicubic"), "bicubic"),
        (lambda t: mf.nn.functional.pad(t, (1, 1), mode="mirror"), "mirror"),
    ],
)
def test_unsupported_options_say_so(fn, feature):
    with pytest.raises(NotImplementedError, match=feature):
        fn(mf.zeros(1, 1, 4, 4))
