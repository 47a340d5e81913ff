"""The transformer encoder as PyTorch defines it: `TransformerEncoderLayer` and a stack of them.

A layer is self-attention and a two-layer feed-forward block, each wrapped in a residual
connection and a LayerNorm (after the residual by default, before the block with
`norm_first=True`). Submodule names and parameter shapes are PyTorch's, so a PyTorch
state dict converted to numpy loads unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from minifw.nn import functional as F  # noqa: N812 - PyTorch's idiom
from minifw.nn.attention import MultiheadAttention
from minifw.nn.containers import ModuleList
from minifw.nn.layers import Dropout, LayerNorm, Linear
from minifw.nn.module import Module
from minifw.tensor.tensor import Tensor

Activation = str | Callable[[Tensor], Tensor]


def _activation(activation: Activation) -> Callable[[Tensor], Tensor]:
    """The function named "relu" or "gelu", or `activation` itself when callable."""
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        gelu: Callable[[Tensor], Tensor] = F.gelu  # type: ignore[attr-defined]
        return gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then feed-forward, each with a residual connection and a LayerNorm.

    Inputs are (S, N, d_model), (N, S, d_model) with batch_first, or unbatched
    (S, d_model); `src_mask` and `src_key_padding_mask` follow MultiheadAttention
    (True or -inf means "may not attend").
    """

    def __init__(
        self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
        activation: Activation = "relu", layer_norm_eps: float = 1e-5,
        batch_first: bool = False, norm_first: bool = False, bias: bool = True,
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        options = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **options
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **options)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **options)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **options)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self, src: Tensor, src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None, is_causal: bool = False,
    ) -> Tensor:  # fmt: skip
        """The encoded sequence, of src's shape."""
        x = src
        if self.norm_first:
            x = x + self._attention_block(self.norm1(x), src_mask, src_key_padding_mask)
            return x + self._feed_forward_block(self.norm2(x))
        x = self.norm1(x + self._attention_block(x, src_mask, src_key_padding_mask))
        return self.norm2(x + self._feed_forward_block(x))  # type: ignore[no-any-return]

    def _attention_block(
        self, x: Tensor, mask: Tensor | None, key_padding_mask: Tensor | None
    ) -> Tensor:
        """Self-attention of x, then dropout."""
        out, _ = self.self_attn(
            x, x, x, attn_mask=mask, key_padding_mask=key_padding_mask, need_weights=False
        )
        return self.dropout1(out)  # type: ignore[no-any-return]

    def _feed_forward_block(self, x: Tensor) -> Tensor:
        """linear2(dropout(activation(linear1(x)))), then dropout."""
        hidden = self.dropout(self.activation(self.linear1(x)))
        return self.dropout2(self.linear2(hidden))  # type: ignore[no-any-return]


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` applied in turn, then an optional `norm`."""

    def __init__(
        self, encoder_layer: TransformerEncoderLayer, num_layers: int,
        norm: Module | None = None, enable_nested_tensor: bool = True, mask_check: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self, src: Tensor, mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None, is_causal: bool | None = None,
    ) -> Tensor:  # fmt: skip
        """Src passed through every layer (same masks for each), then the norm."""
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask)
        return out if self.norm is None else self.norm(out)


__all__ = ["TransformerEncoder", "TransformerEncoderLayer"]
