"""Neural-network building blocks: the Module tree, Parameters, layers, losses, functional."""

from ..tensor import TensorParameter
from . import functional
from .containers import ModuleList, Sequential
from .layers import (
    AvgPool2d,
    BatchNorm1d,
    Conv1d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    LayerNorm,
    Linear,
    LogSoftmax,
    MaxPool2d,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from .losses import BCELoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module, Parameter

# Parameter(tensor) builds a TensorParameter; registering it makes isinstance agree.
Parameter.register(TensorParameter)

__all__ = [
    "AvgPool2d", "BCELoss", "BatchNorm1d", "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "LayerNorm", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d",
    "Module", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax",
    "Tanh", "functional",
]  # fmt: skip
