"""CPU twins of kernels_numba.ops.pool2d (validated arguments only).

Parallel over (sample, output row) pairs, channels innermost so every access is
contiguous. Max-pool backward scatters per sample (parallel over the batch, so
overlapping windows add without races); average-pool backward is a gather.
"""

import math

import numba
import numpy as np

from kernels_numba.cpu.conv2d import window_range
from kernels_numba.ops.pool2d import pool_plan

# njit loops

@numba.njit(parallel=True, cache=True)
def _maxpool_forward(y, argmax, x, ph, pw, sh, sw, pt, pl):
    n, h, w, c = x.shape
    _, ho, wo, _ = y.shape
    for r in numba.prange(n * ho):
        b = r // ho
        oh = r - b * ho
        h0, h1 = max(oh * sh - pt, 0), min(oh * sh - pt + ph, h)
        best = np.empty(c, np.float32)
        where = np.empty(c, np.int32)
        for ow in range(wo):
            w0, w1 = max(ow * sw - pl, 0), min(ow * sw - pl + pw, w)
            # Padded cells count as -inf, so they never win: start from the first real
            # cell (every window holds one, for "same" padding too).
            k0 = (h0 * w + w0) * c
            for ch in range(c):
                best[ch] = x[b, h0, w0, ch]
                where[ch] = k0 + ch
            for ih in range(h0, h1):
                for iw in range(w0, w1):
                    k = (ih * w + iw) * c
                    # Selects, not branches, so the channel loop vectorizes (1.6 -> 1.0 ms).
                    for ch in range(c):
                        v = x[b, ih, iw, ch]
                        take = v > best[ch]
                        best[ch] = v if take else best[ch]
                        where[ch] = k + ch if take else where[ch]
            for ch in range(c):
                y[b, oh, ow, ch] = best[ch]
                argmax[b, oh, ow, ch] = where[ch]


@numba.njit(parallel=True, cache=True)
def _maxpool_backward(dx, dy, argmax):
    # dx, dy, argmax viewed per sample as flat rows.
    n, size = dx.shape
    for b in numba.prange(n):
        for i in range(size):
            dx[b, i] = 0.0
        for j in range(dy.shape[1]):
            k = argmax[b, j]
            if 0 <= k < size:
                dx[b, k] += dy[b, j]


@numba.njit(parallel=True, cache=True)
def _avgpool_forward(y, x, ph, pw, sh, sw, pt, pl):
    n, h, w, c = x.shape
    _, ho, wo, _ = y.shape
    for r in numba.prange(n * ho):
        b = r // ho
        oh = r - b * ho
        h0, h1 = max(oh * sh - pt, 0), min(oh * sh - pt + ph, h)
        for ow in range(wo):
            w0, w1 = max(ow * sw - pl, 0), min(ow * sw - pl + pw, w)
            for ch in range(c):
                y[b, oh, ow, ch] = 0.0
            for ih in range(h0, h1):
                for iw in range(w0, w1):
                    for ch in range(c):
                        y[b, oh, ow, ch] += x[b, ih, iw, ch]
            count = np.float32((h1 - h0) * (w1 - w0))  # in-bounds cells only
            for ch in range(c):
                y[b, oh, ow, ch] /= count


@numba.njit(parallel=True, cache=True)
def _avgpool_backward(dx, dy, ph, pw, sh, sw, pt, pl):
    n, h, w, c = dx.shape
    _, ho, wo, _ = dy.shape
    for r in numba.prange(n * h):
        b = r // h
        ih = r - b * h
        oh0, oh1 = window_range(ih, ph, sh, pt, ho)
        for iw in range(w):
            ow0, ow1 = window_range(iw, pw, sw, pl, wo)
            for ch in range(c):
                dx[b, ih, iw, ch] = 0.0
            for oh in range(oh0, oh1):
                hc = min(oh * sh - pt + ph, h) - max(oh * sh - pt, 0)
                for ow in range(ow0, ow1):
                    wc = min(ow * sw - pl + pw, w) - max(ow * sw - pl, 0)
                    inv = np.float32(1.0) / np.float32(hc * wc)
                    for ch in range(c):
                        dx[b, ih, iw, ch] += dy[b, oh, ow, ch] * inv


@numba.njit(parallel=True, cache=True)
def _global_avgpool_forward(y, x):
    n, hw, c = x.shape
    for b in numba.prange(n):
        acc = np.zeros(c)  # float64 partial sums: hw can be large
        for p in range(hw):
            for ch in range(c):
                acc[ch] += x[b, p, ch]
        for ch in range(c):
            y[b, ch] = acc[ch] / hw


@numba.njit(parallel=True, cache=True)
def _global_avgpool_backward(dx, dy):
    n, hw, c = dx.shape
    inv = np.float32(1.0) / np.float32(hw)
    for b in numba.prange(n):
        for p in range(hw):
            for ch in range(c):
                dx[b, p, ch] = dy[b, ch] * inv


# launchers

def maxpool2d_forward(y, argmax, x, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(x.shape, pool_size, strides, padding)
    _maxpool_forward(y, argmax, x, ph, pw, sh, sw, pt, pl)


def maxpool2d_backward(dx, dy, argmax):
    n, size, out = dx.shape[0], math.prod(dx.shape[1:]), math.prod(dy.shape[1:])
    _maxpool_backward(dx.reshape(n, size), dy.reshape(n, out), argmax.reshape(n, out))


def avgpool2d_forward(y, x, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(x.shape, pool_size, strides, padding)
    _avgpool_forward(y, x, ph, pw, sh, sw, pt, pl)


def avgpool2d_backward(dx, dy, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(dx.shape, pool_size, strides, padding)
    _avgpool_backward(dx, dy, ph, pw, sh, sw, pt, pl)


def global_avgpool2d_forward(y, x):
    n, h, w, c = x.shape
    _global_avgpool_forward(y, x.reshape(n, h * w, c))


def global_avgpool2d_backward(dx, dy):
    n, h, w, c = dx.shape
    _global_avgpool_backward(dx.reshape(n, h * w, c), dy)
