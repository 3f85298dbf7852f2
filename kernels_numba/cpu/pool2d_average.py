"""CPU twins of kernels_numba.ops.pool2d's average poolings (validated arguments only;
kernels_numba/cpu/pool2d.py re-exports them for dispatch).

Serial loops over a range of (sample, row) pairs (samples for global pooling), split
across threads by kernels_numba.cpu._parallel. The backward is a gather over the windows
containing each dx element, in (oh, ow) order; "same" padding leaves padded cells out of
the divisor, as Keras.
"""

import numba
import numpy as np

from kernels_numba.cpu._parallel import (
    bound_op,
    f32_2d,
    f32_3d,
    f32_4d,
    f64_2d,
    lazy_part,
    pack,
    run_call,
)
from kernels_numba.cpu._window import _hi, _lo, window_range
from kernels_numba.ops.pool2d import pool_plan


@numba.njit(inline="always")
def _avgpool_forward(y, x, ph, pw, sh, sw, pt, pl, r0, r1):
    n, h, w, c = x.shape
    _, ho, wo, _ = y.shape
    for r in range(r0, r1):
        b = r // ho
        oh = r - b * ho
        h0, h1 = _lo(oh * sh - pt), _hi(oh * sh - pt + ph, h)
        for ow in range(wo):
            w0, w1 = _lo(ow * sw - pl), _hi(ow * sw - pl + pw, w)
            for ch in range(c):
                y[b, oh, ow, ch] = 0.0
            for ih in range(h0, h1):
                for iw in range(w0, w1):
                    for ch in range(c):
                        y[b, oh, ow, ch] += x[b, ih, iw, ch]
            count = np.float32((h1 - h0) * (w1 - w0))  # in-bounds cells only
            for ch in range(c):
                y[b, oh, ow, ch] /= count


@numba.njit(inline="always")
def _avgpool_backward(dx, dy, ph, pw, sh, sw, pt, pl, r0, r1):
    n, h, w, c = dx.shape
    _, ho, wo, _ = dy.shape
    for r in range(r0, r1):
        b = r // h
        ih = r - b * h
        oh0, oh1 = window_range(ih, ph, sh, pt, ho)
        for iw in range(w):
            ow0, ow1 = window_range(iw, pw, sw, pl, wo)
            for ch in range(c):
                dx[b, ih, iw, ch] = 0.0
            for oh in range(oh0, oh1):
                hc = _hi(oh * sh - pt + ph, h) - _lo(oh * sh - pt)
                for ow in range(ow0, ow1):
                    wc = _hi(ow * sw - pl + pw, w) - _lo(ow * sw - pl)
                    inv = np.float32(1.0) / np.float32(hc * wc)
                    for ch in range(c):
                        dx[b, ih, iw, ch] += dy[b, oh, ow, ch] * inv


@numba.njit(inline="always")
def _global_avgpool_rows(y, x, acc, r0, r1):
    # acc: (C,) float64 partial sums (hw can be large), passed in (np.empty here would
    # compile numba's allocator, ~0.3 s)
    n, hw, c = x.shape
    for b in range(r0, r1):
        for ch in range(c):
            acc[ch] = 0.0
        for p in range(hw):
            for ch in range(c):
                acc[ch] += x[b, p, ch]
        for ch in range(c):
            y[b, ch] = acc[ch] / hw


@numba.njit(inline="always")
def _global_avgpool_backward(dx, dy, r0, r1):
    n, hw, c = dx.shape
    inv = np.float32(1.0) / np.float32(hw)
    for b in range(r0, r1):
        for p in range(hw):
            for ch in range(c):
                dx[b, p, ch] = dy[b, ch] * inv


@lazy_part
def _avgpool_forward_part(args, p, parts):
    a = numba.carray(args, 16)
    y, x = f32_4d(a, 0), f32_4d(a, 5)
    rows = x.shape[0] * y.shape[1]
    _avgpool_forward(y, x, a[10], a[11], a[12], a[13], a[14], a[15],
                     rows * p // parts, rows * (p + 1) // parts)


@lazy_part
def _avgpool_backward_part(args, p, parts):
    a = numba.carray(args, 16)
    dx, dy = f32_4d(a, 0), f32_4d(a, 5)
    rows = dx.shape[0] * dx.shape[1]
    _avgpool_backward(dx, dy, a[10], a[11], a[12], a[13], a[14], a[15],
                      rows * p // parts, rows * (p + 1) // parts)


@lazy_part
def _global_avgpool_forward_part(args, p, parts):
    a = numba.carray(args, 10)  # y, x, scratch (parts, C) float64: part p uses row p
    y, x, acc = f32_2d(a, 0), f32_3d(a, 3), f64_2d(a, 7)
    _global_avgpool_rows(y, x, acc[p], x.shape[0] * p // parts, x.shape[0] * (p + 1) // parts)


@lazy_part
def _global_avgpool_backward_part(args, p, parts):
    a = numba.carray(args, 7)
    dx, dy = f32_3d(a, 0), f32_2d(a, 4)
    _global_avgpool_backward(dx, dy, dx.shape[0] * p // parts, dx.shape[0] * (p + 1) // parts)


@bound_op
def avgpool2d_forward(y, x, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(x.shape, pool_size, strides, padding)
    return run_call(_avgpool_forward_part, pack(y, x, ph, pw, sh, sw, pt, pl), x.size, (y, x))


@bound_op
def avgpool2d_backward(dx, dy, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(dx.shape, pool_size, strides, padding)
    return run_call(_avgpool_backward_part, pack(dx, dy, ph, pw, sh, sw, pt, pl), dx.size,
                    (dx, dy))


@bound_op
def global_avgpool2d_forward(y, x):
    n, h, w, c = x.shape
    scratch = np.empty((numba.get_num_threads(), c))  # a row per part, however run splits
    x3 = x.reshape(n, h * w, c)
    return run_call(_global_avgpool_forward_part, pack(y, x3, scratch), x.size,
                    (y, x3, scratch))


@bound_op
def global_avgpool2d_backward(dx, dy):
    n, h, w, c = dx.shape
    dx3 = dx.reshape(n, h * w, c)
    return run_call(_global_avgpool_backward_part, pack(dx3, dy), dx.size, (dx3, dy))
