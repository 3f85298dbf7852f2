"""CPU twins of kernels_numba.ops.noise (validated arguments only), on the RNG of
kernels_numba.cpu.dropout (shared with the CUDA kernels). `key, use_steps, steps`: the
key, or the seed and the uint32 steps buffer the key is computed from (key_from)."""

import math

import numba
import numpy as np

from kernels_numba.cpu.dropout import NO_STEPS, _hash_uniform, _step_key

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_MINUS_TWO = np.float32(-2.0)
_HALF = np.float32(0.5)
_TWO_PI = np.float32(2.0 * np.pi)
_TWO = np.float32(2.0)
TRUNCATED_TRIES = 16  # redraws of a truncated normal before it settles on the mean
# cos's Taylor coefficients (-1)^k / (2k)!, k = 0..9: below 1e-8 of truncation on [-pi, pi].
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9 = (
    np.float32((-1) ** k / math.factorial(2 * k)) for k in range(10))


def cos_2pi(u):
    """cos(2 pi u) for u in [0, 1), as a float32 polynomial of x = 2 pi (u - 1/2) in
    [-pi, pi) (cos(2 pi u) = -cos(x)). Why not cosf: its large-argument reduction is
    float64 code in CUDA's libdevice. Shared with the CUDA kernels (a device function)."""
    x = (u - _HALF) * _TWO_PI
    x2 = x * x
    p = ((((((((_C9 * x2 + _C8) * x2 + _C7) * x2 + _C6) * x2 + _C5) * x2 + _C4) * x2 + _C3)
          * x2 + _C2) * x2 + _C1) * x2 + _C0
    return -p


_cos_2pi = numba.njit(cache=True)(cos_2pi)


@numba.njit(cache=True)
def normal(key, i):
    """Box-Muller on the uniforms of 2i and 2i+1; 1 - u is in (0, 1], so log is finite."""
    u1 = _ONE - _hash_uniform(key, 2 * i)
    u2 = _hash_uniform(key, 2 * i + 1)
    return np.sqrt(_MINUS_TWO * np.log(u1)) * _cos_2pi(u2)


@numba.njit(inline="always")
def key_from(key, use_steps, steps):
    if use_steps:
        return _step_key(key, numba.uint64(steps[0]), numba.uint64(steps[1]))
    return key


@numba.njit(parallel=True, cache=True)
def _gaussian_fill(out, mean, stddev, key, use_steps, steps):
    key = key_from(key, use_steps, steps)
    for i in numba.prange(out.size):
        out[i] = mean + stddev * normal(key, i)


@numba.njit(parallel=True, cache=True)
def _uniform_fill(out, minval, span, key, use_steps, steps):
    key = key_from(key, use_steps, steps)
    for i in numba.prange(out.size):
        out[i] = minval + span * _hash_uniform(key, i)


@numba.njit(cache=True)
def truncated_normal(key, i):
    """The first of normal(16 i + k), k < 16, within [-2, 2]; 0 if none is."""
    for k in range(TRUNCATED_TRIES):
        n = normal(key, i * TRUNCATED_TRIES + k)
        if -_TWO <= n <= _TWO:
            return n
    return _ZERO


@numba.njit(parallel=True, cache=True)
def _truncated_normal_fill(out, mean, stddev, key, use_steps, steps):
    key = key_from(key, use_steps, steps)
    for i in numba.prange(out.size):
        out[i] = mean + stddev * truncated_normal(key, i)


@numba.njit(cache=True)
def _dropout_mask(mask, rate, keep_scale, key, use_steps, steps):
    key = key_from(key, use_steps, steps)
    for i in range(mask.size):
        mask[i] = keep_scale if _hash_uniform(key, i) >= rate else _ZERO


@numba.njit(parallel=True, cache=True)
def _channel_scale(y, x, mask):
    n, s, c = x.shape
    for r in numba.prange(n * s):
        b = r // s
        p = r - b * s
        for ch in range(c):
            y[b, p, ch] = x[b, p, ch] * mask[b, ch]


# launchers

def _flat(a):
    return a.reshape(a.size)


def _nsc(a):
    n, c = a.shape[0], a.shape[a.ndim - 1]  # (the simulator's shapes reject index -1)
    return a.reshape(n, a.size // max(n * c, 1), c)


def _key_args(key, steps):
    return np.uint64(key), steps is not None, NO_STEPS if steps is None else steps


def gaussian_fill(out, mean, stddev, key, steps=None):
    _gaussian_fill(_flat(out), mean, stddev, *_key_args(key, steps))


def uniform_fill(out, minval, span, key, steps=None):
    _uniform_fill(_flat(out), minval, span, *_key_args(key, steps))


def truncated_normal_fill(out, mean, stddev, key, steps=None):
    _truncated_normal_fill(_flat(out), mean, stddev, *_key_args(key, steps))


def dropout_mask(mask, rate, keep_scale, key, steps=None):
    _dropout_mask(_flat(mask), rate, keep_scale, *_key_args(key, steps))


def channel_scale(y, x, mask):
    _channel_scale(_nsc(y), _nsc(x), mask)
