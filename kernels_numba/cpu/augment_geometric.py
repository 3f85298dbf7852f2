"""CPU twins of kernels_numba.ops.augment_geometric (validated arguments only).

The per-pixel helpers (index fixing, rounding, sincos, one sample, one scatter) are njit
functions here; kernels_numba.gpu.augment_geometric compiles their Python source again
as CUDA device functions (with its own helpers bound), so both devices run the same
arithmetic. All float math stays in float32 (float32(...) constants: the PTX test
rejects .f64).
"""

import math

import numba
import numpy as np
from numba import float32

from kernels_numba.cpu.dropout import _hash_uniform as hash_uniform

_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_CONSTANT = 2  # FILL_MODES["constant"] in ops/augment_geometric.py
_TWO_OVER_PI = np.float32(2.0 / np.pi)
_PIO2_HI = np.float32(np.pi / 2)  # pi/2 = _PIO2_HI + _PIO2_LO (Cody-Waite reduction)
_PIO2_LO = np.float32(np.pi / 2 - float(np.float32(np.pi / 2)))
_S = (np.float32(-1 / 6), np.float32(1 / 120), np.float32(-1 / 5040), np.float32(1 / 362880))
_C = (np.float32(-1 / 2), np.float32(1 / 24), np.float32(-1 / 720), np.float32(1 / 40320),
      np.float32(-1 / 3628800))
_S1, _S2, _S3, _S4 = _S
_C1, _C2, _C3, _C4, _C5 = _C


# shared per-pixel helpers (also CUDA device functions)

_jit = numba.njit(cache=True)


@_jit
def fix_index(i, size, fill):
    """An in-range index for integer coordinate i: reflect (d c b a | a b c d), wrap,
    or clamp (nearest, and constant, whose out-of-range reads are replaced by the fill)."""
    if fill == 0:
        s2 = 2 * size
        t = (2 * i + 1 + s2) % (2 * s2)
        if t < 0:
            t += 2 * s2
        r = abs(t - s2)  # odd, so (r - 1) // 2 >= 0
        return (r - 1) // 2
    if fill == 1:
        t = i % size
        if t < 0:
            t += size
        return t
    return min(max(i, 0), size - 1)


@_jit
def round_coordinate(c, interp):
    """Nearest integer: half to even (torch.round, Keras's nearest), or floor(c + 0.5)."""
    if interp == 2:
        return int(math.floor(c + _HALF))
    r = int(math.floor(c))
    d = c - float32(r)
    if d > _HALF or (d == _HALF and (r & 1) == 1):
        r += 1
    return r


@_jit
def sample(x, b, sy, sx, ch, interp, fill, fill_value):
    """x[b] at float32 (row sy, column sx), channel ch."""
    h = x.shape[1]
    w = x.shape[2]
    if interp != 1:
        iy = round_coordinate(sy, interp)
        ix = round_coordinate(sx, interp)
        if fill == _CONSTANT and not (0 <= iy < h and 0 <= ix < w):
            return fill_value
        return x[b, fix_index(iy, h, fill), fix_index(ix, w, fill), ch]
    y0 = int(math.floor(sy))
    x0 = int(math.floor(sx))
    wy1 = sy - float32(y0)
    wx1 = sx - float32(x0)
    acc = _ZERO
    for a in range(2):
        iy = y0 + a
        wy = wy1 if a == 1 else _ONE - wy1
        for e in range(2):
            ix = x0 + e
            wx = wx1 if e == 1 else _ONE - wx1
            if fill == _CONSTANT and not (0 <= iy < h and 0 <= ix < w):
                v = fill_value
            else:
                v = x[b, fix_index(iy, h, fill), fix_index(ix, w, fill), ch]
            acc += (wy * wx) * v
    return acc


@_jit
def scatter(dx, b, sy, sx, ch, g, interp, fill):
    """The transpose of `sample`: add g times each read's weight to dx[b] (fills get none)."""
    h = dx.shape[1]
    w = dx.shape[2]
    if interp != 1:
        iy = round_coordinate(sy, interp)
        ix = round_coordinate(sx, interp)
        if fill != _CONSTANT or (0 <= iy < h and 0 <= ix < w):
            dx[b, fix_index(iy, h, fill), fix_index(ix, w, fill), ch] += g
        return
    y0 = int(math.floor(sy))
    x0 = int(math.floor(sx))
    wy1 = sy - float32(y0)
    wx1 = sx - float32(x0)
    for a in range(2):
        iy = y0 + a
        wy = wy1 if a == 1 else _ONE - wy1
        for e in range(2):
            ix = x0 + e
            wx = wx1 if e == 1 else _ONE - wx1
            if fill != _CONSTANT or (0 <= iy < h and 0 <= ix < w):
                dx[b, fix_index(iy, h, fill), fix_index(ix, w, fill), ch] += (wy * wx) * g


