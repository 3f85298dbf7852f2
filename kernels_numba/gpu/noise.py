"""CUDA kernels for kernels_numba.ops.noise: grid-stride loops over flat views, the
RNG of kernels_numba.cpu.dropout compiled as a device function (same draws as the CPU).
The key comes by value or from the uint32 steps buffer (gpu.dropout.resolve_key)."""

import math

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import dropout as _rng
from kernels_numba.cpu import noise as _cpu
from kernels_numba.gpu.dropout import resolve_key, steps_args

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
F32_3D = "float32[:, :, ::1]"
_MAX_THREADS = 65536 * 256

_hash_uniform = device_function(_rng.hash_uniform, inline="always")
_cos_2pi = device_function(_cpu.cos_2pi, inline="always")


@device_function
def _normal(key, i):
    u1 = float32(1.0) - _hash_uniform(key, 2 * i)
    u2 = _hash_uniform(key, 2 * i + 1)
    return math.sqrt(float32(-2.0) * math.log(u1)) * _cos_2pi(u2)


@device_function
def _truncated_normal(key, i):
    for k in range(_cpu.TRUNCATED_TRIES):
        n = _normal(key, i * _cpu.TRUNCATED_TRIES + k)
        if float32(-2.0) <= n <= float32(2.0):
            return n
    return float32(0.0)


# kernels

@kernel(f"void({F32_1D}, float32, float32, uint64, boolean, uint32[::1])")
def _gaussian_fill_kernel(out, mean, stddev, key, use_steps, steps):
    key = resolve_key(key, use_steps, steps)
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = mean + stddev * _normal(key, i)


@kernel(f"void({F32_1D}, float32, float32, uint64, boolean, uint32[::1])")
def _uniform_fill_kernel(out, minval, span, key, use_steps, steps):
    key = resolve_key(key, use_steps, steps)
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = minval + span * _hash_uniform(key, i)


@kernel(f"void({F32_1D}, float32, float32, uint64, boolean, uint32[::1])")
def _truncated_normal_fill_kernel(out, mean, stddev, key, use_steps, steps):
    key = resolve_key(key, use_steps, steps)
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = mean + stddev * _truncated_normal(key, i)


@kernel(f"void({F32_1D}, float32, float32, uint64, boolean, uint32[::1])")
def _dropout_mask_kernel(mask, rate, keep_scale, key, use_steps, steps):
    key = resolve_key(key, use_steps, steps)
    for i in range(cuda.grid(1), mask.size, cuda.gridsize(1)):
        mask[i] = keep_scale if _hash_uniform(key, i) >= rate else float32(0.0)


@kernel(f"void({F32_3D}, {F32_3D}, {F32_2D})")
def _channel_scale_kernel(y, x, mask):
    s = x.shape[1]
    c = x.shape[2]
    for idx in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        ch = idx % c
        r = idx // c
        p = r % s
        b = r // s
        y[b, p, ch] = x[b, p, ch] * mask[b, ch]


# launchers

def _grid(n):
    return grid_1d(min(max(n, 1), _MAX_THREADS))


def _flat(a):
    return a.reshape(a.size)


def _nsc(a):
    n, c = a.shape[0], a.shape[a.ndim - 1]  # (the simulator's shapes reject index -1)
    return a.reshape(n, a.size // max(n * c, 1), c)


def gaussian_fill(out, mean, stddev, key, steps=None):
    grid, block = _grid(out.size)
    launch(_gaussian_fill_kernel, grid, block, _flat(out), mean, stddev, *steps_args(key, steps))


def uniform_fill(out, minval, span, key, steps=None):
    grid, block = _grid(out.size)
    launch(_uniform_fill_kernel, grid, block, _flat(out), minval, span, *steps_args(key, steps))


def truncated_normal_fill(out, mean, stddev, key, steps=None):
    grid, block = _grid(out.size)
    launch(_truncated_normal_fill_kernel, grid, block, _flat(out), mean, stddev,
           *steps_args(key, steps))


def dropout_mask(mask, rate, keep_scale, key, steps=None):
    grid, block = _grid(mask.size)
    launch(_dropout_mask_kernel, grid, block, _flat(mask), rate, keep_scale,
           *steps_args(key, steps))


def channel_scale(y, x, mask):
    grid, block = _grid(x.size)
    launch(_channel_scale_kernel, grid, block, _nsc(y), _nsc(x), mask)
