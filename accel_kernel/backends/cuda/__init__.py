"""The `cuda` target: numba.cuda kernels from the fused program (issue 12). Everything
CUDA-specific lives in this package (numba-cuda today; numba-cuda-mlir later)."""