@_jit
def sincos(a):
    """(sin a, cos a) in float32 for the moderate angles of a rotation (|a| <= 2 pi):
    libdevice's sinf/cosf carry a float64 slow path the PTX check rejects, and one
    polynomial on both devices keeps their matrices alike (Taylor to r**9 / r**10 on
    |r| <= pi/4: below float32 rounding)."""
    k = int(math.floor(a * _TWO_OVER_PI + _HALF))
    kf = float32(k)
    r = (a - kf * _PIO2_HI) - kf * _PIO2_LO
    r2 = r * r
    s = r + r * r2 * (_S1 + r2 * (_S2 + r2 * (_S3 + r2 * _S4)))
    c = _ONE + r2 * (_C1 + r2 * (_C2 + r2 * (_C3 + r2 * (_C4 + r2 * _C5))))
    q = k & 3
    if q == 0:
        return s, c
    if q == 1:
        return c, -s
    if q == 2:
        return -s, -c
    return -c, s


@_jit
def affine_row(m, n, h, w, key, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, same_zoom):
    """Sample n's matrix m[n] from five uniforms hash_uniform(key, 5n + k) (see ops);
    r0..r9: the (low, high) of rotation, zoom h, zoom w, translation h, translation w."""
    u0 = hash_uniform(key, 5 * n)
    u1 = hash_uniform(key, 5 * n + 1)
    u2 = hash_uniform(key, 5 * n + 2)
    u3 = hash_uniform(key, 5 * n + 3)
    u4 = hash_uniform(key, 5 * n + 4)
    angle = r0 + (r1 - r0) * u0
    zy = _ONE + r2 + (r3 - r2) * u1
    zx = zy if same_zoom else _ONE + r4 + (r5 - r4) * u2
    ty = h * (r6 + (r7 - r6) * u3)
    tx = w * (r8 + (r9 - r8) * u4)
    cy = (h - _ONE) * _HALF
    cx = (w - _ONE) * _HALF
    sn, cs = sincos(angle)
    a0 = zx * cs
    a1 = -zx * sn
    b0 = zy * sn
    b1 = zy * cs
    m[n, 0] = a0
    m[n, 1] = a1
    m[n, 2] = cx - tx - a0 * cx - a1 * cy
    m[n, 3] = b0
    m[n, 4] = b1
    m[n, 5] = cy - ty - b0 * cx - b1 * cy


@_jit
def crop_offset(key, i, room):
    """A uniform integer in [0, room]."""
    v = int(hash_uniform(key, i) * float32(room + 1))
    return min(v, room)


# kernels


@numba.njit(cache=True)
def _flip_params(flips, key):
    for n in range(flips.shape[0]):
        flips[n] = _ONE if hash_uniform(key, n) <= _HALF else _ZERO


@numba.njit(parallel=True, cache=True)
def _flip(y, x, flips, horizontal, vertical):
    n, h, w, c = y.shape
    for r in numba.prange(n * h):
        b = r // h
        i = r - b * h
        on = flips[b] != _ZERO
        si = h - 1 - i if on and vertical else i
        for j in range(w):
            sj = w - 1 - j if on and horizontal else j
            for ch in range(c):
                y[b, i, j, ch] = x[b, si, sj, ch]


@numba.njit(cache=True)
def _affine_params(m, key, ranges, h, w, same_zoom):
    for n in range(m.shape[0]):
        affine_row(m, n, h, w, key, ranges[0], ranges[1], ranges[2], ranges[3], ranges[4],
                   ranges[5], ranges[6], ranges[7], ranges[8], ranges[9], same_zoom)


@numba.njit(inline="always")
def _corner(x, b, iy, ix, ch, fill, fill_value):
    h, w = x.shape[1], x.shape[2]
    if fill == _CONSTANT and not (0 <= iy < h and 0 <= ix < w):
        return fill_value
    return x[b, fix_index(iy, h, fill), fix_index(ix, w, fill), ch]


