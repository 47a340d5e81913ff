"""Attention as PyTorch defines it: `scaled_dot_product_attention` and `MultiheadAttention`.

Both are composed of differentiable tensor operations (matmul, softmax, views), so
autograd and every backend come for free. Masks come in two kinds, as in PyTorch:
a float mask is added to the scores; a bool mask marks positions, which become an
additive mask of 0 and -inf. The bool-to-additive conversion runs on the host copy of
the (small) mask, so it needs no bool kernels. Beware the two conventions: in
`scaled_dot_product_attention` True means "may attend", in `MultiheadAttention`
(attn_mask and key_padding_mask) True means "masked out".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minifw.core import dtypes
from minifw.core.random import generator
from minifw.nn import functional as F  # noqa: N812 - PyTorch's idiom
from minifw.nn.activation import dropout, softmax
from minifw.nn.module import Module, Parameter
from minifw.tensor.tensor import Tensor, tensor


def _is_bool(mask: Tensor) -> bool:
    """True for a bool mask (PyTorch's other allowed kind is floating point)."""
    return bool(mask.dtype.numpy.kind == "b")


def additive_mask(mask: Tensor, like: Tensor, masked_when: bool, what: str) -> Tensor:
    """`mask` as a float mask to add to scores like `like`: bool masks become 0 / -inf.

    `masked_when` is the bool value that means "masked out" (True for MultiheadAttention,
    False for scaled_dot_product_attention).
    """
    if mask.dtype.is_floating_point:
        return mask if mask.dtype is like.dtype else mask.to(like.dtype)
    if not _is_bool(mask):
        raise RuntimeError(
            f"Expected {what} dtype to be bool or float or to match query dtype, but got "
            f"{what}.dtype: {mask.dtype} and query.dtype: {like.dtype} instead."
        )
    blocked = mask.detach().cpu().numpy().astype(bool) == masked_when
    values = np.where(blocked, -np.inf, 0.0)
    return tensor(values, dtype=like.dtype, backend=like.backend)


def causal_mask(length: int, source_length: int, like: Tensor) -> Tensor:
    """An additive (length, source_length) mask: -inf above the diagonal, 0 elsewhere."""
    blocked = np.triu(np.ones((length, source_length), dtype=bool), k=1)
    return tensor(np.where(blocked, -np.inf, 0.0), dtype=like.dtype, backend=like.backend)


def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
    dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:  # fmt: skip
    """softmax(query @ key.T * scale + mask) @ value over the last two dims.

    query (..., L, E), key (..., S, E), value (..., S, Ev) give (..., L, Ev); `scale`
    defaults to 1 / sqrt(E). A bool `attn_mask` is True where attention is allowed; a
    float one is added to the scores. `is_causal` masks positions after the query's own.
    """
    if enable_gqa:
        raise NotImplementedError("scaled_dot_product_attention: enable_gqa is not supported")
    _check_attention_shapes(query, key, value)
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query * factor) @ key.transpose(-2, -1)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                "is_causal=True"
            )
        scores = scores + causal_mask(query.shape[-2], key.shape[-2], scores)
    elif attn_mask is not None:
        scores = scores + additive_mask(attn_mask, scores, False, "attn_mask")
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights @ value


def _check_attention_shapes(query: Tensor, key: Tensor, value: Tensor) -> None:
    """RuntimeError naming the shapes unless query, key and value fit together."""
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(
            "scaled_dot_product_attention: query, key and value need at least 2 dims, got "
            f"shapes {tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}"
        )
    if key.shape[-1] != query.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query {tuple(query.shape)}, key {tuple(key.shape)} "
            "and value "
            f"{tuple(value.shape)} do not fit: key needs query's last dim and value's sequence "
            "length"
        )


def _xavier_uniform(shape: tuple[int, int], device: Any, dtype: Any) -> Parameter:
    """uniform(-a, a) with a = sqrt(6 / (fan_in + fan_out)): PyTorch's xavier_uniform_."""
    bound = math.sqrt(6.0 / (shape[0] + shape[1]))
    return _parameter(generator().uniform(-bound, bound, size=shape), device, dtype)


