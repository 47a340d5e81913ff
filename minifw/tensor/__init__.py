"""Layer 3: the Tensor class, its autograd Functions and graph nodes, creation, printing."""

from minifw.tensor.tensor import Tensor, tensor

__all__ = ["Tensor", "tensor"]
