"""CPU twin of kernels_numba.ops.constraint, and the per-group factor both devices share.

w is viewed as (outer, reduced, inner); each (outer, inner) group is one prange
iteration: its sum of squares in order in float64, then one float32 factor.
"""

import math

import numba
import numpy as np

from kernels_numba.ops.constraint import MAX, UNIT

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_EPS = np.float32(1e-7)  # keras.backend.epsilon()


def factor(norm, mode, lo, hi, rate):
    """What each element of a group with this norm is multiplied by (Keras's formulas;
    clip keeps NaN, as ops.clip)."""
    if mode == UNIT:
        return _ONE / (_EPS + norm)
    clipped = norm
    if norm < lo:
        clipped = lo
    if norm > hi:
        clipped = hi
    if mode == MAX:
        return clipped / (_EPS + norm)
    desired = rate * clipped + (_ONE - rate) * norm  # MIN_MAX
    return desired / (_EPS + norm)


_factor = numba.njit(cache=True)(factor)


@numba.njit(parallel=True, cache=True)
def _rescale(w, outer, reduced, inner, mode, lo, hi, rate):
    for g in numba.prange(outer * inner):
        o, i = g // inner, g % inner
        base = o * reduced * inner + i
        acc = 0.0
        for r in range(reduced):
            v = np.float64(w[base + r * inner])
            acc += v * v
        f = _factor(np.float32(math.sqrt(acc)), mode, lo, hi, rate)
        for r in range(reduced):
            w[base + r * inner] = w[base + r * inner] * f


@numba.njit(parallel=True, cache=True)
def _non_neg(w):
    for j in numba.prange(w.size):
        v = w[j]
        if v < _ZERO:
            w[j] = _ZERO


def rescale(w, outer, reduced, inner, mode, lo, hi, rate):
    _rescale(w.reshape(w.size), outer, reduced, inner, mode, lo, hi, rate)


def non_neg(w):
    _non_neg(w.reshape(w.size))
