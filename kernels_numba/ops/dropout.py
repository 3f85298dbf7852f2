"""Dropout with a counter-based RNG: the mask is a pure function of (seed, step, flat index).

So a mask is reproducible, identical on the CPU and CUDA, and independent of the
launch configuration; kerasish passes a step counter so each batch differs.
mask holds 1/(1-rate) for kept elements and 0 for dropped ones; y = x * mask.

`step` is an int, or a uint32 (2,) buffer on the data's device holding the step's low
and high 32-bit words (`step_words` fills a host array): the kernel then reads the step
itself, so a recorded launch (CUDA graph) stays valid as the step advances. Both forms
give the same mask for the same (seed, step).
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.cpu.dropout import dropout_key, step_words
from kernels_numba.dispatch import impl

__all__ = ["dropout_forward", "dropout_backward", "step_words"]
FAMILY = "dropout"


def _integer(op, name, value, minimum=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: expected {name} to be an integer; received {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{op}: expected {name} >= {minimum}; received {value!r}")
    return int(value)


def key_and_steps(op, seed, step, **arrays):
    """(key, steps) for the kernels: (dropout_key(seed, step), None) for an int step, or
    (the seed's low 32 bits, the checked uint32 (2,) steps buffer) for a buffer."""
    seed = _integer(op, "seed", seed)
    if isinstance(step, (int, np.integer)) and not isinstance(step, bool):
        return dropout_key(seed, _integer(op, "step", step, minimum=0)), None
    if step is None or isinstance(step, (bool, float)):
        raise TypeError(f"{op}: expected step to be an integer or a uint32 (2,) steps buffer; "
                        f"received {step!r}")
    _check.array(op, "step", step, shape=(2,), dtype=np.uint32)
    _check.same_device(op, step=step, **arrays)
    return np.uint64(seed & 0xFFFFFFFF), step


def dropout_forward(y, mask, x, *, rate, seed, step):
    """y = x * mask with mask = 1/(1-rate) where uniform(seed, step, i) >= rate, else 0.

    Args:
        y: any shape, float32 (may be x).
        mask: same shape, float32 (output, kept for backward).
        x: same shape, float32.
        rate: drop probability in [0, 1); 0 keeps everything (mask all ones).
        seed: integer (its low 32 bits are used).
        step: integer >= 0 (e.g. a layer's step counter), or a uint32 (2,) buffer on
            x's device holding it (step_words).
    """
    op = "dropout_forward"
    shape = _check.array(op, "x", x)
    _check.array(op, "y", y, shape=shape)
    _check.array(op, "mask", mask, shape=shape)
    try:
        rate = float(rate)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected rate to be a number; received {rate!r}") from None
    if not (math.isfinite(rate) and 0.0 <= rate < 1.0):
        raise ValueError(f"{op}: expected rate in [0, 1); received {rate!r}")
    key, steps = key_and_steps(op, seed, step, x=x)
    fn = impl(op, FAMILY, y=y, mask=mask, x=x)
    fn(y, mask, x, np.float32(rate), np.float32(1.0 / (1.0 - rate)), key, steps=steps)


def dropout_backward(dx, dy, mask):
    """dx = dy * mask (overwritten).

    Args:
        dx: any shape, float32 (may be dy).
        dy: same shape, float32.
        mask: same shape, float32, from dropout_forward.
    """
    op = "dropout_backward"
    shape = _check.array(op, "dy", dy)
    _check.array(op, "dx", dx, shape=shape)
    _check.array(op, "mask", mask, shape=shape)
    impl(op, FAMILY, dx=dx, dy=dy, mask=mask)(dx, dy, mask)
