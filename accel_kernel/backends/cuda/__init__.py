"""The `cuda` back end (numba.cuda): fused flat programs compiled to CUDA kernels.

Everything CUDA-specific lives in this package (numba-cuda is in maintenance mode; a later
switch to numba-cuda-mlir should be this package alone):

- `dialect`: how device functions spell numpy's scalar functions (`math.sqrt`), for the
  scalar translator shared with `cpu` (`backends/cpu/scalar_source.py`); `device_math`: the
  `math` generated code reads (numpy's IEEE functions on the simulator, so that it computes
  what a GPU computes) and `rint`;
- `codegen`: the Python source of one module of `@cuda.jit` kernels and their host
  functions, from the fused program (stage `codegen` for `cuda`);
- `device`: whether a GPU (or the simulator) is there, and the launches and transfers the
  generated host functions call;
- `driver`: runs a fused program: host statements as the `cpu` driver runs them, kernels on
  the device;
- `ptx`: kernels compiled to PTX and assembled by `ptxas`, with the resources each uses (no
  GPU needed);
- `memory`: the device memory manager every device buffer goes through (`runtime/budget.py`
  holds its policy);
- `primitives`, `segmented`, `sort`, `blocks`: the device primitives (source templates of
  reductions, scans, filters, segmented reductions and scans, `reduce_by_index`, radix
  sort) the reduction, scan, filter and segmented kernels will launch (docs/cuda.md);
  `simulator`: what the simulator lacks (warp shuffles), so one source runs on both.

numba.cuda is imported only by the modules that compile or launch, so importing this
package stays light.
"""
