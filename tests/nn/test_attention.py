"""Attention, the transformer encoder and LayerNorm against PyTorch.

`F.scaled_dot_product_attention` goes through `check_against_torch` (values and the
gradients of query, key and value); the layers copy PyTorch's parameters into minifw's
(`compare_module`) and compare outputs, input gradients and parameter gradients, with
bool and float masks, batch-first or not, batched or not, in float64 and float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minifw as mf
from minifw import nn
from tests.hypothesis_profiles import at_most
from tests.nn.test_rnn import compare_module
from tests.parity import check_against_torch, check_raises_like_torch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra  # no course task teaches attention

FEW = at_most(4)


def _bool_mask(rng: np.random.Generator, shape: tuple[int, ...], allowed: bool) -> np.ndarray:
    """A random bool mask that leaves every row at least one position to attend to.

    `allowed` is the value meaning "may attend" (True for scaled_dot_product_attention,
    False for MultiheadAttention).
    """
    mask = rng.random(shape) < 0.5
    mask[..., 0] = allowed
    return mask


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
@FEW
@given(
    batch=st.lists(st.integers(1, 2), max_size=2), length=st.integers(1, 3),
    source=st.integers(1, 3), width=st.integers(1, 3), value_width=st.integers(1, 3),
    scale=st.sampled_from([None, 0.5]),
)  # fmt: skip
def test_scaled_dot_product_attention(
    backend, dtype, mask, batch, length, source, width, value_width, scale
):  # fmt: skip
    rng = np.random.default_rng(length + 3 * source)
    arrays = [
        rng.standard_normal((*batch, length, width)),
        rng.standard_normal((*batch, source, width)),
        rng.standard_normal((*batch, source, value_width)),
    ]
    options: dict[str, Any] = {"scale": scale, "is_causal": mask == "causal"}
    if mask == "bool":
        arrays.append(_bool_mask(rng, (length, source), allowed=True))
    if mask == "float":
        arrays.append(rng.standard_normal((length, source)) * (rng.random((length, source)) < 0.5))
    if mask == "causal" and source < length:
        return  # a query row with nothing to attend to: both give nan

    def attend(lib: Any, q: Any, k: Any, v: Any, *attn_mask: Any) -> Any:
        return lib.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask[0] if attn_mask else None, **options
        )

    check_against_torch(attend, arrays, backend, dtype)


# (constructor options, batched, masks, average_attn_weights), masks a subset of
# {"bool", "float", "padding", "3d"}
ATTENTION = [
    ({}, True, (), True),
    ({"batch_first": True}, True, ("bool", "padding"), False),
    ({"bias": False}, True, ("float",), True),
    ({"kdim": 3, "vdim": 5}, True, ("3d", "padding"), False),
    ({"kdim": 2, "vdim": 3, "batch_first": True}, True, ("float",), True),
    ({}, False, ("bool", "padding"), True),
    ({}, False, ("3d",), False),
]


def _attention_masks(
    rng: np.random.Generator, kinds: tuple[str, ...], heads: int, batch: int | None, sizes: Any
) -> dict[str, np.ndarray]:
    """attn_mask and key_padding_mask arrays of the kinds asked for."""
    length, source = sizes
    masks: dict[str, np.ndarray] = {}
    if "bool" in kinds:
        masks["attn_mask"] = _bool_mask(rng, (length, source), allowed=False)
    if "float" in kinds:
        masks["attn_mask"] = rng.standard_normal((length, source))
    if "3d" in kinds:
        masks["attn_mask"] = rng.standard_normal(((batch or 1) * heads, length, source))
    if "padding" in kinds:
        shape = (source,) if batch is None else (batch, source)
        masks["key_padding_mask"] = _bool_mask(rng, shape, allowed=False)
    return masks


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("options,batched,masks,average", ATTENTION)
@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
def test_multihead_attention_matches_torch(backend, dtype, options, batched, masks, average):
    rng = np.random.default_rng(7)
    embed, heads, batch, length, source = 4, 2, 2, 3, 4
    kdim, vdim = options.get("kdim", embed), options.get("vdim", embed)
    first = (batch, length) if options.get("batch_first") else (length, batch)
    source_first = (batch, source) if options.get("batch_first") else (source, batch)
    if not batched:
        first, source_first = (length,), (source,)
    arrays = [
        rng.standard_normal((*first, embed)),
        rng.standard_normal((*source_first, kdim)),
        rng.standard_normal((*source_first, vdim)),
    ]
    mask_arrays = _attention_masks(rng, masks, heads, batch if batched else None, (length, source))

    def call(layer: Any, inputs: list[Any]) -> Any:
        lib = torch if isinstance(inputs[0], torch.Tensor) else mf
        kind = str(inputs[0].dtype).split(".")[-1]
        made = {name: _like(lib, a, kind, inputs[0]) for name, a in mask_arrays.items()}
        return layer(*inputs, average_attn_weights=average, **made)

    compare_module(
        lambda lib: lib.nn.MultiheadAttention(embed, heads, **options),
        call,
        arrays,
        backend,
        dtype,
    )


def _like(lib: Any, values: np.ndarray, dtype: str, other: Any) -> Any:
    """A `lib` tensor of `values` (floats as `dtype`) on `other`'s backend."""
    values = values if values.dtype == bool else values.astype(dtype)
    return lib.tensor(values) if lib is torch else mf.tensor(values, backend=other.backend)


