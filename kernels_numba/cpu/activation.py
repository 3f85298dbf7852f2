"""CPU twins of kernels_numba.ops.activation (validated arguments only).

One scalar function per direction selects the kind by its integer code (the
same codes as the CUDA kernels). The loops are kernels_numba.cpu._parallel parts
(one compile each, split across threads for large buffers, one block otherwise),
made per kind on first use: the kind is a constant of the part, so a model compiles
only the kinds it runs, and ReLU's part holds nothing but ReLU's select (0.24 s of
compile against 0.38 s through the generic switch, and it vectorizes). Softmax and
log-softmax parts run over rows.

NaN propagates as IEEE says: the selects are written so that a NaN input takes the
branch that returns it (`not v <= 0` is true for NaN) and a NaN input gives a NaN
gradient (f'(NaN) is NaN). A NaN dy where f'(x) == 0 gives 0, as Keras's backends.
"""

import math

import numba
import numpy as np

from kernels_numba.cpu._parallel import (PARALLEL_MIN_WORK, f32_1d, f32_2d, f32_bits,
                                         from_f32_bits, lazy_part, pack, run)
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


@numba.njit(inline="always")
def _sigmoid(v):
    # Split on the sign so exp never overflows into inf/inf.
    if v >= _ZERO:
        return _ONE / (_ONE + math.exp(-v))
    e = math.exp(v)
    return e / (_ONE + e)


@numba.njit(inline="always")
def _softplus(v):
    return (v if not _ZERO > v else _ZERO) + math.log1p(math.exp(-abs(v)))


@numba.njit(inline="always")
def _relu(v):
    return _ZERO if v <= _ZERO else v  # NaN is not <= 0: it passes through


@numba.njit(inline="always")
def _relu_grad(g, s):
    # s is y, NaN exactly where x was; s - s is +0 for finite s, NaN for NaN
    return g if s > _ZERO else s - s


@numba.njit(inline="always")
def _relu6(v):
    # Comparisons a NaN fails: it reaches the last branch and passes through.
    return _ZERO if v <= _ZERO else (_SIX if v >= _SIX else v)


@numba.njit(cache=True)
def act_forward_scalar(v, code, alpha):
    """f(v) for the activation with integer `code` (softmax excluded)."""
    if code == RELU:
        return _relu(v)
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
        return _softplus(v)
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


@numba.njit(inline="always")
def _window(g, v, lo, hi):
    """g inside (lo, hi), 0 outside, NaN for a NaN v (v - v)."""
    if v > lo and v < hi:
        return g
    return _ZERO if (v <= lo or v >= hi) else v - v


@numba.njit(cache=True)
def act_backward_scalar(g, s, code, alpha):
    """g * f'(.), where s is y for relu/sigmoid/tanh and x for the other kinds."""
    if code == RELU:
        return _relu_grad(g, s)
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


# Kept for the other CPU twins' serial/parallel choice (their own loops).
PARALLEL_MIN_SIZE = PARALLEL_MIN_WORK
# The switches inlined into this file's per-kind parts, where the kind is a constant.
# cpu/dense.py calls the compiled ones above: inlining a switch this big into a part
# whose kind is a run-time value cost 1.2 s of compile there, against 0.5 s for the
# separate compile.
_forward_inline = numba.njit(inline="always")(act_forward_scalar.py_func)
_backward_inline = numba.njit(inline="always")(act_backward_scalar.py_func)


