"""CUDA kernels for kernels_numba.ops.augment_geometric: one thread per output element
(grid-stride, consecutive threads on consecutive channels), one per sample for the
parameter draws, one per (sample, channel) plane for the sampler's backward (a fixed
order of additions: no atomics).

The per-pixel helpers are kernels_numba.cpu.augment_geometric's, recompiled from their
Python source as device functions with the device versions of the helpers they call.
"""

import types

from numba import float32

from kernels_numba._cuda import cuda, device_function, kernel
from kernels_numba.cpu import augment_geometric as _cpu
from kernels_numba.cpu import dropout as _rng
from kernels_numba.gpu._window import launch_elements, nhwc_index, read_or_zero

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
I32_2D = "int32[:, ::1]"
F32_4D = "float32[:, :, :, ::1]"
_ZERO = float32(0.0)
_ONE = float32(1.0)
_HALF = float32(0.5)


def _device(dispatcher, **helpers):
    """The njit helper's Python function as a device function, calling `helpers`."""
    f = dispatcher.py_func
    env = dict(f.__globals__)
    env.update(helpers)
    clone = types.FunctionType(f.__code__, env, f.__name__, f.__defaults__, f.__closure__)
    return device_function(clone, inline="always")


_hash_uniform = device_function(_rng.hash_uniform, inline="always")
_fix_index = _device(_cpu.fix_index)
_round = _device(_cpu.round_coordinate)
_sample = _device(_cpu.sample, fix_index=_fix_index, round_coordinate=_round)
_scatter = _device(_cpu.scatter, fix_index=_fix_index, round_coordinate=_round)
_sincos = _device(_cpu.sincos)
_affine_row = _device(_cpu.affine_row, hash_uniform=_hash_uniform, sincos=_sincos)
_crop_offset = _device(_cpu.crop_offset, hash_uniform=_hash_uniform)


# kernels


@kernel(f"void({F32_1D}, uint64)")
def _flip_params_kernel(flips, key):
    for n in range(cuda.grid(1), flips.size, cuda.gridsize(1)):
        flips[n] = _ONE if _hash_uniform(key, n) <= _HALF else _ZERO


@kernel(f"void({F32_4D}, {F32_4D}, {F32_1D}, boolean, boolean)")
def _flip_kernel(y, x, flips, horizontal, vertical):
    h, w = y.shape[1], y.shape[2]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        b, i, j, ch = nhwc_index(y, idx)
        on = flips[b] != _ZERO
        si = h - 1 - i if on and vertical else i
        sj = w - 1 - j if on and horizontal else j
        y[b, i, j, ch] = x[b, si, sj, ch]


@kernel(f"void({F32_2D}, uint64, float32, float32, float32, float32, float32, float32, "
        "float32, float32, float32, float32, float32, float32, boolean)")
def _affine_params_kernel(m, key, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, h, w, same_zoom):
    for n in range(cuda.grid(1), m.shape[0], cuda.gridsize(1)):
        _affine_row(m, n, h, w, key, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, same_zoom)


@kernel(f"void({F32_4D}, {F32_4D}, {F32_2D}, int64, int64, float32)")
def _affine_kernel(y, x, m, interp, fill, fill_value):
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        b, i, j, ch = nhwc_index(y, idx)
        xf = float32(j)
        yf = float32(i)
        sx = m[b, 0] * xf + m[b, 1] * yf + m[b, 2]
        sy = m[b, 3] * xf + m[b, 4] * yf + m[b, 5]
        y[b, i, j, ch] = _sample(x, b, sy, sx, ch, interp, fill, fill_value)


@kernel(f"void({F32_4D}, {F32_4D}, {F32_2D}, int64, int64)")
def _affine_backward_kernel(dx, dy, m, interp, fill):
    n, h, w, c = dx.shape
    ho, wo = dy.shape[1], dy.shape[2]
    for t in range(cuda.grid(1), n * c, cuda.gridsize(1)):
        b = t // c
        ch = t - b * c
        for i in range(h):
            for j in range(w):
                dx[b, i, j, ch] = _ZERO
        for i in range(ho):
            yf = float32(i)
            for j in range(wo):
                xf = float32(j)
                sx = m[b, 0] * xf + m[b, 1] * yf + m[b, 2]
                sy = m[b, 3] * xf + m[b, 4] * yf + m[b, 5]
                _scatter(dx, b, sy, sx, ch, dy[b, i, j, ch], interp, fill)


@kernel(f"void({I32_2D}, uint64, int64, int64)")
def _crop_params_kernel(offsets, key, room_h, room_w):
    for n in range(cuda.grid(1), offsets.shape[0], cuda.gridsize(1)):
        offsets[n, 0] = _crop_offset(key, 2 * n, room_h)
        offsets[n, 1] = _crop_offset(key, 2 * n + 1, room_w)


@kernel(f"void({F32_4D}, {F32_4D}, {I32_2D})")
def _crop_kernel(y, x, offsets):
    ho, wo = y.shape[1], y.shape[2]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        b, i, j, ch = nhwc_index(y, idx)
        top = min(max(offsets[b, 0], 0), x.shape[1] - ho)
        left = min(max(offsets[b, 1], 0), x.shape[2] - wo)
        y[b, i, j, ch] = x[b, top + i, left + j, ch]


@kernel(f"void({F32_4D}, {F32_4D}, {I32_2D})")
def _crop_backward_kernel(dx, dy, offsets):
    h, w = dx.shape[1], dx.shape[2]
    ho, wo = dy.shape[1], dy.shape[2]
    for idx in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        b, i, j, ch = nhwc_index(dx, idx)
        si = i - min(max(offsets[b, 0], 0), h - ho)
        sj = j - min(max(offsets[b, 1], 0), w - wo)
        dx[b, i, j, ch] = read_or_zero(dy, b, si, sj, ch)


# launchers


def random_flip_params(flips, key):
    launch_elements(_flip_params_kernel, flips.size, flips, key)


def flip_images(y, x, flips, horizontal, vertical):
    launch_elements(_flip_kernel, y.size, y, x, flips, horizontal, vertical)


def random_affine_params(m, key, ranges, h, w, same_zoom):
    r = [float32(v) for v in ranges]
    launch_elements(_affine_params_kernel, m.shape[0], m, key, *r, h, w, same_zoom)


def affine_transform_forward(y, x, m, interp, fill, fill_value):
    launch_elements(_affine_kernel, y.size, y, x, m, interp, fill, fill_value)


def affine_transform_backward(dx, dy, m, interp, fill, fill_value):
    launch_elements(_affine_backward_kernel, dx.shape[0] * dx.shape[3], dx, dy, m, interp, fill)


def random_crop_params(offsets, key, room_h, room_w):
    launch_elements(_crop_params_kernel, offsets.shape[0], offsets, key, room_h, room_w)


def crop_images_forward(y, x, offsets):
    launch_elements(_crop_kernel, y.size, y, x, offsets)


def crop_images_backward(dx, dy, offsets):
    launch_elements(_crop_backward_kernel, dx.size, dx, dy, offsets)
