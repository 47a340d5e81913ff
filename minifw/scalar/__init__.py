"""Layer 1: the Scalar autograd engine of Module 1 (one number per node, micrograd-sized)."""

from minifw.scalar.scalar import Scalar

__all__ = ["Scalar"]
