"""CPU twin of kernels_numba.ops.regularize, and the per-element math both devices share.

Each part (a contiguous range fixed by the size) is summed in order in float64, parts in
parallel; the partials are then added in order, so the result is independent of the
thread count.
"""

import numba
import numpy as np

from kernels_numba.ops.regularize import parts_for

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)


def grad_term(v, l1, l2, scale):
    """scale*(l1*sign(v) + 2*l2*v), a 0 factor's term skipped (Keras's L1L2); sign is
    torch's: 1, -1, 0 at 0, NaN at NaN (one function: the GPU inlines it whole)."""
    g = _ZERO
    if l1 != _ZERO:
        s = v * _ZERO  # 0 at 0, NaN at NaN
        if v > _ZERO:
            s = _ONE
        elif v < _ZERO:
            s = -_ONE
        g += l1 * s
    if l2 != _ZERO:
        g += _TWO * l2 * v
    return scale * g


def total(s1, s2, l1, l2, scale):
    """scale*(l1*s1 + l2*s2), a 0 factor's term skipped."""
    p = _ZERO
    if l1 != _ZERO:
        p += l1 * s1
    if l2 != _ZERO:
        p += l2 * s2
    return scale * p


_grad_term = numba.njit(cache=True)(grad_term)
_total = numba.njit(cache=True)(total)


@numba.njit(parallel=True, cache=True)
def _penalty(penalty, grad, x, l1, l2, scale, parts, has_grad):
    n = x.size
    part = np.empty((parts, 2), np.float64)
    for k in numba.prange(parts):
        start, end = k * n // parts, (k + 1) * n // parts
        a = 0.0
        b = 0.0
        for j in range(start, end):
            v = x[j]
            if has_grad:
                grad[j] += _grad_term(v, l1, l2, scale)
            d = np.float64(v)
            a += abs(d)
            b += d * d
        part[k, 0] = a
        part[k, 1] = b
    s1 = 0.0
    s2 = 0.0
    for k in range(parts):
        s1 += part[k, 0]
        s2 += part[k, 1]
    penalty[0] += _total(np.float32(s1), np.float32(s2), l1, l2, scale)


_NO_GRAD = np.zeros(1, np.float32)


def penalty(penalty, grad, x, l1, l2, scale, workspace):
    has_grad = grad is not None
    g = grad.reshape(grad.size) if has_grad else _NO_GRAD
    _penalty(penalty, g, x.reshape(x.size), l1, l2, scale, parts_for(x.size), has_grad)
