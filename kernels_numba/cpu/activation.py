"""CPU twins of kernels_numba.ops.activation (validated arguments only).

One scalar function per direction selects the kind by its integer code (the
same codes as the CUDA kernels); the flat loops run over elements, softmax over
rows, in parallel for large buffers.

NaN propagates as IEEE says: the selects are written so that a NaN input takes the
branch that returns it (`not v <= 0` is true for NaN) and a NaN input gives a NaN
gradient (f'(NaN) is NaN). A NaN dy where f'(x) == 0 gives 0, as Keras's backends.
"""

import math

import numba
import numpy as np

from kernels_numba.ops.activation import KIND_CODES, USES_Y

LINEAR = KIND_CODES["linear"]
RELU = KIND_CODES["relu"]
SIGMOID = KIND_CODES["sigmoid"]
TANH = KIND_CODES["tanh"]
LEAKY_RELU = KIND_CODES["leaky_relu"]
ELU = KIND_CODES["elu"]
GELU = KIND_CODES["gelu"]
SOFTPLUS = KIND_CODES["softplus"]
SILU = KIND_CODES["silu"]
SELU = KIND_CODES["selu"]
RELU6 = KIND_CODES["relu6"]
HARD_SIGMOID = KIND_CODES["hard_sigmoid"]
HARD_SILU = KIND_CODES["hard_silu"]
MISH = KIND_CODES["mish"]
EXPONENTIAL = KIND_CODES["exponential"]
SOFTSIGN = KIND_CODES["softsign"]

# float32 constants keep the loops in single precision (and vectorisable).
_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_RSQRT2 = np.float32(0.7071067811865476)  # 1/sqrt(2)
_RSQRT2PI = np.float32(0.3989422804014327)  # 1/sqrt(2*pi)
_THREE = np.float32(3.0)
_SIX = np.float32(6.0)
_SIXTH = np.float32(1.0 / 6.0)
# torch.nn.functional.selu's constants (Keras 3's torch backend calls it).
SELU_ALPHA = np.float32(1.6732632423543772848170429916717)
SELU_SCALE = np.float32(1.0507009873554804934193349852946)


@numba.njit(cache=True)
def _sigmoid(v):
    # Split on the sign so exp never overflows into inf/inf.
    if v >= _ZERO:
        return _ONE / (_ONE + math.exp(-v))
    e = math.exp(v)
    return e / (_ONE + e)


@numba.njit(cache=True)
def _softplus(v):
    return max(v, _ZERO) + math.log1p(math.exp(-abs(v)))


@numba.njit(cache=True)
def _relu6(v):
    # Comparisons a NaN fails: it reaches the last branch and passes through.
    return _ZERO if v <= _ZERO else (_SIX if v >= _SIX else v)


@numba.njit(cache=True)
def act_forward_scalar(v, code, alpha):
    """f(v) for the activation with integer `code` (softmax excluded)."""
    if code == RELU:
        return _ZERO if v <= _ZERO else v  # NaN is not <= 0: it passes through
    if code == SIGMOID:
        return _sigmoid(v)
    if code == TANH:
        return math.tanh(v)
    if code == LEAKY_RELU:
        return v if v > _ZERO else alpha * v
    if code == ELU:
        return v if v > _ZERO else alpha * math.expm1(v)
    if code == GELU:
        return _HALF * v * (_ONE + math.erf(v * _RSQRT2))
    if code == SOFTPLUS:
        return max(v, _ZERO) + math.log1p(math.exp(-abs(v)))
    if code == SILU:
        return v * _sigmoid(v)
    if code == SELU:
        return SELU_SCALE * (v if v > _ZERO else SELU_ALPHA * math.expm1(v))
    if code == RELU6:
        return _relu6(v)
    if code == HARD_SIGMOID:
        return _relu6(v + _THREE) * _SIXTH
    if code == HARD_SILU:
        return v * (_relu6(v + _THREE) * _SIXTH)
    if code == MISH:
        return v * math.tanh(_softplus(v))
    if code == EXPONENTIAL:
        return math.exp(v)
    if code == SOFTSIGN:
        return v / (abs(v) + _ONE)
    return v


