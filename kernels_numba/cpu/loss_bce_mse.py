"""CPU twins of ops.loss's per-element losses: binary crossentropy (from probabilities
and from logits) and mean squared error, and their math. (The other pointwise losses,
ops.pointwise_loss, are cpu/pointwise_loss.py.)

Split from cpu/loss.py (file size); kernels_numba.cpu.loss re-exports every name, so
dispatch and kernels_numba.gpu.loss (which compiles the `*_row` / `*_grad` functions
as CUDA device functions) find them there. Same conventions as cpu/loss.py: float32
arithmetic, the probability clip [1e-7, 1 - 1e-7] by comparisons (NaN falls through),
per-sample losses average over the D non-batch elements.
"""

import math

import numba
import numpy as np

from kernels_numba.cpu._parallel import (
    f32_1d,
    f32_2d,
    f32_bits,
    from_f32_bits,
    lazy_part,
    pack,
    run,
)

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_EPS = np.float32(1e-7)
_ONE_MINUS_EPS = np.float32(1.0 - 1e-7)


# per-sample math (shared with the CUDA kernels); rows are 2-D arrays indexed [n, j]


def binary_ce_forward_row(loss, probs, targets, n):
    d = probs.shape[1]
    total = _ZERO
    for j in range(d):
        p = probs[n, j]
        p = _EPS if p < _EPS else (_ONE_MINUS_EPS if p > _ONE_MINUS_EPS else p)  # NaN stays
        t = targets[n, j]
        total += t * math.log(p) + (_ONE - t) * math.log(_ONE - p)
    loss[n] = -total / numba.float32(d)


def binary_ce_grad(p, t, coef):
    """coef * d/dp of -(t log p + (1-t) log(1-p)); zero where p is clipped."""
    if p < _EPS or p > _ONE_MINUS_EPS:
        return _ZERO
    return coef * ((_ONE - t) / (_ONE - p) - t / p)


def binary_ce_logits_forward_row(loss, logits, targets, n):
    # Stable form (TF/torch backends): max(z, 0) - z*t + log(1 + exp(-|z|)).
    d = logits.shape[1]
    total = _ZERO
    for j in range(d):
        z = logits[n, j]
        total += max(z, _ZERO) - z * targets[n, j] + math.log1p(math.exp(-abs(z)))
    loss[n] = total / numba.float32(d)


def binary_ce_logits_grad(z, t, coef):
    """coef * (sigmoid(z) - t), sigmoid without overflow."""
    if z >= _ZERO:
        sig = _ONE / (_ONE + math.exp(-z))
    else:
        e = math.exp(z)
        sig = e / (_ONE + e)
    return coef * (sig - t)


def mse_forward_row(loss, pred, targets, n):
    d = pred.shape[1]
    total = _ZERO
    for j in range(d):
        diff = pred[n, j] - targets[n, j]
        total += diff * diff
    loss[n] = total / numba.float32(d)


def mse_grad(p, t, coef):
    """coef * (p - t); the caller folds 2 * scale / D into coef."""
    return coef * (p - t)


# Inlined into the parts below (one compile each, as in cpu/loss.py).
_jit = numba.njit(inline="always")
_binary_ce_forward_row = _jit(binary_ce_forward_row)
_binary_ce_grad = _jit(binary_ce_grad)
_binary_ce_logits_forward_row = _jit(binary_ce_logits_forward_row)
_binary_ce_logits_grad = _jit(binary_ce_logits_grad)
_mse_forward_row = _jit(mse_forward_row)
_mse_grad = _jit(mse_grad)


# Pointwise losses (BCE, BCE from logits, MSE): per-sample mean over the D non-batch elements.
@numba.njit(inline="always")
def _pointwise_row(loss, x, targets, kind, n):
    if kind == 0:
        _binary_ce_forward_row(loss, x, targets, n)
    elif kind == 1:
        _binary_ce_logits_forward_row(loss, x, targets, n)
    else:
        _mse_forward_row(loss, x, targets, n)


# Parts split across threads by kernels_numba.cpu._parallel for large inputs (as
# parallel=True functions they cost ~1 s of compile each).
@lazy_part
def _rows_pointwise_part(args, p, parts):
    a = numba.carray(args, 9)  # loss (N,), x, targets (N, D), kind
    loss, x, targets = f32_1d(a, 0), f32_2d(a, 2), f32_2d(a, 5)
    rows = loss.size
    for n in range(rows * p // parts, rows * (p + 1) // parts):
        _pointwise_row(loss, x, targets, a[8], n)


@numba.njit(inline="always")
def _pointwise_grad(x, t, coef, kind):
    if kind == 0:
        return _binary_ce_grad(x, t, coef)
    if kind == 1:
        return _binary_ce_logits_grad(x, t, coef)
    return _mse_grad(x, t, coef)


@lazy_part
def _pointwise_grad_part(args, p, parts):
    a = numba.carray(args, 8)  # dx, x, targets (flat), coef (float32 bits), kind
    n = a[1]
    i0, i1 = n * p // parts, n * (p + 1) // parts
    # Views from 0: from a run-time i0 the loop keeps its negative-index checks.
    dx, x, t = f32_1d(a, 0)[i0:i1], f32_1d(a, 2)[i0:i1], f32_1d(a, 4)[i0:i1]
    coef, kind = from_f32_bits(a[6]), a[7]
    for i in range(dx.size):
        dx[i] = _pointwise_grad(x[i], t[i], coef, kind)


def _rows_pointwise(loss, x, targets, kind):
    run(_rows_pointwise_part, pack(loss, x, targets, kind), x.size)


def _elements_pointwise_grad(dx, x, targets, coef, kind):
    run(_pointwise_grad_part, pack(dx, x, targets, f32_bits(coef), kind), x.size)


BCE, BCE_LOGITS, MSE = 0, 1, 2


def _rows(a):
    """(N, D) view: per-sample losses average over everything but the batch axis."""
    return a.reshape(a.shape[0], a.size // a.shape[0])


def _flat(a):
    return a.reshape(a.size)


def pointwise_coef(kind, scale, x):
    """float32 gradient factor scale / D (2 * scale / D for MSE), folded on the host in float64."""
    d = x.size // x.shape[0]
    return np.float32((2.0 if kind == MSE else 1.0) * scale / d)


# entry points


def binary_crossentropy_forward(loss, probs, targets):
    _rows_pointwise(loss, _rows(probs), _rows(targets), BCE)


def binary_crossentropy_backward(dprobs, probs, targets, *, scale):
    _elements_pointwise_grad(
        _flat(dprobs), _flat(probs), _flat(targets), pointwise_coef(BCE, scale, probs), BCE
    )


def binary_crossentropy_logits_forward(loss, logits, targets):
    _rows_pointwise(loss, _rows(logits), _rows(targets), BCE_LOGITS)


def binary_crossentropy_logits_backward(dlogits, logits, targets, *, scale):
    _elements_pointwise_grad(
        _flat(dlogits),
        _flat(logits),
        _flat(targets),
        pointwise_coef(BCE_LOGITS, scale, logits),
        BCE_LOGITS,
    )


def mse_forward(loss, pred, targets):
    _rows_pointwise(loss, _rows(pred), _rows(targets), MSE)


def mse_backward(dpred, pred, targets, *, scale):
    _elements_pointwise_grad(
        _flat(dpred), _flat(pred), _flat(targets), pointwise_coef(MSE, scale, pred), MSE
    )
