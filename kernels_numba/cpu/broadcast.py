"""CPU twins of kernels_numba.ops.broadcast (validated arguments only).

The scalar rules below are the same as the CUDA kernels' (same op codes). Loops walk
the descriptor row by row (cpu/_strided.py); add and multiply with contiguous or
broadcast inner strides get their own loops so LLVM vectorizes them (bias adds).
Backward with broadcast axes adds the reduced axes in a fixed serial order into the
zeroed gradient; without them it is a parallel map like the forward.
"""

import math

import numba
import numpy as np

from kernels_numba.cpu._strided import CHUNK, PARALLEL_MIN_SIZE, extent, inner, items, offset

ADD, SUB, MUL, DIV, POW, MAX, MIN, EQ, NE, LT, LE, GT, GE, WHERE = range(14)
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)


@numba.njit(cache=True, error_model="numpy", inline="always")
def binary_scalar(code, u, v):
    if code == ADD:
        return u + v
    if code == SUB:
        return u - v
    if code == MUL:
        return u * v
    if code == DIV:
        return u / v
    if code == POW:
        return u ** v
    if code == MAX:  # selects, not max(): a NaN on either side is the result
        return u if (u > v or u != u) else v
    if code == MIN:
        return u if (u < v or u != u) else v
    if code == EQ:
        return _ONE if u == v else _ZERO
    if code == NE:
        return _ONE if u != v else _ZERO
    if code == LT:
        return _ONE if u < v else _ZERO
    if code == LE:
        return _ONE if u <= v else _ZERO
    if code == GT:
        return _ONE if u > v else _ZERO
    return _ONE if u >= v else _ZERO


@numba.njit(cache=True, error_model="numpy", inline="always")
def grad_scalar(code, which, g, u, v):
    """d(u op v)/du * g (which 0) or d/dv * g (which 1); WHERE: u is the condition."""
    if code == ADD:
        return g
    if code == SUB:
        return g if which == 0 else -g
    if code == MUL:
        return g * v if which == 0 else g * u
    if code == DIV:
        return g / v if which == 0 else -g * u / (v * v)
    if code == POW:
        if which == 0:
            return g * v * u ** (v - _ONE)
        if u == _ZERO and v >= _ZERO:
            return _ZERO
        return g * u ** v * math.log(u)
    if code == MAX or code == MIN:
        if u == v:
            return g * _HALF
        if u != u or v != v:
            return g
        wins = (u > v) if code == MAX else (u < v)
        if which == 1:
            wins = not wins
        return g if wins else _ZERO
    if code == WHERE:
        if which == 0:
            return g if u != _ZERO else _ZERO
        return _ZERO if u != _ZERO else g
    return _ZERO  # comparisons


@numba.njit(cache=True, error_model="numpy", inline="always")
def _row_offset(meta, r, j):
    return offset(meta, r, 0, meta[0] - 1, j) if meta[0] > 1 else 0


@numba.njit(cache=True, error_model="numpy", inline="always")
def _forward_item(y, a, b, meta, code, w, chunks, length):
    r = w // chunks
    j0 = (w - r * chunks) * CHUNK
    j1 = min(length, j0 + CHUNK)
    oa, ob, yb = _row_offset(meta, r, 0), _row_offset(meta, r, 1), r * length
    sa, sb = inner(meta, 0)[1], inner(meta, 1)[1]
    n = j1 - j0
    if sa == 1 and sb <= 1 and (code == ADD or code == MUL or code == SUB):
        # local slices: LLVM then proves the rows apart and vectorizes (bias adds)
        yy = y[yb + j0:yb + j1]
        aa = a[oa + j0:oa + j1]
        if sb == 1:
            bb = b[ob + j0:ob + j1]
            if code == ADD:
                for j in range(n):
                    yy[j] = aa[j] + bb[j]
            elif code == MUL:
                for j in range(n):
                    yy[j] = aa[j] * bb[j]
            else:
                for j in range(n):
                    yy[j] = aa[j] - bb[j]
        else:
            bv = b[ob]
            if code == ADD:
                for j in range(n):
                    yy[j] = aa[j] + bv
            elif code == MUL:
                for j in range(n):
                    yy[j] = aa[j] * bv
            else:
                for j in range(n):
                    yy[j] = aa[j] - bv
        return
    for j in range(j0, j1):
        y[yb + j] = binary_scalar(code, a[oa + j * sa], b[ob + j * sb])


@numba.njit(cache=True, error_model="numpy")
def _forward_serial(y, a, b, meta, code):
    rows, length, chunks = items(meta)
    for w in range(rows * chunks):
        _forward_item(y, a, b, meta, code, w, chunks, length)


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _forward_parallel(y, a, b, meta, code):
    rows, length, chunks = items(meta)
    for w in numba.prange(rows * chunks):
        _forward_item(y, a, b, meta, code, w, chunks, length)