# (layer options, activation, a TransformerEncoder of two layers rather than one layer)
ENCODERS = [
    ({}, "relu", False),
    ({"norm_first": True, "batch_first": True}, "relu", True),
    ({"bias": False, "layer_norm_eps": 1e-3}, "callable", False),
    ({}, "gelu", True),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("options,activation,stacked", ENCODERS)
def test_transformer_encoder_matches_torch(backend, dtype, options, activation, stacked):
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal((2, 3, 4) if options.get("batch_first") else (3, 2, 4))]
    padding = np.array([[False, False, True], [False, False, False]])

    def make(lib: Any) -> Any:
        act = (lambda x: x.tanh()) if activation == "callable" else activation
        layer = lib.nn.TransformerEncoderLayer(
            4, 2, dim_feedforward=6, dropout=0.0, activation=act, **options
        )
        if not stacked:
            return layer
        return lib.nn.TransformerEncoder(
            layer, 2, norm=lib.nn.LayerNorm(4), enable_nested_tensor=False
        )

    def call(module: Any, inputs: list[Any]) -> Any:
        lib = torch if isinstance(inputs[0], torch.Tensor) else mf
        return module(inputs[0], src_key_padding_mask=_like(lib, padding, "", inputs[0]))

    compare_module(make, call, arrays, backend, dtype)


def test_encoder_structure_matches_torch():
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8)
    theirs = torch.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8)
    assert list(layer.state_dict()) == list(theirs.state_dict())
    encoder = nn.TransformerEncoder(layer, 2)
    assert list(encoder.state_dict()) == list(torch.nn.TransformerEncoder(theirs, 2).state_dict())
    first, second = encoder.layers[0], encoder.layers[1]
    assert first is not layer and first.linear1.weight is not second.linear1.weight
    np.testing.assert_array_equal(
        first.linear1.weight.detach().numpy(), second.linear1.weight.detach().numpy()
    )
    attention = nn.MultiheadAttention(6, 3)
    assert attention.in_proj_weight.shape == (18, 6)
    assert np.all(attention.in_proj_bias.detach().numpy() == 0)
    assert np.all(attention.out_proj.bias.detach().numpy() == 0)
    assert np.abs(attention.in_proj_weight.detach().numpy()).max() <= np.sqrt(6 / 24)


def test_attention_dropout_only_in_training():
    mf.manual_seed(9)
    layer = nn.MultiheadAttention(4, 2, dropout=0.5)
    x = mf.tensor(np.random.default_rng(10).standard_normal((3, 2, 4)))
    layer.eval()
    _, weights = layer(x, x, x)
    np.testing.assert_allclose(weights.detach().numpy().sum(-1), 1.0)
    layer.train()
    _, dropped = layer(x, x, x)
    assert not np.allclose(dropped.detach().numpy(), weights.detach().numpy())
    _, none = layer(x, x, x, need_weights=False)
    assert none is None


LAYER_NORMS = [
    ({"normalized_shape": 4}, (3, 4)),
    ({"normalized_shape": (2, 4), "eps": 1e-2}, (3, 2, 4)),
    ({"normalized_shape": [4], "elementwise_affine": False}, (2, 4)),
    ({"normalized_shape": 4, "bias": False}, (2, 3, 4)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("options,shape", LAYER_NORMS)
def test_layer_norm_matches_torch(backend, dtype, options, shape):
    def make(lib: Any) -> Any:
        layer = lib.nn.LayerNorm(**options)
        if lib is torch:  # away from the initial 1 and 0 (compare_module copies them to ours)
            with torch.no_grad():
                for p in layer.parameters():
                    p.mul_(1.5).add_(0.25)
        return layer

    assert repr(nn.LayerNorm(**options)) == repr(torch.nn.LayerNorm(**options))
    arrays = [np.random.default_rng(11).standard_normal(shape)]
    compare_module(make, lambda layer, inputs: layer(inputs[0]), arrays, backend, dtype)


def _bad_attention_calls() -> list[tuple[str, Any, list[Any], str]]:
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 2, 4))

    def mha(lib: Any, **options: Any) -> Any:
        return lib.nn.MultiheadAttention(4, 2, dtype=lib.float64, **options)

    return [
        ("heads", lambda lib, x: lib.nn.MultiheadAttention(5, 2), [x], "divisible"),
        ("embed", lambda lib, x: mha(lib)(x[..., :3], x, x), [x], "dimension of 4, but got 3"),
        (
            "2d mask",
            lambda lib, x, m: mha(lib)(x, x, x, attn_mask=m),
            [x, np.zeros((2, 3), dtype=bool)],
            r"\(2, 3\), but should be \(3, 3\)",
        ),
        (
            "padding",
            lambda lib, x, m: mha(lib)(x, x, x, key_padding_mask=m),
            [x, np.zeros((2, 4), dtype=bool)],
            r"\(2, 3\)",
        ),
        ("causal hint", lambda lib, x: mha(lib)(x, x, x, is_causal=True), [x], "Need attn_mask"),
        (
            "key/value",
            lambda lib, x: mha(lib)(x, x[:2], x),
            [x],
            "key shape",
        ),
        (
            "sdpa causal and mask",
            lambda lib, x, m: lib.nn.functional.scaled_dot_product_attention(
                x, x, x, attn_mask=m, is_causal=True
            ),
            [x, np.ones((2, 2), dtype=bool)],
            "should not be set",
        ),
        (
            "sdpa int mask",
            lambda lib, x, m: lib.nn.functional.scaled_dot_product_attention(x, x, x, attn_mask=m),
            [x, np.ones((2, 2), dtype=np.int64)],
            "bool or float",
        ),
        (
            "layer norm shape",
            lambda lib, x: lib.nn.LayerNorm(3, dtype=lib.float64)(x),
            [x],
            r"normalized_shape=\[3\]",
        ),
    ]


@pytest.mark.parametrize(
    "what,fn,arrays,match", _bad_attention_calls(), ids=[c[0] for c in _bad_attention_calls()]
)
def test_bad_input_raises_like_torch(backend, what, fn, arrays, match):
    check_raises_like_torch(fn, arrays, backend, match=match)
