"""Run-time services shared by the back ends: cancellation (`cancel`), the deep-recursion stack
(`deep`), the host memory manager (`memory`), the event stream (`events`) and the device memory
policy (`budget`; the scheduler comes later). Nothing here imports numba or Jupyter."""
from .cancel import CancelToken

__all__ = ["CancelToken"]
