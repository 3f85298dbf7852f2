"""CPU twins of kernels_numba.ops.reduce (validated arguments only).

One loop per output walks its reduced axes in order, the last reduced axis innermost
(contiguous for the usual last-axis reductions); float64 accumulators. Parallel over
outputs for large inputs. The gradients: a parallel map for sum/mean/logsumexp, one
pass per output (count the ties, then write its slice: disjoint) for max/min.
"""

import math

import numba
import numpy as np

from kernels_numba.cpu._strided import PARALLEL_MIN_SIZE, extent, offset

SUM, MEAN, MAX, MIN, ARGMAX, ARGMIN, LSE = range(7)
_ZERO = np.float32(0.0)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _better(code, v, best):
    """v replaces best: larger (max) / smaller (min); a NaN wins once and stays."""
    if best != best:
        return False
    if v != v:
        return True
    return v > best if (code == MAX or code == ARGMAX or code == LSE) else v < best


@numba.njit(cache=True, error_model="numpy", inline="always")
def _reduce_one(x, meta, code, scale, t):
    nk, nr = meta[0], meta[1]
    base = offset(meta, t, 0, nk, 0)
    n = nk + nr
    length = meta[3 + n - 1] if nr > 0 else 1
    stride = meta[3 + 2 * n - 1] if nr > 0 else 0
    outer = extent(meta, nk, nr - 1) if nr > 1 else 1
    if code == SUM or code == MEAN:
        acc = 0.0
        for ro in range(outer):
            o = base + (offset(meta, ro, nk, nr - 1, 0) if nr > 1 else 0)
            for j in range(length):
                acc += x[o + j * stride]
        return acc * scale if code == MEAN else acc
    best = x[base]
    arg = 0
    k = 0
    for ro in range(outer):
        o = base + (offset(meta, ro, nk, nr - 1, 0) if nr > 1 else 0)
        for j in range(length):
            v = x[o + j * stride]
            if _better(code, v, best):
                best = v
                arg = k
            k += 1
    if code == ARGMAX or code == ARGMIN:
        return np.float64(arg)
    if code != LSE:
        return best
    if not (best == best and abs(best) < np.float32(np.inf)):
        return best  # NaN, or all -inf (-inf), or a +inf (inf)
    acc = 0.0
    for ro in range(outer):
        o = base + (offset(meta, ro, nk, nr - 1, 0) if nr > 1 else 0)
        for j in range(length):
            acc += math.exp(np.float64(x[o + j * stride]) - best)
    return best + math.log(acc)


@numba.njit(cache=True, error_model="numpy")
def _reduce(y, x, meta, code, scale):
    for t in range(y.size):
        y[t] = _reduce_one(x, meta, code, scale, t)


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _reduce_parallel(y, x, meta, code, scale):
    for t in numba.prange(y.size):
        y[t] = _reduce_one(x, meta, code, scale, t)


def reduce_axes(y, x, meta, code, scale):
    fn = _reduce_parallel if x.size >= PARALLEL_MIN_SIZE and y.size > 1 else _reduce
    fn(y.reshape(-1), x.reshape(-1), meta, code, scale)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _map_one(dx, dy, x, y, meta, code, scale, i):
    nk = meta[0]
    g = dy[offset(meta, i, 0, nk, 0)]
    if code == SUM:
        dx[i] = g
    elif code == MEAN:
        dx[i] = g * scale
    elif code == LSE:
        dx[i] = g * math.exp(x[i] - y[offset(meta, i, 0, nk, 2)])
    else:
        dx[i] = _ZERO  # argmax / argmin


@numba.njit(cache=True, error_model="numpy")
def _map(dx, dy, x, y, meta, code, scale):
    for i in range(dx.size):
        _map_one(dx, dy, x, y, meta, code, scale, i)


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _map_parallel(dx, dy, x, y, meta, code, scale):
    for i in numba.prange(dx.size):
        _map_one(dx, dy, x, y, meta, code, scale, i)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _extremum_one(dx, dy, x, y, meta, t):
    nk, nr = meta[0], meta[1]
    base = offset(meta, t, 0, nk, 0)
    m = y[t]
    ties = 0
    for r in range(extent(meta, nk, nr)):
        v = x[base + offset(meta, r, nk, nr, 0)]
        if v == m or (v != v and m != m):
            ties += 1
    share = dy[t] / np.float32(ties)
    for r in range(extent(meta, nk, nr)):
        o = base + offset(meta, r, nk, nr, 0)
        v = x[o]
        dx[o] = share if (v == m or (v != v and m != m)) else _ZERO


@numba.njit(cache=True, error_model="numpy")
def _extremum(dx, dy, x, y, meta):
    for t in range(y.size):
        _extremum_one(dx, dy, x, y, meta, t)


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _extremum_parallel(dx, dy, x, y, meta):
    for t in numba.prange(y.size):
        _extremum_one(dx, dy, x, y, meta, t)


def reduce_axes_backward(dx, dy, x, y, meta, code, scale):
    args = (dx.reshape(-1), dy.reshape(-1), x.reshape(-1), y.reshape(-1), meta)
    big = x.size >= PARALLEL_MIN_SIZE
    if code == MAX or code == MIN:
        (_extremum_parallel if big and y.size > 1 else _extremum)(*args)
    else:
        (_map_parallel if big else _map)(*args, code, scale)
