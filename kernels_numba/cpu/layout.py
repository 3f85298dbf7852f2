"""CPU twins of kernels_numba.ops.layout (validated arguments only)."""

import numba
import numpy as np

from kernels_numba.cpu._strided import CHUNK, PARALLEL_MIN_SIZE, inner, items, offset

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_NAN = np.float32(np.nan)


@numba.njit(cache=True, inline="always")
def _copy_item(y, x, meta, yo, xo, w, chunks, length):
    r = w // chunks
    j0 = (w - r * chunks) * CHUNK
    j1 = min(length, j0 + CHUNK)
    nk = meta[0]
    oy = yo + (offset(meta, r, 0, nk - 1, 0) if nk > 1 else 0)
    ox = xo + (offset(meta, r, 0, nk - 1, 1) if nk > 1 else 0)
    sy, sx = inner(meta, 0)[1], inner(meta, 1)[1]
    if sy == 1 and sx == 1:  # slices: a vectorized block copy
        yy = y[oy + j0:oy + j1]
        xx = x[ox + j0:ox + j1]
        for j in range(j1 - j0):
            yy[j] = xx[j]
    else:
        for j in range(j0, j1):
            y[oy + j * sy] = x[ox + j * sx]


@numba.njit(cache=True)
def _copy(y, x, meta, yo, xo):
    rows, length, chunks = items(meta)
    for w in range(rows * chunks):
        _copy_item(y, x, meta, yo, xo, w, chunks, length)


@numba.njit(parallel=True, cache=True)
def _copy_parallel(y, x, meta, yo, xo):
    rows, length, chunks = items(meta)
    for w in numba.prange(rows * chunks):
        _copy_item(y, x, meta, yo, xo, w, chunks, length)


def strided_copy(y, x, meta, y_offset, x_offset):
    big = x.size >= PARALLEL_MIN_SIZE or y.size >= PARALLEL_MIN_SIZE
    (_copy_parallel if big else _copy)(y.reshape(-1), x.reshape(-1), meta, y_offset, x_offset)


@numba.njit(cache=True, inline="always")
def _index(v, d):
    """The axis position float index v names, or -1 when none (NaN, out of range)."""
    if v != v:
        return -1
    k = int(v)
    if k < 0:
        k += d
    return k if 0 <= k < d else -1


@numba.njit(cache=True)
def _take(y, x, idx, outer, d, inner_):
    m = idx.size
    for o in range(outer):
        for p in range(m):
            k = _index(idx[p], d)
            yb = (o * m + p) * inner_
            if k < 0:
                for i in range(inner_):
                    y[yb + i] = _NAN
            else:
                xb = (o * d + k) * inner_
                for i in range(inner_):
                    y[yb + i] = x[xb + i]


def take(y, x, indices, outer, d, inner_):
    _take(y.reshape(-1), x.reshape(-1), indices.reshape(-1), outer, d, inner_)


@numba.njit(cache=True)
def _take_backward(dx, dy, idx, outer, d, inner_):
    m = idx.size
    dx[:] = _ZERO
    for o in range(outer):  # rows of dy in order; each adds into its named dx row
        for p in range(m):
            k = _index(idx[p], d)
            if k >= 0:
                yb = (o * m + p) * inner_
                xb = (o * d + k) * inner_
                for i in range(inner_):
                    dx[xb + i] += dy[yb + i]


def take_backward(dx, dy, indices, outer, d, inner_):
    _take_backward(dx.reshape(-1), dy.reshape(-1), indices.reshape(-1), outer, d, inner_)


@numba.njit(cache=True)
def _one_hot(y, idx, c):
    for p in range(idx.size):
        v = idx[p]
        k = int(v) if (v >= 0 and v < c) else -1  # NaN: not >= 0
        for j in range(c):
            y[p * c + j] = v if v != v else (_ONE if j == k else _ZERO)


def one_hot(y, indices, num_classes):
    _one_hot(y.reshape(-1), indices.reshape(-1), num_classes)
