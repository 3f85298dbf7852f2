"""CPU twins of kernels_numba.ops.depthwise (validated arguments only): direct loops.

Forward and backward-data are parallel over (n, row) of their output, each a gather;
backward-filter is parallel over the KH*KW taps, each thread summing its tap's C*DM
weights over every position in order (float64 partials), so the result is fixed.
"""

import numba
import numpy as np

_ZERO = np.float32(0.0)


@numba.njit(parallel=True, cache=True)
def _forward(y, x, w, b, kh, kw, sh, sw, pt, pl, dh, dw):
    n, h, wd, c = x.shape
    ho, wo = y.shape[1], y.shape[2]
    dm = w.shape[3]
    for r in numba.prange(n * ho):
        bb = r // ho
        oh = r - bb * ho
        for ow in range(wo):
            for ch in range(c):
                for m in range(dm):
                    acc = _ZERO if b is None else b[ch * dm + m]
                    for i in range(kh):
                        ih = oh * sh - pt + i * dh
                        if ih < 0 or ih >= h:
                            continue
                        for j in range(kw):
                            iw = ow * sw - pl + j * dw
                            if 0 <= iw < wd:
                                acc += x[bb, ih, iw, ch] * w[i, j, ch, m]
                    y[bb, oh, ow, ch * dm + m] = acc


@numba.njit(parallel=True, cache=True)
def _backward_data(dx, dy, w, kh, kw, sh, sw, pt, pl, dh, dw):
    n, h, wd, c = dx.shape
    ho, wo = dy.shape[1], dy.shape[2]
    dm = w.shape[3]
    for r in numba.prange(n * h):
        bb = r // h
        ih = r - bb * h
        for iw in range(wd):
            for ch in range(c):
                acc = _ZERO
                for i in range(kh):
                    t = ih + pt - i * dh
                    if t < 0 or t % sh != 0 or t // sh >= ho:
                        continue
                    for j in range(kw):
                        u = iw + pl - j * dw
                        if u < 0 or u % sw != 0 or u // sw >= wo:
                            continue
                        for m in range(dm):
                            acc += dy[bb, t // sh, u // sw, ch * dm + m] * w[i, j, ch, m]
                dx[bb, ih, iw, ch] = acc


@numba.njit(parallel=True, cache=True)
def _backward_filter(dwt, dy, x, kh, kw, sh, sw, pt, pl, dh, dw):
    n, h, wd, c = x.shape
    ho, wo = dy.shape[1], dy.shape[2]
    dm = dwt.shape[3]
    for tap in numba.prange(kh * kw):
        i = tap // kw
        j = tap - i * kw
        acc = np.zeros((c, dm))
        for bb in range(n):
            for oh in range(ho):
                ih = oh * sh - pt + i * dh
                if ih < 0 or ih >= h:
                    continue
                for ow in range(wo):
                    iw = ow * sw - pl + j * dw
                    if iw < 0 or iw >= wd:
                        continue
                    for ch in range(c):
                        xv = x[bb, ih, iw, ch]
                        for m in range(dm):
                            acc[ch, m] += dy[bb, oh, ow, ch * dm + m] * xv
        for ch in range(c):
            for m in range(dm):
                dwt[i, j, ch, m] += acc[ch, m]


# launchers

def depthwise_conv2d_forward(y, x, w, b, kh, kw, sh, sw, pt, pl, dh, dw):
    _forward(y, x, w, b, kh, kw, sh, sw, pt, pl, dh, dw)


def depthwise_conv2d_backward_data(dx, dy, w, kh, kw, sh, sw, pt, pl, dh, dw):
    _backward_data(dx, dy, w, kh, kw, sh, sw, pt, pl, dh, dw)


def depthwise_conv2d_backward_filter(dwt, dy, x, kh, kw, sh, sw, pt, pl, dh, dw):
    _backward_filter(dwt, dy, x, kh, kw, sh, sw, pt, pl, dh, dw)