@numba.njit(parallel=True, cache=True)
def _affine(y, x, m, interp, fill, fill_value):
    """`sample` per output pixel with its weights computed once for all channels (the
    same products and order of additions, so the CUDA kernel's values)."""
    n, ho, wo, c = y.shape
    for r in numba.prange(n * ho):
        b = r // ho
        i = r - b * ho
        yf = np.float32(i)
        for j in range(wo):
            xf = np.float32(j)
            sx = m[b, 0] * xf + m[b, 1] * yf + m[b, 2]
            sy = m[b, 3] * xf + m[b, 4] * yf + m[b, 5]
            if interp != 1:
                iy = round_coordinate(sy, interp)
                ix = round_coordinate(sx, interp)
                for ch in range(c):
                    y[b, i, j, ch] = _corner(x, b, iy, ix, ch, fill, fill_value)
                continue
            y0 = int(math.floor(sy))
            x0 = int(math.floor(sx))
            wy1 = sy - float32(y0)
            wx1 = sx - float32(x0)
            wy0 = _ONE - wy1
            wx0 = _ONE - wx1
            w00, w01, w10, w11 = wy0 * wx0, wy0 * wx1, wy1 * wx0, wy1 * wx1
            for ch in range(c):
                acc = _ZERO
                acc += w00 * _corner(x, b, y0, x0, ch, fill, fill_value)
                acc += w01 * _corner(x, b, y0, x0 + 1, ch, fill, fill_value)
                acc += w10 * _corner(x, b, y0 + 1, x0, ch, fill, fill_value)
                acc += w11 * _corner(x, b, y0 + 1, x0 + 1, ch, fill, fill_value)
                y[b, i, j, ch] = acc


@numba.njit(parallel=True, cache=True)
def _affine_backward(dx, dy, m, interp, fill):
    n, ho, wo, c = dy.shape
    for t in numba.prange(n * c):  # one (sample, channel) plane each: disjoint writes
        b = t // c
        ch = t - b * c
        dx[b, :, :, ch] = _ZERO
        for i in range(ho):
            yf = np.float32(i)
            for j in range(wo):
                xf = np.float32(j)
                sx = m[b, 0] * xf + m[b, 1] * yf + m[b, 2]
                sy = m[b, 3] * xf + m[b, 4] * yf + m[b, 5]
                scatter(dx, b, sy, sx, ch, dy[b, i, j, ch], interp, fill)


@numba.njit(cache=True)
def _crop_params(offsets, key, room_h, room_w):
    for n in range(offsets.shape[0]):
        offsets[n, 0] = crop_offset(key, 2 * n, room_h)
        offsets[n, 1] = crop_offset(key, 2 * n + 1, room_w)


@numba.njit(parallel=True, cache=True)
def _crop(y, x, offsets):
    n, ho, wo, c = y.shape
    for r in numba.prange(n * ho):
        b = r // ho
        i = r - b * ho
        top = min(max(offsets[b, 0], 0), x.shape[1] - ho)
        left = min(max(offsets[b, 1], 0), x.shape[2] - wo)
        for j in range(wo):
            for ch in range(c):
                y[b, i, j, ch] = x[b, top + i, left + j, ch]


@numba.njit(parallel=True, cache=True)
def _crop_backward(dx, dy, offsets):
    n, h, w, c = dx.shape
    ho, wo = dy.shape[1], dy.shape[2]
    for r in numba.prange(n * h):
        b = r // h
        i = r - b * h
        si = i - min(max(offsets[b, 0], 0), h - ho)
        left = min(max(offsets[b, 1], 0), w - wo)
        for j in range(w):
            sj = j - left
            inside = 0 <= si < ho and 0 <= sj < wo
            for ch in range(c):
                dx[b, i, j, ch] = dy[b, si, sj, ch] if inside else _ZERO


# launchers


def random_flip_params(flips, key):
    _flip_params(flips, np.uint64(key))


def flip_images(y, x, flips, horizontal, vertical):
    _flip(y, x, flips, horizontal, vertical)


def random_affine_params(m, key, ranges, h, w, same_zoom):
    _affine_params(m, np.uint64(key), ranges, h, w, same_zoom)


def affine_transform_forward(y, x, m, interp, fill, fill_value):
    _affine(y, x, m, interp, fill, fill_value)


def affine_transform_backward(dx, dy, m, interp, fill, fill_value):
    _affine_backward(dx, dy, m, interp, fill)


def random_crop_params(offsets, key, room_h, room_w):
    _crop_params(offsets, np.uint64(key), room_h, room_w)


def crop_images_forward(y, x, offsets):
    _crop(y, x, offsets)


def crop_images_backward(dx, dy, offsets):
    _crop_backward(dx, dy, offsets)
