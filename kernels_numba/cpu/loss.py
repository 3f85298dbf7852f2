"""CPU twins of kernels_numba.ops.loss, and the per-row math of both devices.

The `*_row` and `*_grad` functions are plain Python in float32 arithmetic: the
loops below njit-compile them and kernels_numba.gpu.loss compiles the same
functions as CUDA device functions, so both devices run one formula. A label
outside [0, K) gives a NaN loss and a zero gradient row (it is never used as an index).
Probability losses follow Keras: p / sum(p) (categorical), then clip to
[1e-7, 1 - 1e-7]; the gradient through the clip is zero outside that range.
NaN propagates on both devices: the clips are comparisons a NaN falls through (not
min/max, which CUDA maps to fminf/fmaxf, and those drop NaN), and a NaN probability
counts as inside the clip range, so its gradient is NaN too.
"""

import math

import numba
import numpy as np

# The pointwise losses (BCE, BCE from logits, MSE) and the fused training loss live in
# modules of their own; dispatch and gpu.loss find every name here.
from kernels_numba.cpu.loss_bce_mse import (  # noqa: F401
    BCE,
    BCE_LOGITS,
    MSE,
    binary_ce_forward_row,
    binary_ce_grad,
    binary_ce_logits_forward_row,
    binary_ce_logits_grad,
    binary_crossentropy_backward,
    binary_crossentropy_forward,
    binary_crossentropy_logits_backward,
    binary_crossentropy_logits_forward,
    mse_backward,
    mse_forward,
    mse_forward_row,
    mse_grad,
    pointwise_coef,
)
from kernels_numba.cpu.loss_train import (
    softmax_sparse_ce_train,  # noqa: F401
    softmax_sparse_ce_train_row,  # noqa: F401
)

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_EPS = np.float32(1e-7)
_ONE_MINUS_EPS = np.float32(1.0 - 1e-7)
_NAN = np.float32(np.nan)


# per-row math (shared with the CUDA kernels); rows are 2-D arrays indexed [n, j]


def softmax_ce_forward_row(loss, probs, logits, labels, n):
    k = logits.shape[1]
    label = labels[n]
    valid = label >= 0 and label < k
    z_label = logits[n, label] if valid else _ZERO  # read before probs may overwrite logits
    m = logits[n, 0]
    for j in range(1, k):
        m = max(m, logits[n, j])
    s = _ZERO
    for j in range(k):
        e = math.exp(logits[n, j] - m)
        probs[n, j] = e
        s += e
    inv = _ONE / s
    for j in range(k):
        probs[n, j] *= inv
    loss[n] = (math.log(s) + m - z_label) if valid else _NAN  # logsumexp - z[label]


def softmax_ce_backward_row(dlogits, probs, labels, scale, n):
    k = probs.shape[1]
    label = labels[n]
    valid = label >= 0 and label < k
    for j in range(k):
        d = _ZERO
        if valid:
            d = probs[n, j] - (_ONE if j == label else _ZERO)
        dlogits[n, j] = scale * d


def softmax_categorical_ce_forward_row(loss, probs, logits, targets, n):
    k = logits.shape[1]
    m = logits[n, 0]
    for j in range(1, k):
        m = max(m, logits[n, j])
    s = _ZERO
    for j in range(k):
        s += math.exp(logits[n, j] - m)
    lse = m + math.log(s)
    inv = _ONE / s
    total = _ZERO
    for j in range(k):
        z = logits[n, j]
        total += targets[n, j] * (lse - z)  # -sum t * log_softmax(z)
        probs[n, j] = math.exp(z - m) * inv
    loss[n] = total


def softmax_categorical_ce_backward_row(dlogits, probs, targets, scale, n):
    k = probs.shape[1]
    t_sum = _ZERO
    for j in range(k):
        t_sum += targets[n, j]
    for j in range(k):
        dlogits[n, j] = scale * (probs[n, j] * t_sum - targets[n, j])


def sparse_ce_forward_row(loss, probs, labels, n):
    k = probs.shape[1]
    label = labels[n]
    if label < 0 or label >= k:
        loss[n] = _NAN
        return
    s = _ZERO
    for j in range(k):
        s += probs[n, j]
    q = probs[n, label] / s
    q = _EPS if q < _EPS else (_ONE_MINUS_EPS if q > _ONE_MINUS_EPS else q)  # NaN stays
    loss[n] = -math.log(q)


def sparse_ce_backward_row(dprobs, probs, labels, scale, n):
    # d/dp_j [-log(p_y / S)] = 1/S - [j == y]/p_y while p_y/S is inside the clip range.
    k = probs.shape[1]
    label = labels[n]
    valid = label >= 0 and label < k
    s = _ZERO
    for j in range(k):
        s += probs[n, j]
    p_label = probs[n, label] if valid else _ONE
    q = p_label / s
    inside = valid and not (q < _EPS or q > _ONE_MINUS_EPS)  # NaN is inside: NaN gradient
    base = scale / s if inside else _ZERO
    for j in range(k):
        dprobs[n, j] = base - (scale / p_label if inside and j == label else _ZERO)


