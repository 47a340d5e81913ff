"""minifw: a small, fast, teaching deep-learning framework with PyTorch's surface."""

from __future__ import annotations

import importlib

from minifw import autograd, cuda, datasets, nn, optim, serialization, utils
from minifw._threads import get_num_threads, set_num_threads
from minifw.backends import get_backend, set_default_backend
from minifw.core import autodiff, dtypes, operators
from minifw.core import unsupported as _unsupported
from minifw.core.autodiff import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from minifw.core.device import device
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
from minifw.core.random import Generator, default_generator, initial_seed, manual_seed, seed
from minifw.core.tensor_data import Size
from minifw.scalar import Scalar
from minifw.serialization import load, save
from minifw.tensor import (
    Tensor,
    math_ops,  # [elementwise math]
    tensor,
)
from minifw.tensor import logic as _logic
from minifw.tensor.creation import (
    arange,
    argmax,
    as_tensor,
    cat,
    clone,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    matmul,
    max,
    mean,
    min,
    numel,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    stack,
    sum,
    tril_indices,
    triu_indices,
    where,
    zeros,
    zeros_like,
)
from minifw.tensor.functions import is_tensor
from minifw.tensor.linalg import addmm, bmm, dot, einsum, meshgrid, mm, mv, outer
from minifw.tensor.linalg import linalg_namespace as linalg
from minifw.tensor.reductions import (
    amax,
    amin,
    count_nonzero,
    cumprod,
    cumsum,
    logsumexp,
    norm,
    prod,
    std,
    std_mean,
    var,
    var_mean,
)
from minifw.tensor.shaping import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_shapes,
    broadcast_tensors,
    broadcast_to,
    chunk,
    diag,
    diag_embed,
    diagonal,
    dstack,
    flatten,
    flip,
    fliplr,
    flipud,
    hstack,
    movedim,
    narrow,
    repeat_interleave,
    roll,
    select,
    split,
    swapaxes,
    tensor_split,
    tile,
    tril,
    triu,
    unbind,
    unflatten,
    vstack,
)
from minifw.tensor.sorting import (
    argsort,
    argwhere,
    bucketize,
    kthvalue,
    msort,
    nonzero,
    searchsorted,
    sort,
    topk,
    unique,
)
from minifw.tensor_ops import SimpleOps, TensorBackend

# Each op of the op table with a Tensor method is also a function: `mf.exp(t)` is `t.exp()`.
_ELEMENTWISE = {name: getattr(Tensor, name) for name in operators.METHODS}
globals().update(_ELEMENTWISE)
relu_ = vars(Tensor)["relu_"]  # the twin made from the op table (tensor.py)

# ---- PyTorch's function names for Tensor methods and aliases ----

BoolTensor, DoubleTensor = _logic.BoolTensor, _logic.DoubleTensor
FloatTensor, LongTensor = _logic.FloatTensor, _logic.LongTensor
all = Tensor.all  # noqa: A001 - PyTorch's name
allclose = Tensor.allclose
any = Tensor.any  # noqa: A001 - PyTorch's name
bitwise_and = Tensor.bitwise_and
bitwise_not = Tensor.bitwise_not
bitwise_or = Tensor.bitwise_or
bitwise_xor = Tensor.bitwise_xor
bool = dtypes.bool  # noqa: A001 - PyTorch's name torch.bool
equal = Tensor.equal
isclose = Tensor.isclose
isfinite = Tensor.isfinite
isinf = Tensor.isinf
isnan = Tensor.isnan
logical_and = Tensor.logical_and
logical_not = Tensor.logical_not
logical_or = Tensor.logical_or
logical_xor = Tensor.logical_xor
promote_types = dtypes.promote
gather = Tensor.gather
index_add = Tensor.index_add
index_copy = Tensor.index_copy
index_fill = Tensor.index_fill
index_put = Tensor.index_put
index_select = Tensor.index_select
masked_fill = Tensor.masked_fill
masked_select = Tensor.masked_select
scatter = Tensor.scatter
scatter_add = Tensor.scatter_add
take = Tensor.take
take_along_dim = Tensor.take_along_dim
add = Tensor.add
arctan2 = Tensor.atan2
clamp = Tensor.clamp
clamp_max = Tensor.clamp_max
clamp_min = Tensor.clamp_min
clip = Tensor.clamp
div = Tensor.div
divide = Tensor.div
eq = Tensor.eq
fix = Tensor.fix
ge = Tensor.ge
greater = Tensor.gt
greater_equal = Tensor.ge
gt = Tensor.gt
le = Tensor.le
lerp = Tensor.lerp
less = Tensor.lt
less_equal = Tensor.le
lt = Tensor.lt
maximum = Tensor.maximum
minimum = Tensor.minimum
mul = Tensor.mul
multiply = Tensor.mul
ne = Tensor.ne
negative = Tensor.neg
not_equal = Tensor.ne
pow = math_ops.power  # noqa: A001 - PyTorch's name (a number base too)
sub = Tensor.sub
subtract = Tensor.sub
true_divide = Tensor.true_divide