def _parameter(values: Any, device: Any, dtype: Any) -> Parameter:
    """A Parameter holding `values` in `dtype` (default float dtype when None)."""
    kind = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    return Parameter(tensor(values, dtype=kind, device=device))


class MultiheadAttention(Module):
    """Attention with `num_heads` heads over embed_dim features, as PyTorch's layer.

    The query, key and value projections are one `in_proj_weight` (3 * embed_dim,
    embed_dim), or `q_proj_weight`, `k_proj_weight`, `v_proj_weight` when kdim or vdim
    differ from embed_dim; `out_proj` is a Linear. Dropout applies to the attention
    weights in training mode.
    """

    def __init__(
        self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
        add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
        vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        if embed_dim % num_heads != 0:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError(
                "MultiheadAttention: add_bias_kv and add_zero_attn are not supported by minifw"
            )
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self._make_projections(bias, device, dtype)
        # imported here: layers imports functional, which imports this module
        from minifw.nn.layers import Linear

        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if bias:  # PyTorch draws out_proj's bias, then zeroes it
            self.out_proj.bias = _parameter(np.zeros(embed_dim), device, dtype)

    def _make_projections(self, bias: bool, device: Any, dtype: Any) -> None:
        """Register the input projections with PyTorch's names, init and order."""
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _xavier_uniform((3 * e, e), device, dtype)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = _xavier_uniform((e, e), device, dtype)
            self.k_proj_weight = _xavier_uniform((e, self.kdim), device, dtype)
            self.v_proj_weight = _xavier_uniform((e, self.vdim), device, dtype)
        in_bias = _parameter(np.zeros(3 * e), device, dtype) if bias else None
        self.register_parameter("in_proj_bias", in_bias)

    def _projection_weights(self) -> tuple[Tensor, Tensor, Tensor]:
        """The (embed_dim, *) weights of the query, key and value projections."""
        if self.in_proj_weight is not None:
            w = self.in_proj_weight.value
            e = self.embed_dim
            return w[0:e], w[e : 2 * e], w[2 * e :]
        weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return tuple(p.value for p in weights)  # type: ignore[return-value]

    def _projection_biases(self) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        """The biases of the query, key and value projections (None without bias)."""
        if self.in_proj_bias is None:
            return None, None, None
        b, e = self.in_proj_bias.value, self.embed_dim
        return b[0:e], b[e : 2 * e], b[2 * e :]

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
        need_weights: bool = True, attn_mask: Tensor | None = None,
        average_attn_weights: bool = True, is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        """(attention output, attention weights or None), in PyTorch's shapes.

        Inputs are (L, N, E) (or (N, L, E) with batch_first) or unbatched (L, E).
        Masks: True (or -inf) means "may not attend"; attn_mask is (L, S) or
        (N * num_heads, L, S); key_padding_mask is (N, S).
        """
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                "module method `generate_square_subsequent_mask` to create this mask."
            )
        batched = self._check_inputs(query, key, value)
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = self._attend(query, key, value, key_padding_mask, attn_mask)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        return _finish(out, weights, batched, need_weights, average_attn_weights)

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> bool:
        """AssertionError naming the shapes unless the inputs fit; True when batched."""
        if query.dim() not in (2, 3):
            raise AssertionError(
                "query should be unbatched 2D or batched 3D tensor but received "
                f"{query.dim()}-D query tensor"
            )
        batched = query.dim() == 3
        if key.dim() != query.dim() or value.dim() != query.dim():
            raise AssertionError(
                f"For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, expected "
                f"`key` and `value` to be {query.dim()}-D but found {key.dim()}-D and "
                f"{value.dim()}-D tensors respectively"
            )
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(
                f"was expecting embedding dimension of {self.embed_dim}, but got {query.shape[-1]}"
            )
        if key.shape[:-1] != value.shape[:-1]:
            raise AssertionError(
                f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}"
            )
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise AssertionError(
                f"expected key and value feature sizes {self.kdim} and {self.vdim}, got "
                f"{key.shape[-1]} and {value.shape[-1]}"
            )
        return batched

    def _attend(
        self, query: Tensor, key: Tensor, value: Tensor,
        key_padding_mask: Tensor | None, attn_mask: Tensor | None,
    ) -> tuple[Tensor, Tensor]:  # fmt: skip
        """(output (L, N, E), weights (N, heads, L, S)) for (L/S, N, E) inputs."""
        length, batch = query.shape[0], query.shape[1]
        source = key.shape[0]
        self._check_masks(attn_mask, key_padding_mask, length, source, batch)
        w_q, w_k, w_v = self._projection_weights()
        b_q, b_k, b_v = self._projection_biases()
        q = self._heads(F.linear(query, w_q, b_q))
        k = self._heads(F.linear(key, w_k, b_k))
        v = self._heads(F.linear(value, w_v, b_v))
        scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(1, 2)
        mask = self._mask(attn_mask, key_padding_mask, scores, length, source, batch)
        if mask is not None:
            scores = scores + mask
        weights = softmax(scores, -1)
        if self.dropout > 0.0:
            weights = dropout(weights, self.dropout, self.training)
        out = (weights @ v).transpose(0, 1).reshape(length, batch, self.embed_dim)
        out = self.out_proj(out)
        return out, weights.view(batch, self.num_heads, length, source)

    def _heads(self, x: Tensor) -> Tensor:
        """(L, N, E) as (N * heads, L, head_dim), PyTorch's layout."""
        length, batch = x.shape[0], x.shape[1]
        return x.reshape(length, batch * self.num_heads, self.head_dim).transpose(0, 1)

    def _mask(
        self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, scores: Tensor,
        length: int, source: int, batch: int,
    ) -> Tensor | None:  # fmt: skip
        """The additive mask broadcastable to scores (N * heads, L, S), or None."""
        total = None
        if attn_mask is not None:
            total = additive_mask(attn_mask, scores, True, "attn_mask")
        if key_padding_mask is not None:
            padding = additive_mask(key_padding_mask, scores, True, "key_padding_mask")
            padding = padding.view(batch, 1, 1, source).expand(batch, self.num_heads, 1, source)
            padding = padding.reshape(batch * self.num_heads, 1, source)
            total = padding if total is None else total + padding
        return total

    def _check_masks(
        self, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
        length: int, source: int, batch: int,
    ) -> None:  # fmt: skip
        """Errors naming the shapes unless the masks fit (before any kernel runs)."""
        if attn_mask is not None:
            _check_attn_mask(attn_mask, length, source, batch * self.num_heads)
        if key_padding_mask is not None and tuple(key_padding_mask.shape) != (batch, source):
            raise AssertionError(
                f"expected key_padding_mask of shape {(batch, source)}, but got "
                f"{tuple(key_padding_mask.shape)}"
            )

    def extra_repr(self) -> str:
        """Nothing beyond the children (PyTorch shows only out_proj)."""
        return ""


