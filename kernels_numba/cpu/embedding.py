"""CPU twin of kernels_numba.ops.embedding.

Token ids arrive as float32 (the engine feeds every input as float32; ids are exact
below 2**24). An id that is not an integer in [0, V) yields a NaN row forward and no
gradient backward, so a bad id never reads or writes out of bounds. The table
gradient adds tokens in order (one serial pass): the result is deterministic.
"""

import numba
import numpy as np

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_NAN = np.float32(np.nan)


def token_row(v, rows):
    """The table row of float32 id v, or -1 when v is not an integer in [0, rows)."""
    if not (v >= _ZERO and v < numba.float32(rows)):  # also rejects NaN
        return -1
    k = int(v)
    return k if numba.float32(k) == v else -1


_token_row = numba.njit(cache=True)(token_row)


@numba.njit(parallel=True, cache=True)
def _embedding_forward(y, ids, table):
    rows, d = table.shape
    for m in numba.prange(ids.size):
        k = _token_row(ids[m], rows)
        for j in range(d):
            y[m, j] = table[k, j] if k >= 0 else _NAN


@numba.njit(cache=True)
def _embedding_backward(dtable, dy, ids):
    rows, d = dtable.shape
    for m in range(ids.size):
        k = _token_row(ids[m], rows)
        if k >= 0:
            for j in range(d):
                dtable[k, j] += dy[m, j]


@numba.njit(parallel=True, cache=True)
def _masking_forward(y, mask, x, mask_value):
    n, t_len, f = x.shape
    for i in numba.prange(n):
        for t in range(t_len):
            keep = False
            for k in range(f):
                if x[i, t, k] != mask_value:
                    keep = True
            m = _ONE if keep else _ZERO
            mask[i, t] = m
            for k in range(f):
                y[i, t, k] = x[i, t, k] * m


@numba.njit(parallel=True, cache=True)
def _masking_backward(dx, dy, mask):
    n, t_len, f = dy.shape
    for i in numba.prange(n):
        for t in range(t_len):
            for k in range(f):
                dx[i, t, k] = dy[i, t, k] * mask[i, t]


def embedding_forward(y, ids, table):
    _embedding_forward(y, ids, table)


def embedding_backward(dtable, dy, ids):
    _embedding_backward(dtable, dy, ids)


@numba.njit(parallel=True, cache=True)
def _embedding_mask(mask, ids):
    for m in numba.prange(ids.size):
        mask[m] = _ONE if ids[m] != _ZERO else _ZERO


def embedding_mask(mask, ids):
    _embedding_mask(mask, ids)


def masking_forward(y, mask, x, mask_value):
    _masking_forward(y, mask, x, mask_value)


def masking_backward(dx, dy, mask):
    _masking_backward(dx, dy, mask)

