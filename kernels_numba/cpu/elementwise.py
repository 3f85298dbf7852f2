"""CPU twins of kernels_numba.ops.elementwise (validated arguments only)."""

import numba
import numpy as np


@numba.njit(parallel=True, cache=True)
def _axpy(y, x, alpha):
    for i in numba.prange(y.size):
        y[i] += alpha * x[i]


def fill(y, value):
    y.fill(value)


def copy(y, x):
    np.copyto(y, x)


def scale(y, x, alpha):
    np.multiply(x, alpha, out=y)


@numba.njit(cache=True)
def _axpy_serial(y, x, alpha):
    for i in range(y.size):
        y[i] += alpha * x[i]


_SERIAL_BELOW = 1 << 15  # small work stays on the calling thread (a parallel region
# waits for the pool's threads: ~5 ms for 64 floats on a loaded 2-core machine)


def axpy(y, x, alpha):
    (_axpy_serial if y.size < _SERIAL_BELOW else _axpy)(y.reshape(-1), x.reshape(-1), alpha)


@numba.njit(cache=True)
def _scale_rows(y, w):
    for r in range(y.shape[0]):
        for c in range(y.shape[1]):
            y[r, c] *= w[r]


def scale_rows(y, w):
    _scale_rows(y, w)


def cast_i32_to_f32(y, x):
    np.copyto(y.reshape(-1), x.reshape(-1), casting="unsafe")


def cast_f32_to_f16(y, x):
    np.copyto(y, x, casting="unsafe")


def cast_f16_to_f32(y, x):
    np.copyto(y, x)
