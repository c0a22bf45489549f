"""Run-time services shared by the back ends: cancellation (memory manager, scheduler and
events arrive with the compiled back ends). Nothing here imports numba or Jupyter."""
from .cancel import CancelToken

__all__ = ["CancelToken"]
