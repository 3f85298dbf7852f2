"""CPU twins of kernels_numba.ops.augment_color (validated arguments only). The clip and
the per-plane sums are njit helpers that kernels_numba.gpu.augment_color compiles again
as device functions, so both devices round the same way (float32 sums in a fixed order:
row sums over W, then over H)."""

import numba
import numpy as np

from kernels_numba.cpu.dropout import _hash_uniform as hash_uniform

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_jit = numba.njit(cache=True)


# shared helpers (also CUDA device functions)


@_jit
def clip(v, lo, hi):
    """min/max that let NaN through (both comparisons are false for NaN)."""
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@_jit
def plane_mean(x, b, ch):
    """mean of x[b, :, :, ch] in float32: row sums, then their sum, over H*W."""
    h = x.shape[1]
    w = x.shape[2]
    total = _ZERO
    for i in range(h):
        row = _ZERO
        for j in range(w):
            row += x[b, i, j, ch]
        total += row
    return total / np.float32(h * w)


@_jit
def contrast_plane_backward(dx, dy, x, mean, factor, b, ch, lo, hi):
    """dx[b, :, :, ch] for one (sample, channel) plane: inside-clip mask, mean, combine."""
    h = x.shape[1]
    w = x.shape[2]
    f = factor[b]
    mu = mean[b, ch]
    total = _ZERO
    for i in range(h):
        row = _ZERO
        for j in range(w):
            z = (x[b, i, j, ch] - mu) * f + mu
            if lo <= z <= hi or z != z:  # NaN: let it through like the forward
                row += dy[b, i, j, ch]
        total += row
    avg = total / np.float32(h * w) * (_ONE - f)
    for i in range(h):
        for j in range(w):
            z = (x[b, i, j, ch] - mu) * f + mu
            g = dy[b, i, j, ch] if (lo <= z <= hi or z != z) else _ZERO
            dx[b, i, j, ch] = f * g + avg


# kernels


@numba.njit(cache=True)
def _uniform(u, key, lo, hi):
    for n in range(u.shape[0]):
        u[n] = lo + (hi - lo) * hash_uniform(key, n)


@numba.njit(parallel=True, cache=True)
def _brightness(y, x, delta, lo, hi):
    n, h, w, c = x.shape
    for r in numba.prange(n * h):
        b = r // h
        i = r - b * h
        d = delta[b]
        for j in range(w):
            for ch in range(c):
                y[b, i, j, ch] = clip(x[b, i, j, ch] + d, lo, hi)


@numba.njit(parallel=True, cache=True)
def _brightness_backward(dx, dy, x, delta, lo, hi):
    n, h, w, c = x.shape
    for r in numba.prange(n * h):
        b = r // h
        i = r - b * h
        d = delta[b]
        for j in range(w):
            for ch in range(c):
                v = x[b, i, j, ch] + d
                dx[b, i, j, ch] = dy[b, i, j, ch] if (lo <= v <= hi or v != v) else _ZERO


@numba.njit(parallel=True, cache=True)
def _contrast(y, mean, x, factor, lo, hi):
    n, h, w, c = x.shape
    for t in numba.prange(n * c):
        b = t // c
        ch = t - b * c
        mu = plane_mean(x, b, ch)
        mean[b, ch] = mu
        f = factor[b]
        for i in range(h):
            for j in range(w):
                y[b, i, j, ch] = clip((x[b, i, j, ch] - mu) * f + mu, lo, hi)


@numba.njit(parallel=True, cache=True)
def _contrast_backward(dx, dy, x, mean, factor, lo, hi):
    n, c = x.shape[0], x.shape[3]
    for t in numba.prange(n * c):
        b = t // c
        contrast_plane_backward(dx, dy, x, mean, factor, b, t - b * c, lo, hi)


# launchers


def random_uniform_params(u, key, lo, hi):
    _uniform(u, np.uint64(key), lo, hi)


def brightness_forward(y, x, delta, lo, hi):
    _brightness(y, x, delta, lo, hi)


def brightness_backward(dx, dy, x, delta, lo, hi):
    _brightness_backward(dx, dy, x, delta, lo, hi)


def contrast_forward(y, mean, x, factor, lo, hi):
    _contrast(y, mean, x, factor, lo, hi)


def contrast_backward(dx, dy, x, mean, factor, lo, hi):
    _contrast_backward(dx, dy, x, mean, factor, lo, hi)
