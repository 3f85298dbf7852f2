"""CPU twins of kernels_numba.ops.pointwise_loss, and the math of both devices.

`element_loss`, `element_grad` and the `*_row` functions are plain Python in float32
arithmetic: njit-compiled here and compiled as CUDA device functions by
kernels_numba.gpu.pointwise_loss, so both devices run one formula. Clips and maxima are
written as comparisons a NaN falls through (CUDA's fminf/fmaxf would drop it).
"""

import math

import numba
import numpy as np

from kernels_numba.cpu.activation import PARALLEL_MIN_SIZE
from kernels_numba.ops.pointwise_loss import KIND_CODES

MAE, MAPE, MSLE = KIND_CODES["mae"], KIND_CODES["mape"], KIND_CODES["msle"]
HUBER, LOG_COSH, POISSON = KIND_CODES["huber"], KIND_CODES["log_cosh"], KIND_CODES["poisson"]
KLD, HINGE, SQ_HINGE = (KIND_CODES["kl_divergence"], KIND_CODES["hinge"],
                        KIND_CODES["squared_hinge"])

_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)
_HUNDRED = np.float32(100.0)
_EPS = np.float32(1e-7)
_INV_EPS = np.float32(1e7)
_LOG2 = np.float32(math.log(2.0))


# (No helper calls: the CUDA side compiles these same functions, and a helper here
# would be the CPU dispatcher. Clips are spelled out as NaN-keeping comparisons.)


def element_loss(p, t, kind, delta):
    """The kind's elementwise term (kl_divergence: before the sum over the sample)."""
    if kind == MAE:
        return abs(t - p)
    if kind == MAPE:
        a = abs(t)
        return _HUNDRED * abs((t - p) / (_EPS if a < _EPS else a))
    if kind == MSLE:
        pf = _EPS if p < _EPS else p
        tf = _EPS if t < _EPS else t
        d = math.log(pf + _ONE) - math.log(tf + _ONE)
        return d * d
    if kind == HUBER:
        e = p - t
        a = abs(e)
        return _HALF * e * e if a <= delta else delta * a - _HALF * delta * delta
    if kind == LOG_COSH:
        x = p - t
        z = -_TWO * x  # softplus(z) = max(z, 0) + log1p(exp(-|z|)); the log1p keeps NaN
        return x + (max(z, _ZERO) + math.log1p(math.exp(-abs(z)))) - _LOG2
    if kind == POISSON:
        return p - t * math.log(p + _EPS)
    if kind == KLD:
        tc = _EPS if t < _EPS else (_ONE if t > _ONE else t)
        pc = _EPS if p < _EPS else (_ONE if p > _ONE else p)
        return tc * math.log(tc / pc)
    m = _ONE - t * p  # hinge kinds (targets already -1/1 where Keras converts them)
    h = _ZERO if m <= _ZERO else m
    return h if kind == HINGE else h * h


def element_grad(p, t, kind, delta):
    """d element_loss / dp; 0 where a clip or maximum is inactive, NaN for NaN input."""
    if kind == MAE or kind == MAPE or kind == HUBER:
        e = p - t
        sign = _ONE if e > _ZERO else (-_ONE if e < _ZERO else e * _ZERO)  # NaN: NaN
        if kind == MAE:
            return sign
        if kind == HUBER:
            return e if abs(e) <= delta else delta * sign
        a = abs(t)
        return _HUNDRED * sign / (_EPS if a < _EPS else a)
    if kind == MSLE:
        if p < _EPS:
            return _ZERO
        tf = _EPS if t < _EPS else t
        d = math.log(p + _ONE) - math.log(tf + _ONE)
        return _TWO * d / (p + _ONE)
    if kind == LOG_COSH:
        return math.tanh(p - t)
    if kind == POISSON:
        return _ONE - t / (p + _EPS)
    if kind == KLD:
        if p < _EPS or p > _ONE:
            return _ZERO
        return -(_EPS if t < _EPS else (_ONE if t > _ONE else t)) / p
    m = _ONE - t * p
    if m > _ZERO:
        return -t if kind == HINGE else -_TWO * t * m
    return _ZERO if m <= _ZERO else m


def cosine_row(loss, pred, targets, n):
    st, sp, dot = _ZERO, _ZERO, _ZERO
    for j in range(pred.shape[1]):
        p, t = pred[n, j], targets[n, j]
        st += t * t
        sp += p * p
        dot += t * p
    it = _ONE / math.sqrt(st)  # Keras: min(rsqrt(sum of squares), 1 / eps)
    it = _INV_EPS if it > _INV_EPS else it
    ip = _ONE / math.sqrt(sp)
    ip = _INV_EPS if ip > _INV_EPS else ip
    loss[n] = -(dot * it * ip)


def cosine_grad_row(dpred, pred, targets, scale, n):
    # loss = -it * dot * ip; ip = |p|^-1 unless clamped at 1/eps (then constant).
    st, sp, dot = _ZERO, _ZERO, _ZERO
    for j in range(pred.shape[1]):
        p, t = pred[n, j], targets[n, j]
        st += t * t
        sp += p * p
        dot += t * p
    it = _ONE / math.sqrt(st)
    it = _INV_EPS if it > _INV_EPS else it
    ip = _ONE / math.sqrt(sp)
    clamped = ip > _INV_EPS
    ip = _INV_EPS if clamped else ip
    c3 = _ZERO if clamped else dot * ip * ip * ip
    for j in range(pred.shape[1]):  # pred[n, j] read before dpred[n, j] is written
        dpred[n, j] = -scale * it * (targets[n, j] * ip - c3 * pred[n, j])