@numba.njit(cache=True)
def _window(g, v, lo, hi):
    """g inside (lo, hi), 0 outside, NaN for a NaN v (v - v)."""
    if v > lo and v < hi:
        return g
    return _ZERO if (v <= lo or v >= hi) else v - v


@numba.njit(cache=True)
def act_backward_scalar(g, s, code, alpha):
    """g * f'(.), where s is y for relu/sigmoid/tanh and x for the other kinds."""
    if code == RELU:  # s is y, NaN exactly where x was; s - s is +0 for finite s, NaN for NaN
        return g if s > _ZERO else s - s
    if code == SIGMOID:
        return g * s * (_ONE - s)
    if code == TANH:
        return g * (_ONE - s * s)
    if code == LEAKY_RELU:
        return g if s > _ZERO else (alpha * g if s <= _ZERO else s)
    if code == ELU:
        return g if s > _ZERO else g * alpha * math.exp(s)
    if code == GELU:
        cdf = _HALF * (_ONE + math.erf(s * _RSQRT2))
        return g * (cdf + s * _RSQRT2PI * math.exp(-_HALF * s * s))
    if code == SOFTPLUS:
        return g * _sigmoid(s)
    if code == SILU:
        sig = _sigmoid(s)
        return g * (sig * (_ONE + s * (_ONE - sig)))
    if code == SELU:
        return g * SELU_SCALE if s > _ZERO else g * (SELU_SCALE * SELU_ALPHA * math.exp(s))
    if code == RELU6:
        return _window(g, s, _ZERO, _SIX)
    if code == HARD_SIGMOID:
        return _window(g * _SIXTH, s, -_THREE, _THREE)
    if code == HARD_SILU:  # x * (x + 3) / 6 inside, x above: torch's hardswish gradient
        if s >= _THREE:
            return g
        return _window(g * ((s + s + _THREE) * _SIXTH), s, -_THREE, _THREE)
    if code == MISH:
        t = math.tanh(_softplus(s))
        return g * (t + s * _sigmoid(s) * (_ONE - t * t))
    if code == EXPONENTIAL:
        return g * math.exp(s)
    if code == SOFTSIGN:
        d = _ONE + abs(s)
        return g / (d * d)
    return g


# Serial and parallel twins of each loop: waking the thread pool costs more than
# it saves on small buffers, and its spinning threads slow the BLAS call that
# usually follows (both pools want every core).
PARALLEL_MIN_SIZE = 1 << 15


@numba.njit(cache=True)
def _forward_serial(y, x, code, alpha):
    for i in range(x.size):
        y[i] = act_forward_scalar(x[i], code, alpha)


# ReLU gets its own loop in the parallel twins: with the kind switch inside the
# element loop LLVM does not vectorize it (relu backward 0.52 -> 0.17 ms at 0.5M).
@numba.njit(parallel=True, cache=True)
def _forward_parallel(y, x, code, alpha):
    if code == RELU:
        for i in numba.prange(x.size):
            y[i] = _ZERO if x[i] <= _ZERO else x[i]
        return
    for i in numba.prange(x.size):
        y[i] = act_forward_scalar(x[i], code, alpha)


@numba.njit(cache=True)
def _backward_serial(dx, dy, s, code, alpha):
    for i in range(dy.size):
        dx[i] = act_backward_scalar(dy[i], s[i], code, alpha)


@numba.njit(parallel=True, cache=True)
def _backward_parallel(dx, dy, s, code, alpha):
    if code == RELU:
        for i in numba.prange(dy.size):
            v = s[i]
            dx[i] = dy[i] if v > _ZERO else v - v  # NaN y -> NaN dx (one select, as before)
        return
    for i in numba.prange(dy.size):
        dx[i] = act_backward_scalar(dy[i], s[i], code, alpha)