argmin = Tensor.argmin
ger = outer

concat = concatenate = cat
moveaxis = movedim
swapdims = swapaxes

# Loaded on first use (layer 5 and the compiled backends): `import minifw` stays light.
_LAZY = {
    "compile": ("minifw.compiler.compile", "compile"),
    "profiler": ("minifw.tools.profiler", None),
    "viz": ("minifw.tools.viz", None),
    "FastOps": ("minifw.fast_ops", "FastOps"),
    "CudaOps": ("minifw.cuda_ops", "CudaOps"),
    "cpu": ("minifw.cpu", None),
}


def __getattr__(name: str) -> object:
    """Import what `_LAZY` names only when first asked for (`mf.compile`, `mf.FastOps`)."""
    if name not in _LAZY:  # a name left out on purpose says why (minifw/core/unsupported.py)
        raise _unsupported.missing("torch", "minifw", name)
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


__version__ = "0.1.0"


# Every public name above and the lazily loaded ones (tests/test_pytorch_page.py checks the
# list against the module).
__all__ = [
    "BoolTensor", "CudaOps", "DType", "DoubleTensor", "FastOps", "FloatTensor", "Generator",
    "LongTensor", "Scalar", "SimpleOps", "Size", "Tensor", "TensorBackend", "add", "addmm", "all",
    "allclose", "amax", "amin", "any", "arange", "arctan2", "argmax", "argmin", "argsort",
    "argwhere", "as_tensor", "atleast_1d", "atleast_2d", "atleast_3d", "autodiff", "autograd",
    "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "bmm", "bool", "broadcast_shapes",
    "broadcast_tensors", "broadcast_to", "bucketize", "cat", "chunk", "clamp", "clamp_max",
    "clamp_min", "clip", "clone", "compile", "concat", "concatenate", "count_nonzero", "cpu",
    "cuda", "cumprod", "cumsum", "datasets", "default_generator", "device", "diag", "diag_embed",
    "diagonal", "div", "divide", "dot", "double", "dstack", "dtypes", "einsum", "empty",
    "empty_like", "enable_grad", "eq", "equal", "eye", "fix", "flatten", "flip", "fliplr",
    "flipud", "float", "float32", "float64", "from_numpy", "full", "full_like", "gather", "ge",
    "ger", "get_backend", "get_default_dtype", "get_num_threads", "greater", "greater_equal", "gt",
    "hstack", "index_add", "index_copy", "index_fill", "index_put", "index_select",
    "inference_mode", "initial_seed", "int64", "is_grad_enabled", "is_inference_mode_enabled",
    "is_tensor", "isclose", "isfinite", "isinf", "isnan", "kthvalue", "le", "lerp", "less",
    "less_equal", "linalg", "linspace", "load", "logical_and", "logical_not", "logical_or",
    "logical_xor", "logspace", "logsumexp", "long", "lt", "manual_seed", "masked_fill",
    "masked_select", "matmul", "max", "maximum", "mean", "meshgrid", "min", "minimum", "mm",
    "moveaxis", "movedim", "msort", "mul", "multiply", "mv", "narrow", "ne", "negative", "nn",
    "no_grad", "nonzero", "norm", "not_equal", "numel", "ones", "ones_like", "operators", "optim",
    "outer", "pow", "prod", "profiler", "promote_types", "rand", "rand_like", "randint", "randn",
    "randn_like", "randperm", "relu_", "repeat_interleave", "roll", "save", "scatter",
    "scatter_add", "searchsorted", "seed", "select", "serialization", "set_default_backend",
    "set_default_dtype", "set_grad_enabled", "set_num_threads", "sort", "split", "stack", "std",
    "std_mean", "sub", "subtract", "sum", "swapaxes", "swapdims", "take", "take_along_dim",
    "tensor", "tensor_split", "tile", "topk", "tril", "tril_indices", "triu", "triu_indices",
    "true_divide", "unbind", "unflatten", "unique", "utils", "var", "var_mean", "viz", "vstack",
    "where", "zeros", "zeros_like"
]  # fmt: skip
__all__ += operators.METHODS  # the `mf.` functions of the op table's methods