def cat_hinge_row(loss, pred, targets, n):
    pos = _ZERO
    neg = (_ONE - targets[n, 0]) * pred[n, 0]
    for j in range(pred.shape[1]):
        pos += targets[n, j] * pred[n, j]
        neg = max(neg, (_ONE - targets[n, j]) * pred[n, j])
    m = neg - pos + _ONE
    loss[n] = _ZERO if m <= _ZERO else m  # a NaN reaches pos, so m, and stays


def cat_hinge_grad_row(dpred, pred, targets, scale, n):
    pos = _ZERO
    neg = (_ONE - targets[n, 0]) * pred[n, 0]
    arg = 0
    for j in range(pred.shape[1]):
        v = (_ONE - targets[n, j]) * pred[n, j]
        pos += targets[n, j] * pred[n, j]
        if v > neg:  # the first maximum
            neg = v
            arg = j
    m = neg - pos + _ONE
    for j in range(pred.shape[1]):  # pred is not read again: dpred may be pred
        t = targets[n, j]
        if m > _ZERO:
            g = -t + ((_ONE - t) if j == arg else _ZERO)
        else:
            g = _ZERO if m <= _ZERO else m
        dpred[n, j] = scale * g


_jit = numba.njit(cache=True, error_model="numpy")  # x / 0 is inf, as on CUDA
_element_loss = _jit(element_loss)
_element_grad = _jit(element_grad)
_cosine_row = _jit(cosine_row)
_cosine_grad_row = _jit(cosine_grad_row)
_cat_hinge_row = _jit(cat_hinge_row)
_cat_hinge_grad_row = _jit(cat_hinge_grad_row)


@numba.njit(cache=True)
def _pointwise_row(loss, x, targets, kind, delta, n):
    d = x.shape[1]
    total = _ZERO
    for j in range(d):
        total += _element_loss(x[n, j], targets[n, j], kind, delta)
    loss[n] = total if kind == KLD else total / numba.float32(d)


@numba.njit(parallel=True, cache=True)
def _rows_forward(loss, x, targets, kind, delta):
    if loss.size * x.shape[1] < PARALLEL_MIN_SIZE:
        for n in range(loss.size):
            _pointwise_row(loss, x, targets, kind, delta, n)
        return
    for n in numba.prange(loss.size):
        _pointwise_row(loss, x, targets, kind, delta, n)


@numba.njit(parallel=True, cache=True)
def _elements_grad(dx, x, targets, coef, kind, delta):
    if x.size < PARALLEL_MIN_SIZE:
        for i in range(x.size):
            dx[i] = coef * _element_grad(x[i], targets[i], kind, delta)
        return
    for i in numba.prange(x.size):
        dx[i] = coef * _element_grad(x[i], targets[i], kind, delta)


@numba.njit(cache=True)
def _hinge_targets(out, targets):
    binary = True
    for i in range(targets.size):
        t = targets[i]
        if not (t == _ZERO or t == _ONE):
            binary = False
            break
    for i in range(targets.size):
        out[i] = _TWO * targets[i] - _ONE if binary else targets[i]


@numba.njit(cache=True)
def _smooth(out, targets, a, b):
    for i in range(targets.size):
        out[i] = targets[i] * a + b


@numba.njit(cache=True)
def _rows_cosine(loss, pred, targets):
    for n in range(loss.size):
        _cosine_row(loss, pred, targets, n)


@numba.njit(cache=True)
def _rows_cosine_grad(dpred, pred, targets, scale):
    for n in range(pred.shape[0]):
        _cosine_grad_row(dpred, pred, targets, scale, n)


@numba.njit(cache=True)
def _rows_cat_hinge(loss, pred, targets):
    for n in range(loss.size):
        _cat_hinge_row(loss, pred, targets, n)


@numba.njit(cache=True)
def _rows_cat_hinge_grad(dpred, pred, targets, scale):
    for n in range(pred.shape[0]):
        _cat_hinge_grad_row(dpred, pred, targets, scale, n)


def _rows(a):
    return a.reshape(a.shape[0], a.size // a.shape[0])


def _flat(a):
    return a.reshape(a.size)


def grad_coef(kind, scale, x):
    """scale / D (kl_divergence: scale, its per-sample value is a sum), folded in float64."""
    d = 1 if kind == "kl_divergence" else x.size // x.shape[0]
    return np.float32(scale / d)


# entry points


def pointwise_loss_forward(loss, pred, targets, *, kind, param):
    _rows_forward(loss, _rows(pred), _rows(targets), KIND_CODES[kind], np.float32(param))


def pointwise_loss_backward(dpred, pred, targets, *, kind, scale, param):
    _elements_grad(_flat(dpred), _flat(pred), _flat(targets), grad_coef(kind, scale, pred),
                   KIND_CODES[kind], np.float32(param))


def hinge_targets(out, targets):
    _hinge_targets(_flat(out), _flat(targets))


def smooth_labels(out, targets, a, b):
    _smooth(_flat(out), _flat(targets), a, b)


def cosine_similarity_forward(loss, pred, targets):
    _rows_cosine(loss, pred, targets)


def cosine_similarity_backward(dpred, pred, targets, scale):
    _rows_cosine_grad(dpred, pred, targets, np.float32(scale))


def categorical_hinge_forward(loss, pred, targets):
    _rows_cat_hinge(loss, pred, targets)


def categorical_hinge_backward(dpred, pred, targets, scale):
    _rows_cat_hinge_grad(dpred, pred, targets, np.float32(scale))
