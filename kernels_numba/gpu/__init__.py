"""CUDA kernels (@cuda.jit through kernels_numba._cuda) and their launchers; same names as kernels_numba.cpu."""
