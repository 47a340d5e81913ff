"""Neural-network building blocks: the Module tree, Parameters, layers, losses, functional."""

from minifw.nn import functional
from minifw.nn.attention import MultiheadAttention
from minifw.nn.containers import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from minifw.nn.layers import (
    ELU,
    GELU,
    SELU,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    Conv1d,
    Conv2d,
    CosineSimilarity,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    Embedding,
    Flatten,
    GroupNorm,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSigmoid,
    LogSoftmax,
    MaxPool2d,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Softsign,
    Tanh,
    Unflatten,
)  # fmt: skip
from minifw.nn.losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)  # fmt: skip
from minifw.nn.module import Module, Parameter
from minifw.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from minifw.nn.spatial import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    MaxPool1d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
    ZeroPad1d,
    ZeroPad2d,
)
from minifw.nn.transformer import TransformerEncoder, TransformerEncoderLayer
from minifw.tensor.tensor import TensorParameter

# Parameter(tensor) builds a TensorParameter; registering it makes isinstance agree.
Parameter.register(TensorParameter)

_LAZY_SUBMODULES = ("init", "utils")  # loaded on first use, as attributes


def __getattr__(name: str) -> object:
    """`nn.init` and `nn.utils`, imported the first time they are asked for."""
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"minifw.nn.{name}")
    from minifw.core import unsupported  # a name left out on purpose says why

    raise unsupported.missing("torch.nn", "minifw.nn", name)


__all__ = [
    "BCEWithLogitsLoss", "BatchNorm2d", "BatchNorm3d", "CosineSimilarity", "Dropout1d",
    "Dropout2d", "Dropout3d", "ELU", "GELU", "GroupNorm", "Hardsigmoid", "Hardswish",
    "Hardtanh", "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LeakyReLU", "LogSigmoid",
    "Mish", "ModuleDict", "ParameterDict", "ParameterList", "ReLU6", "SELU", "SiLU",
    "SmoothL1Loss", "Softplus", "Softsign", "Unflatten", "init", "utils",
    "GRU", "GRUCell", "LSTM", "LSTMCell", "MultiheadAttention", "RNN", "RNNBase", "RNNCell",
    "RNNCellBase", "TransformerEncoder", "TransformerEncoderLayer",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AvgPool1d", "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d",
    "MaxPool1d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d",
    "AvgPool2d", "BCELoss", "BatchNorm1d", "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "LayerNorm", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d",
    "Module", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax",
    "Tanh", "functional",
]  # fmt: skip
