"""CUDA kernels for kernels_numba.ops.constraint: one thread per norm group (its sum of
squares in order, then the shared factor, cpu.constraint.factor), and an elementwise
non_neg. Each element is written by one thread only.
"""

import math

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import constraint as _math

F32_1D = "float32[::1]"
_ZERO = float32(0.0)

_factor = device_function(_math.factor, inline="always")


@kernel(f"void({F32_1D}, int64, int64, int64, int32, float32, float32, float32)")
def _rescale_kernel(w, outer, reduced, inner, mode, lo, hi, rate):
    g = cuda.grid(1)
    if g < outer * inner:
        o = g // inner
        i = g - o * inner
        base = o * reduced * inner + i
        acc = _ZERO
        for r in range(reduced):
            v = w[base + r * inner]
            acc += v * v
        f = _factor(math.sqrt(acc), mode, lo, hi, rate)
        for r in range(reduced):
            w[base + r * inner] = w[base + r * inner] * f


@kernel(f"void({F32_1D})")
def _non_neg_kernel(w):
    j = cuda.grid(1)
    if j < w.size:
        v = w[j]
        if v < _ZERO:
            w[j] = _ZERO


def rescale(w, outer, reduced, inner, mode, lo, hi, rate):
    grid, block = grid_1d(outer * inner, 128)
    launch(_rescale_kernel, grid, block, w.reshape(w.size), outer, reduced, inner,
           int(mode), lo, hi, rate)


def non_neg(w):
    grid, block = grid_1d(w.size, 256)
    launch(_non_neg_kernel, grid, block, w.reshape(w.size))
