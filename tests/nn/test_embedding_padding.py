"""`padding_idx` of nn.Embedding and F.embedding is checked as PyTorch does.

Out of range it raises PyTorch's AssertionError at once (not a numpy IndexError later,
nor a silent zeroing of another row's gradient); negative values in range wrap.
"""

from __future__ import annotations

import pytest

import minifw as mf
from minifw import nn
from minifw.nn import functional as F  # noqa: N812 - PyTorch's idiom

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.extra

OUT_OF_RANGE = [-5, -4, 3, 5]
IN_RANGE = [-3, -1, 0, 2]


@pytest.mark.parametrize("padding_idx", OUT_OF_RANGE)
def test_module_refuses_padding_idx_out_of_range(padding_idx: int) -> None:
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        torch.nn.Embedding(3, 2, padding_idx=padding_idx)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=padding_idx)


@pytest.mark.parametrize("padding_idx", IN_RANGE)
def test_module_wraps_negative_padding_idx(padding_idx: int) -> None:
    want = torch.nn.Embedding(3, 2, padding_idx=padding_idx).padding_idx
    assert nn.Embedding(3, 2, padding_idx=padding_idx).padding_idx == want


@pytest.mark.parametrize("padding_idx", OUT_OF_RANGE)
def test_functional_refuses_padding_idx_out_of_range(padding_idx: int) -> None:
    indices = [0, 1, 2]
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        torch.nn.functional.embedding(torch.tensor(indices), torch.ones(3, 2), padding_idx)
    weight = mf.ones(3, 2, requires_grad=True)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(mf.tensor(indices), weight, padding_idx)


@pytest.mark.parametrize("padding_idx", IN_RANGE)
def test_functional_padding_row_gets_no_gradient_as_torch(padding_idx: int) -> None:
    indices = [0, 1, 2, 1]
    tw = torch.ones(3, 2, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(indices), tw, padding_idx).sum().backward()
    w = mf.ones(3, 2, requires_grad=True)
    F.embedding(mf.tensor(indices), w, padding_idx).sum().backward()
    assert w.grad is not None and w.grad.tolist() == tw.grad.tolist()
