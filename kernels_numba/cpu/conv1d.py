"""CPU twin of kernels_numba.ops.conv1d: dilated im2col / col2im and 1-D upsampling.

col2im gathers (each input element sums the column entries that read it, in kernel-tap
order) instead of scattering, so no two writes race and the result is deterministic.
"""

import numba
import numpy as np

_ZERO = np.float32(0.0)


@numba.njit(parallel=True, cache=True)
def _im2col(cols, x, kernel_size, stride, dilation, pad_left):
    n, t_len, c = x.shape
    t_out = cols.shape[0] // n
    for row in numba.prange(n * t_out):
        i = row // t_out
        o = row % t_out
        for k in range(kernel_size):
            t = o * stride + k * dilation - pad_left
            for ch in range(c):
                cols[row, k * c + ch] = x[i, t, ch] if 0 <= t < t_len else _ZERO


@numba.njit(parallel=True, cache=True)
def _col2im(dx, cols, kernel_size, stride, dilation, pad_left):
    n, t_len, c = dx.shape
    t_out = cols.shape[0] // n
    for row in numba.prange(n * t_len):
        i = row // t_len
        t = row % t_len
        for ch in range(c):
            dx[i, t, ch] = _ZERO
        for k in range(kernel_size):
            q = t + pad_left - k * dilation
            if q >= 0 and q % stride == 0 and q // stride < t_out:
                src = i * t_out + q // stride
                for ch in range(c):
                    dx[i, t, ch] += cols[src, k * c + ch]


@numba.njit(parallel=True, cache=True)
def _upsample(y, x, size):
    n, t_len, c = x.shape
    for i in numba.prange(n):
        for t in range(t_len):
            for j in range(size):
                for ch in range(c):
                    y[i, t * size + j, ch] = x[i, t, ch]


@numba.njit(parallel=True, cache=True)
def _upsample_backward(dx, dy, size):
    n, t_len, c = dx.shape
    for i in numba.prange(n):
        for t in range(t_len):
            for ch in range(c):
                acc = _ZERO
                for j in range(size):
                    acc += dy[i, t * size + j, ch]
                dx[i, t, ch] = acc


def conv1d_im2col(cols, x, kernel_size, stride, dilation, pad_left):
    _im2col(cols, x, kernel_size, stride, dilation, pad_left)


def conv1d_col2im(dx, cols, kernel_size, stride, dilation, pad_left):
    _col2im(dx, cols, kernel_size, stride, dilation, pad_left)


def upsampling1d_forward(y, x, size):
    _upsample(y, x, size)


def upsampling1d_backward(dx, dy, size):
    _upsample_backward(dx, dy, size)