def categorical_ce_forward_row(loss, probs, targets, n):
    k = probs.shape[1]
    s = _ZERO
    for j in range(k):
        s += probs[n, j]
    total = _ZERO
    for j in range(k):
        q = probs[n, j] / s
        q = _EPS if q < _EPS else (_ONE_MINUS_EPS if q > _ONE_MINUS_EPS else q)  # NaN stays
        total -= targets[n, j] * math.log(q)
    loss[n] = total


def categorical_ce_backward_row(dprobs, probs, targets, scale, n):
    # d/dp_j [-sum_k t_k log q_k] = A/S - [j inside] t_j/p_j, A = sum of t_k over unclipped k.
    k = probs.shape[1]
    s = _ZERO
    for j in range(k):
        s += probs[n, j]
    a = _ZERO
    for j in range(k):
        q = probs[n, j] / s
        if not (q < _EPS or q > _ONE_MINUS_EPS):
            a += targets[n, j]
    base = scale * a / s
    for j in range(k):
        p = probs[n, j]
        q = p / s
        inside = not (q < _EPS or q > _ONE_MINUS_EPS)
        dprobs[n, j] = base - (scale * targets[n, j] / p if inside else _ZERO)


# Inlined into their row loops (below): as separate compiles the sparse CE rows alone
# cost 0.5 s more on a cold cache (each callee is a compile of its own, then optimised
# again inside its caller).
_jit = numba.njit(inline="always")
_softmax_ce_forward_row = _jit(softmax_ce_forward_row)
_softmax_ce_backward_row = _jit(softmax_ce_backward_row)
_softmax_categorical_ce_forward_row = _jit(softmax_categorical_ce_forward_row)
_softmax_categorical_ce_backward_row = _jit(softmax_categorical_ce_backward_row)
_sparse_ce_forward_row = _jit(sparse_ce_forward_row)
_sparse_ce_backward_row = _jit(sparse_ce_backward_row)
_categorical_ce_forward_row = _jit(categorical_ce_forward_row)
_categorical_ce_backward_row = _jit(categorical_ce_backward_row)


# row loops. Class losses run on the calling thread: a batch has few rows (64 of 10
# classes: microseconds), far less than waking the thread pool costs (~15-40 us).


@numba.njit(cache=True)
def _rows_softmax_ce(loss, probs, logits, labels):
    for n in range(loss.size):
        _softmax_ce_forward_row(loss, probs, logits, labels, n)


@numba.njit(cache=True)
def _rows_softmax_ce_backward(dlogits, probs, labels, scale):
    for n in range(probs.shape[0]):
        _softmax_ce_backward_row(dlogits, probs, labels, scale, n)


@numba.njit(cache=True)
def _rows_softmax_categorical_ce(loss, probs, logits, targets):
    for n in range(loss.size):
        _softmax_categorical_ce_forward_row(loss, probs, logits, targets, n)


@numba.njit(cache=True)
def _rows_softmax_categorical_ce_backward(dlogits, probs, targets, scale):
    for n in range(probs.shape[0]):
        _softmax_categorical_ce_backward_row(dlogits, probs, targets, scale, n)


@numba.njit(cache=True)
def _rows_sparse_ce(loss, probs, labels):
    for n in range(loss.size):
        _sparse_ce_forward_row(loss, probs, labels, n)


@numba.njit(cache=True)
def _rows_sparse_ce_backward(dprobs, probs, labels, scale):
    for n in range(probs.shape[0]):
        _sparse_ce_backward_row(dprobs, probs, labels, scale, n)


@numba.njit(cache=True)
def _rows_categorical_ce(loss, probs, targets):
    for n in range(loss.size):
        _categorical_ce_forward_row(loss, probs, targets, n)


@numba.njit(cache=True)
def _rows_categorical_ce_backward(dprobs, probs, targets, scale):
    for n in range(probs.shape[0]):
        _categorical_ce_backward_row(dprobs, probs, targets, scale, n)


# entry points


def softmax_cross_entropy_forward(loss, probs, logits, labels):
    _rows_softmax_ce(loss, probs, logits, labels)


def softmax_cross_entropy_backward(dlogits, probs, labels, *, scale):
    _rows_softmax_ce_backward(dlogits, probs, labels, np.float32(scale))


def softmax_categorical_cross_entropy_forward(loss, probs, logits, targets):
    _rows_softmax_categorical_ce(loss, probs, logits, targets)


def softmax_categorical_cross_entropy_backward(dlogits, probs, targets, *, scale):
    _rows_softmax_categorical_ce_backward(dlogits, probs, targets, np.float32(scale))


def sparse_categorical_crossentropy_forward(loss, probs, labels):
    _rows_sparse_ce(loss, probs, labels)


def sparse_categorical_crossentropy_backward(dprobs, probs, labels, *, scale):
    _rows_sparse_ce_backward(dprobs, probs, labels, np.float32(scale))


def categorical_crossentropy_forward(loss, probs, targets):
    _rows_categorical_ce(loss, probs, targets)


def categorical_crossentropy_backward(dprobs, probs, targets, *, scale):
    _rows_categorical_ce_backward(dprobs, probs, targets, np.float32(scale))


