"""CUDA kernels for kernels_numba.ops.unary: grid-stride flat loops, the kind chosen by
its code (the CPU twin's codes and formulas)."""

import math

from numba import float32

from kernels_numba._cuda import cuda, device_function, kernel, launch
from kernels_numba.gpu._strided import F32_1D, flat, grid_for

NEG, SQUARE, SQRT, EXP, LOG, LOG1P, ABS, SIGN, CLIP, SILU, GELU_TANH, TRUNC, NONZERO, \
    RECIP, EXPM1 = range(15)
# Module constants (compile-time in the kernels). The simulator runs Python's math,
# which raises where libm returns NaN/inf, so the kernels test those cases first.
_NAN = float32(math.nan)
_INF = float32(math.inf)
_EXP_MAX = float32(88.72284)  # exp overflows float32 above this


@device_function
def _sigmoid(v):
    one = float32(1.0)
    if v >= float32(0.0):
        return one / (one + math.exp(-v))
    e = math.exp(v)
    return e / (one + e)


@device_function
def unary_scalar(code, v, lo, hi):
    zero, one, half = float32(0.0), float32(1.0), float32(0.5)
    if code == NEG:
        return -v
    if code == SQUARE:
        return v * v
    if code == SQRT:
        return math.sqrt(v) if v >= zero else (v if v != v else _NAN)
    if code == EXP:
        return math.exp(v) if v <= _EXP_MAX else v + _INF  # NaN stays NaN
    if code == LOG:
        if v > zero:
            return math.log(v)
        return -_INF if v == zero else (v if v != v else _NAN)
    if code == LOG1P:
        if v > -one:
            return math.log1p(v)
        return -_INF if v == -one else (v if v != v else _NAN)
    if code == ABS:
        return abs(v)
    if code == SIGN:
        return one if v > zero else (-one if v < zero else v)
    if code == CLIP:
        return lo if v < lo else (hi if v > hi else v)
    if code == SILU:
        return v * _sigmoid(v)
    if code == GELU_TANH:
        k0, k1 = float32(0.7978845608028654), float32(0.044715)
        return half * v * (one + math.tanh(k0 * (v + k1 * v * v * v)))
    if code == TRUNC:
        if not abs(v) < float32(8388608.0):
            return v
        return v - math.fmod(v, one)
    if code == NONZERO:
        return one if v != zero else zero
    if code == RECIP:
        return one / v
    return math.expm1(v) if v <= _EXP_MAX else v + _INF


@device_function
def unary_grad(code, g, v, lo, hi):
    zero, one, half = float32(0.0), float32(1.0), float32(0.5)
    if code == NEG:
        return -g
    if code == SQUARE:
        return float32(2.0) * v * g
    if code == SQRT:
        return g * half / math.sqrt(v) if v >= zero else (v if v != v else _NAN)
    if code == EXP:
        return g * (math.exp(v) if v <= _EXP_MAX else v + _INF)
    if code == LOG:
        return g / v
    if code == LOG1P:
        return g / (one + v)
    if code == ABS:
        return g if v > zero else (-g if v < zero else v * g)
    if code == CLIP:
        return g if (v >= lo and v <= hi) else (zero if v == v else v)
    if code == SILU:
        s = _sigmoid(v)
        return g * s * (one + v * (one - s))
    if code == GELU_TANH:
        k0, k1 = float32(0.7978845608028654), float32(0.044715)
        t = math.tanh(k0 * (v + k1 * v * v * v))
        dt = (one - t * t) * k0 * (one + float32(3.0) * k1 * v * v)
        return g * (half * (one + t) + half * v * dt)
    if code == RECIP:
        return -g / (v * v)
    if code == EXPM1:
        return g * (math.exp(v) if v <= _EXP_MAX else v + _INF)
    return zero if v == v else v


@kernel(f"void({F32_1D}, {F32_1D}, int32, float32, float32)")
def _unary_kernel(y, x, code, lo, hi):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        y[i] = unary_scalar(code, x[i], lo, hi)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, int32, float32, float32)")
def _unary_grad_kernel(dx, dy, x, code, lo, hi):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        dx[i] = unary_grad(code, dy[i], x[i], lo, hi)


def unary_forward(y, x, code, alpha, beta):
    grid, block = grid_for(x.size)
    launch(_unary_kernel, grid, block, flat(y), flat(x), code, alpha, beta)


def unary_backward(dx, dy, x, code, alpha, beta):
    grid, block = grid_for(x.size)
    launch(_unary_grad_kernel, grid, block, flat(dx), flat(dy), flat(x), code, alpha, beta)
