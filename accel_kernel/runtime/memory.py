"""The memory manager: every buffer a compiled target allocates goes through `Memory.alloc`,
which knows the bytes in use, the peak and how many buffers were made (a buffer's bytes are
returned when Python drops it). Events for the dashboard come later (DESIGN.md, Runtime)."""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np


@dataclass
class Memory:
    in_use: int = 0          # bytes of live buffers
    peak: int = 0
    allocations: int = 0
    allocated: int = 0       # bytes ever allocated

    def alloc(self, shape: tuple[int, ...] | int, dtype) -> np.ndarray:
        """A new uninitialised buffer (the compiled kernel writes every element)."""
        buffer = np.empty(shape, dtype=dtype)
        nbytes = buffer.nbytes
        self.in_use += nbytes
        self.allocated += nbytes
        self.allocations += 1
        self.peak = max(self.peak, self.in_use)
        weakref.finalize(buffer, self._release, nbytes)
        return buffer

    def _release(self, nbytes: int) -> None:
        self.in_use -= nbytes
