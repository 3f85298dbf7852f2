"""CUDA kernels for kernels_numba.ops.dropout: grid-stride loops over flat views.

The RNG is kernels_numba.cpu.dropout.hash_uniform compiled as a device function:
a pure function of (key, flat index), so the mask is the CPU twin's for any launch.
"""

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import dropout as _rng

F32_1D = "float32[::1]"

# inline="always": compile_ptx without a driver cannot compile a separate device function.
_hash_uniform = device_function(_rng.hash_uniform, inline="always")
_ZERO = float32(0.0)


# kernels


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, float32, float32, uint64)")
def _dropout_forward_kernel(y, mask, x, rate, keep_scale, key):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        m = keep_scale if _hash_uniform(key, i) >= rate else _ZERO
        mask[i] = m
        y[i] = x[i] * m


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D})")
def _dropout_backward_kernel(dx, dy, mask):
    for i in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        dx[i] = dy[i] * mask[i]


# launchers


def _flat(a):
    return a.reshape(a.size)


def _launch_flat(k, y, *args):
    grid, block = grid_1d(min(y.size, 65536 * 256))
    launch(k, grid, block, _flat(y), *args)


def dropout_forward(y, mask, x, rate, keep_scale, key):
    _launch_flat(_dropout_forward_kernel, y, _flat(mask), _flat(x), rate, keep_scale, key)


def dropout_backward(dx, dy, mask):
    _launch_flat(_dropout_backward_kernel, dx, _flat(dy), _flat(mask))
