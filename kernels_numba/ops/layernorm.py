"""Layer normalization and feature-wise standardization over the last axis.

x is viewed as (M, C): C is the normalized (last) block, M every other position.
- layernorm: per row, xhat = (x - mean) * rstd with rstd = 1/sqrt(var + epsilon)
  (biased variance, as Keras), y = xhat * gamma + beta. mean and rstd (M,) are
  outputs kept for the backward.
- feature_normalize (Keras's Normalization layer): per column,
  y = (x - mean[c]) / max(sqrt(variance[c]), epsilon), or with invert=True
  y = mean[c] + x * max(sqrt(variance[c]), epsilon); mean/variance are constants.
Conventions: outputs first; ops never allocate; dgamma/dbeta accumulate, dx overwrites.
Column reductions (dgamma, dbeta) run in a fixed row order on both devices: no atomics.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["layernorm_forward", "layernorm_backward", "feature_normalize_forward",
           "feature_normalize_backward"]
FAMILY = "layernorm"


def _epsilon(op, epsilon):
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected epsilon to be a number; received {epsilon!r}") from None
    if not eps >= 0.0:
        raise ValueError(f"{op}: expected epsilon >= 0; received {epsilon!r}")
    return np.float32(eps)


def _vector(op, name, a, c):
    if a is not None:
        _check.array(op, name, a, shape=(c,))


def layernorm_forward(y, mean, rstd, x, gamma=None, beta=None, *, epsilon=1e-3):
    """y = (x - mean_row) / sqrt(var_row + epsilon) * gamma + beta.

    Args:
        y: (M, C) float32, output.
        mean: (M,) float32, output (row means, for the backward).
        rstd: (M,) float32, output (1/sqrt(var + epsilon)).
        x: (M, C) float32.
        gamma: (C,) float32 or None (scale=False).
        beta: (C,) float32 or None (center=False).
        epsilon: float >= 0.
    """
    op = "layernorm_forward"
    m, c = _check.array(op, "x", x, ndim=2)
    _check.array(op, "y", y, shape=(m, c))
    _check.array(op, "mean", mean, shape=(m,))
    _check.array(op, "rstd", rstd, shape=(m,))
    _vector(op, "gamma", gamma, c)
    _vector(op, "beta", beta, c)
    eps = _epsilon(op, epsilon)
    fn = impl(op, FAMILY, y=y, mean=mean, rstd=rstd, x=x, gamma=gamma, beta=beta)
    fn(y, mean, rstd, x, gamma, beta, eps)


def layernorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd):
    """dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma (overwritten);
    dgamma += sum_rows dy * xhat; dbeta += sum_rows dy.

    Args:
        dx: (M, C) float32 or None (skip), output.
        dgamma: (C,) float32 or None, accumulated.
        dbeta: (C,) float32 or None, accumulated.
        dy: (M, C) float32.
        x: (M, C) float32, the forward input.
        gamma: (C,) float32 or None (ones).
        mean, rstd: (M,) float32 from layernorm_forward.
    """
    op = "layernorm_backward"
    m, c = _check.array(op, "x", x, ndim=2)
    _check.array(op, "dy", dy, shape=(m, c))
    if dx is not None:
        _check.array(op, "dx", dx, shape=(m, c))
    for name, a in (("dgamma", dgamma), ("dbeta", dbeta), ("gamma", gamma)):
        _vector(op, name, a, c)
    _check.array(op, "mean", mean, shape=(m,))
    _check.array(op, "rstd", rstd, shape=(m,))
    fn = impl(op, FAMILY, dx=dx, dgamma=dgamma, dbeta=dbeta, dy=dy, x=x, gamma=gamma,
              mean=mean, rstd=rstd)
    fn(dx, dgamma, dbeta, dy, x, gamma, mean, rstd)


def _normalize_args(op, y_name, y, x, mean, variance, epsilon, invert):
    m, c = _check.array(op, "x", x, ndim=2)
    _check.array(op, y_name, y, shape=(m, c))
    if mean is not None:
        _check.array(op, "mean", mean, shape=(c,))
    _check.array(op, "variance", variance, shape=(c,))
    if not isinstance(invert, bool):
        raise TypeError(f"{op}: expected invert to be a bool; received {invert!r}")
    return _epsilon(op, epsilon)


def feature_normalize_forward(y, x, mean, variance, *, epsilon=1e-7, invert=False):
    """y = (x - mean) / max(sqrt(variance), epsilon), per column (invert: the inverse map).

    Args:
        y: (M, C) float32, output (may be x).
        x: (M, C) float32.
        mean, variance: (C,) float32.
        epsilon: float >= 0 (Keras's backend.epsilon(), 1e-7).
        invert: bool, y = mean + x * max(sqrt(variance), epsilon).
    """
    op = "feature_normalize_forward"
    eps = _normalize_args(op, "y", y, x, mean, variance, epsilon, invert)
    impl(op, FAMILY, y=y, x=x, mean=mean, variance=variance)(y, x, mean, variance, eps,
                                                             invert)


def feature_normalize_backward(dx, dy, variance, *, epsilon=1e-7, invert=False):
    """dx = dy / max(sqrt(variance), epsilon) (invert: times); dx (M, C) overwritten.

    Args:
        dx: (M, C) float32, output (may be dy). dy: (M, C) float32. variance: (C,) float32.
    """
    op = "feature_normalize_backward"
    eps = _normalize_args(op, "dx", dx, dy, None, variance, epsilon, invert)
    impl(op, FAMILY, dx=dx, dy=dy, variance=variance)(dx, dy, variance, eps, invert)