def _check_attn_mask(mask: Tensor, length: int, source: int, batch_heads: int) -> None:
    """RuntimeError naming the shapes unless attn_mask is (L, S) or (N * heads, L, S)."""
    if mask.dim() == 2 and tuple(mask.shape) != (length, source):
        raise RuntimeError(
            f"The shape of the 2D attn_mask is {tuple(mask.shape)}, but should be "
            f"{(length, source)}."
        )
    if mask.dim() == 3 and tuple(mask.shape) != (batch_heads, length, source):
        raise RuntimeError(
            f"The shape of the 3D attn_mask is {tuple(mask.shape)}, but should be "
            f"{(batch_heads, length, source)}."
        )
    if mask.dim() not in (2, 3):
        raise RuntimeError(f"attn_mask's dimension {mask.dim()} is not supported")


def _finish(
    out: Tensor, weights: Tensor, batched: bool, need_weights: bool, average: bool
) -> tuple[Tensor, Tensor | None]:
    """Drop the batch dim of unbatched results and average the weights over heads."""
    result: Tensor | None = None
    if need_weights:
        result = weights.mean(1) if average else weights
        if not batched:
            result = result.squeeze(0)
    return (out if batched else out.squeeze(1)), result


__all__ = ["MultiheadAttention", "scaled_dot_product_attention"]
