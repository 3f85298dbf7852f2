"""CUDA kernels for kernels_numba.ops.augment_color: one thread per element for
brightness and contrast's output, one per (sample, channel) plane for the channel means
and contrast's backward (each a sum in a fixed order: no atomics). The helpers are
kernels_numba.cpu.augment_color's, recompiled from their Python source."""

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import augment_color as _cpu
from kernels_numba.cpu import dropout as _rng

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
F32_4D = "float32[:, :, :, ::1]"
_MAX_THREADS = 65536 * 256
_ZERO = float32(0.0)

_hash_uniform = device_function(_rng.hash_uniform, inline="always")
_clip = device_function(_cpu.clip.py_func, inline="always")
_plane_mean = device_function(_cpu.plane_mean.py_func, inline="always")
_contrast_plane_backward = device_function(_cpu.contrast_plane_backward.py_func,
                                           inline="always")


# kernels


@kernel(f"void({F32_1D}, uint64, float32, float32)")
def _uniform_kernel(u, key, lo, hi):
    for n in range(cuda.grid(1), u.size, cuda.gridsize(1)):
        u[n] = lo + (hi - lo) * _hash_uniform(key, n)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, int64, float32, float32)")
def _brightness_kernel(y, x, delta, per_sample, lo, hi):
    for idx in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        y[idx] = _clip(x[idx] + delta[idx // per_sample], lo, hi)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, int64, float32, float32)")
def _brightness_backward_kernel(dx, dy, x, delta, per_sample, lo, hi):
    for idx in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[idx] + delta[idx // per_sample]
        g = _ZERO
        if (lo <= v and v <= hi) or v != v:
            g = dy[idx]
        dx[idx] = g


@kernel(f"void({F32_2D}, {F32_4D})")
def _mean_kernel(mean, x):
    c = x.shape[3]
    for t in range(cuda.grid(1), mean.size, cuda.gridsize(1)):
        b = t // c
        mean[b, t - b * c] = _plane_mean(x, b, t - b * c)


@kernel(f"void({F32_4D}, {F32_2D}, {F32_4D}, {F32_1D}, float32, float32)")
def _contrast_kernel(y, mean, x, factor, lo, hi):
    h = x.shape[1]
    w = x.shape[2]
    c = x.shape[3]
    for idx in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        j = p % w
        p = p // w
        i = p % h
        b = p // h
        mu = mean[b, ch]
        y[b, i, j, ch] = _clip((x[b, i, j, ch] - mu) * factor[b] + mu, lo, hi)


@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {F32_2D}, {F32_1D}, float32, float32)")
def _contrast_backward_kernel(dx, dy, x, mean, factor, lo, hi):
    c = x.shape[3]
    for t in range(cuda.grid(1), x.shape[0] * c, cuda.gridsize(1)):
        b = t // c
        _contrast_plane_backward(dx, dy, x, mean, factor, b, t - b * c, lo, hi)


# launchers


def _go(k, n, *args):
    grid, block = grid_1d(min(max(n, 1), _MAX_THREADS))
    launch(k, grid, block, *args)


def random_uniform_params(u, key, lo, hi):
    _go(_uniform_kernel, u.size, u, key, lo, hi)


def _flat(a):
    return a.reshape(a.size)


def brightness_forward(y, x, delta, lo, hi):
    _go(_brightness_kernel, x.size, _flat(y), _flat(x), delta, x.size // x.shape[0], lo, hi)


def brightness_backward(dx, dy, x, delta, lo, hi):
    _go(_brightness_backward_kernel, x.size, _flat(dx), _flat(dy), _flat(x), delta,
        x.size // x.shape[0], lo, hi)


def contrast_forward(y, mean, x, factor, lo, hi):
    _go(_mean_kernel, mean.size, mean, x)
    _go(_contrast_kernel, x.size, y, mean, x, factor, lo, hi)


def contrast_backward(dx, dy, x, mean, factor, lo, hi):
    _go(_contrast_backward_kernel, x.shape[0] * x.shape[3], dx, dy, x, mean, factor, lo, hi)
