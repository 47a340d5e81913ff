"""Neural-network building blocks: the Module tree, Parameters, layers, losses, functional."""

from minifw.nn import functional
from minifw.nn.containers import ModuleList, Sequential
from minifw.nn.layers import (
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
from minifw.nn.losses import BCELoss, CrossEntropyLoss, MSELoss, NLLLoss
from minifw.nn.module import Module, Parameter
from minifw.tensor.tensor import TensorParameter

# Parameter(tensor) builds a TensorParameter; registering it makes isinstance agree.
Parameter.register(TensorParameter)

__all__ = [
    "AvgPool2d", "BCELoss", "BatchNorm1d", "Conv1d", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "LayerNorm", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d",
    "Module", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax",
    "Tanh", "functional",
]  # fmt: skip
