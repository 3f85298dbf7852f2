"""CPU twins of kernels_numba.ops.resample (validated arguments only): gathers, parallel
over output rows (one (n, i) row of W*C values each)."""

import numba
import numpy as np

_ZERO = np.float32(0.0)


@numba.njit(parallel=True, cache=True)
def _upsample(y, x, sh, sw):
    n, ho, wo, c = y.shape
    for r in numba.prange(n * ho):
        b = r // ho
        i = r - b * ho
        src = i // sh
        for j in range(wo):
            for ch in range(c):
                y[b, i, j, ch] = x[b, src, j // sw, ch]


@numba.njit(parallel=True, cache=True)
def _upsample_backward(dx, dy, sh, sw):
    n, h, w, c = dx.shape
    for r in numba.prange(n * h):
        b = r // h
        i = r - b * h
        for j in range(w):
            for ch in range(c):
                s = _ZERO
                for a in range(sh):
                    for e in range(sw):
                        s += dy[b, i * sh + a, j * sw + e, ch]
                dx[b, i, j, ch] = s


@numba.njit(parallel=True, cache=True)
def _window(y, x, oh, ow):
    n, ho, wo, c = y.shape
    h, w = x.shape[1], x.shape[2]
    for r in numba.prange(n * ho):
        b = r // ho
        i = r - b * ho
        si = i + oh
        for j in range(wo):
            sj = j + ow
            inside = 0 <= si < h and 0 <= sj < w
            for ch in range(c):
                y[b, i, j, ch] = x[b, si, sj, ch] if inside else _ZERO


# launchers

def upsampling2d_forward(y, x, sh, sw):
    _upsample(y, x, sh, sw)


def upsampling2d_backward(dx, dy, sh, sw):
    _upsample_backward(dx, dy, sh, sw)


def window_copy(y, x, oh, ow):
    _window(y, x, oh, ow)


zero_padding2d_forward = zero_padding2d_backward = window_copy
cropping2d_forward = cropping2d_backward = window_copy
