"""Utilities: data loading (`utils.data`) and activation checkpointing (`utils.checkpoint`)."""

from __future__ import annotations

from minifw.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
