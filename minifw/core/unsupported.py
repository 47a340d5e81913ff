"""PyTorch names that minifw deliberately leaves out, and why.

A PyTorch program that reaches one of these gets a NotImplementedError naming the feature
and the reason, never a bare AttributeError: `minifw.__getattr__`, the nn and functional
modules and `Tensor.__getattr__` look names up here once normal lookup has failed, so
this costs nothing on any hot path. docs/pytorch.md lists the same names
(tests/test_pytorch_page.py keeps the two in step).
"""

from __future__ import annotations

from typing import Any

SPARSE = "sparse tensors are out of scope (every minifw tensor is dense, strided storage)"
COMPLEX = "complex numbers are out of scope (dtypes are float64, float32, int64 and bool)"
HALF = "half precision is out of scope (dtypes are float64, float32, int64 and bool)"
SMALL_INT = "only int64 integers are provided (PyTorch's default integer dtype)"
AUTOCAST = "mixed precision (autocast) is out of scope: minifw computes in the tensor's dtype"
DISTRIBUTED = "multi-process and multi-GPU training are out of scope (one process, one device)"
JIT = "TorchScript is out of scope; minifw's own `minifw.compile` captures training steps"
FFT = "Fourier transforms are out of scope"
QUANT = "quantization is out of scope"
TRANSPOSED = "transposed convolutions are not provided (Conv1d and Conv2d are)"

# namespace -> {name: reason}; the namespace is how a PyTorch program spells it.
UNSUPPORTED: dict[str, dict[str, str]] = {
    "torch": {
        "sparse_coo_tensor": SPARSE,
        "sparse_csr_tensor": SPARSE,
        "complex": COMPLEX,
        "complex64": COMPLEX,
        "complex128": COMPLEX,
        "view_as_complex": COMPLEX,
        "view_as_real": COMPLEX,
        "float16": HALF,
        "half": HALF,
        "bfloat16": HALF,
        "int32": SMALL_INT,
        "int16": SMALL_INT,
        "int8": SMALL_INT,
        "uint8": SMALL_INT,
        "int": SMALL_INT,
        "short": SMALL_INT,
        "autocast": AUTOCAST,
        "distributed": DISTRIBUTED,
        "jit": JIT,
        "fft": FFT,
        "quantization": QUANT,
        "ao": QUANT,
        "scatter_reduce": "only the sum reduction is provided (scatter_add)",
    },
    "torch.autograd": {
        "forward_ad": "forward-mode AD is out of scope (jvp is computed by double backward)",
        "gradgradcheck": "not provided: run gradcheck on a function returning "
        "autograd.grad(..., create_graph=True)",
    },
    "torch.linalg": {
        "norm": "matrix norms need an SVD; use linalg.vector_norm or Tensor.norm",
        "inv": "matrix inverses and factorizations are out of scope",
        "svd": "matrix inverses and factorizations are out of scope",
    },
    "torch.nn.init": {
        "sparse_": SPARSE,
    },
    "torch.nn.utils": {
        "rnn": "packed sequences are out of scope: pad, and mask by length",
    },
    "torch.nn": {
        "DataParallel": DISTRIBUTED,
        "parallel": DISTRIBUTED,
        "ConvTranspose1d": TRANSPOSED,
        "ConvTranspose2d": TRANSPOSED,
        "Conv3d": "3-D convolution is not provided (Conv1d and Conv2d are)",
        "Transformer": "only the encoder (TransformerEncoder and its layer) is provided",
        "TransformerDecoder": "only the encoder is provided",
        "TransformerDecoderLayer": "only the encoder is provided",
    },
    "torch.nn.functional": {
        "conv_transpose1d": TRANSPOSED,
        "conv_transpose2d": TRANSPOSED,
        "conv3d": "3-D convolution is not provided (conv1d and conv2d are)",
    },
    "torch.Tensor": {
        "to_sparse": SPARSE,
        "is_sparse": SPARSE,
        "half": HALF,
        "bfloat16": HALF,
        "short": SMALL_INT,
        "byte": SMALL_INT,
        "char": SMALL_INT,
        "share_memory_": DISTRIBUTED,
        "is_inference": "inference_mode does not mark tensors (it works as no_grad)",
    },
}


def refuse(namespace: str, name: str) -> NotImplementedError | None:
    """The error to raise for `namespace.name` if minifw leaves it out on purpose, else None."""
    reason = UNSUPPORTED.get(namespace, {}).get(name)
    if reason is None:
        return None
    return NotImplementedError(f"{namespace}.{name} is not supported by minifw: {reason}")


def missing(namespace: str, module_name: str, name: str) -> Exception:
    """The error for a name a module lacks: NotImplementedError if left out on purpose."""
    refused = refuse(namespace, name)
    if refused is not None:
        return refused
    return AttributeError(f"module {module_name!r} has no attribute {name!r}")


def module_getattr(namespace: str, module_name: str) -> Any:
    """A module-level `__getattr__` that refuses `namespace`'s left-out names with the reason."""

    def refuse_missing(name: str) -> Any:
        raise missing(namespace, module_name, name)

    return refuse_missing


__all__ = ["UNSUPPORTED", "missing", "module_getattr", "refuse"]
