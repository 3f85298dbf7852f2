"""Counter-based noise for GaussianNoise, GaussianDropout and SpatialDropout2D.

Every draw is a pure function of (seed, step, flat index) through kernels_numba.cpu.
dropout's hash (the same key as ops.dropout_forward), so noise is reproducible and
independent of the launch configuration. Normals come from Box-Muller on the uniforms
of indices 2i and 2i+1; the CPU and CUDA draws agree up to the last-ulp rounding of
float32 log/cos/sqrt (uniforms, and so dropout masks, agree exactly).
- gaussian_fill(out, mean, stddev): out = mean + stddev * N(0, 1).
- uniform_fill(out, minval, maxval): out = minval + (maxval - minval) * U[0, 1).
- truncated_normal_fill(out, mean, stddev): normals redrawn while more than two
  standard deviations out (keras.random.truncated_normal): attempt k of element i is
  the normal of counter 16 i + k; after 16 misses (probability 4.6e-2 ** 16) it is mean.
- dropout_mask(mask, rate): mask = 1/(1-rate) where uniform >= rate, else 0 (exactly
  ops.dropout_forward's mask for the same seed, step and shape).
- channel_scale(y, x, mask): y[n, ..., c] = x[n, ..., c] * mask[n, c] (SpatialDropout's
  broadcast over the spatial axes; also its backward, with dy for x).
`step` is an int or, as in ops.dropout_forward, a uint32 (2,) steps buffer on the
output's device that the kernel reads (the same draws; launches that never change).
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.dropout import key_and_steps

__all__ = ["gaussian_fill", "uniform_fill", "truncated_normal_fill", "dropout_mask",
           "channel_scale"]
FAMILY = "noise"


def _finite(op, name, value, ok, expected):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected {name} to be a number; received {value!r}") from None
    if not (math.isfinite(v) and ok(v)):
        raise ValueError(f"{op}: expected {name} {expected}; received {value!r}")
    return v


def _fill(op, out, a, b, seed, step):
    """Launch a fill kernel of two float32 parameters on out's device (checked above)."""
    key, steps = key_and_steps(op, seed, step, out=out)
    impl(op, FAMILY, out=out)(out, np.float32(a), np.float32(b), key, steps)


def gaussian_fill(out, *, mean=0.0, stddev=1.0, seed, step):
    """out = mean + stddev * normal(seed, step, i).

    Args:
        out: any shape, float32, output.
        mean: finite float. stddev: finite float >= 0.
        seed: integer (its low 32 bits are used).
        step: integer >= 0, or a uint32 (2,) steps buffer on out's device.
    """
    op = "gaussian_fill"
    _check.array(op, "out", out)
    mean = _finite(op, "mean", mean, lambda v: True, "finite")
    stddev = _finite(op, "stddev", stddev, lambda v: v >= 0, ">= 0")
    _fill(op, out, mean, stddev, seed, step)


def uniform_fill(out, *, minval=0.0, maxval=1.0, seed, step):
    """out = minval + (maxval - minval) * uniform(seed, step, i), uniform in [0, 1).

    Args:
        out: any shape, float32, output.
        minval, maxval: finite floats (maxval >= minval).
        seed: integer (its low 32 bits are used).
        step: integer >= 0, or a uint32 (2,) steps buffer on out's device.
    """
    op = "uniform_fill"
    _check.array(op, "out", out)
    minval = _finite(op, "minval", minval, lambda v: True, "finite")
    maxval = _finite(op, "maxval", maxval, lambda v: v >= minval, f">= minval ({minval})")
    _fill(op, out, minval, maxval - minval, seed, step)


def truncated_normal_fill(out, *, mean=0.0, stddev=1.0, seed, step):
    """out = mean + stddev * n, n a normal(seed, step) redrawn while |n| > 2.

    Args:
        out: any shape, float32, output.
        mean: finite float. stddev: finite float >= 0.
        seed: integer (its low 32 bits are used).
        step: integer >= 0, or a uint32 (2,) steps buffer on out's device.
    """
    op = "truncated_normal_fill"
    _check.array(op, "out", out)
    mean = _finite(op, "mean", mean, lambda v: True, "finite")
    stddev = _finite(op, "stddev", stddev, lambda v: v >= 0, ">= 0")
    _fill(op, out, mean, stddev, seed, step)


def dropout_mask(mask, *, rate, seed, step):
    """mask = 1/(1-rate) where uniform(seed, step, i) >= rate, else 0.

    Args:
        mask: any shape, float32, output.
        rate: drop probability in [0, 1). seed: integer.
        step: integer >= 0, or a uint32 (2,) steps buffer on mask's device.
    """
    op = "dropout_mask"
    _check.array(op, "mask", mask)
    rate = _finite(op, "rate", rate, lambda v: 0.0 <= v < 1.0, "in [0, 1)")
    key, steps = key_and_steps(op, seed, step, mask=mask)
    impl(op, FAMILY, mask=mask)(mask, np.float32(rate), np.float32(1.0 / (1.0 - rate)), key,
                                steps)


def channel_scale(y, x, mask):
    """y[n, ..., c] = x[n, ..., c] * mask[n, c].

    Args:
        y: (N, ..., C) float32, output (may be x).
        x: (N, ..., C) float32, rank >= 2.
        mask: (N, C) float32.
    """
    op = "channel_scale"
    shape = _check.array(op, "x", x)
    if len(shape) < 2:
        raise ValueError(f"{op}: expected x with at least 2 dimensions (N, ..., C); "
                         f"received shape {shape}")
    _check.array(op, "y", y, shape=shape)
    _check.array(op, "mask", mask, shape=(shape[0], shape[-1]))
    impl(op, FAMILY, y=y, x=x, mask=mask)(y, x, mask)
