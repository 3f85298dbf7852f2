"""CPU twins of kernels_numba.ops.norms, and the scale formulas both devices share.

Each segment's sum of squares is added in order in float64 (segments in parallel:
each is one thread's, so the result does not depend on the thread count).
"""

import math

import numba
import numpy as np

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


def each_scale(s, clipnorm):
    """clipnorm / max(sqrt(s), clipnorm), NaN kept (Keras's _clip_by_norm)."""
    norm = s
    if s > _ZERO:
        norm = math.sqrt(s)
    if norm != norm:
        return norm
    if norm > clipnorm:
        return clipnorm / norm
    return _ONE


def global_scale(total, clipnorm):
    """clipnorm * min(1/n, 1/clipnorm) for n = sqrt(total); NaN for a NaN or infinite n."""
    norm = math.sqrt(total)
    if norm != norm or norm - norm != _ZERO:
        return norm - norm  # NaN, as Keras's `+ (use_norm - use_norm)`
    if norm > clipnorm:
        return clipnorm * (_ONE / norm)
    return _ONE


_each_scale = numba.njit(cache=True)(each_scale)
_global_scale = numba.njit(cache=True)(global_scale)


@numba.njit(parallel=True, cache=True)
def _sum_squares(out, x, segments, whole):
    for k in numba.prange(out.size):
        start, end = 0, x.size
        if not whole:
            start = max(segments[k, 0], 0)
            end = min(segments[k, 1], x.size)
        acc = 0.0
        for j in range(start, end):
            v = np.float64(x[j])
            acc += v * v
        out[k] = np.float32(acc)


@numba.njit(cache=True)
def _scales(scales, s, clipnorm, global_norm):
    if global_norm:
        total = _ZERO
        for k in range(s.size):
            total += s[k]
        scale = _global_scale(total, clipnorm)
        for k in range(scales.size):
            scales[k] = scale
    else:
        for k in range(s.size):
            scales[k] = _each_scale(s[k], clipnorm)


_NO_SEGMENTS = np.zeros((1, 2), np.int64)


def sum_squares(out, x, segments, workspace):
    whole = segments is None
    _sum_squares(out, x.reshape(x.size), _NO_SEGMENTS if whole else segments, whole)


def clip_norm_scales(scales, sum_squares, *, clipnorm, global_norm):
    _scales(scales, sum_squares, clipnorm, global_norm)
