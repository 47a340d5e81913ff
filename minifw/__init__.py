"""minifw: a small, fast, teaching deep-learning framework with PyTorch's surface."""

from __future__ import annotations

from . import (
    autodiff,
    autograd,
    cuda,
    datasets,
    dtypes,
    nn,
    operators,
    optim,
    profiler,
    serialization,
    utils,
    viz,
)
from .autodiff import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .backends import get_backend, set_default_backend
from .compile import compile
from .creation import (
    abs,
    arange,
    argmax,
    cat,
    empty,
    exp,
    eye,
    from_numpy,
    full,
    full_like,
    is_tensor,
    linspace,
    log,
    matmul,
    max,
    mean,
    min,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    randperm,
    relu,
    sigmoid,
    sqrt,
    stack,
    sum,
    tanh,
    where,
    zeros,
    zeros_like,
)
from .dtypes import (
    DType,
    double,
    float32,
    float64,
    get_default_dtype,
    int64,
    long,
    set_default_dtype,
)
from .dtypes import float as float  # noqa: PLC0414 - PyTorch's alias mf.float
from .random import manual_seed
from .scalar import Scalar
from .serialization import load, save
from .tensor import Tensor, tensor
from .tensor_ops import SimpleOps, TensorBackend


def __getattr__(name: str) -> object:
    """Build the compiled kernel sets only when first asked for (`mf.FastOps`, `mf.CudaOps`)."""
    if name == "FastOps":
        from .fast_ops import FastOps

        return FastOps
    if name == "CudaOps":
        from .cuda_ops import CudaOps

        return CudaOps
    raise AttributeError(f"module 'minifw' has no attribute {name!r}")


__version__ = "0.1.0"
__all__ = [
    "DType", "Scalar", "SimpleOps", "Tensor", "TensorBackend", "abs", "arange", "argmax",
    "autodiff", "autograd", "cat", "compile", "load", "optim", "profiler", "save",
    "serialization", "utils", "viz", "cuda", "datasets", "double", "dtypes", "empty",
    "enable_grad", "exp", "eye", "float", "float32", "float64", "from_numpy", "full",
    "full_like", "get_backend", "get_default_dtype", "int64", "is_grad_enabled", "is_tensor",
    "linspace", "log", "long", "manual_seed", "matmul", "max", "mean", "min", "nn", "no_grad",
    "ones", "ones_like", "operators", "rand", "randint", "randn", "randperm", "relu",
    "set_default_backend", "set_default_dtype", "set_grad_enabled", "sigmoid", "sqrt",
    "stack", "sum", "tanh", "tensor", "where", "zeros", "zeros_like", "FastOps", "CudaOps",
]  # fmt: skip
