"""Batch normalization over the last (channel) axis, as Keras's BatchNormalization(axis=-1).

x of any rank >= 2 is viewed as (M, C): C = x.shape[-1] channels, M = all other
elements (N for dense inputs, N*H*W for NHWC images). Training uses the batch
mean and biased variance; mean and rstd = 1/sqrt(var + epsilon) are outputs kept
for backward, and the moving statistics are updated in place:
moving = moving*momentum + batch_stat*(1-momentum).
Inference (and a frozen layer in training, as Keras 3) uses the moving statistics: an
affine map per channel, whose backward is batchnorm_backward_infer.
"""

import math

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = [
    "batchnorm_forward_train",
    "batchnorm_forward_infer",
    "batchnorm_backward",
    "batchnorm_backward_infer",
]
FAMILY = "normalization"


def _channels(op, x):
    """Check x (rank >= 2, non-empty) and return (shape, C)."""
    shape = _check.array(op, "x", x)
    if len(shape) < 2 or 0 in shape:
        raise ValueError(
            f"{op}: expected x with rank >= 2 (channels last) and no empty axis; "
            f"received shape {shape}"
        )
    return shape, shape[-1]


def _number(op, name, value, expected, ok):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected {name} to be a number; received {value!r}") from None
    if not (math.isfinite(v) and ok(v)):
        raise ValueError(f"{op}: expected {name} {expected}; received {value!r}")
    return v


def _epsilon(op, epsilon):
    return _number(op, "epsilon", epsilon, "> 0", lambda v: v > 0.0)


def batchnorm_forward_train(
    y, mean, rstd, moving_mean, moving_var, x, gamma, beta, *, momentum=0.99, epsilon=1e-3
):
    """y = (x - mean) * rstd * gamma + beta with batch statistics; updates the moving statistics.

    Args:
        y: same shape as x, float32 (may be x).
        mean: (C,) float32, output: batch mean.
        rstd: (C,) float32, output: 1/sqrt(biased batch variance + epsilon).
        moving_mean: (C,) float32, updated in place.
        moving_var: (C,) float32, updated in place (with the biased variance, as Keras 3).
        x: (..., C) float32, rank >= 2.
        gamma: (C,) float32.
        beta: (C,) float32.
        momentum: in [0, 1].
        epsilon: > 0.
    """
    op = "batchnorm_forward_train"
    shape, c = _channels(op, x)
    _check.array(op, "y", y, shape=shape)
    for name, a in (
        ("mean", mean),
        ("rstd", rstd),
        ("moving_mean", moving_mean),
        ("moving_var", moving_var),
        ("gamma", gamma),
        ("beta", beta),
    ):
        _check.array(op, name, a, shape=(c,))
    momentum = _number(op, "momentum", momentum, "in [0, 1]", lambda v: 0.0 <= v <= 1.0)
    epsilon = _epsilon(op, epsilon)
    fn = impl(
        op,
        FAMILY,
        y=y,
        mean=mean,
        rstd=rstd,
        moving_mean=moving_mean,
        moving_var=moving_var,
        x=x,
        gamma=gamma,
        beta=beta,
    )
    fn(y, mean, rstd, moving_mean, moving_var, x, gamma, beta, momentum=momentum, epsilon=epsilon)


def batchnorm_forward_infer(y, x, gamma, beta, moving_mean, moving_var, *, epsilon=1e-3):
    """y = (x - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta.

    Args:
        y: same shape as x, float32 (may be x).
        x: (..., C) float32, rank >= 2.
        gamma: (C,) float32.
        beta: (C,) float32.
        moving_mean: (C,) float32.
        moving_var: (C,) float32.
        epsilon: > 0.
    """
    op = "batchnorm_forward_infer"
    shape, c = _channels(op, x)
    _check.array(op, "y", y, shape=shape)
    for name, a in (
        ("gamma", gamma),
        ("beta", beta),
        ("moving_mean", moving_mean),
        ("moving_var", moving_var),
    ):
        _check.array(op, name, a, shape=(c,))
    epsilon = _epsilon(op, epsilon)
    fn = impl(
        op, FAMILY, y=y, x=x, gamma=gamma, beta=beta, moving_mean=moving_mean, moving_var=moving_var
    )
    fn(y, x, gamma, beta, moving_mean, moving_var, epsilon=epsilon)


def batchnorm_backward(dx, dgamma, dbeta, dy, x, gamma, mean, rstd):
    """Gradients of the training forward (batch statistics), given its saved mean and rstd.

    dbeta += sum(dy); dgamma += sum(dy * xhat); dx = gamma*rstd*(dy - mean(dy) - xhat*mean(dy*xhat))
    with xhat = (x - mean)*rstd and sums/means over the M rows of each channel.

    Args:
        dx: same shape as x, float32, overwritten (may be dy).
        dgamma: (C,) float32, accumulated into.
        dbeta: (C,) float32, accumulated into.
        dy: same shape as x, float32.
        x: (..., C) float32, the forward input.
        gamma: (C,) float32.
        mean: (C,) float32, from batchnorm_forward_train.
        rstd: (C,) float32, from batchnorm_forward_train.
    """
    op = "batchnorm_backward"
    shape, c = _channels(op, x)
    _check.array(op, "dy", dy, shape=shape)
    _check.array(op, "dx", dx, shape=shape)
    for name, a in (
        ("dgamma", dgamma),
        ("dbeta", dbeta),
        ("gamma", gamma),
        ("mean", mean),
        ("rstd", rstd),
    ):
        _check.array(op, name, a, shape=(c,))
    fn = impl(
        op, FAMILY, dx=dx, dgamma=dgamma, dbeta=dbeta, dy=dy, x=x, gamma=gamma, mean=mean, rstd=rstd
    )
    fn(dx, dgamma, dbeta, dy, x, gamma, mean, rstd)


def batchnorm_backward_infer(dx, dy, gamma, moving_var, *, epsilon=1e-3):
    """dx = dy * gamma / sqrt(moving_var + epsilon): the gradient of batchnorm_forward_infer.

    The moving statistics are constants there, so no parameter gradient is computed (a
    frozen BatchNormalization, which Keras 3 runs in inference mode, updates none).

    Args:
        dx: same shape as dy, float32, overwritten (may be dy).
        dy: (..., C) float32, rank >= 2.
        gamma: (C,) float32.
        moving_var: (C,) float32.
        epsilon: > 0, the forward's.
    """
    op = "batchnorm_backward_infer"
    shape = _check.array(op, "dy", dy)
    if len(shape) < 2 or 0 in shape:
        raise ValueError(
            f"{op}: expected dy with rank >= 2 (channels last) and no empty axis; "
            f"received shape {shape}"
        )
    _check.array(op, "dx", dx, shape=shape)
    for name, a in (("gamma", gamma), ("moving_var", moving_var)):
        _check.array(op, name, a, shape=(shape[-1],))
    epsilon = _epsilon(op, epsilon)
    fn = impl(op, FAMILY, dx=dx, dy=dy, gamma=gamma, moving_var=moving_var)
    fn(dx, dy, gamma, moving_var, epsilon=epsilon)