def broadcast_binary(y, a, b, meta, code):
    fn = _forward_parallel if y.size >= PARALLEL_MIN_SIZE else _forward_serial
    fn(y.reshape(-1), a.reshape(-1), b.reshape(-1), meta, code)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _grad_item(t, dy, a, b, meta, code, which, w, chunks, length, base, accumulate):
    """One (row, chunk) of the gradient; base: the reduced index's operand offsets."""
    r = w // chunks
    j0 = (w - r * chunks) * CHUNK
    j1 = min(length, j0 + CHUNK)
    o0 = base[0] + _row_offset(meta, r, 0)
    o1 = base[1] + _row_offset(meta, r, 1)
    o2 = base[2] + _row_offset(meta, r, 2)
    s0, s1, s2 = inner(meta, 0)[1], inner(meta, 1)[1], inner(meta, 2)[1]
    tb = r * length
    if (code == ADD or (code == SUB and which == 0)) and s0 == 1:
        tt = t[tb + j0:tb + j1]
        gg = dy[o0 + j0:o0 + j1]
        if accumulate:
            for j in range(j1 - j0):
                tt[j] += gg[j]
        else:
            for j in range(j1 - j0):
                tt[j] = gg[j]
        return
    for j in range(j0, j1):
        v = grad_scalar(code, which, dy[o0 + j * s0], a[o1 + j * s1], b[o2 + j * s2])
        if accumulate:
            t[tb + j] += v
        else:
            t[tb + j] = v


@numba.njit(cache=True, error_model="numpy")
def _grad_map(t, dy, a, b, meta, code, which):
    rows, length, chunks = items(meta)
    base = np.zeros(3, np.int64)
    for w in range(rows * chunks):
        _grad_item(t, dy, a, b, meta, code, which, w, chunks, length, base, False)


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _grad_map_parallel(t, dy, a, b, meta, code, which):
    rows, length, chunks = items(meta)
    base = np.zeros(3, np.int64)
    for w in numba.prange(rows * chunks):
        _grad_item(t, dy, a, b, meta, code, which, w, chunks, length, base, False)


@numba.njit(cache=True, error_model="numpy")
def _grad_reduce(t, dy, a, b, meta, code, which):
    nk, nr = meta[0], meta[1]
    rows, length, chunks = items(meta)
    t[:] = _ZERO
    base = np.zeros(3, np.int64)
    for r in range(extent(meta, nk, nr)):  # reduced axes outermost: rows stream in order
        for j in range(3):
            base[j] = offset(meta, r, nk, nr, j)
        for w in range(rows * chunks):
            _grad_item(t, dy, a, b, meta, code, which, w, chunks, length, base, True)


def broadcast_binary_backward(t, dy, a, b, meta, code, which):
    args = (t.reshape(-1), dy.reshape(-1), a.reshape(-1), b.reshape(-1), meta, code, which)
    if meta[1] > 0:
        _grad_reduce(*args)
    elif t.size >= PARALLEL_MIN_SIZE:
        _grad_map_parallel(*args)
    else:
        _grad_map(*args)


broadcast_where_backward = broadcast_binary_backward


@numba.njit(cache=True, error_model="numpy", inline="always")
def _where_item(y, c, a, b, meta, w, chunks, length):
    r = w // chunks
    j0 = (w - r * chunks) * CHUNK
    j1 = min(length, j0 + CHUNK)
    oc, oa, ob = _row_offset(meta, r, 0), _row_offset(meta, r, 1), _row_offset(meta, r, 2)
    sc, sa, sb = inner(meta, 0)[1], inner(meta, 1)[1], inner(meta, 2)[1]
    yb = r * length
    for j in range(j0, j1):
        y[yb + j] = a[oa + j * sa] if c[oc + j * sc] != _ZERO else b[ob + j * sb]


@numba.njit(cache=True, error_model="numpy")
def _where_serial(y, c, a, b, meta):
    rows, length, chunks = items(meta)
    for w in range(rows * chunks):
        _where_item(y, c, a, b, meta, w, chunks, length)


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _where_parallel(y, c, a, b, meta):
    rows, length, chunks = items(meta)
    for w in numba.prange(rows * chunks):
        _where_item(y, c, a, b, meta, w, chunks, length)


def broadcast_where(y, cond, a, b, meta):
    fn = _where_parallel if y.size >= PARALLEL_MIN_SIZE else _where_serial
    fn(y.reshape(-1), cond.reshape(-1), a.reshape(-1), b.reshape(-1), meta)
