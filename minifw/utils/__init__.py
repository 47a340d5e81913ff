"""Utilities: data loading (`utils.data`) and activation checkpointing (`utils.checkpoint`)."""

from __future__ import annotations

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
