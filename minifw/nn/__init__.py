"""Neural-network building blocks: the Module tree and its Parameters."""

from .module import Module, Parameter

__all__ = ["Module", "Parameter"]
