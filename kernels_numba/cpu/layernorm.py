"""CPU twins of kernels_numba.ops.layernorm (validated arguments only).

Rows are independent, so the row loops run in parallel; the column reductions of the
backward (dgamma, dbeta) are one serial pass, rows in order (cache-friendly, fixed
order). Statistics are two-pass in float32, as the CUDA kernels compute them.
"""

import numba
import numpy as np

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


@numba.njit(cache=True)
def _denominator(v, eps):
    s = np.sqrt(v)
    return s if (s > eps or s != s) else eps  # NaN variance stays NaN


@numba.njit(parallel=True, cache=True)
def _forward(y, mean, rstd, x, gamma, beta, eps):
    m, c = x.shape
    inv_c = _ONE / np.float32(c)
    for r in numba.prange(m):
        s = _ZERO
        for j in range(c):
            s += x[r, j]
        mu = s * inv_c
        q = _ZERO
        for j in range(c):
            d = x[r, j] - mu
            q += d * d
        rs = _ONE / np.sqrt(q * inv_c + eps)
        mean[r] = mu
        rstd[r] = rs
        for j in range(c):
            v = (x[r, j] - mu) * rs
            if gamma is not None:
                v = v * gamma[j]
            if beta is not None:
                v = v + beta[j]
            y[r, j] = v


@numba.njit(parallel=True, cache=True)
def _backward_dx(dx, dy, x, gamma, mean, rstd):
    m, c = x.shape
    inv_c = _ONE / np.float32(c)
    for r in numba.prange(m):
        mu = mean[r]
        rs = rstd[r]
        sg = _ZERO
        sgx = _ZERO
        for j in range(c):
            g = dy[r, j] * gamma[j] if gamma is not None else dy[r, j]
            sg += g
            sgx += g * (x[r, j] - mu) * rs
        sg *= inv_c
        sgx *= inv_c
        for j in range(c):
            g = dy[r, j] * gamma[j] if gamma is not None else dy[r, j]
            dx[r, j] = rs * (g - sg - (x[r, j] - mu) * rs * sgx)


@numba.njit(cache=True)
def _backward_params(dgamma, dbeta, dy, x, mean, rstd, want_gamma, want_beta):
    m, c = x.shape
    for r in range(m):
        mu = mean[r]
        rs = rstd[r]
        for j in range(c):
            if want_gamma:
                dgamma[j] += dy[r, j] * (x[r, j] - mu) * rs
            if want_beta:
                dbeta[j] += dy[r, j]


@numba.njit(parallel=True, cache=True)
def _normalize(y, x, mean, variance, eps, invert):
    m, c = x.shape
    for r in numba.prange(m):
        for j in range(c):
            d = _denominator(variance[j], eps)
            if invert:
                y[r, j] = mean[j] + x[r, j] * d
            else:
                y[r, j] = (x[r, j] - mean[j]) / d


@numba.njit(parallel=True, cache=True)
def _normalize_backward(dx, dy, variance, eps, invert):
    m, c = dy.shape
    for r in numba.prange(m):
        for j in range(c):
            d = _denominator(variance[j], eps)
            dx[r, j] = dy[r, j] * d if invert else dy[r, j] / d


# launchers

def layernorm_forward(y, mean, rstd, x, gamma, beta, eps):
    _forward(y, mean, rstd, x, gamma, beta, eps)


def layernorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd):
    # Parameters first: dx may be dy (in place).
    if dgamma is not None or dbeta is not None:
        # A missing gradient is replaced by a dummy and a flag: one type signature.
        dummy = dgamma if dgamma is not None else dbeta
        _backward_params(dgamma if dgamma is not None else dummy,
                         dbeta if dbeta is not None else dummy, dy, x, mean, rstd,
                         dgamma is not None, dbeta is not None)
    if dx is not None:
        _backward_dx(dx, dy, x, gamma, mean, rstd)


def feature_normalize_forward(y, x, mean, variance, eps, invert):
    _normalize(y, x, mean, variance, eps, invert)


def feature_normalize_backward(dx, dy, variance, eps, invert):
    _normalize_backward(dx, dy, variance, eps, invert)
