"""CUDA kernel for kernels_numba.ops.conv_transpose.bias_activation: one thread per
element (grid-stride); the GEMM and col2im of a transposed convolution are gpu.conv2d's."""

import math

from numba import float32

from kernels_numba._cuda import cuda, grid_1d, kernel, launch

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
_MAX_THREADS = 65536 * 256


@kernel(f"void({F32_2D}, {F32_1D}, int32, int32)")
def _bias_act_kernel(y, b, has_bias, act):
    f = y.shape[1]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        r = idx // f
        j = idx - r * f
        v = y[r, j]
        if has_bias:
            v += b[j]
        if act == 1:
            v = float32(0.0) if v < float32(0.0) else v
        elif act == 2:
            v = float32(1.0) / (float32(1.0) + math.exp(-v))
        elif act == 3:
            v = math.tanh(v)
        y[r, j] = v


def bias_activation(y, b, act):
    grid, block = grid_1d(min(max(y.size, 1), _MAX_THREADS))
    launch(_bias_act_kernel, grid, block, y, y[0] if b is None else b, int(b is not None), act)
