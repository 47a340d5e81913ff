"""minifw: a small, fast, teaching deep-learning framework with PyTorch's surface."""

from __future__ import annotations

import importlib

from minifw import autograd, cuda, datasets, nn, optim, serialization, utils
from minifw.backends import get_backend, set_default_backend
from minifw.core import autodiff, dtypes, operators
from minifw.core.autodiff import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from minifw.core.dtypes import (
    DType,
    double,
    float32,
    float64,
    get_default_dtype,
    int64,
    long,
    set_default_dtype,
)
from minifw.core.dtypes import float as float  # noqa: PLC0414 - PyTorch's alias mf.float
from minifw.core.random import manual_seed
from minifw.scalar import Scalar
from minifw.serialization import load, save
from minifw.tensor import Tensor, tensor
from minifw.tensor.creation import (
    arange,
    argmax,
    cat,
    empty,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
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
    stack,
    sum,
    where,
    zeros,
    zeros_like,
)
from minifw.tensor.functions import is_tensor
from minifw.tensor_ops import SimpleOps, TensorBackend

# Elementwise functions are the Tensor methods themselves (`mf.exp(t)` is `t.exp()`).
abs = Tensor.abs  # noqa: A001 - PyTorch's name
exp = Tensor.exp
log = Tensor.log
reciprocal = Tensor.reciprocal
relu = Tensor.relu
sigmoid = Tensor.sigmoid
sqrt = Tensor.sqrt
tanh = Tensor.tanh

# Loaded on first use (layer 5 and the compiled backends): `import minifw` stays light.
_LAZY = {
    "compile": ("minifw.compiler.compile", "compile"),
    "profiler": ("minifw.tools.profiler", None),
    "viz": ("minifw.tools.viz", None),
    "FastOps": ("minifw.fast_ops", "FastOps"),
    "CudaOps": ("minifw.cuda_ops", "CudaOps"),
}


def __getattr__(name: str) -> object:
    """Import what `_LAZY` names only when first asked for (`mf.compile`, `mf.FastOps`)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'minifw' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


__version__ = "0.1.0"
__all__ = [
    "DType", "Scalar", "SimpleOps", "Tensor", "TensorBackend", "abs", "arange", "argmax",
    "autodiff", "autograd", "cat", "compile", "load", "optim", "profiler", "save",
    "serialization", "utils", "viz", "cuda", "datasets", "double", "dtypes", "empty",
    "enable_grad", "exp", "eye", "float", "float32", "float64", "from_numpy", "full",
    "full_like", "get_backend", "get_default_dtype", "int64", "is_grad_enabled", "is_tensor",
    "linspace", "log", "long", "manual_seed", "matmul", "max", "mean", "min", "nn", "no_grad",
    "ones", "ones_like", "operators", "rand", "randint", "randn", "randperm", "reciprocal",
    "relu", "set_default_backend", "set_default_dtype", "set_grad_enabled", "sigmoid", "sqrt",
    "stack", "sum", "tanh", "tensor", "where", "zeros", "zeros_like", "FastOps", "CudaOps",
]  # fmt: skip
