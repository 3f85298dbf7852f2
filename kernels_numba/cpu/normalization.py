"""CPU twins of kernels_numba.ops.normalization on (M, C) views.

Channel statistics are accumulated row by row (cache-friendly for channels-last)
in float64 with a two-pass variance; the elementwise passes run in parallel over rows.
"""

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _mean_var(x):
    """Per-channel mean and biased variance (float64, two passes)."""
    m, c = x.shape
    mu = np.zeros(c)
    for r in range(m):
        for j in range(c):
            mu[j] += x[r, j]
    mu /= m
    var = np.zeros(c)
    for r in range(m):
        for j in range(c):
            d = x[r, j] - mu[j]
            var[j] += d * d
    var /= m
    return mu, var


@numba.njit(parallel=True, cache=True)
def _affine(y, x, shift, factor, beta):
    """y = (x - shift) * factor + beta, per channel."""
    for r in numba.prange(x.shape[0]):
        for j in range(x.shape[1]):
            y[r, j] = (x[r, j] - shift[j]) * factor[j] + beta[j]


@numba.njit(cache=True)
def _train(y, mean, rstd, moving_mean, moving_var, x, gamma, beta, momentum, epsilon):
    mu, var = _mean_var(x)
    rs = np.empty(mu.size)
    for j in range(mu.size):
        rs[j] = 1.0 / math.sqrt(var[j] + epsilon)
        mean[j] = mu[j]
        rstd[j] = rs[j]
        moving_mean[j] = moving_mean[j] * momentum + mu[j] * (1.0 - momentum)
        moving_var[j] = moving_var[j] * momentum + var[j] * (1.0 - momentum)
    _affine(y, x, mu, rs * gamma, beta)


@numba.njit(cache=True)
def _backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd):
    m, c = x.shape
    sum_dy = np.zeros(c)
    sum_dy_xhat = np.zeros(c)
    for r in range(m):
        for j in range(c):
            sum_dy[j] += dy[r, j]
            sum_dy_xhat[j] += dy[r, j] * (x[r, j] - mean[j]) * rstd[j]
    for j in range(c):
        dgamma[j] += sum_dy_xhat[j]
        dbeta[j] += sum_dy[j]
    _dx(dx, dy, x, gamma, mean, rstd, sum_dy / m, sum_dy_xhat / m)


@numba.njit(parallel=True, cache=True)
def _dx(dx, dy, x, gamma, mean, rstd, mean_dy, mean_dy_xhat):
    for r in numba.prange(x.shape[0]):
        for j in range(x.shape[1]):
            xhat = (x[r, j] - mean[j]) * rstd[j]
            dx[r, j] = gamma[j] * rstd[j] * (dy[r, j] - mean_dy[j] - xhat * mean_dy_xhat[j])


@numba.njit(parallel=True, cache=True)
def _scale_channels(dx, dy, factor):
    for r in numba.prange(dy.shape[0]):
        for j in range(dy.shape[1]):
            dx[r, j] = dy[r, j] * factor[j]


def _as_2d(a):
    return a.reshape(-1, a.shape[-1])


def batchnorm_forward_train(
    y, mean, rstd, moving_mean, moving_var, x, gamma, beta, *, momentum, epsilon
):
    _train(
        _as_2d(y), mean, rstd, moving_mean, moving_var, _as_2d(x), gamma, beta, momentum, epsilon
    )


def _infer_factor(gamma, moving_var, epsilon):
    """gamma / sqrt(moving_var + epsilon) in float64, rounded once (forward and backward)."""
    return (gamma / np.sqrt(moving_var.astype(np.float64) + epsilon)).astype(np.float32)


def batchnorm_forward_infer(y, x, gamma, beta, moving_mean, moving_var, *, epsilon):
    factor = _infer_factor(gamma, moving_var, epsilon)
    _affine(_as_2d(y), _as_2d(x), moving_mean, factor, beta)


def batchnorm_backward_infer(dx, dy, gamma, moving_var, *, epsilon):
    _scale_channels(_as_2d(dx), _as_2d(dy), _infer_factor(gamma, moving_var, epsilon))


def batchnorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd):
    _backward(_as_2d(dx), dgamma, dbeta, _as_2d(dy), _as_2d(x), gamma, mean, rstd)
