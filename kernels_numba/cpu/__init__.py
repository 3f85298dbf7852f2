"""CPU twins of every op: NumPy/BLAS and @numba.njit(parallel=True) loops.

Same module and function names as kernels_numba.gpu."""
