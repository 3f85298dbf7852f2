"""Colour augmentation on a channels_last (N, H, W, C) float32 batch: per-sample
brightness and contrast (Keras 3's RandomBrightness / RandomContrast), and the per-sample
uniform draw both use.

The draw is the counter-based hash Dropout uses (kernels_numba.cpu.dropout), so the
factors are a pure function of (seed, step, sample index), identical on CPU and CUDA.
Outputs are clipped to value_range = (low, high) as Keras does; the clip's gradient
passes where low <= value <= high (PyTorch's clamp), and NaN passes through both.
Conventions: outputs first; ops never allocate; dx is overwritten.
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.cpu.dropout import dropout_key
from kernels_numba.dispatch import impl

__all__ = ["random_uniform_params", "brightness_forward", "brightness_backward",
           "contrast_forward", "contrast_backward"]
FAMILY = "augment_color"


def _integer(op, name, value, minimum=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: expected {name} to be an integer; received {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{op}: expected {name} >= {minimum}; received {value!r}")
    return int(value)


def _number(op, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or \
            not math.isfinite(value):
        raise ValueError(f"{op}: expected {name} to be a finite number; received {value!r}")
    return np.float32(value)


def _value_range(op, value_range):
    try:
        lo, hi = value_range
    except (TypeError, ValueError):
        raise ValueError(f"{op}: expected value_range as (low, high); received "
                         f"{value_range!r}") from None
    lo, hi = _number(op, "value_range", lo), _number(op, "value_range", hi)
    if lo > hi:
        raise ValueError(f"{op}: expected value_range with low <= high; received "
                         f"{value_range!r}")
    return lo, hi


def random_uniform_params(u, *, seed, step, low=0.0, high=1.0):
    """u[n] = low + (high - low) * hash_uniform(key(seed, step), n), in [low, high).

    Args:
        u: (N,) float32, output. seed: integer; step: integer >= 0; low <= high.
    """
    op = "random_uniform_params"
    _check.array(op, "u", u, ndim=1)
    lo, hi = _value_range(op, (low, high))
    key = dropout_key(_integer(op, "seed", seed), _integer(op, "step", step, minimum=0))
    impl(op, FAMILY, u=u)(u, key, lo, hi)


def _images(op, out_name, out, in_name, inp, params):
    n, h, w, c = _check.array(op, in_name, inp, ndim=4)
    _check.array(op, out_name, out, shape=(n, h, w, c))
    _check.array(op, "factor" if "contrast" in op else "delta", params, shape=(n,))
    return n, c


def brightness_forward(y, x, delta, *, value_range=(0.0, 255.0)):
    """y[n] = clip(x[n] + delta[n], low, high).

    Args:
        y: (N, H, W, C) float32, output (may be x). x: (N, H, W, C) float32.
        delta: (N,) float32 (random_uniform_params). value_range: (low, high).
    """
    op = "brightness_forward"
    _images(op, "y", y, "x", x, delta)
    lo, hi = _value_range(op, value_range)
    impl(op, FAMILY, y=y, x=x, delta=delta)(y, x, delta, lo, hi)


def brightness_backward(dx, dy, x, delta, *, value_range=(0.0, 255.0)):
    """dx = dy where low <= x + delta <= high, else 0 (overwritten; dx may be dy)."""
    op = "brightness_backward"
    _images(op, "dx", dx, "x", x, delta)
    _check.array(op, "dy", dy, shape=tuple(x.shape))
    lo, hi = _value_range(op, value_range)
    impl(op, FAMILY, dx=dx, dy=dy, x=x, delta=delta)(dx, dy, x, delta, lo, hi)


def contrast_forward(y, mean, x, factor, *, value_range=(0.0, 255.0)):
    """mean[n, c] = mean of x[n, :, :, c]; y = clip((x - mean) * factor[n] + mean, low, high).

    Args:
        y: (N, H, W, C) float32, output (not x). mean: (N, C) float32, output (for backward).
        x: (N, H, W, C) float32. factor: (N,) float32. value_range: (low, high).
    """
    op = "contrast_forward"
    n, c = _images(op, "y", y, "x", x, factor)
    _check.array(op, "mean", mean, shape=(n, c))
    lo, hi = _value_range(op, value_range)
    impl(op, FAMILY, y=y, mean=mean, x=x, factor=factor)(y, mean, x, factor, lo, hi)


def contrast_backward(dx, dy, x, mean, factor, *, value_range=(0.0, 255.0)):
    """With g = dy where the unclipped output is inside value_range (else 0):
    dx = factor * g + (1 - factor) * mean over (H, W) of g (overwritten, not dy).

    Args:
        dx, dy, x: (N, H, W, C) float32. mean: (N, C) from contrast_forward. factor: (N,).
    """
    op = "contrast_backward"
    n, c = _images(op, "dx", dx, "x", x, factor)
    _check.array(op, "dy", dy, shape=tuple(x.shape))
    _check.array(op, "mean", mean, shape=(n, c))
    lo, hi = _value_range(op, value_range)
    impl(op, FAMILY, dx=dx, dy=dy, x=x, mean=mean, factor=factor)(dx, dy, x, mean, factor,
                                                                   lo, hi)