@numba.njit(cache=True)
def _softmax_row(y, x):
    n = x.size
    m = x[0]
    for j in range(1, n):
        m = max(m, x[j])
    total = _ZERO
    for j in range(n):
        e = math.exp(x[j] - m)  # subtracting the row max: no overflow
        y[j] = e
        total += e
    inv = _ONE / total
    for j in range(n):
        y[j] *= inv


@numba.njit(cache=True)
def _softmax_backward_row(dx, dy, y):
    dot = _ZERO
    for j in range(dy.size):
        dot += dy[j] * y[j]
    for j in range(dy.size):  # reads dy[j] before writing dx[j]: dx may be dy
        dx[j] = y[j] * (dy[j] - dot)


@numba.njit(cache=True)
def _log_softmax_row(y, x):
    n = x.size
    m = x[0]
    for j in range(1, n):
        m = max(m, x[j])
    total = _ZERO
    for j in range(n):
        total += math.exp(x[j] - m)
    lse = m + math.log(total)  # a NaN in the row reaches the sum, so every y is NaN
    for j in range(n):
        y[j] = x[j] - lse


@numba.njit(cache=True)
def _log_softmax_backward_row(dx, dy, y):
    total = _ZERO
    for j in range(dy.size):
        total += dy[j]
    for j in range(dy.size):  # dx may be dy: dy[j] read before dx[j] is written
        dx[j] = dy[j] - math.exp(y[j]) * total


@numba.njit(cache=True)
def _log_softmax_forward(y, x):
    for r in range(x.shape[0]):
        _log_softmax_row(y[r], x[r])


@numba.njit(cache=True)
def _log_softmax_backward(dx, dy, y):
    for r in range(dy.shape[0]):
        _log_softmax_backward_row(dx[r], dy[r], y[r])


@numba.njit(cache=True)
def _softmax_forward_serial(y, x):
    for r in range(x.shape[0]):
        _softmax_row(y[r], x[r])


@numba.njit(parallel=True, cache=True)
def _softmax_forward_parallel(y, x):
    for r in numba.prange(x.shape[0]):
        _softmax_row(y[r], x[r])


@numba.njit(cache=True)
def _softmax_backward_serial(dx, dy, y):
    for r in range(dy.shape[0]):
        _softmax_backward_row(dx[r], dy[r], y[r])


@numba.njit(parallel=True, cache=True)
def _softmax_backward_parallel(dx, dy, y):
    for r in numba.prange(dy.shape[0]):
        _softmax_backward_row(dx[r], dy[r], y[r])


def _rows(a):
    return a.reshape(-1, a.shape[-1])


def activation_forward(y, x, *, kind, alpha=0.0):
    if x.size == 0:
        return
    big = x.size >= PARALLEL_MIN_SIZE
    if kind == "log_softmax":  # rows are independent and short: serial
        _log_softmax_forward(_rows(y), _rows(x))
    elif kind == "softmax":
        (_softmax_forward_parallel if big else _softmax_forward_serial)(_rows(y), _rows(x))
    else:
        (_forward_parallel if big else _forward_serial)(
            y.reshape(-1), x.reshape(-1), KIND_CODES[kind], np.float32(alpha))


def activation_backward(dx, dy, x, y, *, kind, alpha=0.0):
    if dy.size == 0:
        return
    big = dy.size >= PARALLEL_MIN_SIZE
    if kind == "log_softmax":
        _log_softmax_backward(_rows(dx), _rows(dy), _rows(y))
    elif kind == "softmax":
        (_softmax_backward_parallel if big else _softmax_backward_serial)(
            _rows(dx), _rows(dy), _rows(y))
    elif kind == "linear":
        if dx is not dy:
            np.copyto(dx, dy)
    else:
        s = y if kind in USES_Y else x
        (_backward_parallel if big else _backward_serial)(
            dx.reshape(-1), dy.reshape(-1), s.reshape(-1), KIND_CODES[kind], np.float32(alpha))
