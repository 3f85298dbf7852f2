"""CPU twins of kernels_numba.ops.merge (validated arguments only).

Forwards are NumPy ufuncs into y (np.maximum/np.minimum propagate NaN); the extremum
backward is one numba loop, parallel for large buffers. A gradient not wanted (None)
is replaced by dy and a flag, so the loop has one type signature.
"""

import numba
import numpy as np

from kernels_numba.cpu.activation import PARALLEL_MIN_SIZE

_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)


def multiply(y, a, b):
    np.multiply(a, b, out=y)


def maximum(y, a, b):
    np.maximum(a, b, out=y)


def minimum(y, a, b):
    np.minimum(a, b, out=y)


@numba.njit(cache=True)
def _share(g, a, b, is_max):
    """(da, db) of max(a, b) (is_max) or min(a, b) for upstream g (torch's rule)."""
    a_loses = a < b if is_max else a > b
    b_loses = b < a if is_max else b > a
    if a == b:
        h = g * _HALF
        return h, h
    # NaN: neither loses, both take g.
    return (_ZERO if a_loses else g), (_ZERO if b_loses else g)


@numba.njit(cache=True)
def _extremum_serial(da, db, dy, a, b, want_a, want_b, is_max):
    for i in range(dy.size):
        ga, gb = _share(dy[i], a[i], b[i], is_max)
        if want_a:
            da[i] = ga
        if want_b:
            db[i] = gb


@numba.njit(parallel=True, cache=True)
def _extremum_parallel(da, db, dy, a, b, want_a, want_b, is_max):
    for i in numba.prange(dy.size):
        ga, gb = _share(dy[i], a[i], b[i], is_max)
        if want_a:
            da[i] = ga
        if want_b:
            db[i] = gb


def _extremum_backward(da, db, dy, a, b, is_max):
    flat = dy.reshape(-1)
    loop = _extremum_parallel if dy.size >= PARALLEL_MIN_SIZE else _extremum_serial
    loop(flat if da is None else da.reshape(-1), flat if db is None else db.reshape(-1),
         flat, a.reshape(-1), b.reshape(-1), da is not None, db is not None, is_max)


def maximum_backward(da, db, dy, a, b):
    _extremum_backward(da, db, dy, a, b, True)


def minimum_backward(da, db, dy, a, b):
    _extremum_backward(da, db, dy, a, b, False)


def copy_columns(y, x, offset):
    y[:, offset:offset + x.shape[1]] = x


def take_columns(dx, dy, offset):
    np.copyto(dx, dy[:, offset:offset + dx.shape[1]])
