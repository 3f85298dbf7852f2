"""CPU twins of kernels_numba.ops.unary (validated arguments only): one flat loop per
direction, the kind chosen by its integer code (the CUDA kernels' codes)."""

import math

import numba
import numpy as np

from kernels_numba.cpu._strided import PARALLEL_MIN_SIZE

NEG, SQUARE, SQRT, EXP, LOG, LOG1P, ABS, SIGN, CLIP, SILU, GELU_TANH, TRUNC, NONZERO, \
    RECIP, EXPM1 = range(15)
_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_K0 = np.float32(0.7978845608028654)  # sqrt(2/pi)
_K1 = np.float32(0.044715)
_TWO23 = np.float32(8388608.0)  # float32s this large are integers


@numba.njit(cache=True, error_model="numpy", inline="always")
def _sigmoid(v):
    if v >= _ZERO:
        return _ONE / (_ONE + math.exp(-v))
    e = math.exp(v)
    return e / (_ONE + e)


@numba.njit(cache=True, error_model="numpy", inline="always")
def unary_scalar(code, v, lo, hi):
    if code == NEG:
        return -v
    if code == SQUARE:
        return v * v
    if code == SQRT:  # libm: sqrt(-1) and log(-1) are NaN, log(0) is -inf
        return math.sqrt(v)
    if code == EXP:
        return math.exp(v)
    if code == LOG:
        return math.log(v)
    if code == LOG1P:
        return math.log1p(v)
    if code == ABS:
        return abs(v)
    if code == SIGN:
        return _ONE if v > _ZERO else (-_ONE if v < _ZERO else v - v + v)  # 0 or NaN
    if code == CLIP:  # comparisons a NaN falls through
        return lo if v < lo else (hi if v > hi else v)
    if code == SILU:
        return v * _sigmoid(v)
    if code == GELU_TANH:
        return _HALF * v * (_ONE + math.tanh(_K0 * (v + _K1 * v * v * v)))
    if code == TRUNC:
        if not abs(v) < _TWO23:  # NaN, inf and large values: already "integers"
            return v
        return np.float32(math.floor(v)) if v >= _ZERO else np.float32(math.ceil(v))
    if code == NONZERO:
        return _ONE if v != _ZERO else _ZERO
    if code == RECIP:
        return _ONE / v
    return math.expm1(v)


@numba.njit(cache=True, error_model="numpy", inline="always")
def unary_grad(code, g, v, lo, hi):
    if code == NEG:
        return -g
    if code == SQUARE:
        return np.float32(2.0) * v * g
    if code == SQRT:
        return g * _HALF / math.sqrt(v)
    if code == EXP:
        return g * math.exp(v)
    if code == LOG:
        return g / v
    if code == LOG1P:
        return g / (_ONE + v)
    if code == ABS:
        return g if v > _ZERO else (-g if v < _ZERO else v * g)  # 0 at 0, NaN at NaN
    if code == CLIP:
        return g if (v >= lo and v <= hi) else (_ZERO if v == v else v)
    if code == SILU:
        s = _sigmoid(v)
        return g * s * (_ONE + v * (_ONE - s))
    if code == GELU_TANH:
        t = math.tanh(_K0 * (v + _K1 * v * v * v))
        dt = (_ONE - t * t) * _K0 * (_ONE + np.float32(3.0) * _K1 * v * v)
        return g * (_HALF * (_ONE + t) + _HALF * v * dt)
    if code == RECIP:
        return -g / (v * v)
    if code == EXPM1:
        return g * math.exp(v)
    return _ZERO if v == v else v  # sign, trunc, nonzero: 0 (NaN at NaN)


@numba.njit(cache=True, error_model="numpy")
def _forward(y, x, code, lo, hi):
    for i in range(x.size):
        y[i] = unary_scalar(code, x[i], lo, hi)


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _forward_parallel(y, x, code, lo, hi):
    for i in numba.prange(x.size):
        y[i] = unary_scalar(code, x[i], lo, hi)


@numba.njit(cache=True, error_model="numpy")
def _backward(dx, dy, x, code, lo, hi):
    for i in range(x.size):
        dx[i] = unary_grad(code, dy[i], x[i], lo, hi)


@numba.njit(parallel=True, cache=True, error_model="numpy")
def _backward_parallel(dx, dy, x, code, lo, hi):
    for i in numba.prange(x.size):
        dx[i] = unary_grad(code, dy[i], x[i], lo, hi)


def unary_forward(y, x, code, alpha, beta):
    fn = _forward_parallel if x.size >= PARALLEL_MIN_SIZE else _forward
    fn(y.reshape(-1), x.reshape(-1), code, alpha, beta)


def unary_backward(dx, dy, x, code, alpha, beta):
    fn = _backward_parallel if x.size >= PARALLEL_MIN_SIZE else _backward
    fn(dx.reshape(-1), dy.reshape(-1), x.reshape(-1), code, alpha, beta)
