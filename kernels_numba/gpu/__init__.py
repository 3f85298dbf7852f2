"""CUDA kernels (@cuda.jit through kernels_numba._cuda) and their launchers.

Same module and function names as kernels_numba.cpu."""