@numba.njit(inline="always")
def _block(v, p, parts):
    """Block p of parts of the 1-D v, as a view: a loop from 0 over it vectorizes (from
    r0 = n*p//parts LLVM cannot drop the negative-index check: 2.7x slower at 1.4M)."""
    n = v.size
    return v[n * p // parts:n * (p + 1) // parts]


def _elementwise_parts(code):
    """(forward, backward) parts for the kind `code`, a constant of their code."""
    if code == RELU:
        def forward(args, p, parts):
            a = numba.carray(args, 5)
            y, x = _block(f32_1d(a, 0), p, parts), _block(f32_1d(a, 2), p, parts)
            for i in range(x.size):
                y[i] = _relu(x[i])

        def backward(args, p, parts):
            a = numba.carray(args, 7)
            dx, dy = _block(f32_1d(a, 0), p, parts), _block(f32_1d(a, 2), p, parts)
            s = _block(f32_1d(a, 4), p, parts)
            for i in range(dy.size):
                dx[i] = _relu_grad(dy[i], s[i])
    else:
        def forward(args, p, parts):
            a = numba.carray(args, 5)
            y, x = _block(f32_1d(a, 0), p, parts), _block(f32_1d(a, 2), p, parts)
            alpha = from_f32_bits(a[4])
            for i in range(x.size):
                y[i] = _forward_inline(x[i], code, alpha)

        def backward(args, p, parts):
            a = numba.carray(args, 7)
            dx, dy = _block(f32_1d(a, 0), p, parts), _block(f32_1d(a, 2), p, parts)
            s = _block(f32_1d(a, 4), p, parts)
            alpha = from_f32_bits(a[6])
            for i in range(dy.size):
                dx[i] = _backward_inline(dy[i], s[i], code, alpha)
    name = {v: k for k, v in KIND_CODES.items()}[code]
    for fn, direction in ((forward, "forward"), (backward, "backward")):
        # One cache file per kind and direction (numba names them by qualname).
        fn.__name__ = fn.__qualname__ = f"_{name}_{direction}_part"
    return lazy_part(forward), lazy_part(backward)


_PARTS = {}


def _parts(kind):
    if kind not in _PARTS:
        _PARTS[kind] = _elementwise_parts(KIND_CODES[kind])
    return _PARTS[kind]


@numba.njit(inline="always")
def _softmax_row(y, x):
    n = x.size
    m = x[0]
    for j in range(1, n):
        if x[j] > m:  # max(m, x[j]): a NaN stays or is skipped, it reaches the sum
            m = x[j]
    total = _ZERO
    for j in range(n):
        e = math.exp(x[j] - m)  # subtracting the row max: no overflow
        y[j] = e
        total += e
    inv = _ONE / total
    for j in range(n):
        y[j] *= inv


@numba.njit(inline="always")
def _log_softmax_row(y, x):
    n = x.size
    m = x[0]
    for j in range(1, n):
        if x[j] > m:
            m = x[j]
    total = _ZERO
    for j in range(n):
        total += math.exp(x[j] - m)
    lse = m + math.log(total)  # a NaN in the row reaches the sum, so every y is NaN
    for j in range(n):
        y[j] = x[j] - lse


def _softmax_forward_part(args, p, parts):
    a = numba.carray(args, 6)
    y, x = f32_2d(a, 0), f32_2d(a, 3)
    rows = x.shape[0]
    for r in range(rows * p // parts, rows * (p + 1) // parts):
        _softmax_row(y[r], x[r])


def _log_softmax_forward_part(args, p, parts):
    a = numba.carray(args, 6)
    y, x = f32_2d(a, 0), f32_2d(a, 3)
    rows = x.shape[0]
    for r in range(rows * p // parts, rows * (p + 1) // parts):
        _log_softmax_row(y[r], x[r])


def _softmax_backward_part(args, p, parts):
    a = numba.carray(args, 9)
    dx, dy, y = f32_2d(a, 0), f32_2d(a, 3), f32_2d(a, 6)
    rows, n = dy.shape
    for r in range(rows * p // parts, rows * (p + 1) // parts):
        dot = _ZERO
        for j in range(n):
            dot += dy[r, j] * y[r, j]
        for j in range(n):  # reads dy[j] before writing dx[j]: dx may be dy
            dx[r, j] = y[r, j] * (dy[r, j] - dot)


def _log_softmax_backward_part(args, p, parts):
    a = numba.carray(args, 9)
    dx, dy, y = f32_2d(a, 0), f32_2d(a, 3), f32_2d(a, 6)
    rows, n = dy.shape
    for r in range(rows * p // parts, rows * (p + 1) // parts):
        total = _ZERO
        for j in range(n):
            total += dy[r, j]
        for j in range(n):  # dx may be dy: dy[r, j] read before dx[r, j] is written
            dx[r, j] = dy[r, j] - math.exp(y[r, j]) * total


_softmax_forward_part = lazy_part(_softmax_forward_part)
_log_softmax_forward_part = lazy_part(_log_softmax_forward_part)
_softmax_backward_part = lazy_part(_softmax_backward_part)
_log_softmax_backward_part = lazy_part(_log_softmax_backward_part)
_ROW_PARTS = {"softmax": (_softmax_forward_part, _softmax_backward_part),
              "log_softmax": (_log_softmax_forward_part, _log_softmax_backward_part)}


def _rows(a):
    return a.reshape(-1, a.shape[-1])


def activation_forward(y, x, *, kind, alpha=0.0):
    if x.size == 0:
        return
    if kind in _ROW_PARTS:
        run(_ROW_PARTS[kind][0], pack(_rows(y), _rows(x)), x.size)
    elif kind == "linear":
        if y is not x:
            np.copyto(y, x)
    else:
        run(_parts(kind)[0], pack(y.reshape(-1), x.reshape(-1), f32_bits(alpha)), x.size)


def activation_backward(dx, dy, x, y, *, kind, alpha=0.0):
    if dy.size == 0:
        return
    if kind in _ROW_PARTS:
        run(_ROW_PARTS[kind][1], pack(_rows(dx), _rows(dy), _rows(y)), dy.size)
    elif kind == "linear":
        if dx is not dy:
            np.copyto(dx, dy)
    else:
        s = y if kind in USES_Y else x
        run(_parts(kind)[1], pack(dx.reshape(-1), dy.reshape(-1), s.reshape(-1),
                                  f32_bits(alpha)), dy.size)
