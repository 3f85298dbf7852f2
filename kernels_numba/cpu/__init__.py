"""CPU twins of every op: NumPy/BLAS and @numba.njit(parallel=True) loops; same names as kernels_numba.gpu."""
