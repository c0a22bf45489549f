"""Intermediate representations after the front end; `core` is what `desugar` gives."""
from .core import free_vars, verify_core

__all__ = ["free_vars", "verify_core"]
